// At most one write per App per PREVIEWS_HINT_GAP_MS for pull-request hints
// (issue #28 item 2): a busy pull request sends an event per push, label,
// comment or review, and each would otherwise be a write to the App (and a
// round of the previews planner). A request inside the gap is not lost: one
// write is kept for the gap's end, and the requests in between share it.

/** The least time between two pull-request hints written to the same App. */
export const PREVIEWS_HINT_GAP_MS = 5_000;

export class HintSpacing {
  readonly gapMs: number;
  /** The time of each App's last write, done or kept for later. */
  private readonly last = new Map<string, number>();
  private readonly pending = new Set<string>();

  constructor(gapMs = PREVIEWS_HINT_GAP_MS) {
    this.gapMs = gapMs;
  }

  /**
   * How long to wait before writing this App's hint: 0 to write now, more to
   * write then; undefined when a write is already kept for later (it covers this one).
   */
  schedule(key: string, nowMs: number): number | undefined {
    if (this.pending.has(key)) return undefined;
    this.forgetBefore(nowMs - this.gapMs);
    const last = this.last.get(key);
    const wait = last === undefined ? 0 : Math.max(0, last + this.gapMs - nowMs);
    this.last.set(key, nowMs + wait);
    if (wait > 0) this.pending.add(key);
    return wait;
  }

  /** The write kept for later was made (or failed): the next request schedules anew. */
  done(key: string): void {
    this.pending.delete(key);
  }

  get size(): number {
    return this.last.size;
  }

  // Apps last written before the gap need no record: the map holds only the Apps written in the last gap.
  private forgetBefore(ms: number): void {
    for (const [key, at] of this.last) if (at < ms && !this.pending.has(key)) this.last.delete(key);
  }
}

/**
 * The webhooks' onPullRequest: writes each App's hint through `write` now, or
 * once at the end of its gap. A write now is awaited (its failure fails the
 * delivery, which the provider delivers again); a later one only logs a failure.
 */
export function spacedHints(
  write: (namespace: string, name: string) => Promise<void>,
  onLateError: (err: unknown, app: string) => void,
  spacing = new HintSpacing(),
  now: () => number = Date.now,
): (matched: readonly { namespace: string; name: string }[]) => Promise<void> {
  return async (matched) => {
    const writes: Promise<void>[] = [];
    for (const { namespace, name } of matched) {
      const key = `${namespace}/${name}`;
      const wait = spacing.schedule(key, now());
      if (wait === 0) writes.push(write(namespace, name));
      else if (wait !== undefined) {
        const later = () =>
          write(namespace, name)
            .catch((err: unknown) => onLateError(err, key))
            .finally(() => spacing.done(key));
        setTimeout(later, wait).unref();
      }
    }
    await Promise.all(writes);
  };
}
