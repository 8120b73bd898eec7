// The previews' talk with the git hosts (issue #28 items 2, 6, 9), in the
// background as the analysis runner's measurements and the notification
// sender's deliveries are: the reconcile says when the next listing of a
// parent App's pull requests is due (the planner's pollAt); the runner lists
// then, keeps the outcome and queues the App, whose next reconcile plans from
// it. The reconcile hands it the commit statuses and comments the plan asks
// for; the runner writes them and keeps what the provider accepted until the
// App's status records it (status.previews.pullRequests[].reported), which the
// reconcile merges in before planning (withAccepted), so nothing is written twice.
//
// Per parent App it keeps one PreviewHost (its ETag cache, pace and known
// comment ids), rebuilt when the provider, API URL, repository or token
// change. The token is read from spec.previews.tokenSecretRef at each listing
// and never kept beyond the host, logged, or said: a failure says the Secret's
// name and key, never its value.
import type { Logger } from 'pino';
import { sha } from '../app/hash.ts';
import { previewsApiUrl, previewsRepository } from '../app/previews-problems.ts';
import type { PreviewReported, Previews, PreviewsStatus } from '../app/previews-schema.ts';
import { MIN_INTERVAL_MS } from '../app/previews-schema.ts';
import type { App } from '../app/schema.ts';
import type { PreviewProviderAction } from '../previews/plan.ts';
import {
  type Budget,
  type HostDeps,
  type HostSpec,
  type PreviewHost,
  type ProviderMetrics,
  previewHost,
} from '../previews/providers/index.ts';
import { pollListing } from '../previews/providers/listing.ts';
import type { ProviderError, PullRequestListing } from '../previews/pull-request.ts';

/** Listings under way at once, over all Apps: a few, so one slow host does not hold the others up. */
export const LISTINGS_AT_ONCE = 4;
/** A write the provider refused is asked again no sooner than this (or its retryAt). */
export const WRITE_RETRY_MS = 30_000;

export interface PreviewsRunnerOptions {
  /** One value of a Secret (ClusterClient.readSecretValue): the token, read at each listing, never kept. */
  readSecretValue: (namespace: string, name: string, key: string) => Promise<string | undefined>;
  /** Reconciles the App again: a listing or an accepted write is in. */
  enqueue: (appKey: string) => void;
  /** Only the holder of the App's Lease (its shard's, if sharded) writes on its pull requests. */
  canWrite: (appKey: string) => boolean;
  logger: Logger;
  fetch?: typeof fetch;
  metrics?: ProviderMetrics;
  /** The clients' factory (previewHost): a test passes its own. */
  host?: (spec: HostSpec, deps: HostDeps) => ReturnType<typeof previewHost>;
  now?: () => number;
  listingsAtOnce?: number;
}

/** The latest listing of an App's pull requests, and when it was read (or tried). */
export interface SeenListing {
  listing: PullRequestListing;
  listedAt: Date;
}

interface Entry {
  /** The App as its last reconcile saw it: the next listing reads its spec.previews. */
  app: App;
  /** What the host was made from (provider, API URL, repository, the token's digest): another makes another. */
  hostKey?: string;
  host?: PreviewHost;
  seen?: SeenListing;
  listing: boolean;
  timer?: NodeJS.Timeout;
  dueAt?: number;
  /** What the provider accepted and status may not have yet, by pull request number. */
  accepted: Map<number, PreviewReported>;
  /** Writes sent and not answered, and those refused with the time they may be asked again, by id. */
  sending: Set<string>;
  refused: Map<string, number>;
  /**
   * Labels taken off since the listing that saw them: the plan asks again at every reconcile until the
   * next listing, and a label added back meanwhile is a new approval, not the stale one.
   */
  unlabeled: Set<string>;
  /** The writes of one App go one after the other: a status before its comment, in the plan's order. */
  writes: Promise<void>;
}

/** Why a write is being made, once: the same write asked again while it is under way is not sent twice. */
function writeId(action: PreviewProviderAction): string {
  if (action.kind === 'setCommitStatus') {
    const { state, description, targetUrl } = action.status;
    return `${action.number} status ${action.sha} ${sha(`${state}\n${description}\n${targetUrl ?? ''}`)}`;
  }
  if (action.kind === 'editComment') return `${action.number} comment ${action.hash}`;
  return `${action.number} label ${action.label}`;
}

/**
 * The App's status.previews with what the provider accepted since merged in:
 * the planner then sees it written, and the status write records it. Pure.
 */
export function withAccepted(
  status: PreviewsStatus | undefined,
  accepted: ReadonlyMap<number, PreviewReported>,
): PreviewsStatus | undefined {
  if (!status || accepted.size === 0) return status;
  const pullRequests = (status.pullRequests ?? []).map((p) => {
    const more = accepted.get(p.number);
    return more ? { ...p, reported: { ...p.reported, ...more } } : p;
  });
  return { ...status, pullRequests };
}

/** Whether status records everything accepted for this pull request (then memory can let it go). */
const recorded = (status: PreviewsStatus | undefined, number: number, accepted: PreviewReported) => {
  const reported = status?.pullRequests?.find((p) => p.number === number)?.reported;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  return (
    (!accepted.status || same(reported?.status, accepted.status)) &&
    (!accepted.comment || same(reported?.comment, accepted.comment))
  );
};

/** A failure as a listing's outcome: no token, so nothing was asked of the provider. */
const tokenUnavailable = (message: string, retryAt: number): PullRequestListing => ({
  ok: false,
  error: { reason: 'TokenUnavailable', message, retryAt: new Date(retryAt).toISOString() },
});

export class PreviewsRunner {
  private readonly o: PreviewsRunnerOptions;
  private readonly entries = new Map<string, Entry>();
  /** The pace of each token on each API (share one: two Apps of one repository spend one budget). */
  private readonly budgets = new Map<string, Budget>();
  /** Apps whose listing is due while LISTINGS_AT_ONCE run. */
  private readonly waiting: string[] = [];
  private running = 0;
  private stopped = false;

  constructor(options: PreviewsRunnerOptions) {
    this.o = options;
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  private entry(appKey: string, app: App): Entry {
    let entry = this.entries.get(appKey);
    if (!entry) {
      entry = {
        app,
        listing: false,
        accepted: new Map(),
        sending: new Set(),
        refused: new Map(),
        unlabeled: new Set(),
        writes: Promise.resolve(),
      };
      this.entries.set(appKey, entry);
    }
    entry.app = app;
    return entry;
  }

  /** The latest listing of the App's pull requests, if one was read. */
  seen(appKey: string): SeenListing | undefined {
    return this.entries.get(appKey)?.seen;
  }

  /**
   * The App's status.previews with what the provider accepted merged in; what
   * that status (as the cache shows it: landed) already records is let go.
   */
  merged(appKey: string, status: PreviewsStatus | undefined): PreviewsStatus | undefined {
    const entry = this.entries.get(appKey);
    if (!entry) return status;
    for (const [number, accepted] of entry.accepted) {
      if (recorded(status, number, accepted)) entry.accepted.delete(number);
    }
    return withAccepted(status, entry.accepted);
  }

  /**
   * The next listing of the App's pull requests is due at this time (at once
   * if it never was listed). One timer per App; a listing under way is not
   * started twice (its end queues the App, whose reconcile says the next).
   */
  due(app: App, atMs: number | undefined): void {
    if (this.stopped || !app.spec.previews) return;
    const key = `${app.metadata.namespace}/${app.metadata.name}`;
    const entry = this.entry(key, app);
    const at = entry.seen ? (atMs ?? Number.POSITIVE_INFINITY) : this.now();
    if (entry.listing || !Number.isFinite(at) || entry.dueAt === at) return;
    clearTimeout(entry.timer);
    entry.dueAt = at;
    entry.timer = setTimeout(() => this.start(key), Math.max(0, at - this.now()));
    entry.timer.unref?.();
  }

  /** Sends the plan's writes on the pull requests, in order, each once; only for an App this replica may write for. */
  send(appKey: string, actions: readonly PreviewProviderAction[]): void {
    const entry = this.entries.get(appKey);
    if (this.stopped || !entry?.host || actions.length === 0 || !this.o.canWrite(appKey)) return;
    const host = entry.host;
    const now = this.now();
    for (const [id, at] of entry.refused) if (at <= now) entry.refused.delete(id);
    const fresh = actions.filter((a) => {
      const id = writeId(a);
      return !entry.sending.has(id) && !entry.unlabeled.has(id) && (entry.refused.get(id) ?? 0) <= now;
    });
    if (fresh.length === 0) return;
    for (const a of fresh) entry.sending.add(writeId(a));
    entry.writes = entry.writes.then(() => this.write(appKey, host, fresh));
  }

  /** The App is gone, has no previews any more, or its shard went: its timer, host, listing and accepted writes go. */
  forget(appKey: string): void {
    const entry = this.entries.get(appKey);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.entries.delete(appKey);
    const at = this.waiting.indexOf(appKey);
    if (at >= 0) this.waiting.splice(at, 1);
  }

  /** Resolves once no write for these Apps is under way (sharded: before their shard is handed back). */
  async handBack(belongs: (appKey: string) => boolean): Promise<void> {
    const pending = [...this.entries].filter(([key]) => belongs(key)).map(([, e]) => e.writes);
    await Promise.allSettled(pending);
  }

  stop(): void {
    this.stopped = true;
    for (const entry of this.entries.values()) clearTimeout(entry.timer);
    this.entries.clear();
    this.waiting.length = 0;
  }

  // ---- listing ----

  private start(key: string): void {
    const entry = this.entries.get(key);
    if (!entry || this.stopped) return;
    entry.timer = undefined;
    entry.dueAt = undefined;
    entry.listing = true;
    if (this.running >= (this.o.listingsAtOnce ?? LISTINGS_AT_ONCE)) this.waiting.push(key);
    else this.run(key, entry.app);
  }

  private run(key: string, app: App): void {
    this.running++;
    const listedAt = new Date(this.now());
    void this.list(key, app)
      .catch((err: unknown): PullRequestListing => {
        this.o.logger.warn({ app: key, err: String(err) }, 'listing pull requests failed');
        return { ok: false, error: { reason: 'Unavailable', message: 'listing pull requests failed' } };
      })
      .then((listing) => {
        this.running--;
        const entry = this.entries.get(key);
        if (entry && !this.stopped) {
          entry.listing = false;
          entry.seen = { listing, listedAt };
          entry.unlabeled.clear();
          this.o.enqueue(key);
        }
        this.next();
      });
  }

  private next(): void {
    const key = this.waiting.shift();
    if (key === undefined) return;
    const entry = this.entries.get(key);
    if (entry) this.run(key, entry.app);
    else this.next();
  }

  private async list(key: string, app: App): Promise<PullRequestListing> {
    const previews = app.spec.previews as Previews;
    const host = await this.hostFor(key, app, previews);
    if ('listing' in host) return host.listing;
    const listing = await pollListing(host.host, previews.forks.approvalLabel);
    const log = this.o.logger.child({ app: key });
    if (listing.ok) log.debug({ pullRequests: listing.pullRequests.length }, 'listed pull requests');
    else log.info({ reason: listing.error.reason, problem: listing.error.message }, 'listing pull requests failed');
    return listing;
  }

  /** The App's host, made again when what it is made from changed; or why there is none (no request is made). */
  private async hostFor(
    key: string,
    app: App,
    previews: Previews,
  ): Promise<{ host: PreviewHost } | { listing: PullRequestListing }> {
    const namespace = app.metadata.namespace ?? '';
    const ref = previews.tokenSecretRef;
    const retryAt = this.now() + MIN_INTERVAL_MS;
    let token: string | undefined;
    try {
      token = await this.o.readSecretValue(namespace, ref.name, ref.key);
    } catch {
      return {
        listing: tokenUnavailable(
          `spec.previews.tokenSecretRef: reading Secret ${namespace}/${ref.name} failed`,
          retryAt,
        ),
      };
    }
    if (token === undefined) {
      const message = `spec.previews.tokenSecretRef: Secret ${namespace}/${ref.name} or its key ${ref.key} is missing`;
      return { listing: tokenUnavailable(message, retryAt) };
    }
    const spec: HostSpec = {
      provider: previews.provider,
      ...(previewsApiUrl(previews) ? { apiUrl: previewsApiUrl(previews) } : {}),
      repository: previewsRepository(app.spec) ?? '',
      token,
      appKey: key,
    };
    const entry = this.entry(key, app);
    const hostKey = sha(JSON.stringify([spec.provider, spec.apiUrl, spec.repository, token]));
    if (entry.host && entry.hostKey === hostKey) return { host: entry.host };
    const made = (this.o.host ?? previewHost)(spec, this.deps(spec, token));
    if (!made.ok) {
      // The message names a field (or says the token's value is unusable), never the value.
      entry.host = undefined;
      entry.hostKey = undefined;
      return { listing: tokenUnavailable(made.message, retryAt) };
    }
    entry.host = made.value;
    entry.hostKey = hostKey;
    return { host: made.value };
  }

  private deps(spec: HostSpec, token: string): HostDeps {
    const budgetKey = sha(JSON.stringify([spec.provider, spec.apiUrl, token]));
    let budget = this.budgets.get(budgetKey);
    if (!budget) {
      budget = { notBefore: 0, failures: 0 };
      this.budgets.set(budgetKey, budget);
    }
    return {
      budget,
      ...(this.o.fetch ? { fetch: this.o.fetch } : {}),
      ...(this.o.metrics ? { metrics: this.o.metrics } : {}),
    };
  }

  // ---- writes ----

  private async write(key: string, host: PreviewHost, actions: readonly PreviewProviderAction[]) {
    const log = this.o.logger.child({ app: key });
    let accepted = 0;
    for (const action of actions) {
      const id = writeId(action);
      const entry = this.entries.get(key);
      // Forgotten meanwhile (gone, or its shard went), or no longer this replica's to write.
      if (!entry || this.stopped || !this.o.canWrite(key)) return;
      try {
        const failure = await this.writeOne(host, action);
        if (failure) {
          entry.refused.set(id, failure.retryAt ? Date.parse(failure.retryAt) : this.now() + WRITE_RETRY_MS);
          log.info(
            { pullRequest: action.number, write: action.kind, reason: failure.reason, problem: failure.message },
            'the provider refused a write',
          );
          continue;
        }
        entry.refused.delete(id);
        const at = new Date(this.now()).toISOString();
        const before = entry.accepted.get(action.number) ?? {};
        if (action.kind === 'setCommitStatus') {
          entry.accepted.set(action.number, { ...before, status: { sha: action.sha, ...action.status, at } });
        } else if (action.kind === 'editComment') {
          entry.accepted.set(action.number, { ...before, comment: { hash: action.hash, at } });
        } else entry.unlabeled.add(id);
        accepted++;
        log.info({ pullRequest: action.number, write: action.kind }, 'wrote on the pull request');
      } finally {
        entry.sending.delete(id);
      }
    }
    if (accepted > 0 && !this.stopped) this.o.enqueue(key);
  }

  /** One write; the failure, if it failed (its message is safe to log: no token, no body). */
  private async writeOne(host: PreviewHost, action: PreviewProviderAction): Promise<ProviderError | undefined> {
    if (action.kind === 'setCommitStatus') {
      const done = await host.setStatus(action.sha, action.status);
      return done.ok ? undefined : done.failure;
    }
    if (action.kind === 'editComment') {
      const done = await host.upsertComment(action.number, action.body);
      return done.ok ? undefined : done.failure;
    }
    const done = await host.removeLabel(action.number, action.label);
    return done.ok ? undefined : done.failure;
  }
}
