// A small model of the cluster for driving the blue/green planner (plan())
// in unit tests, with what the checks need besides: the planner's actions are
// applied to the observed state, "pods" become available unless a test holds
// them back, a status write can be lost (a conflict, or kill -9 between the
// writes), measurement results come in by key as the analysis runner reports
// them, and a job check's measurement gets its Job once the status that
// starts it has landed (write-ahead). test/unit/bluegreen.test.ts drives the
// planner's rules without checks through the same model.

import { type AnalysisJobRef, analysisJobName } from '../../src/analysis/job.ts';
import type { MeasurementResult } from '../../src/analysis/measurement.ts';
import { inFlight } from '../../src/analysis/run.ts';
import { trafficInFlight } from '../../src/analysis/traffic.ts';
import type { AnalysisTemplateSpec } from '../../src/app/analysis-schema.ts';
import type { PlannerEvent } from '../../src/app/event.ts';
import { podTemplateHash } from '../../src/app/hash.ts';
import type { Intent } from '../../src/app/intents.ts';
import { LABEL_HASH, LABEL_SLOT, type Slot } from '../../src/app/labels.ts';
import type { App, AppInput, AppStatus, Condition } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { type Plan, plan } from '../../src/rollout/bluegreen.ts';
import type { MeasureRequest, RolloutAction } from '../../src/rollout/cluster-actions.ts';
import type { MissingCopy } from '../../src/rollout/config-refs.ts';
import type {
  Observed,
  ObservedEndpointSlice,
  ObservedReplicaSet,
  ObservedService,
} from '../../src/rollout/observed.ts';
import type { ObservedPod } from '../../src/rollout/restart.ts';
import type { ObservedRoute } from '../../src/rollout/route.ts';
import { imageApp } from '../fixtures/apps.ts';

export const T0 = Date.parse('2026-11-21T10:00:00Z');

/** App "web" in "ns": 3 replicas, a preview of 1, manual promotion unless `edit` says otherwise. */
export function makeApp(edit: (a: AppInput) => void = () => {}): App {
  const input = imageApp('web');
  input.metadata = { name: 'web', namespace: 'ns', uid: 'uid-1', generation: 1 };
  input.spec.replicas = 3;
  input.spec.strategy = { blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 1 } };
  edit(input);
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.app;
}

export interface ReconcileOptions {
  /** The actions are carried out, but the status write (and its events) is lost. */
  loseStatus?: boolean;
}

export class World {
  app: App;
  now = T0;
  replicaSets = new Map<string, ObservedReplicaSet>();
  services = new Map<string, ObservedService>();
  /** Hashes whose pods never become ready. */
  stuck = new Set<string>();
  /** Events of the plans whose status landed, oldest first. */
  events: PlannerEvent[] = [];
  last: RolloutAction[] = [];
  /** The measurements the last plan handed out. */
  measured: MeasureRequest[] = [];
  requeue: number | undefined;
  /** Results the runner holds for measurements in flight, by key (web and prometheus answers). */
  results = new Map<string, MeasurementResult>();
  /** The App's analysis Jobs, as the Job cache sees them. */
  jobs: AnalysisJobRef[] = [];
  templates = new Map<string, AnalysisTemplateSpec>();
  invalidTemplates = new Map<string, string>();
  /** Copies in use that someone deleted, as the reconciler finds them. */
  missingCopies: MissingCopy[] = [];
  /** Ping-pong: the HTTPRoute as the route cache holds it, and why it cannot be read. */
  route: ObservedRoute | undefined;
  routeUnavailable: string | undefined;
  /** The gateway does not take the route's new generation (Accepted/ResolvedRefs stay behind). */
  gatewayStuck = false;
  /** Every route write, in order: the slot each sent traffic to. */
  routeWrites: Slot[] = [];
  /** The active Service's EndpointSlices, as the EndpointSlice cache has them (a drain-verified switch). */
  endpointSlices: ObservedEndpointSlice[] = [];
  /** The App's pods, when the reconciler read them; undefined when it did not. */
  pods: ObservedPod[] | undefined;

  constructor(app: App) {
    this.app = app;
  }

  get status(): AppStatus {
    return this.app.status ?? {};
  }

  image(image: string): string {
    this.edit((spec) => {
      spec.image = image;
    });
    return this.target().hash;
  }

  /** A spec change, as `kubectl apply` makes it: the generation goes up. */
  edit(change: (spec: App['spec']) => void): void {
    const spec = structuredClone(this.app.spec);
    change(spec);
    this.app = {
      ...this.app,
      spec,
      metadata: { ...this.app.metadata, generation: (this.app.metadata.generation ?? 0) + 1 },
    };
  }

  target() {
    const image = this.app.spec.image ?? '';
    return { hash: podTemplateHash(image, this.app.spec.template), image };
  }

  observed(): Observed {
    const active = this.services.get('web');
    const preview = this.services.get('web-preview');
    const pingPong = this.app.spec.strategy.blueGreen.pingPong;
    const [ping, pong] = pingPong
      ? [this.services.get(pingPong.pingService), this.services.get(pingPong.pongService)]
      : [];
    return {
      ...(pingPong ? { slotServices: { ...(ping ? { ping } : {}), ...(pong ? { pong } : {}) } } : {}),
      ...(pingPong
        ? {
            routing: {
              ...(this.route ? { route: structuredClone(this.route) } : {}),
              ...(this.routeUnavailable ? { unavailable: this.routeUnavailable } : {}),
            },
          }
        : {}),
      replicaSets: [...this.replicaSets.values()].map((rs) => ({ ...rs })),
      ...(active ? { activeService: active } : {}),
      ...(preview ? { previewService: preview } : {}),
      analysisJobs: this.jobs.map((j) => ({ ...j })),
      activeEndpointSlices: structuredClone(this.endpointSlices),
    };
  }

  /** The plan for the world as it is, carried out or not. */
  plan(intents: Intent[] = []): Plan {
    return plan({
      app: this.app,
      observed: this.observed(),
      now: new Date(this.now),
      target: this.target(),
      intents,
      analysis: { templates: this.templates, invalidTemplates: this.invalidTemplates, results: this.resultsIn() },
      ...(this.missingCopies.length > 0 ? { missingCopies: this.missingCopies } : {}),
      ...(this.pods ? { pods: structuredClone(this.pods) } : {}),
    });
  }

  /** As the reconciler gathers them: the runner's answers, and the results of finished analysis Jobs. */
  private resultsIn(): Map<string, MeasurementResult> {
    const results = new Map(this.results);
    for (const job of this.jobs) if (job.result && job.key !== '' && !job.deleting) results.set(job.key, job.result);
    return results;
  }

  /** One reconcile: the actions carried out, then the status written (unless lost) and the measurements started. */
  reconcile(intents: Intent[] = [], options: ReconcileOptions = {}): RolloutAction[] {
    const result = this.plan(intents);
    this.last = result.actions;
    this.measured = result.measurements;
    this.requeue = result.requeueAfterMs;
    for (const action of result.actions) this.apply(action);
    if (options.loseStatus) return result.actions;
    this.events.push(...result.events);
    this.app = { ...this.app, status: result.status };
    this.startMeasurements(result.measurements);
    return result.actions;
  }

  /** The analysis runner after a status write: Jobs for job checks, and letting go of what is no longer in flight. */
  private startMeasurements(requests: readonly MeasureRequest[]): void {
    const keys = this.inFlightKeys();
    for (const key of this.results.keys()) if (!keys.has(key)) this.results.delete(key);
    for (const request of requests) {
      if (!request.check.provider.job) continue;
      const name = analysisJobName('web', request.key);
      if (this.jobs.some((j) => j.name === name)) continue;
      this.jobs.push({ namespace: 'ns', name, resourceVersion: '1', app: 'web', key: request.key, deleting: false });
    }
  }

  inFlightKeys(): Set<string> {
    const runs = [this.status.prePromotionAnalysis, this.status.postPromotionAnalysis];
    const keys = new Set(runs.flatMap((run) => (run ? inFlight(run).map((m) => m.key) : [])));
    // The switch's traffic check, as the reconciler counts it in flight.
    const traffic = trafficInFlight(this.status.trafficCheck);
    if (traffic !== undefined) keys.add(traffic);
    return keys;
  }

  /** A measurement's answer comes in: on its Job for a job check, in the runner for the others. */
  answer(key: string, result: MeasurementResult): void {
    const job = this.jobs.find((j) => j.key === key);
    if (job) job.result = result;
    else this.results.set(key, result);
  }

  /** Answers every measurement in flight alike. */
  answerAll(result: MeasurementResult): void {
    for (const key of this.inFlightKeys()) this.answer(key, result);
  }

  apply(action: RolloutAction): void {
    switch (action.kind) {
      case 'createReplicaSet': {
        const m = action.manifest;
        const hash = m.metadata.labels[LABEL_HASH] ?? '';
        if (this.replicaSets.has(hash)) return;
        this.replicaSets.set(hash, {
          namespace: 'ns',
          name: m.metadata.name,
          resourceVersion: '1',
          app: 'web',
          hash,
          revision: Number(m.metadata.annotations['teal.dev/revision']),
          image: m.metadata.annotations['teal.dev/image'] ?? '',
          ownerUid: 'uid-1',
          createdAt: new Date(this.now).toISOString(),
          generation: 1,
          specReplicas: m.spec.replicas,
          observedGeneration: 0,
          replicas: 0,
          readyReplicas: 0,
          availableReplicas: 0,
          deleting: false,
          ...(m.spec.template.metadata.labels[LABEL_SLOT]
            ? { slot: m.spec.template.metadata.labels[LABEL_SLOT] as Slot }
            : {}),
        });
        return;
      }
      case 'patchRoute': {
        const route = this.route;
        if (!route || route.name !== action.name) throw new Error(`patch of missing HTTPRoute ${action.name}`);
        for (const op of action.ops) {
          const [, , , rule, , index, field] = op.path.split('/');
          const ref = route.rules[Number(rule)]?.backendRefs[Number(index)];
          if (!ref) throw new Error(`patch of missing ${op.path}`);
          if (op.op === 'test' && ref.name !== op.value) throw new Error(`test of ${op.path} failed`);
          if (op.op === 'add' && field === 'weight') ref.weight = op.value as number;
        }
        route.generation += 1;
        this.routeWrites.push(action.to);
        return;
      }
      case 'patchReplicaSet': {
        const rs = [...this.replicaSets.values()].find((r) => r.name === action.name);
        if (!rs) throw new Error(`patch of missing ${action.name}`);
        if (action.replicas !== undefined && action.replicas !== rs.specReplicas) {
          rs.specReplicas = action.replicas;
          rs.generation += 1;
        }
        if (action.slot !== undefined) {
          rs.slot = action.slot;
          rs.generation += 1;
        }
        if (action.scaleDownAt === null) delete rs.scaleDownAt;
        else if (action.scaleDownAt) rs.scaleDownAt = action.scaleDownAt;
        return;
      }
      case 'deleteReplicaSet': {
        for (const [hash, rs] of this.replicaSets) if (rs.name === action.name) this.replicaSets.delete(hash);
        return;
      }
      case 'applyService': {
        const m = action.manifest;
        this.services.set(m.metadata.name, {
          namespace: 'ns',
          name: m.metadata.name,
          resourceVersion: '1',
          app: 'web',
          selector: { ...m.spec.selector },
          ownerUid: 'uid-1',
          appliedHash: m.metadata.annotations['teal.dev/applied'] ?? '',
        });
        return;
      }
      case 'deleteAnalysisJob': {
        this.jobs = this.jobs.filter((j) => j.name !== action.name);
        return;
      }
    }
  }

  /** The ReplicaSet controller and kubelets: pods appear and become available; the gateway takes the route. */
  settle(): void {
    if (this.route && !this.gatewayStuck) {
      const at = this.route.generation;
      this.route.parents = this.route.parents.map(() => ({ accepted: at, resolvedRefs: at }));
    }
    for (const rs of this.replicaSets.values()) {
      rs.observedGeneration = rs.generation;
      rs.replicas = rs.specReplicas;
      const ready = this.stuck.has(rs.hash) ? 0 : rs.specReplicas;
      rs.readyReplicas = ready;
      rs.availableReplicas = ready;
    }
  }

  /** Reconcile and settle until nothing more is written. */
  converge(max = 10): void {
    for (let i = 0; i < max; i++) {
      const actions = this.reconcile();
      this.settle();
      if (actions.length === 0) return;
    }
  }

  activeHash(): string | undefined {
    return this.services.get('web')?.selector[LABEL_HASH];
  }

  previewHash(): string | undefined {
    return this.services.get('web-preview')?.selector[LABEL_HASH];
  }

  rs(hash: string): ObservedReplicaSet {
    const rs = this.replicaSets.get(hash);
    if (!rs) throw new Error(`no ReplicaSet ${hash}`);
    return rs;
  }

  advance(ms: number): void {
    this.now += ms;
  }

  condition(type: string): Condition | undefined {
    return this.status.conditions?.find((c) => c.type === type);
  }

  /** Events of a reason, of the plans whose status landed. */
  eventsOf(reason: string): PlannerEvent[] {
    return this.events.filter((e) => e.reason === reason);
  }
}

let intentSeq = 0;
/** An action as the CLI records it; each call a new intent. */
export function intent(action: Intent['action'], extra: Partial<Intent> = {}): Intent {
  intentSeq += 1;
  return {
    action,
    id: `id-${intentSeq}`,
    by: 'alice',
    via: 'cli',
    at: new Date(T0 + intentSeq).toISOString(),
    ...extra,
  };
}
