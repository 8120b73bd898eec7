// The blue/green planner's working state, shared by its steps: what one
// reconcile knows (Rollout), where the desired revision stands (Progress), and
// what it has decided so far (Planner: actions, status, wake-up times).

import type { ArgSource } from '../analysis/args.ts';
import type { MeasurementResult } from '../analysis/measurement.ts';
import type { AnalysisTemplateSpec, Check } from '../app/analysis-schema.ts';
import { setCondition } from '../app/conditions.ts';
import type { PlannerEvent } from '../app/event.ts';
import type { Intent } from '../app/intents.ts';
import type { Slot } from '../app/labels.ts';
import type { AnalysisKind, App, AppStatus, Condition, ConditionType, Phase } from '../app/schema.ts';
import type { BuildDefaults } from '../build/registry.ts';
import type { MeasureRequest, RolloutAction } from './cluster-actions.ts';
import type { MissingCopy } from './config-refs.ts';
import type { Observed, ObservedReplicaSet } from './observed.ts';
import type { Revision } from './replicaset.ts';

/** Where the checks leave a revision's promotion. */
export type Gate =
  | { state: 'open'; why: 'none' | 'passed' | 'skipped' }
  | { state: 'waiting'; message: string }
  | { state: 'failed'; message: string }
  | { state: 'inconclusive'; message: string };

/** One kind of run, as the App's spec and templates make it (see assemble.ts). */
export interface RunSpec {
  checks: Check[];
  args: ArgSource[];
}

export interface PlanInput {
  app: App;
  observed: Observed;
  now: Date;
  /** The revision the spec asks for (its image, or the latest built digest); undefined while unknown. */
  target: Revision | undefined;
  intents: readonly Intent[];
  /** A build of the current commit is running: phase Building unless something else says more. */
  building?: boolean;
  /** The build of the current commit failed: Degraded, while active keeps serving. */
  buildFailure?: string;
  /** The source could not be resolved: Degraded while there is nothing to run yet. */
  sourceFailure?: string;
  /** The operator's registry defaults: an App built without build.image needs a default registry. */
  buildDefaults?: BuildDefaults;
  analysis?: AnalysisObserved;
  /** Copies the App's pods use that someone deleted, with what their sources hold now (config-copies.ts). */
  missingCopies?: readonly MissingCopy[];
}

/** What the checks need from outside the App. */
export interface AnalysisObserved {
  /** The AnalysisTemplates of the App namespace, by name; those that failed validation are left out. */
  templates: ReadonlyMap<string, AnalysisTemplateSpec>;
  /** Templates that failed validation, by name, with why: naming one is an invalid spec. */
  invalidTemplates?: ReadonlyMap<string, string>;
  /** Results of measurements in flight, by key: finished analysis Jobs, and web and prometheus answers. */
  results: ReadonlyMap<string, MeasurementResult>;
}

export interface Plan {
  /** Carried out in order; a failure stops the rest, and the plan's status is not written. */
  actions: RolloutAction[];
  /** Recorded once the status has landed: a conflict re-plans, and the events come with the plan that lands. */
  events: PlannerEvent[];
  status: AppStatus;
  requeueAfterMs?: number;
  /** Measurements to start once `status` has landed, never before (analysis/run.ts rule 1). */
  measurements: MeasureRequest[];
}

export type Desired = Revision & { number: number };

export interface Planner {
  input: PlanInput;
  app: App;
  status: AppStatus;
  actions: RolloutAction[];
  events: PlannerEvent[];
  now: string;
  nowMs: number;
  wakeAt: number[];
  generation: number;
  /** The checks of each kind the spec asks for, with their templates' metrics in. */
  runs: { pre?: RunSpec; post?: RunSpec };
  measure: MeasureRequest[];
  /** Ping-pong: the slot a switch under way in this plan goes to (ping-pong.ts routeTo); the route is its. */
  switching?: Slot;
}

/** What one reconcile knows of the rollout, worked out by the first steps. */
export interface Rollout {
  byHash: Map<string, ObservedReplicaSet>;
  replicas: number;
  previewCount: number;
  paused: boolean;
  /** The revision the spec, or an undo, asks for. */
  desired: Desired | undefined;
  /** The revision that serves: the active Service's, once judged to be Teal's own doing. */
  activeHash: string | undefined;
}

/** Where the desired revision stands after this reconcile. */
export interface Progress {
  phase: Phase;
  message: string;
  /** Waiting for pods (the preview at its size, the promoted revision at full size), or for the route's switch. */
  waiting?: 'preview' | 'full' | 'route';
  /** The revision in preview: the preview Service selects it from the moment its ReplicaSet exists. */
  previewHash?: string;
  previewRS?: ObservedReplicaSet;
  previewReady?: boolean;
  /** The checks that stand where the release is: pre-promotion in preview, post-promotion once active. */
  checks?: { kind: AnalysisKind; gate: Gate };
}

export const emit = (p: Planner, event: PlannerEvent) => p.events.push(event);
export const at = (ms: number) => new Date(ms).toISOString();

export function condition(
  p: Planner,
  type: ConditionType,
  status: Condition['status'],
  reason: string,
  message?: string,
) {
  p.status.conditions = setCondition(
    p.status.conditions,
    { type, status, reason, ...(message ? { message } : {}) },
    p.generation,
    p.now,
  );
}

/** ReplicaSets this plan already writes: later steps leave them be. */
export const touched = (p: Planner): Set<string> =>
  new Set(p.actions.flatMap((a) => (a.kind === 'patchReplicaSet' ? [a.name] : [])));
