// The rules of promote, abort, retry, undo, pause and resume. Each intent is
// taken once (its id lands in status.handledIntents) and either changes the
// rollout state or is refused with a Warning event; nothing here touches the
// cluster.
import type { Intent } from '../app/intents.ts';
import type { App, AppStatus } from '../app/schema.ts';
import { previousStable } from './history.ts';
import type { ObservedReplicaSet } from './observed.ts';
import type { Revision } from './replicaset.ts';

export interface PlannerEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

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

/** Applies one intent to status; returns the event that records it. */
export function applyIntent(ctx: ActionContext, intent: Intent): PlannerEvent {
  const { status, desired, activeHash } = ctx;
  const actor = { by: intent.by, via: intent.via, at: intent.at };
  const inFlight = desired !== undefined && desired.hash !== activeHash;
  switch (intent.action) {
    case 'promote': {
      if (!inFlight || !desired) {
        return { type: 'Normal', reason: 'PromoteIgnored', message: `nothing to promote (by ${who(intent)})` };
      }
      if (intent.revision !== undefined && intent.revision !== desired.number) {
        return {
          type: 'Warning',
          reason: 'PromoteRejected',
          message: `revision ${intent.revision} is no longer in preview (revision ${desired.number} is); nothing changed (by ${who(intent)})`,
        };
      }
      if (status.abort?.podTemplateHash === desired.hash) {
        return {
          type: 'Warning',
          reason: 'PromoteRejected',
          message: `revision ${desired.number} was aborted; retry it first (by ${who(intent)})`,
        };
      }
      status.promotion = {
        podTemplateHash: desired.hash,
        revision: desired.number,
        ...(intent.full ? { full: true } : {}),
        ...actor,
      };
      return {
        type: 'Normal',
        reason: 'PromotionRequested',
        message: `promotion of revision ${desired.number}${intent.full ? ' (full)' : ''} requested by ${who(intent)}`,
      };
    }
    case 'abort': {
      if (!inFlight || !desired) {
        return { type: 'Normal', reason: 'AbortIgnored', message: `nothing in progress to abort (by ${who(intent)})` };
      }
      status.abort = { podTemplateHash: desired.hash, revision: desired.number, ...actor };
      delete status.promotion;
      return {
        type: 'Warning',
        reason: 'Aborted',
        message: `revision ${desired.number} aborted by ${who(intent)}; active stays on revision ${status.active?.revision ?? '-'}`,
      };
    }
    case 'retry': {
      if (!status.abort) {
        return { type: 'Normal', reason: 'RetryIgnored', message: `nothing aborted to retry (by ${who(intent)})` };
      }
      const revision = status.abort.revision;
      delete status.abort;
      return { type: 'Normal', reason: 'Retried', message: `revision ${revision} retried by ${who(intent)}` };
    }
    case 'undo': {
      const target = intent.toRevision ?? previousStable(status.history, status.active, ctx.replicaSets);
      if (target === undefined) {
        return {
          type: 'Warning',
          reason: 'UndoRejected',
          message: `no earlier revision to return to (by ${who(intent)})`,
        };
      }
      const rs = ctx.replicaSets.find((r) => r.revision === target && !r.deleting);
      if (!rs) {
        return {
          type: 'Warning',
          reason: 'UndoRejected',
          message: `revision ${target} has no ReplicaSet left (see revisionHistoryLimit); nothing changed (by ${who(intent)})`,
        };
      }
      if (rs.hash === activeHash && !inFlight) {
        return {
          type: 'Normal',
          reason: 'UndoIgnored',
          message: `revision ${target} is already active (by ${who(intent)})`,
        };
      }
      status.pin = {
        podTemplateHash: rs.hash,
        revision: rs.revision,
        over: ctx.specHash ?? '',
        ...(intent.preview ? { preview: true } : {}),
        ...actor,
      };
      delete status.abort;
      delete status.promotion;
      return {
        type: 'Normal',
        reason: 'Undo',
        message: `undo to revision ${target}${intent.preview ? ' as a preview' : ''} by ${who(intent)}`,
      };
    }
    case 'pause': {
      status.pause = actor;
      return { type: 'Normal', reason: 'Paused', message: `paused by ${who(intent)}` };
    }
    case 'resume': {
      delete status.pause;
      if (ctx.app.spec.paused) {
        return {
          type: 'Warning',
          reason: 'Resumed',
          message: `resumed by ${who(intent)}, but spec.paused is true: the App stays paused until it is false`,
        };
      }
      return { type: 'Normal', reason: 'Resumed', message: `resumed by ${who(intent)}` };
    }
  }
}
