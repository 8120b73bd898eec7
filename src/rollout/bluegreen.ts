// Blue/green as a pure planner: plan(app, observed, now) -> actions + status.
//
// The active Service selector is the truth about what serves: the planner
// reads it from the cluster, never from status, so a restart between the
// switch and the status write finishes the promotion exactly once. It is
// also input: a selector Teal did not write is put back, never adopted.
//
// rollout() reads as a list of named steps, as Argo Rollouts' rolloutBlueGreen
// does; each decision is a named predicate (predicates.ts) and every reason a
// constant (reasons.ts). The steps share their state through planner.ts; the
// Service steps live in active-service.ts, the ReplicaSet writes in
// replicaset-writes.ts.
import { setCondition } from '../app/conditions.ts';
import { LABEL_APP, LABEL_HASH } from '../app/labels.ts';
import { ownerReference } from '../app/owner.ts';
import type { AppStatus, ConditionType, Phase } from '../app/schema.ts';
import { aborted, abortForChecks } from './abort.ts';
import { type ActionContext, applyIntent } from './actions.ts';
import { activeManifest, activeServiceName, reconcileServices, servingHash } from './active-service.ts';
import {
  cancelStaleRuns,
  inconclusiveMessage,
  isAwaitingPostChecks,
  isSkippingChecks,
  postPromotionGate,
  prePromotionGate,
  pruneAnalysisJobs,
  reportAnalysis,
  startPostChecks,
} from './analysis-gate.ts';
import { analysisSpecs } from './analysis-spec.ts';
import { repairConfigCopies, withLostCopies } from './config-copies.ts';
import { copiesFreedBy } from './config-refs.ts';
import { replicaCounts } from './counts.ts';
import { appendHistory, historyEntry, replicaSetsToDelete, revisionNumberFor } from './history.ts';
import { isAvailableAt, isFullyAvailable, type ObservedReplicaSet } from './observed.ts';
import {
  freeSlot,
  isPingPong,
  placeInSlot,
  reconcileRoute,
  reconcileSlotServices,
  repairActiveSlot,
  routeProblems,
  routeTo,
  slotFor,
} from './ping-pong.ts';
import {
  condition,
  type Desired,
  emit,
  type Gate,
  type Plan,
  type PlanInput,
  type Planner,
  type Progress,
  type Rollout,
  touched,
} from './planner.ts';
import {
  autoPromotionDueAt,
  hasServed,
  isAborted,
  isFastTracked,
  isPhaseNews,
  isPromotionRequested,
  isRollBackTo,
  parseTime,
  wasAvailableInPreview,
} from './predicates.ts';
import { ConditionReason as CR, EventReason as ER } from './reasons.ts';
import { revisionStatus } from './replicaset.ts';
import { createReplicaSet as createReplicaSetOnly, scaleDownLater, sizeTo } from './replicaset-writes.ts';
import { type ObservedPod, planRestart } from './restart.ts';
import { specProblems } from './spec-problems.ts';
import { retire, verifySwitch } from './switch.ts';

export type { Plan, PlanInput } from './planner.ts';

/** The App's pods (of every revision), which only a restart reads; without them a restart waits. */
export interface RestartObserved {
  pods?: readonly ObservedPod[];
}

export function plan(input: PlanInput & RestartObserved): Plan {
  const { app } = input;
  const p: Planner = {
    input,
    app,
    status: structuredClone(app.status ?? {}),
    actions: [],
    events: [],
    now: input.now.toISOString(),
    nowMs: input.now.getTime(),
    wakeAt: [],
    generation: app.metadata.generation ?? 0,
    runs: {},
    measure: [],
  };
  const analysis = analysisSpecs(app, input.analysis);
  const problems = [...specProblems(app, input.buildDefaults), ...analysis.problems];
  // The route is read only for a spec that names it right.
  if (problems.length === 0) problems.push(...routeProblems(p));
  if (problems.length > 0) return planInvalid(app.status, p.generation, problems, input.now);
  p.runs = analysis.runs;
  condition(p, 'InvalidSpec', 'False', CR.Valid);
  p.status.observedGeneration = p.generation;
  const { desired } = rollout(p, input.pods);
  Object.assign(
    p.status,
    replicaCounts(input.observed.replicaSets, p.status.active?.podTemplateHash, desired?.hash, app.metadata.name),
  );
  // A wake-up time is computed from values read back from the cluster: only a real one counts.
  const due = p.wakeAt.filter(Number.isFinite);
  const requeue = due.length > 0 ? Math.max(0, Math.min(...due) - p.nowMs) : undefined;
  return {
    actions: p.actions,
    events: p.events,
    status: p.status,
    measurements: p.measure,
    ...(requeue !== undefined ? { requeueAfterMs: requeue + 1 } : {}),
  };
}

/** An App that cannot be planned: say why, touch nothing. */
export function planInvalid(status: AppStatus | undefined, generation: number, problems: string[], now: Date): Plan {
  const next = structuredClone(status ?? {});
  const message = problems.join('; ');
  const before = next.conditions?.find((c) => c.type === 'InvalidSpec');
  const set = (type: ConditionType) => {
    next.conditions = setCondition(
      next.conditions,
      { type, status: type === 'Ready' ? 'False' : 'True', reason: CR.InvalidSpec, message },
      generation,
      now.toISOString(),
    );
  };
  set('InvalidSpec');
  set('Ready');
  next.phase = 'Degraded';
  next.message = `invalid spec: ${message}`;
  next.observedGeneration = generation;
  const changed = before?.status !== 'True' || before.message !== message;
  return {
    actions: [],
    events: changed ? [{ type: 'Warning', reason: ER.InvalidSpec, message }] : [],
    status: next,
    measurements: [],
  };
}

function rollout(p: Planner, pods: readonly ObservedPod[] | undefined): Rollout {
  const r = observeRollout(p);
  settleActiveService(p, r);
  endStalePin(p, r);
  takeIntents(p, r);
  dropStaleMarks(p, r);
  cancelStaleRuns(p, r.desired);
  const lostCopies = repairConfigCopies(p);
  reconcileSlotServices(p);
  let progress = reconcileDesired(p, r);
  reconcileRoute(p, r);
  repairActiveSlot(p, r);
  reconcileActiveReplicaSet(p, r);
  progress = restartPods(p, r, progress, pods);
  previewStatus(p, r, progress);
  progressDeadline(p, r.desired, progress.waiting);
  verifySwitch(p, pods);
  scaleDownOthers(p, r);
  reconcileServices(p, progress);
  pruneAnalysisJobs(p);
  summarize(p, r, withLostCopies(progress, lostCopies));
  return r;
}

// ---- the steps ----

/** ReplicaSets by hash, the sizes the spec asks for, the desired revision, and what serves. */
function observeRollout(p: Planner): Rollout {
  const { app, input, status } = p;
  const replicas = app.spec.replicas;
  const bg = app.spec.strategy.blueGreen;
  const live = input.observed.replicaSets.filter((rs) => !rs.deleting);
  const byHash = new Map(live.map((rs) => [rs.hash, readable(p, rs)]));
  const r: Rollout = {
    byHash,
    replicas,
    previewCount: Math.min(bg.previewReplicaCount ?? replicas, replicas),
    paused: app.spec.paused || status.pause !== undefined,
    desired: undefined,
    activeHash: undefined,
  };
  r.desired = desiredRevision(p, r);
  r.activeHash = servingHash(p, r);
  return r;
}

/**
 * A ReplicaSet whose revision or image annotation could not be read (someone
 * edited it; it was reported) gets them back from what Teal recorded for its
 * hash: status would otherwise carry revision 0, which the API server refuses.
 */
function readable(p: Planner, rs: ObservedReplicaSet): ObservedReplicaSet {
  if (rs.revision > 0 && rs.image !== '') return rs;
  const { status, input } = p;
  const recorded = [status.preview, status.active, status.stable].find((r) => r?.podTemplateHash === rs.hash);
  const image =
    rs.image ||
    (input.target?.hash === rs.hash ? input.target.image : undefined) ||
    recorded?.image ||
    [...(status.history ?? [])].reverse().find((h) => h.podTemplateHash === rs.hash)?.image ||
    '';
  const revision = rs.revision > 0 ? rs.revision : revisionNumberFor(rs.hash, input.observed.replicaSets, status);
  return { ...rs, revision, image };
}

/** Records Teal's own switch that status missed, or warns of someone else's edit (reconcileServices repairs it). */
function settleActiveService(p: Planner, r: Rollout): void {
  const { status } = p;
  const svc = p.input.observed.activeService;
  const recorded = status.active?.podTemplateHash;
  const served = r.activeHash ? r.byHash.get(r.activeHash) : undefined;
  if (r.activeHash !== recorded && served) {
    // A roll back whose status was lost is told as the roll back, once, as the plan that made it would have.
    const back = isRollBackTo(status, served.hash);
    emit(p, {
      type: back ? 'Warning' : 'Normal',
      reason: back ? ER.RolledBack : ER.SwitchRecorded,
      message: back
        ? `active Service ${activeServiceName(p)} switched back to stable revision ${served.revision} (was ${status.active?.revision})`
        : `active Service ${activeServiceName(p)} already selects revision ${served.revision}: recording the switch`,
    });
    // The plan that switched also started the post-promotion checks: start them now, as it would have.
    const desired = r.desired?.hash === served.hash ? r.desired : undefined;
    const fastTrack = isFastTracked(status, served.hash, served, recorded, p.nowMs);
    const postChecks =
      desired !== undefined && !isRollBackTo(status, served.hash) && startPostChecks(p, desired, fastTrack);
    recordActivation(p, served, undefined, postChecks);
    return;
  }
  if (!svc || !recorded) return;
  const selected = svc.selector[LABEL_HASH] ?? '(none)';
  if (svc.selector[LABEL_APP] !== p.app.metadata.name || selected !== recorded) {
    emit(p, {
      type: 'Warning',
      reason: ER.ActiveServiceEdited,
      message: `active Service ${svc.name} was changed by someone else to select ${JSON.stringify(svc.selector).slice(0, 200)}; Teal sets it back to revision ${status.active?.revision}`,
    });
  }
}

/** An undo pin holds until the spec asks for something else, or its ReplicaSet is gone. */
function endStalePin(p: Planner, r: Rollout): void {
  const { status, input } = p;
  if (!status.pin) return;
  if (status.pin.over === (input.target?.hash ?? '') && r.byHash.has(status.pin.podTemplateHash)) return;
  emit(p, {
    type: 'Normal',
    reason: ER.UndoEnded,
    message: `undo to revision ${status.pin.revision} ended: the spec asks for a new revision`,
  });
  delete status.pin;
  r.desired = desiredRevision(p, r);
}

/** Intents, oldest first; each is taken once. */
function takeIntents(p: Planner, r: Rollout): void {
  const { status, input } = p;
  const handled = { ...(status.handledIntents ?? {}) };
  for (const intent of input.intents) {
    if (handled[intent.action] === intent.id) continue;
    handled[intent.action] = intent.id;
    const ctx: ActionContext = {
      app: p.app,
      status,
      // Readable: a mangled revision annotation has its recorded number back (see readable()).
      replicaSets: [...r.byHash.values()],
      desired: r.desired,
      activeHash: r.activeHash,
      specHash: input.target?.hash,
      now: p.now,
    };
    emit(p, applyIntent(ctx, intent));
    r.desired = desiredRevision(p, r);
    r.paused = p.app.spec.paused || status.pause !== undefined;
  }
  if (Object.keys(handled).length > 0) status.handledIntents = handled;
}

/** An abort or a promotion belongs to one revision: a new desired revision ends it. */
function dropStaleMarks(p: Planner, r: Rollout): void {
  const { status } = p;
  if (status.abort && status.abort.podTemplateHash !== r.desired?.hash) delete status.abort;
  if (status.promotion && status.promotion.podTemplateHash !== r.desired?.hash) delete status.promotion;
}

/** Moves the desired revision one step: deploy, preview, promote, switch. */
function reconcileDesired(p: Planner, r: Rollout): Progress {
  const { desired } = r;
  if (!desired) return noRevision(p, r);
  if (isAborted(p.status, desired.hash)) return aborted(p, r, desired);
  if (desired.hash === r.activeHash) return steady(p, r, desired);
  if (r.paused && !r.byHash.has(desired.hash)) {
    return { phase: 'Paused', message: `paused: revision ${desired.number} waits to be deployed` };
  }
  return release(p, r, desired);
}

function noRevision(p: Planner, r: Rollout): Progress {
  const { input } = p;
  const activeRS = r.activeHash ? r.byHash.get(r.activeHash) : undefined;
  if (input.building) {
    const message = activeRS
      ? `building a new image; revision ${activeRS.revision} stays active`
      : 'building the first image';
    return { phase: 'Building', message };
  }
  const message = input.sourceFailure ?? 'waiting for an image';
  if (r.activeHash) return { phase: 'Healthy', message };
  return { phase: input.sourceFailure ? 'Degraded' : 'Progressing', message };
}

/**
 * The desired revision serves; its ReplicaSet is recreated at full size if
 * someone deleted it. Until its post-promotion checks pass it is not stable:
 * they run whatever its pods do meanwhile.
 */
function steady(p: Planner, r: Rollout, desired: Desired): Progress {
  const gate = postPromotionGate(p, desired);
  const checks = { kind: 'post' as const, gate };
  if (gate.state === 'failed') return abortForChecks(p, r, desired, 'post', gate.message);
  const rs = r.byHash.get(desired.hash);
  if (!rs) {
    createReplicaSet(p, r, desired, r.replicas, 'recreated: the active revision had no ReplicaSet');
    return {
      checks,
      phase: 'Progressing',
      message: `revision ${desired.number}: recreating its ReplicaSet`,
      waiting: 'full',
    };
  }
  if (gate.state === 'inconclusive') {
    return {
      checks,
      phase: 'Paused',
      message: `revision ${desired.number} is active, not yet stable: ${inconclusiveMessage(gate)}`,
    };
  }
  if (gate.state === 'waiting') {
    return {
      checks,
      phase: 'Progressing',
      message: `revision ${desired.number} is active; post-promotion checks: ${gate.message}`,
    };
  }
  if (!isFullyAvailable(rs, r.replicas)) {
    return {
      checks,
      phase: 'Progressing',
      message: `revision ${rs.revision}: ${rs.availableReplicas}/${r.replicas} pods available`,
    };
  }
  return { checks, phase: 'Healthy', message: `revision ${rs.revision} is active` };
}

/** A revision on its way to active: created, previewed, paused for promotion, promoted, switched. */
function release(p: Planner, r: Rollout, desired: Desired): Progress {
  const { status } = p;
  const found = r.byHash.get(desired.hash);
  const fastTrack = isFastTracked(status, desired.hash, found, r.activeHash, p.nowMs);
  const inPreview = fastTrack ? {} : { previewHash: desired.hash, ...(found ? { previewRS: found } : {}) };

  if (!found) {
    const promoting = fastTrack || isPromotionRequested(status, desired.hash);
    const what = !r.activeHash ? 'first release' : fastTrack ? 'fast track' : promoting ? 'promoted' : 'preview';
    const busy = createReplicaSet(p, r, desired, promoting ? r.replicas : r.previewCount, what);
    return { ...inPreview, ...(busy ?? waitingFor(desired, undefined, promoting ? 'full' : 'preview', r)) };
  }
  const placing = placeInSlot(p, r, found, desired.number);
  if (placing) return { ...inPreview, ...placing };
  const rs = r.byHash.get(desired.hash) ?? found;
  const previewReady = isAvailableAt(rs, r.previewCount);
  // Measured even while paused: a pause holds the release, not its checks.
  const gate = prePromotionGate(p, desired, previewReady, fastTrack);
  const checks = { kind: 'pre' as const, gate };
  if (gate.state === 'failed') return abortForChecks(p, r, desired, 'pre', gate.message);
  if (r.paused) {
    return { ...inPreview, checks, phase: 'Paused', message: `paused by ${status.pause?.by ?? 'spec.paused'}` };
  }
  // A promotion asked for before the checks changed still waits for them (skipping opens the gate).
  let promoting = fastTrack || (isPromotionRequested(status, desired.hash) && gate.state === 'open');
  if (!promoting && previewReady && gate.state === 'open' && p.app.spec.strategy.blueGreen.autoPromotionEnabled) {
    promoting = autoPromote(p, desired);
  }
  if (!promoting) {
    sizeTo(p, rs, r.previewCount, `preview of revision ${rs.revision}`);
    if (!previewReady) {
      const waiting = { ...inPreview, checks, previewReady, ...waitingFor(desired, rs, 'preview', r) };
      return wasAvailableInPreview(status, desired.hash)
        ? stillWaitingForPromotion(p, r, desired, gate, waiting)
        : waiting;
    }
    return { ...inPreview, checks, previewReady, ...inPreviewProgress(p, desired, gate) };
  }
  sizeTo(p, rs, r.replicas, `promoting revision ${rs.revision}`);
  if (!isFullyAvailable(rs, r.replicas)) {
    return { ...inPreview, checks, previewReady, ...waitingFor(desired, rs, 'full', r) };
  }
  // Ping-pong: the route moves first, and the switch counts once the gateway has taken it.
  const routing = routeTo(p, r, rs, desired.number);
  if (routing) return { ...inPreview, checks, previewReady, ...routing };
  switchActive(p, r, rs);
  if (isAwaitingPostChecks(status, desired.hash)) {
    const message = status.postPromotionAnalysis?.message ?? '';
    return {
      checks: { kind: 'post', gate: { state: 'waiting', message } },
      phase: 'Progressing',
      message: `revision ${desired.number} is active; post-promotion checks: ${message}`,
    };
  }
  return { checks, phase: 'Healthy', message: `revision ${desired.number} is active` };
}

/**
 * Ready in preview (or, `where` says, resizing there): waiting for the checks,
 * a person, or autoPromotionSeconds.
 */
function inPreviewProgress(
  p: Planner,
  desired: Desired,
  gate: Gate,
  where = 'is ready in preview',
): Pick<Progress, 'phase' | 'message'> {
  const auto = p.app.spec.strategy.blueGreen.autoPromotionEnabled;
  const what = `revision ${desired.number} ${where}`;
  if (gate.state === 'inconclusive') return { phase: 'Paused', message: `${what}: ${inconclusiveMessage(gate)}` };
  if (gate.state === 'waiting') {
    const then = auto ? 'then promoted automatically' : 'then waits for promotion';
    return {
      phase: auto ? 'Progressing' : 'Paused',
      message: `${what}; pre-promotion checks: ${gate.message}; ${then}`,
    };
  }
  return { phase: 'Paused', message: `${what}, waiting for promotion` };
}

/**
 * The preview was available and is short of pods again (replicas changed, a
 * pod lost) before any promotion: the release still waits for promotion, so
 * it stays Paused, saying the preview is resizing. Argo keeps a Rollout with a
 * pause condition Paused whatever its replica counts (CalculateRolloutPhase),
 * and estimates no progress while paused: neither does Teal, so no progress
 * deadline runs here. `kubectl teal status` and `kubectl wait` see no
 * Progressing in between; auto promotion waits for the pods all the same.
 */
function stillWaitingForPromotion(p: Planner, r: Rollout, desired: Desired, gate: Gate, waiting: Progress): Progress {
  const resizing = `is in preview, resizing (${podsAvailable(waiting.previewRS, 'preview', r)})`;
  const held = inPreviewProgress(p, desired, gate, resizing);
  if (held.phase !== 'Paused') return waiting;
  const { waiting: _, ...paused } = waiting;
  return { ...paused, ...held };
}

function waitingFor(
  desired: Desired,
  rs: ObservedReplicaSet | undefined,
  waiting: 'preview' | 'full',
  r: Rollout,
): Progress {
  const have = podsAvailable(rs, waiting, r);
  return {
    phase: 'Progressing',
    message: `revision ${desired.number} ${waiting === 'full' ? 'promoting' : 'in preview'}: ${have}`,
    waiting,
  };
}

// A ReplicaSet just created has no pod available yet: saying so in the same words as once it
// shows in the cache leaves the status as it was, so that step costs no status write.
const podsAvailable = (rs: ObservedReplicaSet | undefined, waiting: 'preview' | 'full', r: Rollout) =>
  `${rs?.availableReplicas ?? 0}/${waiting === 'full' ? r.replicas : r.previewCount} pods available`;

/** Promotes once autoPromotionSeconds have passed since the preview became available; else wakes then. */
function autoPromote(p: Planner, desired: Desired): boolean {
  const { status } = p;
  const due = autoPromotionDueAt(status, desired.hash, p.app.spec.strategy.blueGreen.autoPromotionSeconds, p.nowMs);
  if (due > p.nowMs) {
    p.wakeAt.push(due);
    return false;
  }
  status.promotion = { podTemplateHash: desired.hash, revision: desired.number, by: 'teal', via: 'auto', at: p.now };
  emit(p, { type: 'Normal', reason: ER.AutoPromotion, message: `revision ${desired.number} promoted automatically` });
  return true;
}

/**
 * The active ReplicaSet serves users, so it follows spec.replicas at once,
 * whatever is in preview (Argo's #4552: replica changes must reach what serves).
 */
function reconcileActiveReplicaSet(p: Planner, r: Rollout): void {
  const hash = p.status.active?.podTemplateHash ?? r.activeHash;
  const rs = hash ? r.byHash.get(hash) : undefined;
  if (!rs || touched(p).has(rs.name)) return;
  sizeTo(p, rs, r.replicas, `revision ${rs.revision} is active`);
}

/**
 * A restart under way evicts the next pods of the active revision (restart.ts).
 * With nothing else under way, the restart is the App's news: Progressing, and
 * how many pods are replaced, from its first eviction until it finishes.
 */
function restartPods(p: Planner, r: Rollout, progress: Progress, pods: readonly ObservedPod[] | undefined): Progress {
  const { restart } = p.status;
  if (!restart || restart.finishedAt !== undefined || !pods) return progress;
  // After this reconcile's switch, if any: what serves now.
  const activeHash = p.status.active?.podTemplateHash ?? r.activeHash;
  const rs = activeHash ? r.byHash.get(activeHash) : undefined;
  const planned = planRestart({
    restart,
    activeHash,
    activeRevision: rs?.revision,
    replicaSet: rs,
    replicas: r.replicas,
    maxUnavailable: p.app.spec.strategy.blueGreen.maxUnavailable,
    pods,
    now: p.now,
  });
  p.status.restart = planned.restart;
  for (const name of planned.evict) {
    p.actions.push({ kind: 'evictPod', name, why: `restart of revision ${restart.revision}` });
  }
  if (planned.wakeAt !== undefined) p.wakeAt.push(planned.wakeAt);
  for (const event of planned.events) emit(p, event);
  const steadyNow = r.desired === undefined || r.desired.hash === activeHash;
  if (!planned.message || !steadyNow || (progress.phase !== 'Healthy' && progress.phase !== 'Progressing')) {
    return progress;
  }
  return { ...progress, phase: 'Progressing', message: planned.message };
}

/**
 * Every other ReplicaSet goes to zero: a superseded preview at once (it never
 * served users), a formerly active one after scaleDownDelaySeconds (with
 * `switch`, once the switch is verified: switch.ts). Beyond
 * revisionHistoryLimit, scaled-down ones are deleted.
 */
function scaleDownOthers(p: Planner, r: Rollout): void {
  const { status } = p;
  // After this reconcile's switch, if any: what serves now, what is wanted, and stable.
  const keep = new Set(
    [status.active?.podTemplateHash, r.activeHash, r.desired?.hash, status.stable?.podTemplateHash].filter(
      (h): h is string => h !== undefined,
    ),
  );
  const skip = touched(p);
  for (const rs of r.byHash.values()) {
    if (keep.has(rs.hash) || skip.has(rs.name)) continue;
    if (hasServed(status, rs.hash, rs.revision)) {
      retire(
        p,
        rs,
        status.active?.podTemplateHash,
        p.app.spec.strategy.blueGreen.scaleDownDelaySeconds,
        `revision ${rs.revision} is no longer active`,
      );
    } else {
      scaleDownLater(p, rs, 0, `revision ${rs.revision} was superseded in preview`);
    }
  }
  const deleted = replicaSetsToDelete([...r.byHash.values()], keep, p.app.spec.revisionHistoryLimit);
  // The copies first: a crash in between leaves the ReplicaSet, which is deleted (with them) again.
  const all = p.input.observed.replicaSets;
  for (const copy of copiesFreedBy(deleted, all, p.input.target?.copies ?? [])) {
    p.actions.push({
      kind: 'deleteConfigCopy',
      copyKind: copy.kind,
      name: copy.name,
      appUid: p.app.metadata.uid ?? '',
    });
  }
  for (const rs of deleted) p.actions.push({ kind: 'deleteReplicaSet', name: rs.name });
}

/**
 * The revision's ConfigMap and Secret copies exist before its ReplicaSet, so its pods start with them.
 * Ping-pong: in its slot, once no other revision's pods are there (else where that stands).
 */
function createReplicaSet(p: Planner, r: Rollout, desired: Desired, size: number, what: string): Progress | undefined {
  const slot = isPingPong(p) ? slotFor(p, r, desired.hash) : undefined;
  const busy = slot ? freeSlot(p, r, slot, desired.hash, desired.number) : undefined;
  if (busy) return busy;
  const owner = ownerReference(p.app);
  for (const copy of desired.copies ?? []) {
    p.actions.push({ kind: 'createConfigCopy', copy, app: p.app.metadata.name, owner });
  }
  createReplicaSetOnly(p, desired, size, what, slot);
  return undefined;
}

/** Conditions, phase and message, most severe first. */
function summarize(p: Planner, r: Rollout, progress: Progress): void {
  const { input, status } = p;
  let { phase, message } = progress;
  const deadline = status.conditions?.find((c) => c.type === 'ProgressDeadlineExceeded');
  const aborted = r.desired !== undefined && isAborted(status, r.desired.hash);
  const byChecks = aborted && status.abort?.via === 'analysis';
  reportAnalysis(p, r.desired, progress.checks);
  if (aborted) {
    condition(p, 'Aborted', 'True', byChecks ? CR.AnalysisFailed : CR.Aborted, message);
    phase = 'Degraded';
  } else {
    condition(p, 'Aborted', 'False', CR.NotAborted);
  }
  if (deadline?.status === 'True' && phase !== 'Degraded') {
    phase = 'Degraded';
    message = deadline.message ?? message;
  }
  if (r.paused && phase === 'Healthy') {
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
  const promoted = r.desired !== undefined && status.active?.podTemplateHash === r.desired.hash;
  const waitingForChecks = progress.checks?.gate.state === 'waiting' && !promoted;
  const promotedWhy = waitingForChecks ? CR.WaitingForAnalysis : promotedReason(promoted, phase, r.paused);
  condition(p, 'Promoted', promoted ? 'True' : 'False', promotedWhy, message);
  condition(p, 'Ready', phase === 'Healthy' ? 'True' : 'False', byChecks ? CR.AnalysisFailed : phase, message);
  if (isPhaseNews(status.phase, phase)) {
    emit(p, { type: phase === 'Degraded' ? 'Warning' : 'Normal', reason: `Phase${phase}`, message });
  }
  status.phase = phase;
  status.message = message;
}

function promotedReason(promoted: boolean, phase: Phase, paused: boolean): string {
  if (promoted) return CR.Promoted;
  if (phase === 'Paused') return paused ? CR.Paused : CR.WaitingForPromotion;
  return phase === 'Degraded' ? CR.Degraded : CR.Progressing;
}

// ---- revisions and status ----

function desiredRevision(p: Planner, r: Pick<Rollout, 'byHash'>): Desired | undefined {
  const { status, input } = p;
  if (status.pin) {
    const rs = r.byHash.get(status.pin.podTemplateHash);
    if (rs) return { hash: rs.hash, image: rs.image, ...(rs.commit ? { commit: rs.commit } : {}), number: rs.revision };
  }
  if (!input.target) return undefined;
  return { ...input.target, number: revisionNumberFor(input.target.hash, input.observed.replicaSets, status) };
}

/** Points the active Service at the saturated revision; the one it replaces goes after scaleDownDelaySeconds. */
function switchActive(p: Planner, r: Rollout, rs: ObservedReplicaSet): void {
  const previous = r.activeHash ? r.byHash.get(r.activeHash) : undefined;
  p.actions.push({ kind: 'applyService', role: 'active', manifest: activeManifest(p, rs.hash) });
  const fastTrack = isFastTracked(p.status, rs.hash, rs, r.activeHash, p.nowMs);
  const postChecks = r.desired?.hash === rs.hash && startPostChecks(p, r.desired, fastTrack);
  // Stable stays up, at full size, until the post-promotion checks pass: a failure returns to it at once.
  const keepPrevious = postChecks && previous?.hash === p.status.stable?.podTemplateHash;
  // Kept up for the delay even after `promote --full`, so an undo stays instant.
  if (previous && previous.hash !== rs.hash && !keepPrevious) {
    retire(
      p,
      previous,
      rs.hash,
      p.app.spec.strategy.blueGreen.scaleDownDelaySeconds,
      `revision ${previous.revision} was replaced by revision ${rs.revision}`,
    );
  }
  // The first selection is no switch: the Healthy Event that follows says which revision serves.
  if (r.activeHash) {
    emit(p, {
      type: 'Normal',
      reason: ER.SwitchedActive,
      message: `active Service ${activeServiceName(p)} now selects revision ${rs.revision}${previous ? ` (was ${previous.revision})` : ''}`,
    });
  }
  recordActivation(p, rs, fastTrack, postChecks);
}

/**
 * Records a switch: active, history, and stable too unless post-promotion
 * checks now stand between. A switch back under an abort is the roll back's.
 */
function recordActivation(
  p: Planner,
  rs: ObservedReplicaSet,
  fastTrack: boolean | undefined,
  postChecks = false,
): void {
  const { app, status } = p;
  const promotion = status.promotion?.podTemplateHash === rs.hash ? status.promotion : undefined;
  const pin = status.pin?.podTemplateHash === rs.hash ? status.pin : undefined;
  const rollBack = !promotion && !pin && isRollBackTo(status, rs.hash);
  const via = rollBack
    ? 'abort'
    : (promotion?.via ?? (pin ? 'undo' : status.active ? (fastTrack ? 'fast-track' : 'auto') : 'first-release'));
  const by = (rollBack ? status.abort?.by : undefined) ?? promotion?.by ?? pin?.by ?? 'teal';
  // --full after the pre-promotion checks passed skips only the post-promotion ones, if any.
  const pre = status.prePromotionAnalysis;
  const prePassed = pre?.podTemplateHash === rs.hash && pre.phase === 'Successful';
  const skipped =
    isSkippingChecks(status, rs.hash) && (p.runs.post !== undefined || (p.runs.pre !== undefined && !prePassed));
  status.active = revisionStatus(app, rs);
  if (rs.slot && isPingPong(p)) status.stablePingPong = rs.slot;
  if (!postChecks) status.stable = revisionStatus(app, rs);
  const entry = historyEntry(rs, p.now, by, via);
  status.history = appendHistory(status.history, skipped ? { ...entry, checksSkipped: true } : entry);
  delete status.promotion;
  delete status.preview;
}

function previewStatus(p: Planner, r: Rollout, progress: Progress): void {
  const { status, app } = p;
  const { desired } = r;
  const rs = progress.previewRS;
  const inPreview = desired && rs && progress.previewHash === desired.hash && !isAborted(status, desired.hash);
  if (!inPreview || status.active?.podTemplateHash === desired.hash) {
    delete status.preview;
    condition(p, 'PreviewAvailable', 'False', CR.NoPreview);
    return;
  }
  const ready = progress.previewReady === true;
  const before = status.preview?.podTemplateHash === desired.hash ? status.preview.availableAt : undefined;
  // When it first became available: kept while it resizes or loses a pod, as the release still waits
  // for promotion (wasAvailableInPreview) and the autoPromotionSeconds clock runs from then.
  const availableAt = before ?? (ready ? p.now : undefined);
  if (ready && !before) {
    emit(p, {
      type: 'Normal',
      reason: ER.PreviewAvailable,
      message: `revision ${rs.revision} is available in preview`,
    });
  }
  status.preview = { ...revisionStatus(app, rs), ...(availableAt ? { availableAt } : {}) };
  condition(
    p,
    'PreviewAvailable',
    ready ? 'True' : 'False',
    ready ? CR.PreviewAvailable : CR.PreviewProgressing,
    `revision ${rs.revision}: ${rs.availableReplicas} pods available`,
  );
}

/** The clock runs per stage, and only while waiting for pods, never while waiting for promotion. */
function progressDeadline(p: Planner, desired: Desired | undefined, waiting: Progress['waiting']): void {
  const { status, app } = p;
  if (!desired || !waiting) {
    delete status.progress;
    condition(p, 'ProgressDeadlineExceeded', 'False', CR.NotWaiting);
    return;
  }
  const key = `${desired.hash}:${waiting}`;
  // A start time that cannot be read (status is input too) starts the clock again.
  if (status.progress?.podTemplateHash !== key || parseTime(status.progress.since) === undefined) {
    status.progress = { podTemplateHash: key, since: p.now };
  }
  const deadline = (parseTime(status.progress.since) ?? p.nowMs) + app.spec.progressDeadlineSeconds * 1000;
  if (p.nowMs >= deadline) {
    const what = waiting === 'route' ? 'was not switched to by the HTTPRoute' : 'did not become available';
    const message = `revision ${desired.number} ${what} within progressDeadlineSeconds (${app.spec.progressDeadlineSeconds}s)`;
    const before = status.conditions?.find((c) => c.type === 'ProgressDeadlineExceeded');
    if (before?.status !== 'True') emit(p, { type: 'Warning', reason: ER.ProgressDeadlineExceeded, message });
    condition(p, 'ProgressDeadlineExceeded', 'True', CR.ProgressDeadlineExceeded, message);
  } else {
    condition(p, 'ProgressDeadlineExceeded', 'False', CR.Waiting);
    p.wakeAt.push(deadline);
  }
}
