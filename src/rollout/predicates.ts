// The blue/green planner's decisions, each a named predicate over plain
// values, so every rule is read and tested on its own (as Argo Rollouts names
// isBlueGreenFastTracked and IsSaturated), apart from the steps that act on them.

import { rfc3339Time } from '../app/cluster-values.ts';
import type { AppStatus, Phase } from '../app/schema.ts';
import type { ObservedReplicaSet } from './observed.ts';

/**
 * A time Teal wrote and reads back (an annotation, a status field): anyone
 * with edit rights can change it, so anything but a real time is absent.
 */
export function parseTime(value: string | undefined): number | undefined {
  return value === undefined ? undefined : rfc3339Time.parse(value);
}

/** When the ReplicaSet is due to go to zero, if Teal marked it (and the mark is readable). */
export const scaleDownDeadline = (rs: ObservedReplicaSet): number | undefined => parseTime(rs.scaleDownAt);

/** Still up inside its scale-down delay: a return to it is instant (Argo's fast rollback). */
export function isWithinScaleDownDelay(rs: ObservedReplicaSet | undefined, nowMs: number): boolean {
  if (!rs) return false;
  const deadline = scaleDownDeadline(rs);
  return deadline !== undefined && deadline > nowMs && rs.availableReplicas > 0;
}

/**
 * When the switch to the active revision was verified (spec.strategy.blueGreen.switch):
 * status.switch, which verifySwitch (switch.ts) writes only once the cluster
 * showed it, for that revision, with a readable time. Undefined: not verified.
 */
export function switchVerifiedAt(status: AppStatus, activeHash: string | undefined): number | undefined {
  const recorded = status.switch;
  if (activeHash === undefined || recorded?.podTemplateHash !== activeHash) return undefined;
  return parseTime(recorded.verifiedAt);
}

/** The one place that says whether the switch is verified, and so whether the previous revision may go. */
export const isSwitchVerified = (status: AppStatus, activeHash: string | undefined): boolean =>
  switchVerifiedAt(status, activeHash) !== undefined;

/** The revision served users once: history records it (by hash; by number for entries written before hashes were). */
export function hasServed(status: AppStatus, hash: string, revision: number | undefined): boolean {
  return (status.history ?? []).some(
    (h) => h.podTemplateHash === hash || (h.podTemplateHash === undefined && h.revision === revision),
  );
}

/**
 * Goes straight to active, with no preview and no pause: the first release,
 * an undo to a revision that served before (unless staged with --preview), a
 * return to the stable revision, or to one still up inside its scale-down
 * delay. Each was known to be good; an undo to a revision that never served is
 * previewed like any new one.
 */
export function isFastTracked(
  status: AppStatus,
  hash: string,
  rs: ObservedReplicaSet | undefined,
  activeHash: string | undefined,
  nowMs: number,
): boolean {
  const pinned = status.pin?.podTemplateHash === hash && !status.pin.preview;
  const served = hasServed(status, hash, rs?.revision);
  return (
    activeHash === undefined ||
    (pinned && served) ||
    status.stable?.podTemplateHash === hash ||
    (served && !isRolledBackFrom(status, hash) && isWithinScaleDownDelay(rs, nowMs))
  );
}

/**
 * Where an abort of the active revision sends active: back to the stable
 * revision, while the aborted one awaits its post-promotion checks and
 * stable's ReplicaSet is still there. Undefined: active stays where it is.
 */
export function stableToReturnTo(
  status: AppStatus,
  aborted: string,
  activeHash: string | undefined,
  replicaSets: Iterable<ObservedReplicaSet>,
): ObservedReplicaSet | undefined {
  const stable = status.stable?.podTemplateHash;
  if (aborted !== activeHash || stable === undefined || stable === aborted) return undefined;
  for (const rs of replicaSets) if (rs.hash === stable) return rs;
  return undefined;
}

/** Went active and was switched back from (a failed post-promotion check, or abort during them): not known good. */
export function isRolledBackFrom(status: AppStatus, hash: string): boolean {
  const history = status.history ?? [];
  const at = history.findLastIndex((h) => h.podTemplateHash === hash);
  return at >= 0 && history[at + 1]?.promotedVia === 'abort';
}

/** A person (or auto promotion) asked for this revision to go active. */
export const isPromotionRequested = (status: AppStatus, hash: string): boolean =>
  status.promotion?.podTemplateHash === hash;

/** This revision was aborted and stays so until retry, a new revision or a spec change. */
export const isAborted = (status: AppStatus, hash: string): boolean => status.abort?.podTemplateHash === hash;

/** The revision's preview became available once (status.preview.availableAt): from then on it waits for promotion. */
export const wasAvailableInPreview = (status: AppStatus, hash: string): boolean =>
  status.preview?.podTemplateHash === hash && status.preview.availableAt !== undefined;

/**
 * When auto promotion is due: autoPromotionSeconds after the preview first
 * became available, as recorded in status (now, when first seen available).
 */
export function autoPromotionDueAt(status: AppStatus, hash: string, autoPromotionSeconds: number, nowMs: number) {
  const recorded = status.preview?.podTemplateHash === hash ? parseTime(status.preview.availableAt) : undefined;
  return (recorded ?? nowMs) + autoPromotionSeconds * 1000;
}

/**
 * Whether the active Service's selector is a switch Teal made itself whose
 * status write was lost (a conflict, or a kill between the two writes), as
 * opposed to someone else's edit. Teal writes the selector together with a
 * note of what it applied, and only ever switches to the revision it is
 * releasing: a hand edit changes the selector without the note, or points at
 * a revision nothing was releasing. Such an edit is repaired, never adopted.
 */
export function isOwnSwitch(
  status: AppStatus,
  selected: string,
  appliedNoteMatches: boolean,
  releasing: string | undefined,
): boolean {
  if (!appliedNoteMatches) return false;
  // Status lost whole: nothing to compare with, and the note says Teal wrote it.
  if (!status.active) return true;
  return (
    selected === releasing ||
    selected === status.promotion?.podTemplateHash ||
    selected === status.pin?.podTemplateHash ||
    isRollBackTo(status, selected)
  );
}

/**
 * The switch back to stable that aborting the active revision makes (a failed
 * post-promotion check, or abort during them): the abort is in status before
 * the Service moves, so a switch to stable under it is Teal's own.
 */
export function isRollBackTo(status: AppStatus, hash: string): boolean {
  const active = status.active?.podTemplateHash;
  return (
    active !== undefined &&
    status.abort?.podTemplateHash === active &&
    status.stable?.podTemplateHash === hash &&
    hash !== active
  );
}

/**
 * Whether a change of phase is worth an Event: any change, except a new
 * App's first step into Progressing, which only says that work began (the
 * ReplicaSet's own Event says that, and Healthy follows).
 */
export function isPhaseNews(before: Phase | undefined, after: Phase): boolean {
  if (before === after) return false;
  return before !== undefined || after !== 'Progressing';
}
