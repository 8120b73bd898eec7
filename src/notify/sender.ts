// Delivers the outbox (status.notifications.pending) once the status holding
// it has landed, apart from any reconcile: a bounded number of requests in
// flight, a timeout per request, retries with exponential backoff and full
// jitter for 408, 429, 5xx and network errors. What came of each delivery is
// held here, by its id, until a status write of the reconciler records it
// (outbox.ts) and the entry leaves status: the reconciler alone writes status.
//
// At least once: a kill between a 2xx and the write that records it sends the
// same id again. Only the replica that may write the App sends.
//
// URLs and signing keys are read from their Secrets for each attempt and
// never kept or logged: a URL's path or query may hold a token, so a
// destination is only ever named by its name.
import type { Logger } from 'pino';
import type { NotificationDestination, PendingNotification } from '../app/schema.ts';
import { egressRefusalOf, refusalText } from '../kube/egress.ts';
import { errorMessage } from '../kube/errors.ts';
import { type NotifiedApp, requestFor } from './bodies.ts';
import type { Outcome } from './outbox.ts';

export interface SenderApp extends NotifiedApp {
  /** namespace/name, the workqueue key. */
  key: string;
}

export interface SenderMetrics {
  attempt(type: string, trigger: string, result: 'delivered' | 'retrying' | 'failed', seconds: number): void;
}

export interface SenderOptions {
  readSecretValue: (namespace: string, name: string, key: string) => Promise<string | undefined>;
  /** Reconciles the App again: an outcome is in. */
  enqueue: (appKey: string) => void;
  /** Only the holder of the App's Lease (its shard's, if sharded) sends. */
  canWrite: (appKey: string) => boolean;
  logger: Logger;
  metrics?: SenderMetrics;
  fetch?: typeof fetch;
  /** Requests in flight at once, over all Apps. */
  maxInFlight?: number;
  timeoutMs?: number;
  /** The first retry waits up to this long, doubling each time up to maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** A notification still failing this long after its transition fails for good. */
  giveUpAfterMs?: number;
  now?: () => number;
}

/** One attempt's verdict. */
type Attempt = { ok: true; message: string } | { ok: false; retry: boolean; message: string; retryAfterMs?: number };

const DEFAULTS = {
  maxInFlight: 8,
  timeoutMs: 10_000,
  backoffMs: 1_000,
  maxBackoffMs: 300_000,
  giveUpAfterMs: 3_600_000,
};

export class Sender {
  private readonly o: SenderOptions & typeof DEFAULTS;
  /** Per App key, outcomes by delivery id, until status no longer holds the entry. */
  private readonly outcomes = new Map<string, Map<string, Outcome>>();
  /** Deliveries under way (sending or waiting to retry), by `<app key> <id>`. */
  private readonly running = new Map<string, { appKey: string; abort: AbortController; done: Promise<void> }>();
  private readonly slots = new Semaphore();
  private stopped = false;

  constructor(options: SenderOptions) {
    this.o = { ...DEFAULTS, ...options };
    this.slots.limit = this.o.maxInFlight;
  }

  outcomesFor(appKey: string): ReadonlyMap<string, Outcome> {
    return this.outcomes.get(appKey) ?? new Map();
  }

  /**
   * Called once the App's status has landed, with its outbox and the
   * destinations it names. Lets go of what status no longer holds and starts
   * what is neither under way nor already answered.
   */
  dispatch(app: SenderApp, pending: readonly PendingNotification[], destinations: readonly NotificationDestination[]) {
    if (this.stopped) return;
    this.release(app.key, new Set(pending.map((n) => n.id)));
    if (!this.o.canWrite(app.key)) return;
    const answered = this.outcomes.get(app.key);
    for (const n of pending) {
      const id = `${app.key} ${n.id}`;
      const final = answered?.get(n.id)?.result;
      if (this.running.has(id) || final === 'delivered' || final === 'failed') continue;
      const destination = destinations.find((d) => d.name === n.destination);
      const abort = new AbortController();
      const done = destination
        ? this.deliver(app, n, destination, abort.signal)
        : Promise.resolve(this.report(app.key, n, 'failed', `destination ${n.destination} is no longer declared`));
      const entry = { appKey: app.key, abort, done };
      entry.done = done.finally(() => {
        if (this.running.get(id) === entry) this.running.delete(id);
      });
      this.running.set(id, entry);
    }
  }

  /** The App is gone, or no longer this replica's: stop its deliveries and forget their outcomes. */
  forget(appKey: string): void {
    this.release(appKey, new Set());
    this.outcomes.delete(appKey);
  }

  /**
   * Sharded, before these Apps' shard is handed back: their deliveries stop
   * (a retry may be an hour away) and what they found is let go; the next
   * owner sends what status still holds, with the same ids.
   */
  async handBack(belongs: (appKey: string) => boolean): Promise<void> {
    const leaving = [...this.running.entries()].filter(([, r]) => belongs(r.appKey));
    for (const [key, r] of leaving) {
      r.abort.abort();
      this.running.delete(key);
    }
    await Promise.allSettled(leaving.map(([, r]) => r.done));
    for (const appKey of [...this.outcomes.keys()]) if (belongs(appKey)) this.outcomes.delete(appKey);
  }

  stop(): void {
    this.stopped = true;
    for (const r of this.running.values()) r.abort.abort();
    this.running.clear();
  }

  private release(appKey: string, pending: ReadonlySet<string>): void {
    const answered = this.outcomes.get(appKey);
    for (const id of answered?.keys() ?? []) if (!pending.has(id)) answered?.delete(id);
    if (answered?.size === 0) this.outcomes.delete(appKey);
    for (const [key, r] of this.running) {
      if (r.appKey === appKey && !pending.has(key.slice(appKey.length + 1))) {
        r.abort.abort();
        this.running.delete(key);
      }
    }
  }

  /** Attempts until delivered, failed for good, or let go; each answer that changes status is reported. */
  private async deliver(app: SenderApp, n: PendingNotification, d: NotificationDestination, signal: AbortSignal) {
    const log = this.o.logger.child({ app: app.key, destination: d.name, trigger: n.trigger, delivery: n.id });
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      const result = await this.slots.run(() => this.attempt(app, n, d, signal));
      if (signal.aborted || this.stopped) return;
      const seconds = (performance.now() - started) / 1000;
      const expired = (this.o.now?.() ?? Date.now()) - Date.parse(n.at) > this.o.giveUpAfterMs;
      const verdict = result.ok ? 'delivered' : result.retry && !expired ? 'retrying' : 'failed';
      this.o.metrics?.attempt(d.type, n.trigger, verdict, seconds);
      if (verdict !== 'retrying') {
        log[result.ok ? 'info' : 'warn']({ attempts: attempt + 1, result: result.message }, `notification ${verdict}`);
        this.report(app.key, n, verdict, result.message);
        return;
      }
      log.debug({ attempt: attempt + 1, result: result.message }, 'notification will be retried');
      if (attempt === 0) this.report(app.key, n, 'retrying', `${result.message}; retrying`);
      await sleep(this.backoff(attempt, result.ok ? 0 : result.retryAfterMs), signal);
      if (signal.aborted || this.stopped) return;
    }
  }

  /** Full jitter over an exponential ceiling; a Retry-After the receiver asks for is a floor. */
  private backoff(attempt: number, retryAfterMs = 0): number {
    const ceiling = Math.min(this.o.maxBackoffMs, this.o.backoffMs * 2 ** attempt);
    const jittered = ceiling / 2 + Math.random() * (ceiling / 2);
    return Math.min(this.o.maxBackoffMs, Math.max(jittered, retryAfterMs));
  }

  private async attempt(
    app: SenderApp,
    n: PendingNotification,
    d: NotificationDestination,
    signal: AbortSignal,
  ): Promise<Attempt> {
    const to = `to ${d.name}`;
    const url = await this.secret(app.namespace, d.urlSecretRef);
    if (!url.ok) return { ok: false, retry: true, message: `${to}: ${url.message}` };
    const key = d.signingSecretRef ? await this.secret(app.namespace, d.signingSecretRef) : undefined;
    if (key && !key.ok) return { ok: false, retry: true, message: `${to}: ${key.message}` };
    const request = requestFor(d, app, n, key?.value);
    const timeout = AbortSignal.timeout(this.o.timeoutMs);
    try {
      const response = await (this.o.fetch ?? fetch)(url.value, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal: AbortSignal.any([signal, timeout]),
      });
      await response.body?.cancel();
      return verdictOf(response, to);
    } catch (err) {
      // Refused by --egress-allow: for good, and named by its address, as the host may hold a token too.
      const refused = egressRefusalOf(err);
      if (refused) return { ok: false, retry: false, message: `${to}: ${refusalText(refused.address, refused.why)}` };
      // The error of a fetch may quote the URL: only its kind is told.
      const why = timeout.aborted ? `no answer within ${this.o.timeoutMs / 1000}s` : networkError(err);
      return { ok: false, retry: true, message: `${to}: ${why}` };
    }
  }

  private async secret(namespace: string, ref: { name: string; key: string }) {
    try {
      const value = await this.o.readSecretValue(namespace, ref.name, ref.key);
      if (value === undefined || value.trim() === '') {
        return { ok: false as const, message: `Secret ${ref.name} has no key ${ref.key}` };
      }
      return { ok: true as const, value: value.trim() };
    } catch (err) {
      return { ok: false as const, message: `reading Secret ${ref.name}: ${errorMessage(err)}` };
    }
  }

  private report(appKey: string, n: PendingNotification, result: Outcome['result'], message: string): void {
    if (this.stopped) return;
    let answered = this.outcomes.get(appKey);
    if (!answered) {
      answered = new Map();
      this.outcomes.set(appKey, answered);
    }
    answered.set(n.id, { result, message, at: new Date(this.o.now?.() ?? Date.now()).toISOString() });
    this.o.enqueue(appKey);
  }
}

/** 2xx delivered; 408, 429 and 5xx retried; anything else (a 3xx included: redirects are not followed) fails for good. */
export function verdictOf(response: Pick<Response, 'status' | 'headers'>, to: string): Attempt {
  const { status } = response;
  const message = `${to}: HTTP ${status}`;
  if (status >= 200 && status < 300) return { ok: true, message };
  const retry = status === 408 || status === 429 || status >= 500;
  const retryAfter = Number(response.headers.get('retry-after'));
  return {
    ok: false,
    retry,
    message,
    ...(retry && Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
  };
}

/** The cause's code (ECONNREFUSED, ...) without its text, which may quote the URL. */
function networkError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code ? `network error ${code}` : 'network error';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** At most `limit` tasks at once; the others wait their turn in order. */
class Semaphore {
  limit = 1;
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
