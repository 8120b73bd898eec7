// Where `kubectl teal dashboard` port-forwards: the operator's Service, as
// the chart and config/ name it, and one ready pod behind it, read from the
// Service's EndpointSlices, which hold both the pods that are ready and the
// Service port's target resolved to a number (a targetPort may be a name).
// Pure: the command reads the objects and hands them here.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';

/** The operator's namespace in the install guide (docs/getting-started.md). */
export const DEFAULT_OPERATOR_NAMESPACE = 'teal-system';
/** The Service's name: the chart's for release "teal", then config/'s (make deploy). */
export const DEFAULT_SERVICES = ['teal', 'teal-operator'] as const;
/** The Service port the dashboard is served on, when the Service has several. */
const HTTP_PORT_NAME = 'http';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** The label selector of a Service's EndpointSlices. */
export const endpointSliceSelector = (service: string) => `${SERVICE_NAME_LABEL}=${service}`;

/** A pod and its port, where each forwarded connection goes. */
export interface ForwardTarget {
  namespace: string;
  pod: string;
  port: number;
}

export type TargetOrReason = { ok: true; target: ForwardTarget } | { ok: false; reason: string };

/** The Service's port the operator serves HTTP on: the one named http, or its only port. */
function servicePortName(service: V1Service): { ok: true; name: string | undefined } | { ok: false; reason: string } {
  const ports = service.spec?.ports ?? [];
  const named = ports.find((p) => p.name === HTTP_PORT_NAME);
  if (named) return { ok: true, name: named.name };
  if (ports.length === 1) return { ok: true, name: ports[0]?.name };
  const names = ports.map((p) => p.name ?? String(p.port)).join(', ');
  return {
    ok: false,
    reason: `has ${ports.length === 0 ? 'no ports' : `ports ${names} and none named "${HTTP_PORT_NAME}"`}`,
  };
}

/**
 * The first ready pod behind the Service and the pod port of its HTTP port.
 * The CLI keeps to that one pod, so a login code is spent on the replica that
 * issued it (src/api/session-codes.ts).
 */
export function forwardTargetOf(service: V1Service, slices: readonly V1EndpointSlice[]): TargetOrReason {
  const namespace = service.metadata?.namespace ?? '';
  const name = `Service ${namespace}/${service.metadata?.name ?? ''}`;
  const port = servicePortName(service);
  if (!port.ok) return { ok: false, reason: `${name} ${port.reason}` };
  for (const slice of slices) {
    // An EndpointSlice names a Service's unnamed port "".
    const number = slice.ports?.find((p) => (p.name ?? '') === (port.name ?? ''))?.port;
    if (number === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      const pod = endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined;
      if (pod !== undefined && endpoint.conditions?.ready !== false) {
        return { ok: true, target: { namespace, pod, port: number } };
      }
    }
  }
  return { ok: false, reason: `${name} has no ready pod: is the operator running? (kubectl -n ${namespace} get pods)` };
}

/** A local operator's HTTP address (--address). */
export interface LocalAddress {
  host: string;
  port: number;
  origin: string;
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|\[::1\])$/i;

/**
 * --address: an operator on this machine (make dev), over plain HTTP, which
 * is where the code request sends the kubeconfig's token: another host would
 * see it in the clear, and an https:// operator cannot be relayed byte for
 * byte to a page served over http://127.0.0.1.
 */
export function localAddressOf(value: string): { ok: true; address: LocalAddress } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { ok: false, reason: `--address must be a URL such as http://127.0.0.1:8081, not "${value}"` };
  }
  if (url.protocol !== 'http:') {
    return {
      ok: false,
      reason: `--address must be an http:// URL (the relay carries plain HTTP), not ${url.protocol}//`,
    };
  }
  if (!LOOPBACK.test(url.hostname)) {
    return {
      ok: false,
      reason: `--address must be on this machine (127.0.0.1, localhost or [::1]): the kubeconfig's token would cross the network in the clear to ${url.hostname}`,
    };
  }
  const host = url.hostname === '[::1]' ? '::1' : url.hostname;
  return { ok: true, address: { host, port: url.port === '' ? 80 : Number(url.port), origin: url.origin } };
}

/** --port: a TCP port, or 0 (the default) for a free one. */
export function listenPortOf(value: string | undefined): number | undefined {
  if (value === undefined) return 0;
  if (!/^\d{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port <= 65_535 ? port : undefined;
}
