// Where the operator's own requests for App authors may go: web and
// Prometheus checks and notifications carry a URL an App author wrote, and
// the operator can reach places its users cannot (its own /metrics, the
// node's, a cloud metadata service handing out credentials). Pure: the
// patterns of --egress-allow, and the verdict on one resolved address;
// egress-fetch.ts applies it at connect time.
//
// The rule:
// - loopback, unspecified, link-local, cloud metadata and the operator's own
//   addresses are refused unless an address or CIDR pattern contains them (a
//   host name pattern never opens them: a name's DNS answer is not the
//   operator's to trust);
// - with no pattern, every other address is allowed;
// - with patterns, only what they match: a host name (`prometheus.monitoring`,
//   `*.example.com`, matched against the URL's host) or an address or CIDR
//   (matched against the address connected to).
import { BlockList, isIP } from 'node:net';

/** The flag and the chart value an operator sets, as refusals name them. */
export const EGRESS_FLAG = '--egress-allow';
export const EGRESS_CHART_VALUE = 'egress.allow';

type Family = 'ipv4' | 'ipv6';

export type EgressPattern =
  | { kind: 'address'; text: string; list: BlockList }
  | { kind: 'host'; text: string; name: string; subdomains: boolean };

export interface EgressPolicy {
  allow: readonly EgressPattern[];
  /** The operator's own addresses (its pod IP, every interface's), normalized. */
  own: ReadonlySet<string>;
}

export type EgressVerdict = { allowed: true } | { allowed: false; why: string };

// Refused unless allowed by address: [class, what it is, CIDRs].
const GUARDED: [string, string[]][] = [
  ['a loopback address', ['127.0.0.0/8', '::1/128']],
  ['an unspecified address (it reaches this host)', ['0.0.0.0/8', '::/128']],
  ['a link-local address (cloud metadata services answer there)', ['169.254.0.0/16', 'fe80::/10']],
  // AWS's IPv6 instance metadata, and Alibaba Cloud's, outside link-local.
  ['a cloud metadata address', ['fd00:ec2::254/128', '100.100.100.200/32']],
];

const GUARDED_LISTS = GUARDED.map(([what, cidrs]) => {
  const list = new BlockList();
  for (const cidr of cidrs) addCidr(list, cidr);
  return { what, list };
});

const HOST = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** The patterns of --egress-allow (comma-separated, each flag may repeat); throws naming a bad one. */
export function parseEgressAllow(values: readonly string[]): EgressPattern[] {
  const texts = values.flatMap((v) => v.split(',')).map((t) => t.trim().toLowerCase());
  return texts.filter((t) => t !== '').map(parsePattern);
}

function parsePattern(text: string): EgressPattern {
  const address = unbracketed(text);
  const [ip = '', prefix] = address.split('/');
  if (isIP(ip) !== 0) {
    const family = familyOf(ip);
    const bits = prefix === undefined ? (family === 'ipv4' ? 32 : 128) : Number(prefix);
    const max = family === 'ipv4' ? 32 : 128;
    if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && bits <= max)) {
      throw new Error(`"${text}": a CIDR's prefix length must be 0 to ${max}`);
    }
    const list = new BlockList();
    list.addSubnet(normalized(ip), bits, family);
    return { kind: 'address', text, list };
  }
  if (text.length <= 253 && HOST.test(text)) {
    const subdomains = text.startsWith('*.');
    return { kind: 'host', text, name: subdomains ? text.slice(2) : text, subdomains };
  }
  throw new Error(`"${text}": not a host name, *.domain, IP address or CIDR`);
}

/** The verdict on connecting to `address`, resolved from the URL's `host`. */
export function egressVerdict(policy: EgressPolicy, host: string, address: string): EgressVerdict {
  const ip = normalized(unbracketed(address));
  const family = familyOf(ip);
  const byAddress = policy.allow.some((p) => p.kind === 'address' && p.list.check(ip, family));
  const guarded = guardedAs(policy, ip, family);
  if (guarded) return byAddress ? { allowed: true } : { allowed: false, why: `it is ${guarded}` };
  if (policy.allow.length === 0 || byAddress) return { allowed: true };
  const name = unbracketed(host).toLowerCase().replace(/\.$/, '');
  if (policy.allow.some((p) => p.kind === 'host' && hostMatches(p, name))) return { allowed: true };
  return { allowed: false, why: 'neither its host nor its address is in the allow-list' };
}

/** A request the policy refused; its message names the host, the address and the flag. */
export class EgressRefused extends Error {
  readonly code = 'EGRESS_REFUSED';
  /** The address refused, without the host: what a notification may name (its URL is a secret). */
  readonly address: string;
  readonly why: string;

  constructor(host: string, address: string, why: string) {
    const ip = normalized(unbracketed(address));
    super(refusalText(unbracketed(host) === ip ? ip : `${host} (${ip})`, why));
    this.address = ip;
    this.why = why;
  }
}

/** The refusal behind a failed fetch (fetch says "fetch failed" and puts the cause under it), if that is what it was. */
export function egressRefusalOf(error: unknown): EgressRefused | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof EgressRefused) return e;
  return undefined;
}

/** The words a refused request is reported in: where to, why, and how an operator allows it. */
export function refusalText(target: string, why: string): string {
  return `refused to connect to ${target}: ${why}; the operator allows it with ${EGRESS_FLAG} (chart value ${EGRESS_CHART_VALUE})`;
}

function guardedAs(policy: EgressPolicy, ip: string, family: Family): string | undefined {
  const guarded = GUARDED_LISTS.find((g) => g.list.check(ip, family))?.what;
  return guarded ?? (policy.own.has(ip) ? "one of the operator's own addresses" : undefined);
}

function hostMatches(p: Extract<EgressPattern, { kind: 'host' }>, name: string): boolean {
  return p.subdomains ? name.endsWith(`.${p.name}`) : name === p.name;
}

/** An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is the IPv4 address it maps: it reaches the same place. */
export function normalized(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return mapped?.[1] ?? ip.toLowerCase();
}

function unbracketed(text: string): string {
  return text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
}

function familyOf(ip: string): Family {
  return isIP(ip) === 4 ? 'ipv4' : 'ipv6';
}

function addCidr(list: BlockList, cidr: string): void {
  const [ip = '', bits = ''] = cidr.split('/');
  list.addSubnet(ip, Number(bits), familyOf(ip));
}
