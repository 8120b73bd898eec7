// Counting API requests from the API server's audit log: pure, so that the
// unit tests hold the rules (bench-audit.test.ts). Reading the file is in
// audit-log.ts.

/** The fields of an audit event (audit.k8s.io/v1) the bench reads. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  userAgent?: string;
  /** Who made the request, as authenticated. */
  user?: { username?: string };
  /** The path and query asked for. */
  requestURI?: string;
  requestReceivedTimestamp?: string;
  impersonatedUser?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
}

/** Request counts keyed by "verb resource" (resource/subresource when there is one). */
export type Counts = Record<string, number>;

export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/**
 * The policy the bench's cluster runs with. Metadata level is enough to count
 * by verb, resource and user agent. What the simulated kubelets and nodes do
 * (pod and node status, node leases) is left out: neither controller makes
 * such requests, and they would make most of the file. RequestReceived is
 * omitted so that each request is one event (two for a watch, see counted).
 */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources:
  - group: ""
    resources: [pods/status, nodes, nodes/status]
- level: None
  namespaces: [kube-node-lease]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Metadata
`;

/** One line of the log; undefined for a line that is not an event (cut short, or another format). */
export function parseAuditLine(line: string): AuditEvent | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const e = JSON.parse(line) as Partial<AuditEvent>;
    if (typeof e.auditID !== 'string' || typeof e.stage !== 'string' || typeof e.verb !== 'string') return undefined;
    return e as AuditEvent;
  } catch {
    return undefined;
  }
}

/**
 * Whether this event is the one that counts its request. A watch writes
 * ResponseStarted when it opens and ResponseComplete when it ends, possibly
 * many minutes later: it counts when it opens, so that a watch is counted in
 * the window in which it was made. Other requests count when complete.
 */
export function counted(e: AuditEvent): boolean {
  if (e.stage === 'Panic') return true;
  return e.verb === 'watch' ? e.stage === 'ResponseStarted' : e.stage === 'ResponseComplete';
}

/** The key of a request in Counts: "patch services", "update apps/status", "get" for a non-resource URL. */
export function requestKey(e: AuditEvent): string {
  const resource = e.objectRef?.resource;
  if (resource === undefined) return e.verb;
  return `${e.verb} ${resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
}

/** Requests made with this user name impersonated are the bench's own (its driver client). */
export const DRIVER_USER = 'teal-bench-driver';

export function isDriver(e: AuditEvent): boolean {
  return e.impersonatedUser?.username === DRIVER_USER;
}

/**
 * Teal's requests: @kubernetes/client-node names itself on most of them, and
 * its watches go out as plain undici fetches. The bench uses the same client,
 * but impersonates a user of its own.
 */
export function isTealRequest(e: AuditEvent): boolean {
  return /^(kubernetes-client-javascript|undici|node)\b/.test(e.userAgent ?? '') && !isDriver(e);
}

/** Argo's requests: client-go's default user agent, named after the binary. */
export function isArgoRequest(e: AuditEvent): boolean {
  return (e.userAgent ?? '').startsWith('rollouts-controller/');
}

export function addEvent(counts: Counts, e: AuditEvent): void {
  const key = requestKey(e);
  counts[key] = (counts[key] ?? 0) + 1;
}

export interface Summary {
  total: number;
  writes: number;
  /** The same counts, by verb alone. */
  byVerb: Record<string, number>;
}

export function summarize(counts: Counts): Summary {
  const byVerb: Record<string, number> = {};
  let total = 0;
  let writes = 0;
  for (const [key, n] of Object.entries(counts)) {
    const verb = key.split(' ')[0] as string;
    byVerb[verb] = (byVerb[verb] ?? 0) + n;
    total += n;
    if (WRITE_VERBS.has(verb)) writes += n;
  }
  return { total, writes, byVerb };
}

/** Milliseconds since the epoch of an audit timestamp (RFC 3339 with microseconds). */
export function auditTime(e: AuditEvent): number | undefined {
  if (e.requestReceivedTimestamp === undefined) return undefined;
  const ms = Date.parse(e.requestReceivedTimestamp);
  return Number.isNaN(ms) ? undefined : ms;
}
