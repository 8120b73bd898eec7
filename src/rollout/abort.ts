// Aborting a release, by a person or by a failed check: the aborted revision
// is scaled down after abortScaleDownDelaySeconds, active stays, or goes back
// to stable when the aborted revision was active awaiting its post-promotion
// checks (DESIGN §3.2's abort path). Planner steps, pure like the rest.
import { activeManifest, activeServiceName } from './active-service.ts';
import { cancelRunning } from './analysis-gate.ts';
import { appendHistory, historyEntry } from './history.ts';
import { isPingPong, routeTo } from './ping-pong.ts';
import { type Desired, emit, type Planner, type Progress, type Rollout } from './planner.ts';
import { hasServed, isRolledBackFrom, stableToReturnTo } from './predicates.ts';
import { EventReason as ER } from './reasons.ts';
import { revisionStatus } from './replicaset.ts';
import { markScaleDown, scaleDownLater } from './replicaset-writes.ts';
import { selectedHash } from './service.ts';
import { retire } from './switch.ts';

/** A check failed: the release is aborted as a person would abort it, by teal, saying which check and why. */
export function abortForChecks(
  p: Planner,
  r: Rollout,
  desired: Desired,
  kind: 'pre' | 'post',
  message: string,
): Progress {
  p.status.abort = { podTemplateHash: desired.hash, revision: desired.number, by: 'teal', via: 'analysis', at: p.now };
  delete p.status.promotion;
  emit(p, {
    type: 'Warning',
    reason: ER.Aborted,
    message: `revision ${desired.number} aborted: its ${kind}-promotion checks did not pass: ${message}`,
  });
  // Post-promotion: the switch back waits for the next plan, once this abort has landed (see postPromotionGate).
  if (kind === 'post') {
    // A status write wakes no reconcile: ask for the next plan at once, so the switch back follows.
    p.wakeAt.push(p.nowMs);
    return {
      checks: { kind, gate: { state: 'failed', message } },
      phase: 'Degraded',
      message: abortMessage(p, desired),
    };
  }
  return aborted(p, r, desired);
}

/**
 * Active stays, or goes back to stable when the aborted revision was active
 * awaiting its post-promotion checks; the aborted revision is scaled down
 * after abortScaleDownDelaySeconds (never, when 0).
 */
export function aborted(p: Planner, r: Rollout, desired: Desired): Progress {
  const by = p.status.abort?.by;
  cancelRunning(p, 'pre', `revision ${desired.number} was aborted by ${by}`);
  cancelRunning(p, 'post', `revision ${desired.number} was aborted by ${by}`);
  if (desired.hash === r.activeHash) {
    const back = rollBack(p, r, desired);
    if (back === false) return { phase: 'Degraded', message: abortMessage(p, desired) };
    // Ping-pong: the route goes back first; the aborted revision stays up until it has.
    if (back !== true) return { ...back, phase: 'Degraded', message: `${abortMessage(p, desired)}; ${back.message}` };
  }
  const rs = r.byHash.get(desired.hash);
  const delay = p.app.spec.strategy.blueGreen.abortScaleDownDelaySeconds;
  if (rs && rs.specReplicas > 0) {
    // One that served (a roll back) may still have endpoints: with `switch`, it waits for the switch back's verification.
    const why = `revision ${rs.revision} was aborted`;
    if (delay > 0 && hasServed(p.status, rs.hash, rs.revision)) retire(p, rs, r.activeHash, delay, why);
    else if (delay > 0) scaleDownLater(p, rs, delay, why);
    else if (rs.scaleDownAt !== undefined) markScaleDown(p, rs, null);
  }
  const up = rs && rs.specReplicas > 0;
  return {
    ...failedChecks(p, desired),
    phase: 'Degraded',
    message: abortMessage(p, desired),
    // While its pods are up the preview URL still shows what was aborted, as with Argo Rollouts.
    ...(up ? { previewHash: rs.hash, previewRS: rs } : {}),
  };
}

function abortMessage(p: Planner, desired: Desired): string {
  const { abort } = p.status;
  const why =
    abort?.via === 'analysis' ? `: ${checksMessage(p, desired) ?? 'a check did not pass'}` : ` by ${abort?.by}`;
  return `revision ${desired.number} aborted${why}; ${whereActive(p, desired)}`;
}

function whereActive(p: Planner, desired: Desired): string {
  const { active, stable } = p.status;
  // The abort has landed; the switch back comes with the next plan.
  if (active?.podTemplateHash === desired.hash) return `active returns to revision ${stable?.revision ?? '-'}`;
  if (isRolledBackFrom(p.status, desired.hash)) {
    // The switch back is written in this plan (or was in one before), but until the Service is seen selecting
    // the stable revision, users may still reach the aborted one.
    const landed = selectedHash(p.input.observed.activeService) === active?.podTemplateHash;
    return `active ${landed ? 'is back on' : 'is switching back to'} revision ${active?.revision ?? '-'}`;
  }
  return `active stays on revision ${active?.revision ?? '-'}`;
}

/** The message of the run that failed this revision. */
function checksMessage(p: Planner, desired: Desired): string | undefined {
  const run = [p.status.postPromotionAnalysis, p.status.prePromotionAnalysis].find(
    (r) => r?.podTemplateHash === desired.hash && (r.phase === 'Failed' || r.phase === 'Error'),
  );
  return run?.message;
}

function failedChecks(p: Planner, desired: Desired): Pick<Progress, 'checks'> {
  if (p.status.abort?.via !== 'analysis') return {};
  const post = p.status.postPromotionAnalysis?.podTemplateHash === desired.hash;
  return {
    checks: { kind: post ? 'post' : 'pre', gate: { state: 'failed', message: checksMessage(p, desired) ?? '' } },
  };
}

/**
 * Points the active Service (ping-pong: the route first) back at the stable revision: the abort of a
 * revision awaiting its post-promotion checks. False when there is no stable
 * revision up to return to (the abort stands; nothing moves).
 */
function rollBack(p: Planner, r: Rollout, desired: Desired): boolean | Progress {
  const { status, app } = p;
  const rs = stableToReturnTo(status, desired.hash, r.activeHash, r.byHash.values());
  if (!rs) return false;
  const routing = routeTo(p, r, rs, rs.revision);
  if (routing) return routing;
  p.actions.push({ kind: 'applyService', role: 'active', manifest: activeManifest(p, rs.hash) });
  emit(p, {
    type: 'Warning',
    reason: ER.RolledBack,
    message: `active Service ${activeServiceName(p)} switched back to stable revision ${rs.revision} (was ${desired.number})`,
  });
  status.active = revisionStatus(app, rs);
  if (rs.slot && isPingPong(p)) status.stablePingPong = rs.slot;
  const abort = status.abort;
  status.history = appendHistory(status.history, historyEntry(rs, p.now, abort?.by ?? 'teal', 'abort'));
  r.activeHash = rs.hash;
  return true;
}
