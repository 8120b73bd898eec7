// Whether promote, abort, retry, undo, pause and resume apply to an App, and
// what each will do: the one home of these rules (DESIGN §3.2). The planner,
// the HTTP API (its 409s) and the CLI all ask actionVerdict, each over the
// view of the App it can build. The planner sees everything; the API and the
// CLI read the App's status, which may be behind the spec, and the API may
// not see ReplicaSets. What a caller cannot know is "unknown", and an unknown
// never refuses: the request is recorded, and the operator, which knows,
// answers with its Event.
import { z } from 'zod';
import type { Action } from '../app/intents.ts';

export const UNKNOWN = 'unknown';
export type Unknown = typeof UNKNOWN;

export interface RevisionRef {
  revision: number;
  /** The pod template hash; '' when the caller could not read it. */
  hash: string;
}

/** The arguments an action may carry (an intent's, an API body's, the CLI's flags). */
export interface ActionArgs {
  /** promote: the revision the caller saw in preview. */
  revision?: number | undefined;
  /** promote: skip the remaining waits. */
  full?: boolean | undefined;
  /** undo: the revision to return to. */
  toRevision?: number | undefined;
  /** undo: stage the revision as a preview. */
  preview?: boolean | undefined;
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
  | 'paused-by-spec';

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
      return view.aborted
        ? allow({ revision: view.aborted.revision })
        : refuse('nothing-aborted', false, 'nothing is aborted to retry');
    case 'undo':
      return undoVerdict(args, view);
    case 'pause':
      return allow(view.pausedByHand ? { note: 'already-paused' } : {});
    case 'resume':
      return resumeVerdict(view);
  }
}

function promoteVerdict(args: ActionArgs, view: ActionView): Verdict {
  const flight = view.inFlight;
  if (flight === UNKNOWN) return allow(args.revision !== undefined ? { revision: args.revision } : {});
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
  return allow({ revision: flight.revision });
}

function abortVerdict(view: ActionView): Verdict {
  const flight = view.inFlight;
  if (flight === UNKNOWN) return allow();
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

function resumeVerdict(view: ActionView): Verdict {
  if (!view.pausedByHand && view.specPaused) {
    return refuse('paused-by-spec', true, 'the App is paused by spec.paused, not by pause: set spec.paused to false');
  }
  if (!view.pausedByHand) return allow({ note: 'not-paused' });
  return allow(view.specPaused ? { note: 'stays-paused-by-spec' } : {});
}

// ---- the view from an App object (the API's cache, the CLI's GET) ----

const opt = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
const RefSchema = z.looseObject({ revision: z.int().min(1), podTemplateHash: z.string().optional() });
// Lenient: a field that cannot be read counts as absent (the CRD's status schema makes that rare).
const StatusSchema = z.looseObject({
  phase: opt(z.string()),
  observedGeneration: opt(z.int()),
  conditions: opt(z.array(z.looseObject({ type: z.string(), status: z.string() }))),
  active: opt(RefSchema),
  preview: opt(RefSchema),
  promotion: opt(RefSchema),
  abort: opt(RefSchema),
  pin: opt(RefSchema),
  pause: opt(z.looseObject({})),
  history: opt(z.array(z.looseObject({ revision: z.int().min(1) }))),
});
type ActionStatus = z.output<typeof StatusSchema>;
const SpecSchema = z.looseObject({ paused: opt(z.boolean()) });

const ref = (r: { revision: number; podTemplateHash?: string | undefined } | undefined): RevisionRef | undefined =>
  r ? { revision: r.revision, hash: r.podTemplateHash ?? '' } : undefined;

/**
 * What is on its way to active, as the App's status tells it. The operator
 * names it in promotion, abort, preview or pin; without those, the Promoted
 * condition, or phase Healthy or Building, says nothing is. Anything else
 * (a revision paused before its ReplicaSet exists, a first release, a failed
 * build), or a spec changed since the status was written, is unknown.
 */
function inFlightFromStatus(status: ActionStatus, generation: number | undefined): RevisionRef | undefined | Unknown {
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
  const parsed = StatusSchema.safeParse(app.status ?? {});
  const status: ActionStatus = parsed.success ? parsed.data : {};
  const spec = SpecSchema.safeParse(app.spec ?? {});
  return {
    deleting: app.metadata.deletionTimestamp !== undefined && app.metadata.deletionTimestamp !== null,
    specPaused: spec.success && spec.data.paused === true,
    pausedByHand: status.pause !== undefined,
    active: ref(status.active),
    inFlight: inFlightFromStatus(status, app.metadata.generation),
    aborted: ref(status.abort),
    history: (status.history ?? []).map((h) => h.revision),
    replicaSets:
      replicaSets === UNKNOWN
        ? UNKNOWN
        : replicaSets.filter((rs) => !rs.deleting).map((rs) => ({ revision: rs.revision, hash: rs.hash })),
  };
}
