import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * Loads a kubeconfig: an explicit path, else $KUBECONFIG or ~/.kube/config,
 * else the in-cluster ServiceAccount. client-node silently falls back to
 * http://localhost:8080 when it finds nothing; that is refused here.
 */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  if (path) {
    kc.loadFromFile(path);
  } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
    kc.loadFromDefault();
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
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
