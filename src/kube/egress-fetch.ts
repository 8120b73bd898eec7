// The fetch web and Prometheus checks and notifications go out with: every
// connection is judged by egress.ts on the address it is actually made to.
// Checking the URL's host before the request would not do: its DNS answer may
// change between that check and the connection (DNS rebinding). So the
// verdict sits in the socket's own lookup, whose answer is the address
// connected to, and an address written in the URL, which is not looked up, is
// judged before connecting.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { type EgressPattern, type EgressPolicy, EgressRefused, egressVerdict, normalized } from './egress.ts';

/** This process's addresses, on every interface: its pod IP, and the host's with hostNetwork. */
export function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) own.add(normalized(info.address.split('%')[0] ?? info.address));
  }
  return own;
}

export function egressPolicy(allow: readonly EgressPattern[]): EgressPolicy {
  return { allow, own: ownAddresses() };
}

/** fetch, with every connection judged by the policy. */
export function egressFetch(policy: EgressPolicy): typeof fetch {
  const connect = buildConnector({ lookup: checkedLookup(policy) });
  const dispatcher = new Agent({
    connect: (options, callback) => {
      // An address in the URL is connected to as written, with no lookup to judge it in.
      if (isIP(options.hostname) !== 0) {
        const verdict = egressVerdict(policy, options.hostname, options.hostname);
        if (!verdict.allowed) return callback(new EgressRefused(options.hostname, options.hostname, verdict.why), null);
      }
      return connect(options, callback);
    },
  });
  // undici's own fetch: Node's built-in one cannot use a dispatcher of this undici's major version.
  const fetcher = (input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher });
  return fetcher as unknown as typeof fetch;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * dns.lookup, keeping only the addresses the policy allows: the socket then
 * connects to one of them. None left: the connection fails with the refusal.
 */
function checkedLookup(policy: EgressPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const verdicts = addresses.map((a) => ({ a, verdict: egressVerdict(policy, hostname, a.address) }));
      const allowed = verdicts.filter((v) => v.verdict.allowed).map((v) => v.a);
      const first = allowed[0];
      if (!first) {
        const refused = verdicts[0];
        const why = refused && !refused.verdict.allowed ? refused.verdict.why : 'it resolves to no address';
        return callback(new EgressRefused(hostname, refused?.a.address ?? hostname, why), []);
      }
      if (options.all) return callback(null, allowed);
      return callback(null, first.address, first.family);
    });
  };
}
