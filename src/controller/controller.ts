// The worker loop, after controller-runtime's internal controller: workers
// take a key from the queue, reconcile it, and one decision over the outcome
// (decide) says what the queue does with the key next. The queue
// (kube/workqueue.ts) is only the data structure.
import { isTerminal } from '../kube/errors.ts';
import { ExponentialBackoffRateLimiter, type RateLimiter } from '../kube/rate-limiter.ts';
import type { WorkQueue } from '../kube/workqueue.ts';

export type ReconcileResult = { requeueAfterMs?: number } | undefined;
// biome-ignore lint/suspicious/noConfusingVoidType: so an async reconcile that returns nothing type-checks.
export type ReconcileFn = (key: string) => Promise<ReconcileResult | void>;

/** How a reconcile ended. */
export type Outcome = { error: unknown } | { requeueAfterMs?: number };

/** What the queue does with the key next, and the result label of controller_runtime_reconcile_total. */
export type Decision =
  | { next: 'forget'; result: 'success' }
  | { next: 'requeueAfter'; afterMs: number; result: 'requeue_after' }
  | { next: 'rateLimited'; result: 'error' }
  | { next: 'terminalBackoff'; result: 'error' };

/**
 * Success forgets the key's backoff (and re-adds it after requeueAfterMs when
 * asked). An error the same request will meet again until a person acts (a
 * 403, a 422) waits on a slow backoff of its own rather than hot-looping; any
 * other error retries rate-limited. A wake-up time that is not a finite number
 * of milliseconds, 0 or more, is a bug to back off from, never a requeue at once.
 */
export function decide(outcome: Outcome, terminal: (err: unknown) => boolean = isTerminal): Decision {
  if ('error' in outcome) {
    return terminal(outcome.error)
      ? { next: 'terminalBackoff', result: 'error' }
      : { next: 'rateLimited', result: 'error' };
  }
  const after = outcome.requeueAfterMs;
  if (after === undefined) return { next: 'forget', result: 'success' };
  if (!(Number.isFinite(after) && after >= 0)) return { next: 'rateLimited', result: 'error' };
  return { next: 'requeueAfter', afterMs: after, result: 'requeue_after' };
}

/** Hooks for controller-runtime's controller_runtime_* metrics. */
export interface ControllerMetrics {
  /** controller_runtime_reconcile_total and _time_seconds. */
  reconciled(seconds: number, result: Decision['result']): void;
  /** controller_runtime_max_concurrent_reconciles and _active_workers. */
  workers(max: number, active: number): void;
}

export interface ControllerOptions {
  queue: WorkQueue;
  concurrency: number;
  reconcile: ReconcileFn;
  metrics?: ControllerMetrics;
  /** Told about every failed reconcile, with the decision taken. */
  onError?: (key: string, error: unknown, decision: Decision) => void;
  /** The backoff of errors that need a person: slow, so a refused write is not sent again and again. */
  terminalBackoff?: RateLimiter;
  /** Which errors need a person (default: the API server's 400, 401, 403, 405, 406, 413, 415 and 422). */
  isTerminal?: (err: unknown) => boolean;
}

/** 5 s, doubling to 5 min: a fixed RBAC rule or quota is picked up within minutes, without a hot loop. */
export const defaultTerminalBackoff = (): RateLimiter =>
  new ExponentialBackoffRateLimiter({ baseDelayMs: 5_000, maxDelayMs: 300_000 });

/** Resolves in the event loop's check phase: timers, I/O and signals get a turn before it. */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Controller {
  private readonly o: ControllerOptions;
  private readonly terminalBackoff: RateLimiter;
  private active = 0;
  private started = false;

  constructor(options: ControllerOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${options.concurrency}`);
    }
    this.o = options;
    this.terminalBackoff = options.terminalBackoff ?? defaultTerminalBackoff();
  }

  /** Runs the workers; resolves once every one has stopped after the queue shut down. */
  start(): Promise<void> {
    if (this.started) throw new Error('controller already started');
    this.started = true;
    this.o.metrics?.workers(this.o.concurrency, 0);
    const workers = Array.from({ length: this.o.concurrency }, () => this.worker());
    return Promise.all(workers).then(() => undefined);
  }

  private async worker(): Promise<void> {
    while (await this.processNextWorkItem()) {
      // A reconcile served from the cache alone resolves in microtasks: without this turn of the
      // event loop, a key that requeues itself would starve timers, sockets and signal handlers.
      await yieldToEventLoop();
    }
  }

  /** Takes one key and reconciles it; false once the queue has shut down. */
  private async processNextWorkItem(): Promise<boolean> {
    const key = await this.o.queue.get();
    if (key === undefined) return false;
    try {
      await this.reconcileHandler(key);
    } finally {
      this.o.queue.done(key);
    }
    return true;
  }

  private async reconcileHandler(key: string): Promise<void> {
    const { metrics, concurrency } = this.o;
    const started = performance.now();
    metrics?.workers(concurrency, ++this.active);
    let outcome: Outcome;
    try {
      const result = await this.o.reconcile(key);
      outcome = result?.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : {};
    } catch (error) {
      outcome = { error };
    } finally {
      metrics?.workers(concurrency, --this.active);
    }
    const decision = decide(outcome, this.o.isTerminal);
    this.apply(key, decision);
    metrics?.reconciled((performance.now() - started) / 1000, decision.result);
    const error =
      'error' in outcome ? outcome.error : decision.next === 'rateLimited' ? badRequeue(outcome) : undefined;
    if (error !== undefined) this.tell(key, error, decision);
  }

  private apply(key: string, decision: Decision): void {
    const { queue } = this.o;
    switch (decision.next) {
      case 'forget':
        queue.forget(key);
        this.terminalBackoff.forget(key);
        return;
      case 'requeueAfter':
        queue.forget(key);
        this.terminalBackoff.forget(key);
        queue.addAfter(key, decision.afterMs);
        return;
      case 'rateLimited':
        queue.addRateLimited(key);
        return;
      case 'terminalBackoff':
        queue.addAfter(key, this.terminalBackoff.when(key));
        return;
    }
  }

  private tell(key: string, error: unknown, decision: Decision): void {
    try {
      this.o.onError?.(key, error, decision);
    } catch {
      // A failing error reporter must not stop the worker.
    }
  }
}

function badRequeue(outcome: Outcome): RangeError {
  const after = 'requeueAfterMs' in outcome ? outcome.requeueAfterMs : undefined;
  return new RangeError(`the reconcile asked for a requeue after ${after} ms`);
}
