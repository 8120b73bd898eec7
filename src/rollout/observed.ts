// What the planner sees of the cluster: ReplicaSets and Services trimmed to
// the fields Teal reads, so thousands of them stay cheap in the cache. Each
// label and annotation read is checked against the shape Teal writes; a bad
// one is treated as absent and listed in `problems`.
import type { AnalysisJobRef } from '../analysis/job.ts';
import {
  commitSha,
  imageReference,
  type ObjectRef,
  objectName,
  objectRef,
  positiveInteger,
  rfc3339Time,
  selectorJson,
  shortHash,
  shown,
  type ValueProblem,
  ValueReader,
} from '../app/cluster-values.ts';
import {
  ANN_APPLIED,
  ANN_COMMIT,
  ANN_IMAGE,
  ANN_ORIGINAL_SELECTOR,
  ANN_REVISION,
  ANN_SCALE_DOWN_AT,
  LABEL_APP,
  LABEL_HASH,
  LABEL_SLOT,
  NO_REVISION,
  SLOTS,
  type Slot,
} from '../app/labels.ts';
import { ANN_CONFIG_COPIES, parseCopies } from './config-refs.ts';
import type { ObservedRoute } from './route.ts';

export interface ObservedReplicaSet extends ObjectRef {
  app: string;
  hash: string;
  revision: number;
  image: string;
  commit?: string;
  ownerUid?: string;
  createdAt: string;
  /** A valid RFC 3339 time, as written (an unreadable one is left out and reported). */
  scaleDownAt?: string;
  generation: number;
  specReplicas: number;
  observedGeneration: number;
  replicas: number;
  readyReplicas: number;
  availableReplicas: number;
  deleting: boolean;
  /** The ConfigMap and Secret copies its template references ("configmap/NAME"), for their clean-up. */
  copies?: string[];
  /** Ping-pong: the slot its pod template puts its pods in (LABEL_SLOT), if it reads as one. */
  slot?: Slot;
  /** Labels and annotations that were ignored, and why. */
  problems?: ValueProblem[];
}

export interface ObservedService extends ObjectRef {
  app?: string;
  selector: Record<string, string>;
  ownerUid?: string;
  /** Set when Teal adopted a Service it did not create. */
  originalSelector?: string;
  appliedHash?: string;
  /** Labels, annotations and selector values that were ignored, and why. */
  problems?: ValueProblem[];
}

/** One endpoint of an EndpointSlice: the pod it targets and its conditions (nil read as the API says: ready). */
export interface ObservedEndpoint {
  /** The targetRef's name when it is a Pod. */
  pod?: string;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
}

/** An EndpointSlice (discovery.k8s.io/v1) trimmed to the Service it belongs to and its endpoints. */
export interface ObservedEndpointSlice extends ObjectRef {
  /** Its kubernetes.io/service-name label. */
  service: string;
  /** Its teal.dev/app label, which the EndpointSlice controller copies from the Service's labels. */
  app?: string;
  endpoints: ObservedEndpoint[];
}

export interface Observed {
  replicaSets: ObservedReplicaSet[];
  activeService?: ObservedService;
  /** The active Service's EndpointSlices, for a drain-verified switch (spec.strategy.blueGreen.switch). */
  activeEndpointSlices?: readonly ObservedEndpointSlice[];
  previewService?: ObservedService;
  /** The App's analysis Jobs: one per job-check measurement. */
  analysisJobs?: readonly AnalysisJobRef[];
  /** Ping-pong: the Services of the two slots, as the cache holds them. */
  slotServices?: Partial<Record<Slot, ObservedService>>;
  /** Ping-pong: the HTTPRoute the App names (route.ts), or why it cannot be read. */
  routing?: { route?: ObservedRoute; unavailable?: string };
}

type Raw<Spec> = {
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
  spec?: Spec;
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
  };
};

const time = (t: string | Date | undefined): string => (t instanceof Date ? t.toISOString() : (t ?? ''));
type RawReplicaSet = Raw<{
  replicas?: number;
  selector?: { matchLabels?: Record<string, string> };
  template?: { metadata?: { labels?: Record<string, string> } };
}>;
type RawService = Raw<{ selector?: Record<string, string> }>;

const controllerUid = (raw: Raw<unknown>): string | undefined =>
  raw.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'App')?.uid;

export function observeReplicaSet(raw: unknown): ObservedReplicaSet | undefined {
  const rs = raw as RawReplicaSet;
  const m = rs.metadata ?? {};
  const ref = objectRef(m);
  if (!ref) return undefined;
  const read = new ValueReader(`ReplicaSet ${ref.name}`);
  // A ReplicaSet's selector cannot change after creation: it holds the App and hash Teal gave it.
  const selector = rs.spec?.selector?.matchLabels;
  const app = read.fixedLabel(m.labels, selector, 'selector', LABEL_APP, objectName);
  const hash = read.fixedLabel(m.labels, selector, 'selector', LABEL_HASH, shortHash);
  if (!app || !hash) return undefined;
  const annotations = m.annotations;
  const commit = read.annotation(annotations, ANN_COMMIT, commitSha);
  const scaleDownAtMs = read.annotation(annotations, ANN_SCALE_DOWN_AT, rfc3339Time);
  const revision = read.annotation(annotations, ANN_REVISION, positiveInteger) ?? 0;
  const image = read.annotation(annotations, ANN_IMAGE, imageReference) ?? '';
  const ownerUid = controllerUid(rs);
  const copies = parseCopies(annotations?.[ANN_CONFIG_COPIES]);
  const slot = read.label(rs.spec?.template?.metadata?.labels, LABEL_SLOT, slotName);
  return {
    ...ref,
    app,
    hash,
    ...(copies.length > 0 ? { copies } : {}),
    ...(slot ? { slot } : {}),
    revision,
    image,
    ...(commit ? { commit } : {}),
    ...(ownerUid ? { ownerUid } : {}),
    createdAt: time(m.creationTimestamp),
    ...(scaleDownAtMs !== undefined ? { scaleDownAt: annotations?.[ANN_SCALE_DOWN_AT] ?? '' } : {}),
    generation: m.generation ?? 0,
    specReplicas: rs.spec?.replicas ?? 0,
    observedGeneration: rs.status?.observedGeneration ?? 0,
    replicas: rs.status?.replicas ?? 0,
    readyReplicas: rs.status?.readyReplicas ?? 0,
    availableReplicas: rs.status?.availableReplicas ?? 0,
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    ...read.found(),
  };
}

const slotName = {
  expected: `one of ${SLOTS.join(', ')}`,
  parse: (v: string): Slot | undefined => SLOTS.find((s) => s === v),
};

export function observeService(raw: unknown): ObservedService | undefined {
  const svc = raw as RawService;
  const m = svc.metadata ?? {};
  const ref = objectRef(m);
  if (!ref) return undefined;
  const read = new ValueReader(`Service ${ref.name}`);
  const app = read.label(m.labels, LABEL_APP, objectName);
  const originalSelector = read.annotation(m.annotations, ANN_ORIGINAL_SELECTOR, selectorJson);
  const appliedHash = read.annotation(m.annotations, ANN_APPLIED, shortHash);
  const selector = { ...(svc.spec?.selector ?? {}) };
  const selected = selector[LABEL_HASH];
  if (selected !== undefined && selected !== NO_REVISION && shortHash.parse(selected) === undefined) {
    read.report('InvalidSelector', `selector ${LABEL_HASH}=${shown(selected)}`, `is not ${shortHash.expected}`);
    delete selector[LABEL_HASH];
  }
  const ownerUid = controllerUid(svc);
  return {
    ...ref,
    ...(app ? { app } : {}),
    selector,
    ...(ownerUid ? { ownerUid } : {}),
    ...(originalSelector !== undefined ? { originalSelector } : {}),
    ...(appliedHash ? { appliedHash } : {}),
    ...read.found(),
  };
}

/** The label the EndpointSlice controller puts on a Service's slices. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';

type RawEndpointSlice = Raw<unknown> & {
  endpoints?: {
    targetRef?: { kind?: string; name?: string } | null;
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null } | null;
  }[];
};

export function observeEndpointSlice(raw: unknown): ObservedEndpointSlice | undefined {
  const slice = raw as RawEndpointSlice;
  const ref = objectRef(slice.metadata ?? {});
  const service = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
  if (!ref || !service) return undefined;
  const endpoints = (slice.endpoints ?? []).map((e): ObservedEndpoint => {
    const c = e.conditions ?? {};
    // discovery.k8s.io/v1: a nil ready means ready; a nil serving means as ready; nil terminating, not.
    const ready = c.ready ?? true;
    const pod = e.targetRef?.kind === 'Pod' ? e.targetRef.name : undefined;
    return { ...(pod ? { pod } : {}), ready, serving: c.serving ?? ready, terminating: c.terminating ?? false };
  });
  const app = slice.metadata?.labels?.[LABEL_APP];
  return { ...ref, service, ...(app ? { app } : {}), endpoints };
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
