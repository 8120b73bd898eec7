// What this replica keeps of each App between its reconciles, in one place
// with one forget(): the ignored values already told, the status write the
// cache has yet to show, the digests of the App's Secrets as last read, and
// what the source poller, the analysis runner and the notification sender
// hold for it. The reconciler forgets an App that is gone; the AppController
// one whose shard went to another replica: both through forget().
import type { SourceState } from '../rollout/config-refs.ts';

/** The digests of an App's referenced Secrets, whether its Secret copies in use exist, and when they were read; never their data. */
export interface SecretDigests {
  readAt: number;
  digests: Map<string, SourceState>;
  copies: Map<string, boolean>;
}

/** Another part of this replica that keeps something per App. */
export interface PerApp {
  forget(appKey: string): void;
}

export class AppMemory {
  /** The ignored values already told, by id (see Reconciler.reportValueProblems). */
  private readonly told = new Map<string, ReadonlySet<string>>();
  /** The resourceVersion the last status write replaced, until the cache has moved past it. */
  private readonly written = new Map<string, { resourceVersion: string; at: number }>();
  /** The Secrets' digests as last read (config-refs.ts CONFIG_RECHECK_MS). */
  private readonly secrets = new Map<string, SecretDigests>();
  private readonly others: readonly PerApp[];

  constructor(others: readonly (PerApp | undefined)[] = []) {
    this.others = others.filter((o) => o !== undefined);
  }

  /** Lets everything this replica keeps of the App go. */
  forget(appKey: string): void {
    this.told.delete(appKey);
    this.written.delete(appKey);
    this.secrets.delete(appKey);
    for (const other of this.others) other.forget(appKey);
  }

  /** Of the ids of the problems found now, those not told already. */
  untold(appKey: string, ids: Iterable<string>): string[] {
    const before = this.told.get(appKey);
    return [...ids].filter((id) => !before?.has(id));
  }

  /** These are told: a problem repaired since is forgotten, to be told again if it comes back. */
  tell(appKey: string, ids: Iterable<string>): void {
    const now = new Set(ids);
    if (now.size > 0) this.told.set(appKey, now);
    else this.told.delete(appKey);
  }

  /** This replica wrote the App's status over this resourceVersion, at this performance.now(). */
  wrote(appKey: string, resourceVersion: string, at: number): void {
    this.written.set(appKey, { resourceVersion, at });
  }

  /** The cache shows the App at this resourceVersion: past the last write, nothing is left to await. */
  seen(appKey: string, resourceVersion: string): void {
    if (this.written.get(appKey)?.resourceVersion !== resourceVersion) this.written.delete(appKey);
  }

  /**
   * Whether the App at this resourceVersion is still the one the last status
   * write replaced, and that write is less than maxMs old; otherwise nothing
   * is awaited any more.
   */
  awaitsOwnWrite(appKey: string, resourceVersion: string, now: number, maxMs: number): boolean {
    const written = this.written.get(appKey);
    if (!written) return false;
    const waiting = written.resourceVersion === resourceVersion && now - written.at < maxMs;
    if (!waiting) this.written.delete(appKey);
    return waiting;
  }

  secretDigests(appKey: string): SecretDigests | undefined {
    return this.secrets.get(appKey);
  }

  readSecrets(appKey: string, digests: SecretDigests): void {
    this.secrets.set(appKey, digests);
  }
}
