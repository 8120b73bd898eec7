// src/kube/egress.ts: the patterns of --egress-allow and the verdict on one
// resolved address. The fetch that applies it at connect time is tested end
// to end (test/e2e/egress.test.ts).
import { describe, expect, it } from 'vitest';
import { type EgressPolicy, egressVerdict, parseEgressAllow } from '../../src/kube/egress.ts';

const OWN = new Set(['10.244.1.7', '127.0.0.1', '::1']);
const policy = (...allow: string[]): EgressPolicy => ({ allow: parseEgressAllow(allow), own: OWN });
const verdict = (p: EgressPolicy, host: string, address = host) => egressVerdict(p, host, address);

describe('the default policy (no --egress-allow)', () => {
  const p = policy();

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['10.244.1.7', "operator's own"],
  ])('refuses %s (%s)', (address, what) => {
    const v = verdict(p, 'example.com', address);
    expect(v.allowed).toBe(false);
    expect(v.allowed ? '' : v.why).toContain(what);
  });

  it('allows any other address, a cluster one or a public one', () => {
    for (const address of ['10.96.0.10', '10.244.2.9', '93.184.215.14', '2001:db8::1', 'fd00::1']) {
      expect(verdict(p, 'prometheus.monitoring', address)).toEqual({ allowed: true });
    }
  });
});

describe('an allow-list', () => {
  it('opens a guarded address only by an address or CIDR containing it', () => {
    expect(verdict(policy('127.0.0.1'), 'localhost', '127.0.0.1')).toEqual({ allowed: true });
    expect(verdict(policy('169.254.0.0/16'), '169.254.169.254')).toEqual({ allowed: true });
    expect(verdict(policy('[fd00:ec2::254]'), 'fd00:ec2::254')).toEqual({ allowed: true });
    // A name is not the operator's to trust: whoever runs its DNS may point it at 127.0.0.1.
    expect(verdict(policy('localhost'), 'localhost', '127.0.0.1').allowed).toBe(false);
    expect(verdict(policy('*.example.com'), 'evil.example.com', '169.254.169.254').allowed).toBe(false);
  });

  it('allows only what it lists: a host name, a subdomain of *.domain, an address in a CIDR', () => {
    const p = policy('prometheus.monitoring', '*.example.com', '10.0.0.0/8');
    expect(verdict(p, 'prometheus.monitoring', '10.96.3.4')).toEqual({ allowed: true });
    expect(verdict(p, 'PROMETHEUS.monitoring.', '192.168.1.1')).toEqual({ allowed: true });
    expect(verdict(p, 'hooks.example.com', '93.184.215.14')).toEqual({ allowed: true });
    expect(verdict(p, 'other.svc', '10.1.2.3')).toEqual({ allowed: true });
    expect(verdict(p, 'example.com', '93.184.215.14').allowed).toBe(false);
    expect(verdict(p, 'grafana.monitoring', '192.168.1.1')).toEqual({
      allowed: false,
      why: 'neither its host nor its address is in the allow-list',
    });
  });

  it('takes commas and repeats, and refuses a pattern it cannot read, naming it', () => {
    expect(parseEgressAllow(['10.0.0.0/8, *.svc', '::1']).map((p) => p.text)).toEqual(['10.0.0.0/8', '*.svc', '::1']);
    expect(() => parseEgressAllow(['http://10.0.0.1/'])).toThrow('"http://10.0.0.1/": not a host name');
    expect(() => parseEgressAllow(['10.0.0.0/33'])).toThrow('"10.0.0.0/33": a CIDR\'s prefix length must be 0 to 32');
    expect(() => parseEgressAllow(['a.*.com'])).toThrow('not a host name');
  });
});
