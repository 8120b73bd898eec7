// One poller for every App. Apps whose sources share a repository (same
// normalised URL, protocol and credentials) share one ls-remote per interval,
// whatever refs they follow: all of those refs go into the one call.
import type { GitCredentials } from './credentials.ts';
import { GitError } from './errors.ts';
import { type ResolvedRef, resolveRefs } from './resolve.ts';
import { normalizeRepoUrl, parseGitUrl } from './url.ts';

export interface WatchSpec {
  url: string;
  ref: string;
  /** Poll interval in ms. 0 polls no more: resolved once when watched, then only on trigger. */
  interval: number;
  /** Names the credentials, e.g. "namespace/secret"; Apps share an ls-remote only with equal keys. */
  credentialsKey?: string | undefined;
}

export interface RefsRequest {
  url: string;
  refs: string[];
  credentials: GitCredentials | undefined;
}

/** Lists several refs of one repository in one call. Whole-repository failures throw. */
export type RefsResolver = (request: RefsRequest) => Promise<Map<string, ResolvedRef | GitError>>;

export type ResolveOutcome = ResolvedRef | GitError;

/** Reported after each resolution. */
export interface PollInfo {
  url: string;
  refs: number;
  durationMs: number;
  error?: GitError;
}

export interface PollerTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface SourcePollerOptions {
  /** Called with the Apps whose outcome changed (first outcome, new commit, new error, recovery). */
  onResolved: (appKeys: string[], result: ResolveOutcome) => void;
  /** Fetches credentials by key (the controller reads Secrets). Throwing fails that poll. */
  credentials?: (credentialsKey: string) => Promise<GitCredentials | undefined>;
  /** Default: resolveRefs (a real ls-remote) with timeoutMs and allowFile. */
  resolve?: RefsResolver;
  timeoutMs?: number;
  allowFile?: boolean;
  /** For metrics: every call to the resolver, successful or not. */
  onPoll?: (info: PollInfo) => void;
  /** A callback threw; the poller carries on. */
  onCallbackError?: (err: unknown) => void;
  timers?: PollerTimers;
  /** Uniform in [0, 1); injectable so tests are deterministic. */
  random?: () => number;
  /** Each delay is varied by up to this fraction either way, so repositories drift apart. Default 0.1. */
  jitter?: number;
  /** Errors double the delay up to this (or the interval, if longer). Default 5 min. */
  maxBackoffMs?: number;
  /** First retry base for webhook-only repositories that failed. Default 10 s. */
  errorRetryMs?: number;
  /** ls-remotes in flight at once. Default 8. */
  maxConcurrent?: number;
}

export interface PollerStats {
  lsRemotes: number;
  errors: number;
  repos: number;
  apps: number;
}

export interface TriggerResult {
  /** Every watched App on the repositories the targets named. */
  appKeys: string[];
  /** Settles once those repositories were resolved and onResolved was called. Never rejects. */
  done: Promise<void>;
}

interface Watched {
  spec: WatchSpec;
  group: Group;
  /** Fingerprint of the outcome last reported to this App. */
  reported: string | undefined;
}

interface Group {
  key: string;
  url: string;
  normalized: string;
  credentialsKey: string | undefined;
  apps: Map<string, Watched>;
  cache: Map<string, ResolveOutcome>;
  timer: unknown;
  dueAt: number | undefined;
  inFlight: boolean;
  again: boolean;
  failures: number;
  /** Trigger callers waiting for the next run to start and finish. */
  nextWaiters: (() => void)[];
}

const FULL_SHA = /^[0-9a-fA-F]{40}$/;

const realTimers: PollerTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    // Polling alone must not keep the process alive.
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

function fingerprint(outcome: ResolveOutcome): string {
  return outcome instanceof GitError
    ? `error\0${outcome.reason}\0${outcome.message}`
    : `ok\0${outcome.ref}\0${outcome.commit}`;
}

function toGitError(err: unknown, url: string): GitError {
  if (err instanceof GitError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new GitError('Unreachable', `cannot list refs of ${url}: ${message}`, { url });
}

function groupKeyOf(spec: WatchSpec): { key: string; normalized: string } {
  const normalized = normalizeRepoUrl(spec.url);
  let protocol = '?';
  try {
    protocol = parseGitUrl(spec.url).protocol;
  } catch {
    // Invalid URLs still group (by text); the resolver reports the problem.
  }
  // The protocol is part of the key: ssh and https forms of one repository take different credentials.
  return { key: `${protocol}\0${normalized}\0${spec.credentialsKey ?? ''}`, normalized };
}

export class SourcePoller {
  readonly #o: SourcePollerOptions;
  readonly #timers: PollerTimers;
  readonly #resolve: RefsResolver;
  readonly #apps = new Map<string, Watched>();
  readonly #groups = new Map<string, Group>();
  readonly #slots: (() => void)[] = [];
  #running = 0;
  #stopped = false;
  #lsRemotes = 0;
  #errors = 0;

  constructor(options: SourcePollerOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
    this.#resolve =
      options.resolve ??
      (async ({ url, refs, credentials }) =>
        (
          await resolveRefs({
            url,
            refs,
            credentials,
            ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
            allowFile: options.allowFile ?? false,
          })
        ).results);
  }

  /** Starts or updates following an App's source. Cheap and idempotent: call it on every reconcile. */
  watch(appKey: string, spec: WatchSpec): void {
    if (this.#stopped) return;
    const existing = this.#apps.get(appKey);
    if (
      existing &&
      existing.spec.url === spec.url &&
      existing.spec.ref === spec.ref &&
      existing.spec.interval === spec.interval &&
      existing.spec.credentialsKey === spec.credentialsKey
    )
      return;
    if (existing) this.#remove(appKey, existing);

    const { key, normalized } = groupKeyOf(spec);
    let group = this.#groups.get(key);
    if (!group) {
      group = {
        key,
        url: spec.url,
        normalized,
        credentialsKey: spec.credentialsKey,
        apps: new Map(),
        cache: new Map(),
        timer: undefined,
        dueAt: undefined,
        inFlight: false,
        again: false,
        failures: 0,
        nextWaiters: [],
      };
      this.#groups.set(key, group);
    }
    const watched: Watched = { spec: { ...spec }, group, reported: undefined };
    this.#apps.set(appKey, watched);
    group.apps.set(appKey, watched);

    const cached = group.cache.get(spec.ref);
    if (cached) {
      // Known already: hand it over without another ls-remote, outside the caller's stack.
      queueMicrotask(() => {
        if (this.#apps.get(appKey) === watched) this.#report(group, [[appKey, watched]]);
      });
      const interval = this.#interval(group);
      if (!group.inFlight && interval > 0 && group.failures === 0) this.#schedule(group, interval, false);
    } else {
      // A timer, not a call: watches made in one tick (a cache sync) share one ls-remote.
      this.#schedule(group, 0, false);
    }
  }

  /** Stops following an App. */
  unwatch(appKey: string): void {
    const watched = this.#apps.get(appKey);
    if (watched) this.#remove(appKey, watched);
  }

  /**
   * Resolves now (for webhooks). Each target is an App key or a repository
   * URL in any form (normalised as normalizeRepoUrl does).
   */
  trigger(targets: Iterable<string>): TriggerResult {
    const groups = new Set<Group>();
    for (const target of targets) {
      const watched = this.#apps.get(target);
      if (watched) {
        groups.add(watched.group);
        continue;
      }
      const normalized = normalizeRepoUrl(target);
      for (const group of this.#groups.values()) if (group.normalized === normalized) groups.add(group);
    }
    const appKeys: string[] = [];
    const waits: Promise<void>[] = [];
    for (const group of groups) {
      appKeys.push(...group.apps.keys());
      const { promise, resolve } = Promise.withResolvers<void>();
      group.nextWaiters.push(resolve);
      waits.push(promise);
      void this.#run(group);
    }
    return { appKeys: appKeys.sort(), done: Promise.all(waits).then(() => undefined) };
  }

  /** The last outcome known for an App, if any. */
  last(appKey: string): ResolveOutcome | undefined {
    const watched = this.#apps.get(appKey);
    return watched?.group.cache.get(watched.spec.ref);
  }

  stats(): PollerStats {
    return { lsRemotes: this.#lsRemotes, errors: this.#errors, repos: this.#groups.size, apps: this.#apps.size };
  }

  /** Cancels every timer; polls in flight finish but nothing new starts. */
  stop(): void {
    this.#stopped = true;
    for (const group of this.#groups.values()) {
      this.#clearTimer(group);
      for (const wake of group.nextWaiters.splice(0)) wake();
    }
  }

  #remove(appKey: string, watched: Watched): void {
    this.#apps.delete(appKey);
    const group = watched.group;
    group.apps.delete(appKey);
    if (group.apps.size > 0) return;
    this.#clearTimer(group);
    this.#groups.delete(group.key);
    for (const wake of group.nextWaiters.splice(0)) wake();
  }

  /** The shortest non-zero interval of the group's Apps; 0 when all are webhook-only. */
  #interval(group: Group): number {
    let min = 0;
    for (const { spec } of group.apps.values()) {
      if (spec.interval > 0 && (min === 0 || spec.interval < min)) min = spec.interval;
    }
    return min;
  }

  #jittered(delay: number): number {
    const jitter = this.#o.jitter ?? 0.1;
    const random = this.#o.random ?? Math.random;
    return Math.max(0, Math.round(delay * (1 + jitter * (2 * random() - 1))));
  }

  /** Runs the group after delay ms, unless it is already due sooner. */
  #schedule(group: Group, delay: number, jitter: boolean): void {
    if (this.#stopped) return;
    if (group.inFlight) {
      if (delay === 0) group.again = true;
      return;
    }
    const ms = jitter ? this.#jittered(delay) : delay;
    const dueAt = this.#timers.now() + ms;
    if (group.timer !== undefined && group.dueAt !== undefined && group.dueAt <= dueAt) return;
    this.#clearTimer(group);
    group.dueAt = dueAt;
    group.timer = this.#timers.setTimeout(() => {
      group.timer = undefined;
      group.dueAt = undefined;
      void this.#run(group);
    }, ms);
  }

  #clearTimer(group: Group): void {
    if (group.timer !== undefined) this.#timers.clearTimeout(group.timer);
    group.timer = undefined;
    group.dueAt = undefined;
  }

  async #acquire(): Promise<void> {
    if (this.#running < (this.#o.maxConcurrent ?? 8)) {
      this.#running++;
      return;
    }
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#slots.push(resolve);
    await promise;
  }

  #release(): void {
    const next = this.#slots.shift();
    if (next) next();
    else this.#running--;
  }

  async #run(group: Group): Promise<void> {
    if (group.inFlight) {
      group.again = true;
      return;
    }
    if (this.#stopped || this.#groups.get(group.key) !== group) {
      for (const wake of group.nextWaiters.splice(0)) wake();
      return;
    }
    this.#clearTimer(group);
    group.inFlight = true;
    const waiters = group.nextWaiters.splice(0);
    try {
      await this.#acquire();
      try {
        await this.#poll(group);
      } finally {
        this.#release();
      }
    } finally {
      group.inFlight = false;
      for (const wake of waiters) wake();
    }
    if (this.#groups.get(group.key) !== group) return;
    if (group.again) {
      group.again = false;
      void this.#run(group);
      return;
    }
    this.#scheduleNext(group);
  }

  #scheduleNext(group: Group): void {
    const interval = this.#interval(group);
    if (group.failures === 0) {
      // A commit SHA never moves: only branches and tags are worth polling.
      const moving = [...group.apps.values()].some((w) => !FULL_SHA.test(w.spec.ref));
      if (interval > 0 && moving) this.#schedule(group, interval, true);
      return;
    }
    const base = interval > 0 ? interval : (this.#o.errorRetryMs ?? 10_000);
    const cap = Math.max(this.#o.maxBackoffMs ?? 300_000, interval);
    // 2^failures, with the exponent bounded so the number stays finite.
    this.#schedule(group, Math.min(base * 2 ** Math.min(group.failures, 30), cap), true);
  }

  async #poll(group: Group): Promise<void> {
    const refs = [...new Set([...group.apps.values()].map((w) => w.spec.ref))].sort();
    if (refs.length === 0) return;
    const started = this.#timers.now();
    let results: Map<string, ResolveOutcome>;
    try {
      const credentials =
        group.credentialsKey === undefined ? undefined : await this.#o.credentials?.(group.credentialsKey);
      this.#lsRemotes++;
      results = await this.#resolve({ url: group.url, refs, credentials });
      group.failures = 0;
      this.#notify({ url: group.url, refs: refs.length, durationMs: this.#timers.now() - started });
    } catch (err) {
      const error = toGitError(err, group.url);
      this.#errors++;
      group.failures++;
      this.#notify({ url: group.url, refs: refs.length, durationMs: this.#timers.now() - started, error });
      results = new Map(refs.map((ref) => [ref, error]));
    }
    for (const ref of refs) {
      group.cache.set(
        ref,
        results.get(ref) ??
          new GitError('RefNotFound', `ref "${ref}" not found in ${group.url}`, { url: group.url, ref }),
      );
    }
    // Refs nobody follows any more are forgotten.
    for (const ref of group.cache.keys()) if (!refs.includes(ref)) group.cache.delete(ref);
    if (this.#groups.get(group.key) === group) this.#report(group, group.apps.entries());
  }

  #notify(info: PollInfo): void {
    try {
      this.#o.onPoll?.(info);
    } catch (err) {
      this.#o.onCallbackError?.(err);
    }
  }

  /** Calls onResolved once per distinct outcome, with the Apps for which it is news. */
  #report(group: Group, entries: Iterable<[string, Watched]>): void {
    const byOutcome = new Map<string, { outcome: ResolveOutcome; appKeys: string[] }>();
    for (const [appKey, watched] of entries) {
      const outcome = group.cache.get(watched.spec.ref);
      if (!outcome) continue;
      const print = fingerprint(outcome);
      if (watched.reported === print) continue;
      watched.reported = print;
      const entry = byOutcome.get(print) ?? { outcome, appKeys: [] };
      entry.appKeys.push(appKey);
      byOutcome.set(print, entry);
    }
    for (const { outcome, appKeys } of byOutcome.values()) {
      try {
        this.#o.onResolved(appKeys.sort(), outcome);
      } catch (err) {
        this.#o.onCallbackError?.(err);
      }
    }
  }
}
