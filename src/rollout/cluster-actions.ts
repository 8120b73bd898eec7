// What the blue/green planner asks of the cluster, as data: the writes to
// ReplicaSets, Services and copies, and the measurements to take. The planner
// is pure; the controller's executor (controller/executor.ts, where the one
// union of every planner's actions lives) carries them out in order.
import type { ArgSource, Builtins } from '../analysis/args.ts';
import type { MeasureAction } from '../analysis/run.ts';
import type { Expected } from '../analysis/traffic.ts';
import type { Check } from '../app/analysis-schema.ts';
import type { Slot } from '../app/labels.ts';
import type { OwnerReference } from '../app/owner.ts';
import type { AnalysisKind } from '../app/schema.ts';
import type { TrafficCheck } from '../app/traffic-schema.ts';
import type { ConfigCopy, ConfigKind } from './config-refs.ts';
import type { ReplicaSetManifest } from './replicaset.ts';
import type { JsonPatchOp } from './route.ts';
import type { ServiceManifest, ServiceRole } from './service.ts';

/** Writes to ReplicaSets and Services: what the blue/green planner decides. */
export type RolloutAction =
  | { kind: 'createReplicaSet'; manifest: ReplicaSetManifest }
  /** slot: ping-pong, the slot its pod template puts new pods in (only while it has none). */
  | { kind: 'patchReplicaSet'; name: string; replicas?: number; scaleDownAt?: string | null; slot?: Slot }
  | { kind: 'deleteReplicaSet'; name: string }
  /** Before the ReplicaSet that references it: read from its source, checked against the digest it is named after. */
  | { kind: 'createConfigCopy'; copy: ConfigCopy; app: string; owner: OwnerReference }
  /** With the last ReplicaSet that referenced it (config-refs.ts copiesFreedBy). */
  | { kind: 'deleteConfigCopy'; copyKind: ConfigKind; name: string; appUid: string }
  | { kind: 'applyService'; role: ServiceRole | Slot; manifest: ServiceManifest }
  /** Ping-pong: the switch, one JSON Patch of the weights of the slot Services' backendRefs (route.ts routePatch). */
  | { kind: 'patchRoute'; name: string; to: Slot; ops: JsonPatchOp[] }
  | { kind: 'deleteAnalysisJob'; name: string; why: string }
  /** restart: a pod of the active revision, through the Eviction API (restart.ts); a refusal (429) is no failure. */
  | { kind: 'evictPod'; name: string; why: string };

/**
 * A measurement to take (or, after a restart, to carry on with): not a write
 * the plan makes but one the controller starts once the status naming it as
 * started has landed (write-ahead, analysis/run.ts), then reports back by key.
 * The check still holds its placeholders: only the controller reads Secrets.
 */
export type MeasureRequest = Omit<MeasureAction, 'type' | 'check'> & {
  /** traffic: the switch's traffic check (analysis/traffic.ts), a web request judged by the revision it names. */
  kind: AnalysisKind | 'traffic';
  check: Check;
  args: ArgSource[];
  builtins: Builtins;
  /** The traffic check's: where the answer names its revision, and the revision expected. */
  revision?: { read: Pick<TrafficCheck, 'revisionHeader' | 'jsonPath'>; expected: Expected };
};
