// Carrying out promote, abort, retry, undo, pause, resume and restart. Each intent is
// taken once (its id lands in status.handledIntents); whether it applies is
// decided by actionVerdict (action-rules.ts), over the planner's view of the
// App, and a refusal becomes a Normal or Warning event. Nothing here touches
// the cluster.

import type { PlannerEvent } from '../app/event.ts';
import type { Intent } from '../app/intents.ts';
import { ANALYSIS_FIELD, type App, type AppStatus } from '../app/schema.ts';
import {
  type ActionView,
  actionVerdict,
  checksView,
  type Refused,
  type RevisionRef,
  restartingView,
} from './action-rules.ts';
import { appendHistory, historyEntry } from './history.ts';
import type { ObservedReplicaSet } from './observed.ts';
import { stableToReturnTo } from './predicates.ts';
import { EventReason as ER, refusalReason } from './reasons.ts';
import type { Revision } from './replicaset.ts';
import { restartStartedAt } from './restart.ts';

export interface ActionContext {
  app: App;
  status: AppStatus;
  replicaSets: readonly ObservedReplicaSet[];
  /** The revision wanted before this intent: pinned by undo, or from the spec. */
  desired: (Revision & { number: number }) | undefined;
  activeHash: string | undefined;
  /** The revision the spec (image or latest build) asks for. */
  specHash: string | undefined;
  now: string;
}

const who = (intent: Intent) => `${intent.by} (${intent.via})`;

/** The App as the planner sees it: the Service's selection, the desired revision and every ReplicaSet. */
export function plannerView(ctx: ActionContext): ActionView {
  const { app, status, desired, activeHash } = ctx;
  const replicaSets = ctx.replicaSets.filter((rs) => !rs.deleting);
  const activeRevision =
    replicaSets.find((rs) => rs.hash === activeHash)?.revision ??
    (status.active?.podTemplateHash === activeHash ? status.active?.revision : undefined) ??
    0;
  const active: RevisionRef | undefined = activeHash ? { revision: activeRevision, hash: activeHash } : undefined;
  const inFlight =
    desired && desired.hash !== activeHash ? { revision: desired.number, hash: desired.hash } : undefined;
  const bg = app.spec.strategy.blueGreen;
  return {
    deleting: app.metadata.deletionTimestamp !== undefined && app.metadata.deletionTimestamp !== null,
    specPaused: app.spec.paused === true,
    pausedByHand: status.pause !== undefined,
    active,
    inFlight,
    checks: checksView(
      { pre: bg.prePromotionAnalysis !== undefined, post: bg.postPromotionAnalysis !== undefined },
      status,
      inFlight,
    ),
    aborted: status.abort ? { revision: status.abort.revision, hash: status.abort.podTemplateHash } : undefined,
    history: (status.history ?? []).map((h) => h.revision),
    restarting: restartingView(status.restart),
    replicaSets: replicaSets.map((rs) => ({ revision: rs.revision, hash: rs.hash })),
  };
}

function refusal(intent: Intent, verdict: Refused): PlannerEvent {
  return {
    type: verdict.conflict ? 'Warning' : 'Normal',
    reason: refusalReason(intent.action, verdict.conflict),
    message: `${verdict.reason} (by ${who(intent)})`,
  };
}

// The planner's view is never unknown: an allowed promote or abort has a desired revision. For the type checker.
const nothingInFlight = (intent: Intent): PlannerEvent =>
  refusal(intent, { allowed: false, code: 'nothing-in-flight', conflict: false, reason: 'nothing is in progress' });

/** Applies one intent to status, if the rules allow it; returns the event that records it. */
export function applyIntent(ctx: ActionContext, intent: Intent): PlannerEvent {
  const verdict = actionVerdict(intent.action, intent, plannerView(ctx));
  if (!verdict.allowed) return refusal(intent, verdict);
  const { status, desired } = ctx;
  const actor = { by: intent.by, via: intent.via, at: intent.at };
  switch (intent.action) {
    case 'promote': {
      if (!desired) return nothingInFlight(intent);
      status.promotion = {
        podTemplateHash: desired.hash,
        revision: desired.number,
        ...(intent.full ? { full: true } : {}),
        ...(intent.skipChecks ? { skipChecks: true } : {}),
        ...actor,
      };
      const how = [intent.full ? 'full' : '', intent.skipChecks ? 'checks skipped' : ''].filter(Boolean).join(', ');
      return {
        type: 'Normal',
        reason: ER.PromotionRequested,
        message: `promotion of revision ${desired.number}${how ? ` (${how})` : ''} requested by ${who(intent)}`,
      };
    }
    case 'abort': {
      if (!desired) return nothingInFlight(intent);
      status.abort = { podTemplateHash: desired.hash, revision: desired.number, ...actor };
      delete status.promotion;
      // The same plan switches back (abort.ts rollBack), by the same rule: say so, not that active stays.
      const stable = stableToReturnTo(status, desired.hash, ctx.activeHash, ctx.replicaSets);
      const where = stable
        ? `active switches back to stable revision ${stable.revision}`
        : `active stays on revision ${status.active?.revision ?? '-'}`;
      return {
        type: 'Warning',
        reason: ER.Aborted,
        message: `revision ${desired.number} aborted by ${who(intent)}; ${where}`,
      };
    }
    case 'retry': {
      const revision = verdict.revision ?? status.abort?.revision;
      delete status.abort;
      // The revision goes again, checks and all: its finished runs no longer count.
      for (const field of Object.values(ANALYSIS_FIELD)) {
        const run = status[field];
        if (run && run.phase !== 'Running' && run.revision === revision) delete status[field];
      }
      return { type: 'Normal', reason: ER.Retried, message: `revision ${revision} retried by ${who(intent)}` };
    }
    case 'undo':
      return undo(ctx, intent, verdict.revision, verdict.drops);
    case 'pause': {
      status.pause = actor;
      return { type: 'Normal', reason: ER.Paused, message: `paused by ${who(intent)}` };
    }
    case 'resume': {
      delete status.pause;
      if (verdict.note === 'stays-paused-by-spec') {
        return {
          type: 'Warning',
          reason: ER.Resumed,
          message: `resumed by ${who(intent)}, but spec.paused is true: the App stays paused until it is false`,
        };
      }
      return { type: 'Normal', reason: ER.Resumed, message: `resumed by ${who(intent)}` };
    }
    case 'restart':
      return restart(ctx, intent);
  }
}

/**
 * Starts replacing the active revision's pods: those created before this
 * second go (restart.ts); the revision, history and Services stay as they are.
 */
function restart(ctx: ActionContext, intent: Intent): PlannerEvent {
  const { status, activeHash } = ctx;
  const rs = ctx.replicaSets.find((r) => !r.deleting && r.hash === activeHash);
  if (!rs || !activeHash) {
    // The rules checked the active revision over this same view: not reached.
    return refusal(intent, { allowed: false, code: 'nothing-active', conflict: true, reason: 'nothing is active' });
  }
  status.restart = {
    by: intent.by,
    via: intent.via,
    at: intent.at,
    revision: rs.revision,
    podTemplateHash: rs.hash,
    startedAt: restartStartedAt(ctx.now),
  };
  return {
    type: 'Normal',
    reason: ER.RestartRequested,
    message: `restart of revision ${rs.revision} requested by ${who(intent)}: its pods are replaced a few at a time`,
  };
}

/**
 * Pins the target revision (desired instead of the spec's until the spec
 * changes). Back to the active revision, the revision on its way is dropped
 * and no switch will record the undo, so history records it here.
 */
function undo(ctx: ActionContext, intent: Intent, target: number | undefined, drops: number | undefined): PlannerEvent {
  const { status } = ctx;
  const back = drops !== undefined;
  const rs = ctx.replicaSets.find((r) => !r.deleting && (back ? r.hash === ctx.activeHash : r.revision === target));
  if (!rs) {
    // The rules checked the ReplicaSet over this same list: not reached.
    return { type: 'Warning', reason: ER.UndoRejected, message: `revision ${target} has no ReplicaSet left` };
  }
  const actor = { by: intent.by, via: intent.via, at: intent.at };
  status.pin = {
    podTemplateHash: rs.hash,
    revision: rs.revision,
    over: ctx.specHash ?? '',
    ...(intent.preview && !back ? { preview: true } : {}),
    ...actor,
  };
  delete status.abort;
  delete status.promotion;
  if (back) {
    status.history = appendHistory(status.history, historyEntry(rs, ctx.now, intent.by, 'undo'));
    return {
      type: 'Normal',
      reason: ER.Undo,
      message: `undo by ${who(intent)}: revision ${drops} dropped, revision ${rs.revision} stays active`,
    };
  }
  return {
    type: 'Normal',
    reason: ER.Undo,
    message: `undo to revision ${rs.revision}${intent.preview ? ' as a preview' : ''} by ${who(intent)}`,
  };
}
