// The dashboard's build log (issue #25 item 9): GET
// /api/v1/namespaces/:ns/apps/:name/build/log (the App's current build) or
// .../builds/:commit/log streams the build pod's log as Server-Sent Events
// (app/build-log-events.ts) while the build runs, then its outcome.
//
// The caller is let in by a SubjectAccessReview for get pods/log in the App's
// namespace (access.ts), before anything of the App is looked at; only then
// does the operator, with its own rights, read what the log needs: the build
// from its caches (no list, no watch), the build pod and the Secrets it reads
// (one GET each, for their credentials, which log-scrub.ts masks in every line)
// and the log itself, followed. Nothing is written.
//
// Bounded: a stream holds at most one line (MAX_LINE_CHARS) and the buffers of
// two streams (STREAM_BUFFER_BYTES each): the upstream read waits while the
// browser does not read (backpressure), and stops when it goes. Streams are
// capped per user and in total.
//
// The right is asked again while a stream is open, by the live stream's rule
// (stream.ts RECHECK_MS, through the reviews auth.ts caches): a user who loses
// get pods/log sees the stream end within 30 s, with a problem event naming
// the right, and the operator's read of the log stops.
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { type BuildLogEvent, type BuildOutcome, SSE_COMMENT, sseText } from '../app/build-log-events.ts';
import { APPS_INDEX, type CachedApp, JOBS_INDEX } from '../app/cached.ts';
import { readAppStatus } from '../app/status-reader.ts';
import { BUILD_CONTAINER } from '../build/job.ts';
import { LineSplitter } from '../build/log-lines.ts';
import { credentialsOf, logScrubber, podProxyCredentials, podSecretNames } from '../build/log-scrub.ts';
import type { ObservedBuildPod, ObservedJob } from '../build/plan.ts';
import { apiStatusOf, errorMessage, ignoreNotFound } from '../kube/errors.ts';
import type { Cached } from '../kube/informer.ts';
import type { SharedInformer } from '../kube/multi-namespace-informer.ts';
import { openPodLog } from '../kube/pod-log.ts';
import type { UserInfo } from './auth.ts';
import { ApiError } from './errors.ts';
import type { ApiLogger } from './logger.ts';
import { RECHECK_MS } from './stream.ts';

/** The caches the build log reads: build Jobs by App, their pods by Job. */
export interface BuildCaches {
  jobs: Pick<SharedInformer<Cached<ObservedJob>>, 'byIndex' | 'get' | 'addHandler'>;
  pods: Pick<SharedInformer<Cached<ObservedBuildPod>>, 'byIndex' | 'addHandler'>;
  /** --build-namespace: where the Jobs run; else each in its App's namespace. */
  namespace?: string;
}

/** Open build logs one user may hold, over all their tabs and sessions. */
export const MAX_STREAMS_PER_USER = 4;
/** Open build logs of the whole process. */
export const MAX_STREAMS = 64;
/** The buffer of each side of a stream (the upstream's and the browser's), in bytes. */
export const STREAM_BUFFER_BYTES = 16 * 1024;
/** How often an idle stream says it is alive. */
const KEEP_ALIVE_MS = 15_000;
/** How long the outcome is awaited once the log has ended, before it is called Unknown. */
const OUTCOME_WAIT_MS = 60_000;
/** Waits before asking a node again for the log of a running pod, growing to the last. */
const RETRY_MS = [1000, 2000, 5000, 10_000];

const COMMIT = /^[0-9a-f]{4,40}$/;

// ---- pure: which build, which pod, what outcome ----

/** The build Job a log is asked of: the App's current one, or the newest of the commit's. */
export function buildJobOf(app: CachedApp, jobs: readonly ObservedJob[], commit: string | undefined): string {
  const { namespace, name } = app.metadata;
  if (commit === undefined) {
    const job = readAppStatus(app.status).build?.job;
    if (job) return job;
    const image = (app.spec as { image?: unknown } | undefined)?.image !== undefined;
    throw new ApiError(
      404,
      image
        ? `App ${namespace}/${name} deploys a ready image (spec.image): it has no builds`
        : `App ${namespace}/${name} has no build yet`,
    );
  }
  if (!COMMIT.test(commit)) throw new ApiError(400, 'the commit must be a SHA, or 4 or more of its first hex digits');
  const matching = jobs.filter((j) => j.commit.startsWith(commit));
  const commits = new Set(matching.map((j) => j.commit));
  if (commits.size > 1) {
    throw new ApiError(
      400,
      `commit ${commit} is ambiguous: builds of ${[...commits].sort().join(', ')}; give more digits`,
    );
  }
  const newest = [...matching].sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
  if (!newest) {
    throw new ApiError(
      404,
      `App ${namespace}/${name} has no build of commit ${commit} (Teal keeps only recent build Jobs)`,
    );
  }
  return newest.name;
}

/** Where a build's log stands: its pod not started yet, started (its log can be read), or no pod will come. */
export type PodState =
  | { kind: 'waiting'; message: string }
  | { kind: 'started'; pod: ObservedBuildPod }
  | { kind: 'over'; outcome: BuildOutcome; message?: string };

const STARTED_PHASES: ReadonlySet<string> = new Set(['Running', 'Succeeded', 'Failed']);

export function podState(job: ObservedJob | undefined, pods: readonly ObservedBuildPod[]): PodState {
  // A Job has one pod at a time (backoffLimit 0); a replaced one is on its way out.
  const pod = pods.find((p) => STARTED_PHASES.has(p.phase)) ?? pods[0];
  if (pod && STARTED_PHASES.has(pod.phase)) return { kind: 'started', pod };
  if (!job) return { kind: 'over', outcome: 'Unknown', message: 'the build Job is gone' };
  const outcome = jobOutcome(job);
  if (outcome !== undefined && !pod) {
    return { kind: 'over', outcome, ...(job.failureMessage ? { message: job.failureMessage } : {}) };
  }
  return {
    kind: 'waiting',
    message: pod ? `build pod ${pod.name} is ${pod.phase}` : `build Job ${job.name} has no pod yet`,
  };
}

const jobOutcome = (job: ObservedJob): BuildOutcome | undefined =>
  job.outcome === 'Complete' ? 'Succeeded' : job.outcome === 'Failed' ? 'Failed' : undefined;

/** The build's outcome once its log has ended: undefined while neither its pod nor its Job says. */
export function outcomeOf(job: ObservedJob | undefined, pod: ObservedBuildPod | undefined): Outcome | undefined {
  if (pod?.exitCode !== undefined) return { outcome: pod.exitCode === 0 ? 'Succeeded' : 'Failed' };
  if (pod?.phase === 'Succeeded' || pod?.phase === 'Failed') return { outcome: pod.phase };
  const outcome = job ? jobOutcome(job) : undefined;
  if (outcome !== undefined) return { outcome, ...(job?.failureMessage ? { message: job.failureMessage } : {}) };
  if (!job) return { outcome: 'Unknown', message: 'the build Job is gone' };
  return undefined;
}

/** The id of the last line a reconnecting client has: Last-Event-ID, when it is a line number. */
export function lastLineOf(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header[0] : header;
  const n = Number(value);
  return value !== undefined && /^\d{1,15}$/.test(value) && Number.isSafeInteger(n) ? n : 0;
}

// ---- the streams ----

export interface BuildLogRequest {
  user: UserInfo;
  app: CachedApp;
  commit: string | undefined;
  /** Lines up to this one were received already (Last-Event-ID). */
  after: number;
  /** The caller's right asked again: throws ApiError 403 once it is lost (401 once the caller is gone). */
  recheck: () => Promise<void>;
}

/** The problem event that ends a stream whose caller lost the right, or undefined when the check did not say no. */
export function lostAccess(err: unknown): BuildLogEvent | undefined {
  if (!(err instanceof ApiError) || (err.status !== 403 && err.status !== 401)) return undefined;
  return { kind: 'problem', message: `the log stopped: ${err.message}` };
}

export interface BuildLogOptions {
  kubeConfig: KubeConfig;
  caches: () => BuildCaches;
  maxPerUser?: number;
  maxTotal?: number;
  /** How often an open stream's caller is reviewed again; the live stream's RECHECK_MS by default. */
  recheckMs?: number;
}

/** The open streams, and how each is fed. */
export class BuildLogs {
  private readonly kubeConfig: KubeConfig;
  private readonly core: CoreV1Api;
  private readonly caches: () => BuildCaches;
  private readonly maxPerUser: number;
  private readonly maxTotal: number;
  private readonly recheckMs: number;
  private readonly open = new Map<string, number>();
  private readonly streams = new Set<PassThrough>();
  private total = 0;

  constructor(opts: BuildLogOptions) {
    this.kubeConfig = opts.kubeConfig;
    this.core = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.caches = opts.caches;
    this.maxPerUser = opts.maxPerUser ?? MAX_STREAMS_PER_USER;
    this.maxTotal = opts.maxTotal ?? MAX_STREAMS;
    this.recheckMs = opts.recheckMs ?? RECHECK_MS;
  }

  /**
   * The SSE stream of the build's log; throws 404 when there is no such build
   * and 429 or 503 past the caps. The stream ends after the end event; destroyed
   * (the browser went), it stops the upstream read.
   */
  stream(request: BuildLogRequest, logger: ApiLogger): PassThrough {
    const { app, commit } = request;
    const { namespace, name } = app.metadata;
    const caches = this.caches();
    const job = buildJobOf(app, jobsOf(caches, namespace, name), commit);
    const release = this.acquire(request.user);
    const out = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
    const stopped = new AbortController();
    const keepAlive = setInterval(() => out.writable && out.write(SSE_COMMENT), KEEP_ALIVE_MS);
    keepAlive.unref();
    const recheck = this.keepRechecking(request, out, stopped, logger);
    this.streams.add(out);
    out.once('close', () => {
      this.streams.delete(out);
      clearInterval(keepAlive);
      clearInterval(recheck);
      stopped.abort();
      release();
    });
    const feed = new Feed(out, stopped.signal, request.after);
    // The operator reads the build namespace for the caller, who needs no right there (docs/getting-started.md).
    const jobNamespace = caches.namespace ?? namespace;
    this.pump({ namespace: jobNamespace, job, feed, caches, signal: stopped.signal })
      .catch((err: unknown) => {
        if (stopped.signal.aborted) return;
        logger.warn({ namespace, name, job, error: errorMessage(err) }, 'build log stream failed');
        return feed.send({ kind: 'problem', message: `the log could not be read: ${errorMessage(err)}` });
      })
      .finally(() => out.end());
    return out;
  }

  /**
   * Asks the caller's right again every recheckMs; once it is lost, the
   * problem event goes out (past whatever the feed waits to write) and the
   * read stops, which ends the stream. A check that fails otherwise (503)
   * keeps the stream until the next one, as the live stream does.
   */
  private keepRechecking(
    request: BuildLogRequest,
    out: PassThrough,
    stopped: AbortController,
    logger: ApiLogger,
  ): NodeJS.Timeout {
    let checking = false;
    const check = async () => {
      if (checking || stopped.signal.aborted) return;
      checking = true;
      try {
        await request.recheck();
      } catch (err) {
        const lost = lostAccess(err);
        if (!lost || stopped.signal.aborted) return;
        const { namespace, name } = request.app.metadata;
        logger.info({ user: request.user.username, namespace, name }, 'build log ended: the right to read it was lost');
        if (out.writable) out.write(sseText(lost));
        stopped.abort();
      } finally {
        checking = false;
      }
    };
    const timer = setInterval(() => void check(), this.recheckMs);
    timer.unref();
    return timer;
  }

  /** Ends every open stream, their upstream reads with them: the server waits for open connections as it closes. */
  stop(): void {
    for (const out of this.streams) out.destroy();
  }

  private acquire(user: UserInfo): () => void {
    const key = JSON.stringify([user.username, user.uid]);
    const mine = this.open.get(key) ?? 0;
    if (mine >= this.maxPerUser) {
      throw new ApiError(429, `${user.username} has ${mine} build logs open, the most one user may: close one first`, {
        'retry-after': '5',
      });
    }
    if (this.total >= this.maxTotal) {
      throw new ApiError(503, `the operator serves ${this.total} build logs, its most: try again shortly`, {
        'retry-after': '5',
      });
    }
    this.open.set(key, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
  }

  /** Waits for the pod, reads its log to the end, then says how the build ended. */
  private async pump(s: Pump) {
    const started = await this.podStarted(s);
    if (!started) return;
    if (started.kind === 'over') {
      const { outcome, message } = started;
      return s.feed.send({ kind: 'end', outcome, ...(message ? { message } : {}) });
    }
    const pod = await ignoreNotFound(this.core.readNamespacedPod({ namespace: s.namespace, name: started.pod.name }));
    const scrub = logScrubber(pod ? await this.credentials(s.namespace, pod) : []);
    const outcome = await this.readLog(s, started.pod.name, scrub);
    if (!outcome) return;
    await s.feed.send({ kind: 'end', ...outcome, ...(outcome.message ? { message: scrub(outcome.message) } : {}) });
  }

  /** The pod once started (or why none will be), saying meanwhile what it waits for; undefined when stopped. */
  private podStarted({ namespace, job, feed, caches, signal }: Pump): Promise<Settled | undefined> {
    let said = '';
    return until<Settled>(caches, signal, () => {
      const now = podState(caches.jobs.get(namespace, job)?.value, podsOf(caches, namespace, job));
      if (now.kind !== 'waiting') return now;
      if (now.message !== said) {
        said = now.message;
        void feed.send({ kind: 'waiting', message: now.message });
      }
      return undefined;
    });
  }

  /**
   * The log, read to its end, then the build's outcome. While the pod runs, a
   * node that does not serve its log yet (or a stream cut short) is asked
   * again; the lines already sent are not sent twice. Once the pod has ended,
   * a log the node does not serve is stood in for by its termination message
   * (the log's tail on failure: FallbackToLogsOnError).
   */
  private async readLog(s: Pump, pod: string, scrub: (line: string) => string): Promise<Outcome | undefined> {
    const { namespace, job, feed, caches, signal } = s;
    const cached = () => podsOf(caches, namespace, job).find((p) => p.name === pod);
    const outcome = () => outcomeOf(caches.jobs.get(namespace, job)?.value, cached());
    for (let attempt = 0; !signal.aborted; attempt++) {
      const problem = await this.followWhileRunning(s, pod, scrub, outcome);
      if (problem === undefined) break;
      if (signal.aborted) return undefined;
      if (outcome() !== undefined) {
        await feed.send({ kind: 'problem', message: problem });
        const tail = cached()?.message?.trimEnd();
        if (tail) await feed.lines(tail.split('\n').map(scrub));
        break;
      }
      await feed.send({ kind: 'waiting', message: problem });
      await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)] ?? 0, undefined, { signal }).catch(() => {});
      feed.again();
    }
    const ended = await until(caches, signal, outcome, OUTCOME_WAIT_MS);
    if (signal.aborted) return undefined;
    return ended ?? { outcome: 'Unknown', message: 'the build pod has not said how it ended' };
  }

  /** The credentials of the Secrets the pod reads; a Secret the operator cannot read has none to mask. */
  private async credentials(namespace: string, pod: V1Pod): Promise<string[]> {
    const secrets = await Promise.all(
      podSecretNames(pod).map((name) =>
        ignoreNotFound(this.core.readNamespacedSecret({ namespace, name })).then((s) => s?.data),
      ),
    );
    return [...credentialsOf(secrets), ...podProxyCredentials(pod)];
  }

  /**
   * The log followed; once the cache says the container has ended, the
   * follow is stopped, should the node keep it open (KWOK's does), and the log
   * is read once more without it, whole (the lines already sent are skipped).
   */
  private async followWhileRunning(
    { namespace, feed, caches, signal }: Pump,
    pod: string,
    scrub: (line: string) => string,
    outcome: () => Outcome | undefined,
  ): Promise<string | undefined> {
    const ended = new AbortController();
    const unwatch = new AbortController();
    void until(caches, AbortSignal.any([signal, unwatch.signal]), outcome).then((o) => o && ended.abort());
    const problem = await this.follow(namespace, pod, feed, scrub, AbortSignal.any([signal, ended.signal]), true);
    unwatch.abort();
    if (signal.aborted || !ended.signal.aborted) return problem;
    feed.again();
    return this.follow(namespace, pod, feed, scrub, signal, false);
  }

  /**
   * The log, followed until the container ends, line by line through the
   * scrubber; the next chunk is read only once the browser took the last.
   * Undefined once read to its end; else why it could not be.
   */
  private async follow(
    namespace: string,
    pod: string,
    feed: Feed,
    scrub: (line: string) => string,
    signal: AbortSignal,
    follow: boolean,
  ): Promise<string | undefined> {
    let body: AsyncIterable<Uint8Array>;
    try {
      body = await openPodLog(this.kubeConfig, { namespace, pod, container: BUILD_CONTAINER, follow }, signal);
    } catch (err) {
      const status = apiStatusOf(err);
      const said = status?.message ? `${status.code}: ${status.message}` : errorMessage(err);
      return `the node of build pod ${pod} does not serve its log (${said})`;
    }
    const splitter = new LineSplitter();
    try {
      for await (const chunk of body) {
        await feed.lines(splitter.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)).map(scrub));
      }
    } catch (err) {
      return `the log stream of build pod ${pod} broke off (${errorMessage(err)})`;
    }
    await feed.lines(splitter.end().map(scrub));
    return undefined;
  }
}

/** Writes events to the browser's stream, waiting while its buffer is full; numbers the lines. */
class Feed {
  private lineNo = 0;
  private readonly out: PassThrough;
  private readonly signal: AbortSignal;
  private after: number;

  constructor(out: PassThrough, signal: AbortSignal, after: number) {
    this.out = out;
    this.signal = signal;
    this.after = after;
  }

  /** The log is read again from its start: its lines up to the last one sent are skipped. */
  again(): void {
    this.after = Math.max(this.after, this.lineNo);
    this.lineNo = 0;
  }

  async lines(texts: readonly string[]): Promise<void> {
    let text = '';
    for (const line of texts) {
      this.lineNo++;
      if (this.lineNo > this.after) text += sseText({ kind: 'line', id: this.lineNo, text: line });
    }
    if (text !== '') await this.write(text);
  }

  send(event: BuildLogEvent): Promise<void> {
    return this.write(sseText(event));
  }

  private async write(text: string): Promise<void> {
    if (this.signal.aborted || !this.out.writable) return;
    if (this.out.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.out.off('drain', done);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      this.out.once('drain', done);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }
}

interface Pump {
  namespace: string;
  job: string;
  feed: Feed;
  caches: BuildCaches;
  signal: AbortSignal;
}

type Outcome = { outcome: BuildOutcome; message?: string };
/** A pod state past waiting. */
type Settled = Exclude<PodState, { kind: 'waiting' }>;

const jobsOf = (caches: BuildCaches, namespace: string, app: string) =>
  caches.jobs.byIndex(APPS_INDEX, `${namespace}/${app}`).map((j) => j.value);
const podsOf = (caches: BuildCaches, namespace: string, job: string) =>
  caches.pods.byIndex(JOBS_INDEX, `${namespace}/${job}`).map((p) => p.value);

/**
 * look()'s first answer, asked now and again at each change of the build
 * caches; undefined when the stream is stopped, or after timeoutMs.
 */
function until<T>(
  caches: BuildCaches,
  signal: AbortSignal,
  look: () => T | undefined,
  timeoutMs?: number,
): Promise<T | undefined> {
  return new Promise((resolve) => {
    let done = false;
    const first = look();
    if (first !== undefined || signal.aborted) return resolve(first);
    const check = () => {
      const value = look();
      if (value !== undefined) finish(value);
    };
    const handler = { onAdd: check, onUpdate: check, onDelete: check };
    const offs = [caches.jobs.addHandler(handler), caches.pods.addHandler(handler)];
    const timer = timeoutMs !== undefined ? setTimeout(() => finish(undefined), timeoutMs) : undefined;
    const stop = () => finish(undefined);
    signal.addEventListener('abort', stop, { once: true });
    function finish(value: T | undefined) {
      if (done) return;
      done = true;
      for (const off of offs) off();
      if (timer) clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve(value);
    }
  });
}
