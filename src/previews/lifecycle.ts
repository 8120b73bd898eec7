// Cost control (issue #28 item 7): when a preview last saw activity, which
// sleep (replicas 0, their ReplicaSets kept), which are deleted for idleness,
// and the exact time the next one is due. Activity is a preview made, a new
// commit, or a wake (ANN_WAKE); nothing else (a comment, a label) counts.
import { parseDuration } from '../app/duration.ts';
import { ANN_ACTIVE_AT, ANN_PR_HEAD, ANN_WAKE } from '../app/preview-labels.ts';
import type { Previews } from '../app/previews-schema.ts';
import type { App } from '../app/schema.ts';
import type { ChildWanted } from './child.ts';
import type { PullRequest } from './pull-request.ts';
import { PreviewReason, type PreviewReasonValue } from './reasons.ts';

/** A pull request that may have a preview, with the child App it has (if any). */
export interface Candidate {
  pr: PullRequest;
  /** The commit to build. */
  head: string;
  child?: App | undefined;
  /** The head commit deleteAfter expired, as status.previews recorded it. */
  expired?: string | undefined;
}

export interface Lifecycle {
  /** The previews to have, each awake or asleep. */
  wanted: ChildWanted[];
  /** Pull requests whose preview is (or stays) deleted for idleness, with the commit that expired. */
  expired: Candidate[];
  /** Why each asleep preview sleeps, by number. */
  asleep: Map<number, PreviewReasonValue>;
  /** Numbers woken by a wake request this round. */
  woken: Set<number>;
  /** When the next preview falls asleep or expires (ms since the epoch). */
  deadlines: number[];
}

const timeOf = (value: string | Date | undefined): number | undefined => {
  const ms = value === undefined ? Number.NaN : value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
};

/** The child's head commit, as it was made for. */
export const childHead = (child: App | undefined): string | undefined => child?.metadata.annotations?.[ANN_PR_HEAD];

/**
 * When the preview last saw activity: now for a new preview or a new commit;
 * else its recorded time, or a later wake request (one in the future does not
 * count: it would keep a preview awake for ever).
 */
export function activeAt(candidate: Candidate, nowMs: number): { at: number; woken: boolean } {
  const { child } = candidate;
  if (!child || childHead(child) !== candidate.head) return { at: nowMs, woken: false };
  const annotations = child.metadata.annotations ?? {};
  const recorded = timeOf(annotations[ANN_ACTIVE_AT]) ?? timeOf(child.metadata.creationTimestamp) ?? nowMs;
  const wake = timeOf(annotations[ANN_WAKE]);
  if (wake !== undefined && wake > recorded && wake <= nowMs) return { at: wake, woken: true };
  return { at: Math.min(recorded, nowMs), woken: false };
}

/** Idle at least this long at `nowMs`. */
const idleFor = (at: number, limit: string | undefined, nowMs: number) =>
  limit !== undefined && nowMs - at >= parseDuration(limit);

/** The awake previews beyond maxActive, the oldest idle first: they sleep. */
function overMaxActive(awake: ChildWanted[], maxActive: number | undefined): ChildWanted[] {
  if (maxActive === undefined) return [];
  const newestFirst = [...awake].sort((a, b) => b.activeAt - a.activeAt || b.pr.number - a.pr.number);
  return newestFirst.slice(maxActive);
}

export function lifecycle(candidates: readonly Candidate[], previews: Previews, nowMs: number): Lifecycle {
  const out: Lifecycle = { wanted: [], expired: [], asleep: new Map(), woken: new Set(), deadlines: [] };
  for (const candidate of candidates) {
    if (!candidate.child && candidate.expired === candidate.head) {
      out.expired.push(candidate);
      continue;
    }
    const { at, woken } = activeAt(candidate, nowMs);
    if (idleFor(at, previews.deleteAfter, nowMs)) {
      out.expired.push(candidate);
      continue;
    }
    if (woken) out.woken.add(candidate.pr.number);
    if (previews.deleteAfter !== undefined) out.deadlines.push(at + parseDuration(previews.deleteAfter));
    const idle = idleFor(at, previews.sleepAfter, nowMs);
    if (idle) out.asleep.set(candidate.pr.number, PreviewReason.Idle);
    else if (previews.sleepAfter !== undefined) out.deadlines.push(at + parseDuration(previews.sleepAfter));
    const headRef = candidate.pr.headRef;
    out.wanted.push({ pr: candidate.pr, head: candidate.head, headRef, awake: !idle, activeAt: at });
  }
  for (const wanted of overMaxActive(
    out.wanted.filter((w) => w.awake),
    previews.maxActive,
  )) {
    wanted.awake = false;
    out.asleep.set(wanted.pr.number, PreviewReason.OverMaxActive);
  }
  return out;
}
