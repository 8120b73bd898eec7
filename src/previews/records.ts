// What the parent's status.previews keeps (issue #28: it must always fit in the
// App): at most PREVIEWS_STATUS_BUDGET bytes as stored, and MAX_PREVIEW_RECORDS
// records. A record carries `reported`, what the provider last accepted, which
// keeps the planner from writing a commit status or comment again: so the
// records of pull requests with a child App come first, and the children are
// never more than status can record whatever their records say; the records
// left out are those of pull requests without a child (AwaitingApproval,
// Expired), oldest first, and the planner writes on those pull requests no
// more (plan.ts: only a recorded pull request is reported on).
import {
  MAX_PREVIEW_CHILDREN,
  MAX_PREVIEW_RECORDS,
  PREVIEWS_STATUS_BUDGET,
  type PreviewStatus,
} from '../app/previews-status-schema.ts';
import type { App } from '../app/schema.ts';
import { storedBytes } from '../app/stored-bytes.ts';
import { PreviewReason } from './reasons.ts';
import type { Verdict } from './select.ts';

/** Those with a child App first, then the newest (the highest number). */
const byRank =
  <T>(hasChild: (t: T) => boolean, number: (t: T) => number) =>
  (a: T, b: T) =>
    Number(hasChild(b)) - Number(hasChild(a)) || number(b) - number(a);

/**
 * The records status.previews keeps, by number: in rank (a child's first, then the
 * newest) as long as they fit the budget and the count; the first that does not fit,
 * and every one after it, are left out. `size`: the bytes a record takes once stored
 * (the planner's counts its writes of this round as landed).
 */
export function recorded(
  entries: readonly PreviewStatus[],
  listedAt: string,
  size: (entry: PreviewStatus) => number = storedBytes,
): PreviewStatus[] {
  const ranked = [...entries].sort(
    byRank(
      (e) => e.name !== undefined,
      (e) => e.number,
    ),
  );
  let bytes = storedBytes({ listedAt, pullRequests: [] });
  const kept: PreviewStatus[] = [];
  for (const entry of ranked) {
    bytes += size(entry) + 1;
    if (kept.length >= MAX_PREVIEW_RECORDS || bytes > PREVIEWS_STATUS_BUDGET) break;
    kept.push(entry);
  }
  return kept.sort((a, b) => a.number - b.number);
}

/** The most numbers a skip message names; the rest are counted. */
const NAMED = 20;

export interface Capacity {
  verdicts: Verdict[];
  /** Why some pull requests got no preview, naming them; undefined when all did. */
  skipped?: string;
}

/**
 * The verdicts with at most MAX_PREVIEW_CHILDREN pull requests having a child App
 * (the children of pull requests unread this round, left as they are, count too):
 * those that have one keep it, then the newest get one; any other gets none (its
 * child, if it had one, is deleted) and is named in the skip message.
 */
export function withinCapacity(
  verdicts: readonly Verdict[],
  children: ReadonlyMap<number, App>,
  unread: ReadonlySet<number>,
  expired: (number: number) => string | undefined,
): Capacity {
  const has = (v: Verdict) => children.has(v.pr.number);
  // An expired preview (no child, its head expired) has no child until a new commit.
  const wantsChild = (v: Verdict) =>
    (v.kind === 'preview' && (has(v) || expired(v.pr.number) !== v.pr.headSha)) ||
    (v.kind === 'awaitingApproval' && has(v));
  const slots = MAX_PREVIEW_CHILDREN - [...children.keys()].filter((n) => unread.has(n)).length;
  const ranked = verdicts.filter(wantsChild).sort(byRank(has, (v) => v.pr.number));
  const over = new Set(ranked.slice(Math.max(0, slots)).map((v) => v.pr.number));
  if (over.size === 0) return { verdicts: [...verdicts] };
  const numbers = [...over].sort((a, b) => a - b);
  const named = numbers.slice(0, NAMED).map((n) => `#${n}`);
  const more = numbers.length > NAMED ? ` and ${numbers.length - NAMED} more` : '';
  return {
    verdicts: verdicts.map((v) => (over.has(v.pr.number) ? { kind: 'none', pr: v.pr, why: PreviewReason.TooMany } : v)),
    skipped: `pull requests ${named.join(', ')}${more}: no preview, more than the ${MAX_PREVIEW_CHILDREN} previews status.previews can always record`,
  };
}
