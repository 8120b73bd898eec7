// What the App reconciler reads from and writes to the API server, in one
// injected client: the writes of apply.ts, and the few reads the cache cannot
// serve (Secrets, which Teal does not watch). It knows the App, so it lives in
// the controller's room, not in src/kube, which knows only Kubernetes.
import { CoreV1Api, CustomObjectsApi, type KubeConfig, NetworkingV1Api, type V1Pod } from '@kubernetes/client-node';
import { ANN_APPLIED } from '../app/labels.ts';
import { apiStatusOf, ignoreNotFound } from '../kube/errors.ts';
import type { ObservedExposure } from '../previews/exposure.ts';
import { ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION } from '../rollout/route.ts';
import { Writer } from './apply.ts';

/** A ConfigMap's or Secret's content; Secret data as the API gives it (base64). */
export interface ConfigSource {
  uid: string;
  type?: string;
  data: Record<string, string>;
  binaryData?: Record<string, string>;
}

export class ClusterClient extends Writer {
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private readonly customObjects: CustomObjectsApi;

  constructor(kc: KubeConfig) {
    super(kc);
    this.core = kc.makeApiClient(CoreV1Api);
    this.networking = kc.makeApiClient(NetworkingV1Api);
    this.customObjects = kc.makeApiClient(CustomObjectsApi);
  }

  /**
   * The Ingresses or HTTPRoutes a label selector picks in one namespace, as the
   * previews planner compares them (name, the teal.dev/applied hash): listed
   * only for a parent App with spec.previews.exposure, rather than every
   * replica caching every Ingress. No HTTPRoute API in the cluster: none.
   */
  async listExposures(
    namespace: string,
    kind: ObservedExposure['kind'],
    labelSelector: string,
  ): Promise<ObservedExposure[]> {
    type Listed = { items?: { metadata?: { name?: string; annotations?: Record<string, string> } }[] };
    let listed: Listed;
    if (kind === 'Ingress') listed = await this.networking.listNamespacedIngress({ namespace, labelSelector });
    else {
      const routes = { group: ROUTE_GROUP, version: ROUTE_VERSION, plural: ROUTE_PLURAL, namespace, labelSelector };
      try {
        listed = (await this.customObjects.listNamespacedCustomObject(routes)) as Listed;
      } catch (err) {
        if (apiStatusOf(err)?.code !== 404) throw err;
        listed = { items: [] };
      }
    }
    return (listed.items ?? []).flatMap((o) =>
      o.metadata?.name ? [{ kind, name: o.metadata.name, applied: o.metadata.annotations?.[ANN_APPLIED] }] : [],
    );
  }

  /**
   * One value of a Secret, decoded, or undefined when the Secret or the key is
   * missing. For a measurement about to be taken: never logged, never kept.
   */
  async readSecretValue(namespace: string, name: string, key: string): Promise<string | undefined> {
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    const data = secret?.data?.[key];
    if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
    return secret?.stringData?.[key];
  }

  /**
   * A ConfigMap or Secret as a copy needs it (config-refs.ts): read when a
   * copy is made and when a Secret's digest is due, never kept or logged.
   */
  async readConfigSource(
    kind: 'configmap' | 'secret',
    namespace: string,
    name: string,
  ): Promise<ConfigSource | undefined> {
    if (kind === 'configmap') {
      const cm = await ignoreNotFound(this.core.readNamespacedConfigMap({ namespace, name }));
      if (!cm) return undefined;
      return { uid: cm.metadata?.uid ?? '', data: cm.data ?? {}, binaryData: cm.binaryData ?? {} };
    }
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    if (!secret) return undefined;
    return { uid: secret.metadata?.uid ?? '', type: secret.type ?? 'Opaque', data: secret.data ?? {} };
  }

  /** The first bytes of a container's log, or undefined when the node does not serve it. */
  async readLogHead(namespace: string, name: string, container: string, bytes: number): Promise<string | undefined> {
    return this.core
      .readNamespacedPodLog({ namespace, name, container, limitBytes: bytes })
      .then((log) => String(log))
      .catch(() => undefined);
  }

  /** The names of the Secret's keys (never its values), or undefined when there is no such Secret. */
  /** The uids of a Secret's owners, or undefined when there is no such Secret. */
  async readOwners(_kind: 'secret', namespace: string, name: string): Promise<string[] | undefined> {
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    return secret ? (secret.metadata?.ownerReferences ?? []).map((o) => o.uid) : undefined;
  }

  async readSecretKeys(namespace: string, name: string): Promise<string[] | undefined> {
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    return secret ? Object.keys(secret.data ?? {}) : undefined;
  }

  /**
   * The pods a label selector picks in one namespace: a restart reads its
   * App's pods while it runs, rather than every replica caching every pod.
   */
  async listPods(namespace: string, labelSelector: string): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace, labelSelector })).items;
  }
}
