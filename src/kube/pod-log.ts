// A container's log as a stream, read through the API server (GET
// pods/{name}/log). client-node's Log pipes the answer into a stream of its
// own and leaves its errors unhandled, so a read stopped halfway (the reader
// went) would throw in the process; here the caller reads the body itself,
// at its own pace (backpressure reaches the API server), and stops it with
// its signal. follow=true marks it long-running: no request deadline bounds
// it (kube/client.ts).
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { statusFromBody } from './errors.ts';

export interface PodLogRequest {
  namespace: string;
  pod: string;
  container: string;
  follow: boolean;
}

/** A log request the API server refused: its HTTP status and Status message (apiStatusOf reads it). */
export class PodLogError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.name = 'PodLogError';
    this.statusCode = statusCode;
  }
}

/** The log's bytes as they come; throws PodLogError when the API server answers other than 200. */
export async function openPodLog(
  kc: KubeConfig,
  request: PodLogRequest,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the kubeconfig');
  const { namespace, pod, container, follow } = request;
  const url = new URL(
    `${cluster.server}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/log`,
  );
  url.searchParams.set('container', container);
  url.searchParams.set('follow', String(follow));
  const ctx = new RequestContext(url.toString(), HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  const res = await fetch(url, { method: 'GET', headers: ctx.getHeaders(), dispatcher: ctx.getDispatcher(), signal });
  if (res.status !== 200 || !res.body) {
    const text = await res.text().catch(() => '');
    throw new PodLogError(res.status, statusFromBody(res.status, text).message || res.statusText);
  }
  return res.body;
}
