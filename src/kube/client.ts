import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';

/**
 * client-node 2.0 builds a new undici Agent, with its own TLS context and
 * keep-alive socket, for every request. Under a controller's request rate
 * that costs hundreds of MB; one shared Agent per process does the same job.
 * Auth headers (tokens, exec plugins) are still applied per request.
 */
class PooledKubeConfig extends KubeConfig {
  private shared: Dispatcher | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
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
 */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new PooledKubeConfig();
  if (path) {
    kc.loadFromFile(path);
    inlineFiles(kc);
  } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
    kc.loadFromDefault();
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
