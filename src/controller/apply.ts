// Writes to the API server: server-side apply with field manager "teal",
// merge patches for small changes, and the App status with optimistic
// concurrency.
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { API_VERSION, APP_API, type AppStatus, KIND } from '../app/schema.ts';
import { apiStatusOf, ignoreNotFound } from '../kube/errors.ts';
import { LABEL_CONFIG_COPY } from '../rollout/config-refs.ts';
import { ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION } from '../rollout/route.ts';

export const FIELD_MANAGER = 'teal';

export class Writer {
  private readonly objects: KubernetesObjectApi;
  private readonly apps: AppsV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly batch: BatchV1Api;
  private readonly coreApi: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.batch = kc.makeApiClient(BatchV1Api);
    this.coreApi = kc.makeApiClient(CoreV1Api);
    this.objects = KubernetesObjectApi.makeApiClient(kc);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
  }

  /** Server-side apply; force, because Teal is the authority on the fields it sets. */
  async apply<T extends KubernetesObject>(manifest: T): Promise<T> {
    return this.objects.patch(manifest, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  async patchReplicaSet(namespace: string, name: string, patch: object): Promise<void> {
    await this.apps.patchNamespacedReplicaSet(
      { namespace, name, body: patch, fieldManager: FIELD_MANAGER },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** A JSON Patch of an HTTPRoute (rollout/route.ts routePatch: tested, weights only). */
  async patchRoute(namespace: string, name: string, ops: readonly object[]): Promise<void> {
    await this.custom.patchNamespacedCustomObject(
      {
        group: ROUTE_GROUP,
        version: ROUTE_VERSION,
        plural: ROUTE_PLURAL,
        namespace,
        name,
        body: ops,
        fieldManager: FIELD_MANAGER,
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
  }

  async deleteReplicaSet(namespace: string, name: string): Promise<void> {
    await ignoreNotFound(this.apps.deleteNamespacedReplicaSet({ namespace, name, propagationPolicy: 'Background' }));
  }

  /** Creates an object that never changes once made (a config copy); false when one of that name exists. */
  async createOnce<T extends KubernetesObject>(manifest: T): Promise<boolean> {
    try {
      await this.objects.create(manifest, undefined, undefined, FIELD_MANAGER);
      return true;
    } catch (err) {
      if (apiStatusOf(err)?.code !== 409) throw err;
      return false;
    }
  }

  /**
   * Deletes a copy Teal made for the App (config-refs.ts), and nothing else:
   * the name comes from a ReplicaSet annotation anyone with edit rights can
   * change, so the object must carry the copy label and the App as owner, and
   * the delete is bound to the uid that was checked.
   */
  async deleteConfigCopy(kind: 'configmap' | 'secret', namespace: string, name: string, appUid: string): Promise<void> {
    const read =
      kind === 'configmap'
        ? ignoreNotFound(this.coreApi.readNamespacedConfigMap({ namespace, name }))
        : ignoreNotFound(this.coreApi.readNamespacedSecret({ namespace, name }));
    const meta = (await read)?.metadata;
    const ours =
      meta?.labels?.[LABEL_CONFIG_COPY] === 'true' && (meta.ownerReferences ?? []).some((o) => o.uid === appUid);
    if (!meta?.uid || !ours) return;
    const body = { preconditions: { uid: meta.uid } };
    if (kind === 'configmap') await ignoreNotFound(this.coreApi.deleteNamespacedConfigMap({ namespace, name, body }));
    else await ignoreNotFound(this.coreApi.deleteNamespacedSecret({ namespace, name, body }));
  }

  /**
   * Deletes a preview's child App, bound to the uid the planner saw: an App
   * made again under that name since is not touched. Background: what it
   * owns (its ReplicaSets, Services, Ingress) goes with it.
   */
  async deleteApp(namespace: string, name: string, uid: string): Promise<void> {
    const body = { preconditions: { uid }, propagationPolicy: 'Background' };
    await ignoreNotFound(this.custom.deleteNamespacedCustomObject({ ...APP_API, namespace, name, body }));
  }

  async deleteJob(namespace: string, name: string): Promise<void> {
    // Background: the Job's pods go with it.
    await ignoreNotFound(this.batch.deleteNamespacedJob({ namespace, name, propagationPolicy: 'Background' }));
  }

  /** Lets a suspended build Job start; bound to its uid, so a Job made again under that name is not touched. */
  async resumeJob(namespace: string, name: string, uid: string): Promise<void> {
    await this.batch.patchNamespacedJob(
      { namespace, name, body: { metadata: { uid }, spec: { suspend: false } }, fieldManager: FIELD_MANAGER },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /**
   * Evicts a pod, as `kubectl drain` does, so the API server holds it to its
   * PodDisruptionBudgets. False when one refused (429): no failure, the
   * restart asks again later. A pod already gone counts as evicted.
   */
  async evictPod(namespace: string, name: string): Promise<boolean> {
    const body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } };
    try {
      await ignoreNotFound(this.coreApi.createNamespacedPodEviction({ namespace, name, body }));
      return true;
    } catch (err) {
      if (apiStatusOf(err)?.code === 429) return false;
      throw err;
    }
  }

  /**
   * Replaces the App status, guarded by the resourceVersion the plan was made
   * from: a stale cache gets a 409 and the reconcile runs again, so nothing in
   * status (history above all) is ever written twice.
   */
  async writeStatus(namespace: string, name: string, resourceVersion: string, status: AppStatus): Promise<string> {
    const body = { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, resourceVersion }, status };
    const result = (await this.custom.replaceNamespacedCustomObjectStatus({
      ...APP_API,
      namespace,
      name,
      body,
      fieldManager: FIELD_MANAGER,
    })) as { metadata?: { resourceVersion?: string } };
    return result.metadata?.resourceVersion ?? '';
  }

  /** Merge patch of App metadata (finalizers). */
  async patchAppMetadata(namespace: string, name: string, metadata: object): Promise<void> {
    await this.custom.patchNamespacedCustomObject(
      { ...APP_API, namespace, name, body: { metadata }, fieldManager: FIELD_MANAGER },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}
