// What the planner sees of the cluster: ReplicaSets and Services trimmed to
// the fields Teal reads, so thousands of them stay cheap in the cache.
import {
  ANN_APPLIED,
  ANN_COMMIT,
  ANN_IMAGE,
  ANN_ORIGINAL_SELECTOR,
  ANN_REVISION,
  ANN_SCALE_DOWN_AT,
  LABEL_APP,
  LABEL_HASH,
} from './labels.ts';

export interface ObjectRef {
  namespace: string;
  name: string;
  resourceVersion: string;
}

export interface ObservedReplicaSet extends ObjectRef {
  app: string;
  hash: string;
  revision: number;
  image: string;
  commit?: string;
  ownerUid?: string;
  createdAt: string;
  scaleDownAt?: string;
  generation: number;
  specReplicas: number;
  observedGeneration: number;
  replicas: number;
  readyReplicas: number;
  availableReplicas: number;
  deleting: boolean;
}

export interface ObservedService extends ObjectRef {
  app?: string;
  selector: Record<string, string>;
  ownerUid?: string;
  /** Set when Teal adopted a Service it did not create. */
  originalSelector?: string;
  appliedHash?: string;
}

export interface Observed {
  replicaSets: ObservedReplicaSet[];
  activeService?: ObservedService;
  previewService?: ObservedService;
}

type Raw = {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { uid: string; controller?: boolean; kind: string }[];
  };
  spec?: { replicas?: number; selector?: Record<string, string> };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
  };
};

const time = (t: string | Date | undefined): string => (t instanceof Date ? t.toISOString() : (t ?? ''));
const controllerUid = (raw: Raw): string | undefined =>
  raw.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'App')?.uid;

export function observeReplicaSet(raw: unknown): ObservedReplicaSet | undefined {
  const rs = raw as Raw;
  const m = rs.metadata;
  const app = m?.labels?.[LABEL_APP];
  const hash = m?.labels?.[LABEL_HASH];
  if (!m?.name || !m.namespace || !app || !hash) return undefined;
  const commit = m.annotations?.[ANN_COMMIT];
  const scaleDownAt = m.annotations?.[ANN_SCALE_DOWN_AT];
  const ownerUid = controllerUid(rs);
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    app,
    hash,
    revision: Number(m.annotations?.[ANN_REVISION] ?? 0) || 0,
    image: m.annotations?.[ANN_IMAGE] ?? '',
    ...(commit ? { commit } : {}),
    ...(ownerUid ? { ownerUid } : {}),
    createdAt: time(m.creationTimestamp),
    ...(scaleDownAt ? { scaleDownAt } : {}),
    generation: m.generation ?? 0,
    specReplicas: rs.spec?.replicas ?? 0,
    observedGeneration: rs.status?.observedGeneration ?? 0,
    replicas: rs.status?.replicas ?? 0,
    readyReplicas: rs.status?.readyReplicas ?? 0,
    availableReplicas: rs.status?.availableReplicas ?? 0,
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
  };
}

export function observeService(raw: unknown): ObservedService | undefined {
  const svc = raw as Raw;
  const m = svc.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const app = m.labels?.[LABEL_APP];
  const originalSelector = m.annotations?.[ANN_ORIGINAL_SELECTOR];
  const appliedHash = m.annotations?.[ANN_APPLIED];
  const ownerUid = controllerUid(svc);
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    ...(app ? { app } : {}),
    selector: { ...(svc.spec?.selector ?? {}) },
    ...(ownerUid ? { ownerUid } : {}),
    ...(originalSelector !== undefined ? { originalSelector } : {}),
    ...(appliedHash ? { appliedHash } : {}),
  };
}

/**
 * Saturated, as Argo Rollouts says: the controller has seen the latest spec,
 * and every one of the wanted pods exists and is available.
 */
export function isFullyAvailable(rs: ObservedReplicaSet, replicas: number): boolean {
  return (
    !rs.deleting &&
    rs.specReplicas === replicas &&
    rs.observedGeneration >= rs.generation &&
    rs.replicas === replicas &&
    rs.availableReplicas === replicas
  );
}

/** Available at a given size or more; for a preview, which may be scaled up already. */
export function isAvailableAt(rs: ObservedReplicaSet, replicas: number): boolean {
  return (
    !rs.deleting &&
    rs.specReplicas >= replicas &&
    rs.observedGeneration >= rs.generation &&
    rs.availableReplicas >= replicas
  );
}
