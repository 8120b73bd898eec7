import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type ConfigurationOptions, KubeConfig, Observable, type RequestContext } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';
import { applyTokenFiles, kubeconfigPaths } from './token-file.ts';

/** Limits on every request a KubeConfig makes, watches aside. */
export interface RequestBounds {
  /** Each request, its response body included, is aborted after this long. */
  timeoutMs?: number;
  /** Aborts every request in flight and every later one: the fence of a replica that lost its lease. */
  fence?: AbortSignal;
}

export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`API request timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Watches (and followed logs) are meant to stay open: their liveness is the
 * informer's watchdog, not a request timeout.
 */
export function isLongRunning(url: string): boolean {
  const query = new URL(url).searchParams;
  return query.get('watch') === 'true' || query.get('follow') === 'true';
}

/**
 * The signal one request runs under: its own signal if it has one, the fence,
 * and a timer started now. Undefined when nothing bounds it.
 */
export function requestSignal(bounds: RequestBounds, own?: AbortSignal): AbortSignal | undefined {
  const signals: AbortSignal[] = [];
  if (own) signals.push(own);
  if (bounds.fence) signals.push(bounds.fence);
  if (bounds.timeoutMs !== undefined) signals.push(timeoutSignal(bounds.timeoutMs));
  return signals.length > 1 ? AbortSignal.any(signals) : signals[0];
}

/** AbortSignal.timeout, with a reason that says how long it waited. */
function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  // Nothing tells when the request ends, so the timer just runs out; unref'd, it keeps no process alive.
  setTimeout(() => controller.abort(new RequestTimeoutError(ms)), ms).unref();
  return controller.signal;
}

/**
 * Options for one client-node call that abort it also when `signal` does, on
 * top of the KubeConfig's bounds (its timeout and the fence), never instead of
 * them: client-node runs middleware after the KubeConfig has set the
 * request's signal, so a middleware that set its own would drop them.
 */
export function alsoAbortedBy(signal: AbortSignal): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (context) => {
          const bounds = context.getSignal();
          context.setSignal(bounds ? AbortSignal.any([bounds, signal]) : signal);
          return new Observable(Promise.resolve(context));
        },
        post: (response) => new Observable(Promise.resolve(response)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

/** Why an attempt with a deadline (withDeadline) was cut short. */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * Runs `attempt` under a signal aborted by `stop` and once `ms` have passed,
 * whichever comes first: several requests that together must end by a
 * deadline (client-go's renew deadline). The timer ends with the attempt.
 */
export async function withDeadline<T>(
  ms: number,
  stop: AbortSignal | undefined,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineError(`deadline of ${Math.round(ms)} ms passed`)), ms);
  try {
    return await attempt(stop ? AbortSignal.any([stop, deadline.signal]) : deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * client-node 2.0 builds a new undici Agent, with its own TLS context and
 * keep-alive socket, for every request. Under a controller's request rate
 * that costs hundreds of MB; one shared Agent per process does the same job.
 * Auth headers (tokens, exec plugins) are still applied per request.
 *
 * Every request also gets its bounds here, the one step they all pass
 * through, so no call site can forget them. (Middleware runs later: a call
 * with a signal of its own adds it with alsoAbortedBy, keeping these.)
 */
class PooledKubeConfig extends KubeConfig {
  private shared: Dispatcher | undefined;
  private readonly bounds: RequestBounds;

  constructor(bounds: RequestBounds) {
    super();
    this.bounds = bounds;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const signal = isLongRunning(context.getUrl()) ? undefined : requestSignal(this.bounds, context.getSignal());
    if (signal) context.setSignal(signal);
    const fresh = context.getDispatcher() as Dispatcher | undefined;
    if (!fresh) return;
    if (!this.shared) {
      this.shared = fresh;
      return;
    }
    context.setDispatcher(this.shared as never);
    // Never used: it has no socket yet, closing it frees it at once.
    if (fresh !== this.shared) void fresh.close();
  }
}

/** Inlines certificate files, read once, instead of on every request. */
function inlineFiles(kc: KubeConfig): void {
  const data = (file: string | undefined) =>
    file && existsSync(file) ? readFileSync(file).toString('base64') : undefined;
  kc.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, caData: c.caData ?? data(c.caFile), caFile: undefined })),
    users: kc.users.map((u) => ({
      ...u,
      certData: u.certData ?? data(u.certFile),
      certFile: undefined,
      keyData: u.keyData ?? data(u.keyFile),
      keyFile: undefined,
    })),
    contexts: kc.contexts,
    currentContext: kc.getCurrentContext(),
  });
}

/**
 * Loads a kubeconfig: an explicit path, else $KUBECONFIG or ~/.kube/config,
 * else the in-cluster ServiceAccount. client-node silently falls back to
 * http://localhost:8080 when it finds nothing; that is refused here.
 * Every request but a watch is held to bounds.
 */
export function loadKubeConfig(path?: string, bounds: RequestBounds = {}): KubeConfig {
  const kc = new PooledKubeConfig(bounds);
  if (path) {
    kc.loadFromFile(path);
    applyTokenFiles(kc, kubeconfigPaths(path));
    inlineFiles(kc);
  } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
    kc.loadFromDefault();
    applyTokenFiles(kc, kubeconfigPaths());
    inlineFiles(kc);
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
    // In-cluster: the token file is re-read by client-node, so rotation keeps working.
    kc.loadFromCluster();
  } else {
    throw new Error('no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a cluster');
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server || server === 'http://localhost:8080') {
    throw new Error(`kubeconfig has no usable cluster (current context: "${kc.getCurrentContext()}")`);
  }
  return kc;
}
