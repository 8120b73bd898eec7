// The one read the namespace default needs: a key of a ConfigMap, on demand
// (only when an App without destinations has something to send), never
// watched or cached.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ignoreNotFound } from '../kube/errors.ts';
import type { ConfigMapRead } from './destinations.ts';

export function configMapReader(kc: KubeConfig): ConfigMapRead {
  const core = kc.makeApiClient(CoreV1Api);
  return async (namespace, name, key) => {
    const map = await ignoreNotFound(core.readNamespacedConfigMap({ namespace, name }));
    return map?.data?.[key];
  };
}
