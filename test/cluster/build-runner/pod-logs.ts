// `kubectl logs` of a real build pod: KWOK's kubelet server answers pods/log
// from a file named by a Logs object (kwok.x-k8s.io/v1alpha1) of the same name
// as the pod. The runner points one at the container's CRI log as the build
// starts; the pod owns it, so it goes with the pod. It needs the cluster to run
// KWOK with the Logs CRD enabled and its debugging handlers on.
import { CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';

const GROUP = 'kwok.x-k8s.io';
const VERSION = 'v1alpha1';

export type LogsPublisher = (pod: V1Pod, container: string, criLogFile: string) => Promise<void>;

/** Publishes each build's log; when the cluster has no Logs CRD, says so once and carries on. */
export function logsPublisher(kc: KubeConfig, log: (line: string) => void): LogsPublisher {
  const custom = kc.makeApiClient(CustomObjectsApi);
  let unavailable = false;
  return async (pod, container, criLogFile) => {
    if (unavailable) return;
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? '';
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'Logs',
      metadata: {
        name,
        namespace,
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid: pod.metadata?.uid ?? '' }],
      },
      spec: { logs: [{ containers: [container], logsFile: criLogFile, follow: true }] },
    };
    try {
      await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'logs', body });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      unavailable = true;
      log("the cluster's KWOK has no Logs CRD: kubectl logs shows nothing of real builds");
    }
  };
}
