// Whether promote, abort, retry, undo, pause, resume and restart apply to an App, and
// what each will do: the one home of these rules (DESIGN §3.2). The planner,
// the HTTP API (its 409s) and the CLI all ask actionVerdict, each over the
// view of the App it can build. The planner sees everything; the API and the
// CLI read the App's status, which may be behind the spec, and the API may
// not see ReplicaSets. What a caller cannot know is "unknown", and an unknown
// never refuses: the request is recorded, and the operator, which knows,
// answers with its Event.
import { z } from 'zod';
import type { RunPhase } from '../app/analysis-schema.ts';
import type { Action, ActionArgs } from '../app/intents.ts';
import type { AppStatus } from '../app/schema.ts';
import { readAppStatus } from '../app/status-reader.ts';

export const UNKNOWN = 'unknown';
export type Unknown = typeof UNKNOWN;

export interface RevisionRef {
  revision: number;
  /** The pod template hash; '' when the caller could not read it. */
  hash: string;
}

/**
 * The checks a promotion waits for: prePromotionAnalysis on the revision in
 * flight, or postPromotionAnalysis on the active revision before it is stable.
 */
export interface ChecksView {
  stage: 'pre' | 'post';
  revision: RevisionRef;
  /** The run's phase; NotStarted while the preview is not yet available. */
  phase: RunPhase | 'NotStarted';
  message?: string | undefined;
}

/** The App as the rules need it. */
export interface ActionView {
  deleting: boolean;
  specPaused: boolean;
  /** Paused by the pause action (status.pause). */
  pausedByHand: boolean;
  /** The revision that serves. */
  active: RevisionRef | undefined;
  /**
   * The revision wanted instead of the active one: in preview, being promoted,
   * aborted, waiting to be deployed, or on its way back by undo. undefined:
   * none (the active revision is the one wanted, or nothing is wanted yet).
   */
  inFlight: RevisionRef | undefined | Unknown;
  /** status.abort. */
  aborted: RevisionRef | undefined;
  /** Revisions of status.history, oldest first. */
  history: readonly number[];
  /** The App's ReplicaSets not being deleted. */
  replicaSets: readonly RevisionRef[] | Unknown;
  /** undefined: no checks stand between the revision and promotion (none configured, or passed into stable). */
  checks: ChecksView | undefined | Unknown;
  /** A restart not yet finished (status.restart without finishedAt). */
  restarting: RestartingView | undefined;
}

export interface RestartingView {
  revision: number;
  by: string;
  startedAt: string;
}

export type RefusalCode =
  | 'deleting'
  /** promote or abort with nothing on its way to active. */
  | 'nothing-in-flight'
  /** promote of a stated revision that is not the one on its way. */
  | 'not-in-preview'
  /** promote of an aborted revision. */
  | 'aborted'
  | 'already-aborted'
  | 'nothing-aborted'
  /** undo with no revision before the active one to return to. */
  | 'no-earlier-revision'
  /** undo to a revision whose ReplicaSet is gone. */
  | 'no-replicaset'
  /** undo to the active revision with nothing on its way to drop. */
  | 'already-active'
  /** resume of an App paused by spec.paused only. */
  | 'paused-by-spec'
  /** promote before the checks passed, without --skip-checks. */
  | 'checks-not-passed'
  /** restart with no active revision to restart. */
  | 'nothing-active'
  /** restart while a revision is on its way to active, or the active one is not yet stable. */
  | 'release-in-progress'
  /** restart while a restart is under way. */
  | 'already-restarting';

export interface Refused {
  allowed: false;
  code: RefusalCode;
  /**
   * True when the request contradicts the App (a Warning from the operator:
   * "rejected"); false when there is only nothing to do (a Normal "ignored").
   * Both are refusals: the API answers 409 and the CLI fails.
   */
  conflict: boolean;
  /** Why, in words about the App, without naming it. */
  reason: string;
  /** The revision the request named or meant. */
  revision?: number;
  /** The revision on its way to active, when that is what the request missed. */
  inFlight?: number;
}

export type Note = 'already-paused' | 'not-paused' | 'stays-paused-by-spec';

export interface Allowed {
  allowed: true;
  /** The revision acted on: promoted, aborted, retried, or returned to by undo; undefined when not known here. */
  revision?: number;
  /** undo: the target is the active revision, and the revision on its way (inFlight) is dropped. */
  returnsToActive?: boolean;
  /** undo with returnsToActive: the revision dropped. */
  drops?: number;
  note?: Note;
}

export type Verdict = Allowed | Refused;

const refuse = (code: RefusalCode, conflict: boolean, reason: string, extra: Partial<Refused> = {}): Refused => ({
  allowed: false,
  code,
  conflict,
  reason,
  ...extra,
});

const allow = (extra: Omit<Allowed, 'allowed'> = {}): Allowed => ({ allowed: true, ...extra });

/** Same revision: by hash when both sides know it, else by number. */
export const sameRevision = (a: RevisionRef | undefined, b: RevisionRef | undefined): boolean =>
  a !== undefined &&
  b !== undefined &&
  (a.hash !== '' && b.hash !== '' ? a.hash === b.hash : a.revision === b.revision);

/** Decides whether an action applies to the App as viewed, and what it will do. */
export function actionVerdict(action: Action, args: ActionArgs, view: ActionView): Verdict {
  if (view.deleting) return refuse('deleting', true, 'the App is being deleted');
  switch (action) {
    case 'promote':
      return promoteVerdict(args, view);
    case 'abort':
      return abortVerdict(view);
    case 'retry':
      return retryVerdict(view);
    case 'undo':
      return undoVerdict(args, view);
    case 'pause':
      return allow(view.pausedByHand ? { note: 'already-paused' } : {});
    case 'resume':
      return resumeVerdict(view);
    case 'restart':
      return restartVerdict(view);
  }
}

function promoteVerdict(args: ActionArgs, view: ActionView): Verdict {
  const flight = view.inFlight;
  if (flight === UNKNOWN) return allow(args.revision !== undefined ? { revision: args.revision } : {});
  const post = postChecks(view);
  if (!flight && post) {
    if (args.revision !== undefined && args.revision !== post.revision.revision) {
      return refuse(
        'not-in-preview',
        true,
        `revision ${args.revision} is not the one being checked (revision ${post.revision.revision} is); nothing changed`,
        {
          revision: args.revision,
          inFlight: post.revision.revision,
        },
      );
    }
    return checksPassedOrSkipped(args, post) ?? allow({ revision: post.revision.revision });
  }
  if (!flight) {
    return args.revision !== undefined
      ? refuse('nothing-in-flight', false, `revision ${args.revision} is not in preview: nothing is; nothing changed`, {
          revision: args.revision,
        })
      : refuse('nothing-in-flight', false, 'nothing is in preview to promote');
  }
  if (args.revision !== undefined && args.revision !== flight.revision) {
    return refuse(
      'not-in-preview',
      true,
      `revision ${args.revision} is no longer in preview (revision ${flight.revision} is); nothing changed`,
      { revision: args.revision, inFlight: flight.revision },
    );
  }
  if (sameRevision(view.aborted, flight)) {
    return refuse('aborted', true, `revision ${flight.revision} was aborted; retry it first`, {
      revision: flight.revision,
    });
  }
  const pre = view.checks !== UNKNOWN && view.checks?.stage === 'pre' && sameRevision(view.checks.revision, flight);
  return (pre && checksPassedOrSkipped(args, view.checks as ChecksView)) || allow({ revision: flight.revision });
}

/** The post-promotion checks of the active revision, while they stand between it and stable. */
function postChecks(view: ActionView): ChecksView | undefined {
  const { checks } = view;
  if (checks === UNKNOWN || checks?.stage !== 'post') return undefined;
  return checks.phase === 'Successful' ? undefined : checks;
}

const CHECK_STATE: Record<ChecksView['phase'], string> = {
  NotStarted: 'have not started (they start once the preview is available)',
  Running: 'are running',
  Successful: 'passed',
  Failed: 'failed',
  Error: 'could not be measured',
  Inconclusive: 'were inconclusive (retry runs them again)',
  Cancelled: 'were cancelled (retry runs them again)',
};

/**
 * The one rule of a promotion over checks: only once they passed, or when the
 * caller skips them (--skip-checks, or --full as Argo Rollouts' full promotion).
 */
function checksPassedOrSkipped(args: ActionArgs, checks: ChecksView): Refused | undefined {
  if (checks.phase === 'Successful' || args.skipChecks || args.full) return undefined;
  const which = checks.stage === 'pre' ? 'pre-promotion' : 'post-promotion';
  const detail = checks.message ? `: ${checks.message}` : '';
  return refuse(
    'checks-not-passed',
    true,
    `the ${which} checks of revision ${checks.revision.revision} ${CHECK_STATE[checks.phase]}${detail}; promote --skip-checks to promote without them`,
    { revision: checks.revision.revision },
  );
}

function abortVerdict(view: ActionView): Verdict {
  const flight = view.inFlight;
  if (flight === UNKNOWN) return allow();
  // Active but not yet stable: an abort switches back to the stable revision.
  const post = postChecks(view);
  if (!flight && post && !sameRevision(view.aborted, post.revision)) return allow({ revision: post.revision.revision });
  if (!flight) return refuse('nothing-in-flight', false, 'nothing is in progress to abort');
  if (sameRevision(view.aborted, flight)) {
    return refuse('already-aborted', false, `revision ${flight.revision} is aborted already`, {
      revision: flight.revision,
    });
  }
  return allow({ revision: flight.revision });
}

/**
 * undo: with a revision on its way to active (in preview, promoting, aborted,
 * or waiting), back to the active one at once, dropping it; otherwise to the
 * newest revision promoted before the active one that still has a ReplicaSet,
 * or to --to-revision.
 */
function undoVerdict(args: ActionArgs, view: ActionView): Verdict {
  const { active, inFlight } = view;
  let target: number | undefined;
  if (args.toRevision !== undefined) {
    target = args.toRevision;
  } else if (inFlight === UNKNOWN && active) {
    // Back to the active revision or to the one before it: only the operator knows which.
    return allow();
  } else if (inFlight && inFlight !== UNKNOWN && active) {
    target = active.revision;
  } else {
    const previous = previousStable(view);
    if (previous === UNKNOWN) return allow();
    if (previous === undefined) return refuse('no-earlier-revision', true, 'there is no earlier revision to return to');
    target = previous;
  }
  const toActive = active !== undefined && target === active.revision;
  if (view.replicaSets !== UNKNOWN && !view.replicaSets.some((rs) => rs.revision === target)) {
    return refuse(
      'no-replicaset',
      true,
      `revision ${target} has no ReplicaSet left (see revisionHistoryLimit); nothing changed`,
      { revision: target },
    );
  }
  if (!toActive || inFlight === UNKNOWN) return allow({ revision: target });
  if (!inFlight) return refuse('already-active', false, `revision ${target} is already active`, { revision: target });
  return allow({ revision: target, returnsToActive: true, drops: inFlight.revision });
}

/** The newest revision promoted before the active one that still has a ReplicaSet; unknown if that cannot be told. */
function previousStable(view: ActionView): number | undefined | Unknown {
  const candidates = [...view.history].reverse().filter((r) => r !== view.active?.revision);
  if (view.replicaSets === UNKNOWN) return candidates.length > 0 ? UNKNOWN : undefined;
  const kept = new Set(view.replicaSets.map((rs) => rs.revision));
  return candidates.find((r) => kept.has(r));
}

/** retry: an aborted revision goes again, checks and all; inconclusive or cancelled checks run again. */
function retryVerdict(view: ActionView): Verdict {
  if (view.aborted) return allow({ revision: view.aborted.revision });
  const { checks } = view;
  if (checks !== UNKNOWN && (checks?.phase === 'Inconclusive' || checks?.phase === 'Cancelled')) {
    return allow({ revision: checks.revision.revision });
  }
  return refuse('nothing-aborted', false, 'nothing is aborted to retry');
}

function resumeVerdict(view: ActionView): Verdict {
  if (!view.pausedByHand && view.specPaused) {
    return refuse('paused-by-spec', true, 'the App is paused by spec.paused, not by pause: set spec.paused to false');
  }
  if (!view.pausedByHand) return allow({ note: 'not-paused' });
  return allow(view.specPaused ? { note: 'stays-paused-by-spec' } : {});
}

/**
 * restart: the pods of the active revision, replaced in place. Refused while a
 * release is under way: a revision deployed on its way to active (in preview,
 * promoting, or returning by undo) or an active revision whose post-promotion
 * checks still hold the stable one up, since the restart would replace pods
 * that are about to stop serving, or whose revision may yet be rolled back.
 * Allowed when paused (a pause holds releases; a restart is none), when a
 * revision only waits to be deployed, and after an abort (active is stable).
 */
function restartVerdict(view: ActionView): Verdict {
  const { active, inFlight, restarting } = view;
  if (!active) return refuse('nothing-active', true, 'nothing is active to restart');
  if (restarting) {
    return refuse(
      'already-restarting',
      false,
      `revision ${restarting.revision} is being restarted already (since ${restarting.startedAt}, by ${restarting.by})`,
      { revision: restarting.revision },
    );
  }
  const deployed =
    inFlight !== UNKNOWN &&
    inFlight !== undefined &&
    !sameRevision(view.aborted, inFlight) &&
    (view.replicaSets === UNKNOWN || view.replicaSets.some((rs) => sameRevision(rs, inFlight)));
  if (deployed) {
    return refuse(
      'release-in-progress',
      true,
      `revision ${inFlight.revision} is on its way to active; restart once the release is done (promote, abort or undo it first)`,
      { revision: active.revision, inFlight: inFlight.revision },
    );
  }
  const post = inFlight === UNKNOWN ? undefined : postChecks(view);
  if (post) {
    return refuse(
      'release-in-progress',
      true,
      `revision ${post.revision.revision} is active but not yet stable: its post-promotion checks ${CHECK_STATE[post.phase]}; restart once they pass`,
      { revision: post.revision.revision },
    );
  }
  return allow({ revision: active.revision });
}

// ---- the view from an App object (the API's cache, the CLI's GET) ----

const opt = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
const SpecSchema = z.looseObject({
  paused: opt(z.boolean()),
  strategy: opt(
    z.looseObject({
      blueGreen: opt(
        z.looseObject({ prePromotionAnalysis: opt(z.looseObject({})), postPromotionAnalysis: opt(z.looseObject({})) }),
      ),
    }),
  ),
});

const ref = (r: { revision: number; podTemplateHash?: string | undefined } | undefined): RevisionRef | undefined =>
  r ? { revision: r.revision, hash: r.podTemplateHash ?? '' } : undefined;

/**
 * What is on its way to active, as the App's status tells it. The operator
 * names it in promotion, abort, preview or pin; without those, the Promoted
 * condition, or phase Healthy or Building, says nothing is. Anything else
 * (a revision paused before its ReplicaSet exists, a first release, a failed
 * build), or a spec changed since the status was written, is unknown.
 */
function inFlightFromStatus(status: AppStatus, generation: number | undefined): RevisionRef | undefined | Unknown {
  if (generation !== undefined && status.observedGeneration !== undefined && status.observedGeneration !== generation) {
    return UNKNOWN;
  }
  const active = ref(status.active);
  const named = ref(status.promotion ?? status.abort ?? status.preview);
  if (named && !sameRevision(named, active)) return named;
  const pin = ref(status.pin);
  if (pin && !sameRevision(pin, active)) return pin;
  // The planner reports Healthy or Building only while the revision it wants is the active one or none.
  const promoted = status.conditions?.find((c) => c.type === 'Promoted')?.status === 'True';
  if (promoted || status.phase === 'Healthy' || status.phase === 'Building') return undefined;
  return UNKNOWN;
}

export interface AppLike {
  metadata: { generation?: number | undefined; deletionTimestamp?: unknown };
  spec?: unknown;
  status?: unknown;
}

/** The view of an App read from the API server; replicaSets unknown when the caller cannot list them. */
export function viewOfApp(
  app: AppLike,
  replicaSets: readonly { revision: number; hash: string; deleting: boolean }[] | Unknown,
): ActionView {
  const status = readAppStatus(app.status);
  const spec = SpecSchema.safeParse(app.spec ?? {});
  const inFlight = inFlightFromStatus(status, app.metadata.generation);
  const bg = spec.success ? spec.data.strategy?.blueGreen : undefined;
  return {
    deleting: app.metadata.deletionTimestamp !== undefined && app.metadata.deletionTimestamp !== null,
    specPaused: spec.success && spec.data.paused === true,
    pausedByHand: status.pause !== undefined,
    active: ref(status.active),
    inFlight,
    aborted: ref(status.abort),
    checks:
      inFlight === UNKNOWN
        ? UNKNOWN
        : checksView(
            { pre: bg?.prePromotionAnalysis !== undefined, post: bg?.postPromotionAnalysis !== undefined },
            status,
            inFlight,
          ),
    history: (status.history ?? []).map((h) => h.revision),
    restarting: restartingView(status.restart),
    replicaSets:
      replicaSets === UNKNOWN
        ? UNKNOWN
        : replicaSets.filter((rs) => !rs.deleting).map((rs) => ({ revision: rs.revision, hash: rs.hash })),
  };
}

/** A restart under way, as status records it; for the planner and for callers reading status alike. */
export function restartingView(
  restart: { revision: number; by: string; startedAt: string; finishedAt?: string | undefined } | undefined,
): RestartingView | undefined {
  if (!restart || restart.finishedAt !== undefined) return undefined;
  return { revision: restart.revision, by: restart.by, startedAt: restart.startedAt };
}

/** What checksView reads of status: a run's revision, hash, phase and message. */
type Ref = { revision: number; podTemplateHash?: string | undefined };
type RunRef = Ref & { phase: RunPhase; message?: string | undefined };
interface ChecksStatus {
  active?: Ref | undefined;
  stable?: Ref | undefined;
  prePromotionAnalysis?: RunRef | undefined;
  postPromotionAnalysis?: RunRef | undefined;
}

/**
 * The checks between a revision and promotion, for the planner and for callers
 * reading status alike: the revision in flight's pre-promotion run, or, with
 * nothing in flight, the post-promotion run of an active revision not yet stable.
 */
export function checksView(
  configured: { pre: boolean; post: boolean },
  status: ChecksStatus,
  inFlight: RevisionRef | undefined,
): ChecksView | undefined {
  if (inFlight) {
    if (!configured.pre) return undefined;
    const run = status.prePromotionAnalysis;
    const mine = run && sameRevision(ref(run), inFlight);
    return {
      stage: 'pre',
      revision: inFlight,
      phase: mine ? run.phase : 'NotStarted',
      ...(mine && run.message ? { message: run.message } : {}),
    };
  }
  const active = ref(status.active);
  const run = status.postPromotionAnalysis;
  if (!configured.post || !active || !run || sameRevision(ref(status.stable), active)) return undefined;
  if (!sameRevision(ref(run), active)) return undefined;
  return { stage: 'post', revision: active, phase: run.phase, ...(run.message ? { message: run.message } : {}) };
}
