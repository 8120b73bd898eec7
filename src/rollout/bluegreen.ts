// Blue/green as a pure planner: plan(app, observed, now) -> actions + status.
//
// The active Service selector is the truth about what serves: the planner
// reads it from the cluster, never from status, so a restart between the
// switch and the status write finishes the promotion exactly once.
import { setCondition } from '../app/conditions.ts';
import type { Intent } from '../app/intents.ts';
import type { App, AppStatus, Condition, ConditionType, Phase, RevisionStatus } from '../app/schema.ts';
import { buildSpecProblems } from '../build/plan.ts';
import type { BuildDefaults } from '../build/registry.ts';
import { type ActionContext, applyIntent, type PlannerEvent } from './actions.ts';
import { appendHistory, nextRevisionNumber, replicaSetsToDelete } from './history.ts';
import { ANN_APPLIED, LABEL_APP, LABEL_HASH } from './labels.ts';
import { isAvailableAt, isFullyAvailable, type Observed, type ObservedReplicaSet } from './observed.ts';
import { type ReplicaSetManifest, type Revision, replicaSetManifest, replicaSetName } from './replicaset.ts';
import {
  adoptedServiceManifest,
  isAdopted,
  ownedServiceManifest,
  type ServiceManifest,
  type ServiceRole,
  selectedHash,
  servicePorts,
} from './service.ts';

export type KubeAction =
  | { kind: 'createReplicaSet'; manifest: ReplicaSetManifest }
  | { kind: 'patchReplicaSet'; name: string; replicas?: number; scaleDownAt?: string | null }
  | { kind: 'deleteReplicaSet'; name: string }
  | { kind: 'applyService'; role: ServiceRole; manifest: ServiceManifest }
  | { kind: 'event'; event: PlannerEvent };

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
}

export interface Plan {
  actions: KubeAction[];
  status: AppStatus;
  requeueAfterMs?: number;
}

/** Checks the schema cannot express; each names the field. */
export function specProblems(app: App, buildDefaults: BuildDefaults = {}): string[] {
  const problems = buildSpecProblems(app, buildDefaults);
  const ports = servicePorts(app);
  if (ports.length === 0) {
    problems.push('spec.service.ports: required when the app container declares no containerPort');
  } else if (ports.length > 1 && ports.some((p) => !p.name)) {
    problems.push('spec.service.ports: every port needs a name when there are several');
  }
  const bg = app.spec.strategy.blueGreen;
  const active = bg.activeService ?? app.metadata.name;
  const preview = bg.previewService ?? `${app.metadata.name}-preview`;
  if (active === preview) {
    problems.push('spec.strategy.blueGreen.previewService: must differ from activeService');
  }
  if (bg.previewReplicaCount !== undefined && bg.previewReplicaCount > app.spec.replicas && app.spec.replicas > 0) {
    problems.push('spec.strategy.blueGreen.previewReplicaCount: must not exceed spec.replicas');
  }
  return problems;
}

interface Planner {
  input: PlanInput;
  app: App;
  status: AppStatus;
  actions: KubeAction[];
  now: string;
  nowMs: number;
  wakeAt: number[];
  generation: number;
}

const emit = (p: Planner, event: PlannerEvent) => p.actions.push({ kind: 'event', event });
const at = (ms: number) => new Date(ms).toISOString();

function condition(p: Planner, type: ConditionType, status: Condition['status'], reason: string, message?: string) {
  p.status.conditions = setCondition(
    p.status.conditions,
    { type, status, reason, ...(message ? { message } : {}) },
    p.generation,
    p.now,
  );
}

export function plan(input: PlanInput): Plan {
  const { app } = input;
  const p: Planner = {
    input,
    app,
    status: structuredClone(app.status ?? {}),
    actions: [],
    now: input.now.toISOString(),
    nowMs: input.now.getTime(),
    wakeAt: [],
    generation: app.metadata.generation ?? 0,
  };
  const problems = specProblems(app, input.buildDefaults);
  if (problems.length > 0) return planInvalid(app.status, p.generation, problems, input.now);
  condition(p, 'InvalidSpec', 'False', 'Valid');
  p.status.observedGeneration = p.generation;
  rollout(p);
  const requeue = p.wakeAt.length > 0 ? Math.max(0, Math.min(...p.wakeAt) - p.nowMs) : undefined;
  return { actions: p.actions, status: p.status, ...(requeue !== undefined ? { requeueAfterMs: requeue + 1 } : {}) };
}

/** An App that cannot be planned: say why, touch nothing. */
export function planInvalid(status: AppStatus | undefined, generation: number, problems: string[], now: Date): Plan {
  const next = structuredClone(status ?? {});
  const message = problems.join('; ');
  const before = next.conditions?.find((c) => c.type === 'InvalidSpec');
  const set = (type: ConditionType, reason: string) => {
    next.conditions = setCondition(
      next.conditions,
      { type, status: 'True', reason, message },
      generation,
      now.toISOString(),
    );
  };
  set('InvalidSpec', 'InvalidSpec');
  next.conditions = setCondition(
    next.conditions,
    { type: 'Ready', status: 'False', reason: 'InvalidSpec', message },
    generation,
    now.toISOString(),
  );
  next.phase = 'Degraded';
  next.message = `invalid spec: ${message}`;
  next.observedGeneration = generation;
  const changed = before?.status !== 'True' || before.message !== message;
  return {
    actions: changed ? [{ kind: 'event', event: { type: 'Warning', reason: 'InvalidSpec', message } }] : [],
    status: next,
  };
}

function rollout(p: Planner): void {
  const { app, input, status } = p;
  const { observed } = input;
  const replicas = app.spec.replicas;
  const bg = app.spec.strategy.blueGreen;
  const previewCount = Math.min(bg.previewReplicaCount ?? replicas, replicas);
  const byHash = new Map(observed.replicaSets.filter((rs) => !rs.deleting).map((rs) => [rs.hash, rs]));

  // What serves now, read from the active Service; a Service someone deleted
  // is recreated on the revision status last recorded.
  const activeHash = observed.activeService
    ? observed.activeService.selector[LABEL_APP] === app.metadata.name
      ? selectedHash(observed.activeService)
      : undefined
    : status.active?.podTemplateHash;
  const activeRS = activeHash ? byHash.get(activeHash) : undefined;

  // An undo pin holds until the spec asks for something else.
  const specHash = input.target?.hash;
  if (status.pin && (status.pin.over !== (specHash ?? '') || !byHash.has(status.pin.podTemplateHash))) {
    emit(p, {
      type: 'Normal',
      reason: 'UndoEnded',
      message: `undo to revision ${status.pin.revision} ended: the spec asks for a new revision`,
    });
    delete status.pin;
  }
  let desired = desiredRevision(p, byHash);

  // Intents, oldest first; each is taken once.
  const handled = { ...(status.handledIntents ?? {}) };
  for (const intent of input.intents) {
    if (handled[intent.action] === intent.id) continue;
    handled[intent.action] = intent.id;
    const ctx: ActionContext = {
      app,
      status,
      replicaSets: observed.replicaSets,
      desired,
      activeHash,
      specHash,
      now: p.now,
    };
    emit(p, applyIntent(ctx, intent));
    desired = desiredRevision(p, byHash);
  }
  if (Object.keys(handled).length > 0) status.handledIntents = handled;

  if (status.abort && status.abort.podTemplateHash !== desired?.hash) delete status.abort;
  if (status.promotion && status.promotion.podTemplateHash !== desired?.hash) delete status.promotion;

  const paused = app.spec.paused || status.pause !== undefined;
  const keep = new Set<string>(
    [activeHash, desired?.hash, status.stable?.podTemplateHash].filter((h): h is string => !!h),
  );

  // Record a switch the cluster shows but status does not: a restart landed between the two.
  if (activeHash && activeRS && status.active?.podTemplateHash !== activeHash) recordActivation(p, activeRS, undefined);

  let phase: Phase = 'Healthy';
  let message = '';
  let waiting: 'preview' | 'full' | undefined;
  let previewRS: ObservedReplicaSet | undefined;
  let previewReady = false;

  if (!desired) {
    phase = input.building ? 'Building' : activeHash ? 'Healthy' : input.sourceFailure ? 'Degraded' : 'Progressing';
    const building = activeRS
      ? `building a new image; revision ${activeRS.revision} stays active`
      : 'building the first image';
    message = input.building ? building : (input.sourceFailure ?? 'waiting for an image');
  } else if (desired.hash === activeHash && activeRS) {
    // Steady: the desired revision serves; follow spec.replicas.
    if (activeRS.specReplicas !== replicas || activeRS.scaleDownAt) {
      p.actions.push({ kind: 'patchReplicaSet', name: activeRS.name, replicas, scaleDownAt: null });
    }
    if (!isFullyAvailable(activeRS, replicas)) {
      phase = 'Progressing';
      message = `revision ${activeRS.revision}: ${activeRS.availableReplicas}/${replicas} pods available`;
    } else {
      message = `revision ${activeRS.revision} is active`;
    }
  } else if (status.abort?.podTemplateHash === desired.hash) {
    const rs = byHash.get(desired.hash);
    if (rs && rs.specReplicas > 0) scaleDownLater(p, rs, bg.abortScaleDownDelaySeconds);
    phase = 'Degraded';
    message = `revision ${desired.number} aborted by ${status.abort.by}; active stays on revision ${status.active?.revision ?? '-'}`;
  } else if (paused && !byHash.has(desired.hash)) {
    phase = 'Paused';
    message = `paused: revision ${desired.number} waits to be deployed`;
  } else {
    const firstRelease = !activeHash;
    const rs = byHash.get(desired.hash);
    const withinScaleDown =
      rs?.scaleDownAt !== undefined && Date.parse(rs.scaleDownAt) > p.nowMs && rs.availableReplicas > 0;
    const fastTrack =
      firstRelease ||
      (status.pin?.podTemplateHash === desired.hash && !status.pin.preview) ||
      withinScaleDown ||
      status.stable?.podTemplateHash === desired.hash;
    if (!fastTrack) previewRS = rs;
    let promoting = fastTrack || status.promotion?.podTemplateHash === desired.hash;

    if (!rs) {
      if (!paused) {
        const size = promoting ? replicas : previewCount;
        p.actions.push({ kind: 'createReplicaSet', manifest: replicaSetManifest(app, desired, desired.number, size) });
        emit(p, {
          type: 'Normal',
          reason: firstRelease ? 'FirstRelease' : fastTrack ? 'FastTrack' : 'PreviewCreated',
          message: `revision ${desired.number} (${desired.image}) deployed at ${size} replicas`,
        });
      }
      waiting = promoting ? 'full' : 'preview';
    } else if (paused) {
      waiting = undefined;
    } else {
      // Auto promotion counts from the moment the preview became available.
      previewReady = isAvailableAt(rs, previewCount);
      if (!fastTrack && previewReady && !promoting && bg.autoPromotionEnabled) {
        const availableAt = Date.parse(
          status.preview?.podTemplateHash === desired.hash ? (status.preview.availableAt ?? p.now) : p.now,
        );
        const due = availableAt + bg.autoPromotionSeconds * 1000;
        if (due <= p.nowMs) {
          status.promotion = {
            podTemplateHash: desired.hash,
            revision: desired.number,
            by: 'teal',
            via: 'auto',
            at: p.now,
          };
          emit(p, {
            type: 'Normal',
            reason: 'AutoPromotion',
            message: `revision ${desired.number} promoted automatically`,
          });
          promoting = true;
        } else {
          p.wakeAt.push(due);
        }
      }
      if (promoting) {
        if (rs.specReplicas !== replicas || rs.scaleDownAt) {
          p.actions.push({ kind: 'patchReplicaSet', name: rs.name, replicas, scaleDownAt: null });
        }
        if (isFullyAvailable(rs, replicas)) {
          switchActive(p, rs, activeRS, fastTrack);
          previewRS = undefined;
        } else {
          waiting = 'full';
        }
      } else {
        if (rs.specReplicas !== previewCount || rs.scaleDownAt) {
          p.actions.push({ kind: 'patchReplicaSet', name: rs.name, replicas: previewCount, scaleDownAt: null });
        }
        if (!previewReady) waiting = 'preview';
      }
    }

    const current = status.active?.podTemplateHash === desired.hash && selectedAfter(p) === desired.hash;
    if (current) {
      phase = 'Healthy';
      message = `revision ${desired.number} is active`;
    } else if (paused) {
      phase = 'Paused';
      message = `paused by ${status.pause?.by ?? 'spec.paused'}`;
    } else if (waiting) {
      phase = 'Progressing';
      const have = rs
        ? `${rs.availableReplicas}/${waiting === 'full' ? replicas : previewCount} pods available`
        : 'deploying';
      message = `revision ${desired.number} ${waiting === 'full' ? 'promoting' : 'in preview'}: ${have}`;
    } else {
      phase = 'Paused';
      message = `revision ${desired.number} is ready in preview, waiting for promotion`;
    }
  }

  previewStatus(p, desired, previewRS, previewReady, activeHash);
  progressDeadline(p, desired, waiting);
  scaleDownOld(p, keep, byHash);
  services(p, previewRS && previewReady ? previewRS.hash : undefined);

  // Conditions and phase, most severe first.
  const deadline = status.conditions?.find((c) => c.type === 'ProgressDeadlineExceeded')?.status === 'True';
  if (status.abort && status.abort.podTemplateHash === desired?.hash) {
    condition(p, 'Aborted', 'True', 'Aborted', message);
    phase = 'Degraded';
  } else {
    condition(p, 'Aborted', 'False', 'NotAborted');
  }
  if (deadline && phase !== 'Degraded') {
    phase = 'Degraded';
    message = status.conditions?.find((c) => c.type === 'ProgressDeadlineExceeded')?.message ?? message;
  }
  if (paused && phase === 'Healthy') {
    phase = 'Paused';
    message = `paused by ${status.pause?.by ?? 'spec.paused'}; ${message}`;
  }
  if (input.buildFailure && phase !== 'Degraded') {
    phase = 'Degraded';
    message = `build failed: ${input.buildFailure}${status.active ? `; revision ${status.active.revision} keeps serving` : ''}`;
  } else if (input.building && phase === 'Healthy') {
    phase = 'Building';
    message = `building ${status.build?.commit?.slice(0, 12) ?? 'a new commit'}; ${message}`;
  }
  const promoted = desired !== undefined && status.active?.podTemplateHash === desired.hash;
  condition(
    p,
    'Promoted',
    promoted ? 'True' : 'False',
    promoted
      ? 'Promoted'
      : phase === 'Paused'
        ? paused
          ? 'Paused'
          : 'WaitingForPromotion'
        : phase === 'Degraded'
          ? 'Degraded'
          : 'Progressing',
    message,
  );
  condition(p, 'Ready', phase === 'Healthy' ? 'True' : 'False', phase, message);
  if (status.phase !== phase) {
    emit(p, { type: phase === 'Degraded' ? 'Warning' : 'Normal', reason: `Phase${phase}`, message });
  }
  status.phase = phase;
  status.message = message;
}

function desiredRevision(
  p: Planner,
  byHash: Map<string, ObservedReplicaSet>,
): (Revision & { number: number }) | undefined {
  const { status, input } = p;
  if (status.pin) {
    const rs = byHash.get(status.pin.podTemplateHash);
    if (rs) return { hash: rs.hash, image: rs.image, ...(rs.commit ? { commit: rs.commit } : {}), number: rs.revision };
  }
  if (!input.target) return undefined;
  const existing = byHash.get(input.target.hash);
  return {
    ...input.target,
    number: existing?.revision || nextRevisionNumber(input.observed.replicaSets, status),
  };
}

function revisionStatus(app: App, rs: ObservedReplicaSet): RevisionStatus {
  return {
    revision: rs.revision,
    image: rs.image,
    podTemplateHash: rs.hash,
    replicaSet: rs.name || replicaSetName(app, rs.hash),
    ...(rs.commit ? { commit: rs.commit } : {}),
  };
}

/** The selector the active Service has once this plan's actions ran. */
function selectedAfter(p: Planner): string | undefined {
  const applied = [...p.actions]
    .reverse()
    .find((a): a is Extract<KubeAction, { kind: 'applyService' }> => a.kind === 'applyService' && a.role === 'active');
  if (applied) return applied.manifest.spec.selector[LABEL_HASH];
  return p.input.observed.activeService
    ? selectedHash(p.input.observed.activeService)
    : p.status.active?.podTemplateHash;
}

function switchActive(
  p: Planner,
  rs: ObservedReplicaSet,
  previous: ObservedReplicaSet | undefined,
  fastTrack: boolean,
): void {
  const { app, status } = p;
  p.actions.push({ kind: 'applyService', role: 'active', manifest: activeManifest(p, rs.hash) });
  if (previous && previous.hash !== rs.hash) {
    const delay = status.promotion?.full ? 0 : app.spec.strategy.blueGreen.scaleDownDelaySeconds;
    scaleDownLater(p, previous, delay);
  }
  emit(p, {
    type: 'Normal',
    reason: 'SwitchedActive',
    message: `active Service ${activeServiceName(p)} now selects revision ${rs.revision}${previous ? ` (was ${previous.revision})` : ''}`,
  });
  recordActivation(p, rs, fastTrack);
}

function recordActivation(p: Planner, rs: ObservedReplicaSet, fastTrack: boolean | undefined): void {
  const { app, status } = p;
  const promotion = status.promotion?.podTemplateHash === rs.hash ? status.promotion : undefined;
  const pin = status.pin?.podTemplateHash === rs.hash ? status.pin : undefined;
  const via = promotion?.via ?? (pin ? 'undo' : status.active ? (fastTrack ? 'fast-track' : 'auto') : 'first-release');
  const by = promotion?.by ?? pin?.by ?? 'teal';
  status.active = revisionStatus(app, rs);
  status.stable = revisionStatus(app, rs);
  status.history = appendHistory(status.history, {
    revision: rs.revision,
    ...(rs.commit ? { commit: rs.commit } : {}),
    image: rs.image,
    createdAt: rs.createdAt || p.now,
    promotedAt: p.now,
    promotedBy: by,
    promotedVia: via,
  });
  delete status.promotion;
  delete status.preview;
}

function previewStatus(
  p: Planner,
  desired: (Revision & { number: number }) | undefined,
  rs: ObservedReplicaSet | undefined,
  ready: boolean,
  activeHash: string | undefined,
): void {
  const { status, app } = p;
  if (!desired || !rs || desired.hash === activeHash || status.active?.podTemplateHash === desired.hash) {
    delete status.preview;
    condition(p, 'PreviewAvailable', 'False', 'NoPreview');
    return;
  }
  const before = status.preview?.podTemplateHash === desired.hash ? status.preview.availableAt : undefined;
  const availableAt = ready ? (before ?? p.now) : undefined;
  if (ready && !before) {
    emit(p, { type: 'Normal', reason: 'PreviewAvailable', message: `revision ${rs.revision} is available in preview` });
  }
  status.preview = { ...revisionStatus(app, rs), ...(availableAt ? { availableAt } : {}) };
  condition(
    p,
    'PreviewAvailable',
    ready ? 'True' : 'False',
    ready ? 'Available' : 'Progressing',
    `revision ${rs.revision}: ${rs.availableReplicas} pods available`,
  );
}

function progressDeadline(
  p: Planner,
  desired: (Revision & { number: number }) | undefined,
  waiting: 'preview' | 'full' | undefined,
): void {
  const { status, app } = p;
  if (!desired || !waiting) {
    delete status.progress;
    condition(p, 'ProgressDeadlineExceeded', 'False', 'NotWaiting');
    return;
  }
  // The clock runs per stage, and only while waiting for pods, never while waiting for promotion.
  const key = `${desired.hash}:${waiting}`;
  if (status.progress?.podTemplateHash !== key) status.progress = { podTemplateHash: key, since: p.now };
  const deadline = Date.parse(status.progress.since) + app.spec.progressDeadlineSeconds * 1000;
  if (p.nowMs >= deadline) {
    const message = `revision ${desired.number} did not become available within progressDeadlineSeconds (${app.spec.progressDeadlineSeconds}s)`;
    const before = status.conditions?.find((c) => c.type === 'ProgressDeadlineExceeded');
    if (before?.status !== 'True') emit(p, { type: 'Warning', reason: 'ProgressDeadlineExceeded', message });
    condition(p, 'ProgressDeadlineExceeded', 'True', 'ProgressDeadlineExceeded', message);
  } else {
    condition(p, 'ProgressDeadlineExceeded', 'False', 'Waiting');
    p.wakeAt.push(deadline);
  }
}

function scaleDownLater(p: Planner, rs: ObservedReplicaSet, delaySeconds: number): void {
  if (rs.specReplicas === 0) return;
  if (!rs.scaleDownAt) {
    const when = p.nowMs + delaySeconds * 1000;
    if (delaySeconds === 0) {
      p.actions.push({ kind: 'patchReplicaSet', name: rs.name, replicas: 0, scaleDownAt: null });
    } else {
      p.actions.push({ kind: 'patchReplicaSet', name: rs.name, scaleDownAt: at(when) });
      p.wakeAt.push(when);
    }
    return;
  }
  const when = Date.parse(rs.scaleDownAt);
  if (when <= p.nowMs) {
    p.actions.push({ kind: 'patchReplicaSet', name: rs.name, replicas: 0, scaleDownAt: null });
  } else {
    p.wakeAt.push(when);
  }
}

function scaleDownOld(p: Planner, keep: ReadonlySet<string>, byHash: Map<string, ObservedReplicaSet>): void {
  const touched = new Set(p.actions.flatMap((a) => (a.kind === 'patchReplicaSet' ? [a.name] : [])));
  for (const rs of byHash.values()) {
    if (keep.has(rs.hash) || touched.has(rs.name)) continue;
    // A superseded preview never served users: it goes at once.
    const wasActive = p.status.history?.some((h) => h.revision === rs.revision);
    scaleDownLater(p, rs, wasActive ? p.app.spec.strategy.blueGreen.scaleDownDelaySeconds : 0);
  }
  for (const rs of replicaSetsToDelete([...byHash.values()], keep, p.app.spec.revisionHistoryLimit)) {
    p.actions.push({ kind: 'deleteReplicaSet', name: rs.name });
  }
}

const activeServiceName = (p: Planner) => p.app.spec.strategy.blueGreen.activeService ?? p.app.metadata.name;

function activeManifest(p: Planner, hash: string | undefined): ServiceManifest {
  const svc = p.input.observed.activeService;
  return svc && isAdopted(p.app, svc)
    ? adoptedServiceManifest(p.app, svc, hash)
    : ownedServiceManifest(p.app, 'active', hash);
}

/** Keeps both Services as they should be; the active one only follows status.active. */
function services(p: Planner, previewHash: string | undefined): void {
  const { app, input, status } = p;
  const switched = p.actions.some((a) => a.kind === 'applyService' && a.role === 'active');
  const activeHash = status.active?.podTemplateHash;
  if (!switched && activeHash) {
    const svc = input.observed.activeService;
    const want = activeManifest(p, activeHash);
    if (!svc || !serviceMatches(svc, want)) p.actions.push({ kind: 'applyService', role: 'active', manifest: want });
  }
  const preview = input.observed.previewService;
  const want =
    preview && isAdopted(app, preview)
      ? adoptedServiceManifest(app, preview, previewHash)
      : ownedServiceManifest(app, 'preview', previewHash);
  if ((activeHash || previewHash) && (!preview || !serviceMatches(preview, want))) {
    p.actions.push({ kind: 'applyService', role: 'preview', manifest: want });
  }
}

function serviceMatches(svc: NonNullable<Observed['activeService']>, want: ServiceManifest): boolean {
  return svc.appliedHash === want.metadata.annotations[ANN_APPLIED];
}
