// What the blue/green planner asks of the cluster, as data: the writes to
// ReplicaSets, Services and copies, and the measurements to take. The planner
// is pure; the controller's executor (controller/executor.ts, where the one
// union of every planner's actions lives) carries them out in order.
import type { ArgSource, Builtins } from '../analysis/args.ts';
import type { MeasureAction } from '../analysis/run.ts';
import type { Check } from '../app/analysis-schema.ts';
import type { OwnerReference } from '../app/owner.ts';
import type { AnalysisKind } from '../app/schema.ts';
import type { ConfigCopy, ConfigKind } from './config-refs.ts';
import type { ReplicaSetManifest } from './replicaset.ts';
import type { ServiceManifest, ServiceRole } from './service.ts';

/** Writes to ReplicaSets and Services: what the blue/green planner decides. */
export type RolloutAction =
  | { kind: 'createReplicaSet'; manifest: ReplicaSetManifest }
  | { kind: 'patchReplicaSet'; name: string; replicas?: number; scaleDownAt?: string | null }
  | { kind: 'deleteReplicaSet'; name: string }
  /** Before the ReplicaSet that references it: read from its source, checked against the digest it is named after. */
  | { kind: 'createConfigCopy'; copy: ConfigCopy; app: string; owner: OwnerReference }
  /** With the last ReplicaSet that referenced it (config-refs.ts copiesFreedBy). */
  | { kind: 'deleteConfigCopy'; copyKind: ConfigKind; name: string; appUid: string }
  | { kind: 'applyService'; role: ServiceRole; manifest: ServiceManifest }
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
  kind: AnalysisKind;
  check: Check;
  args: ArgSource[];
  builtins: Builtins;
};
