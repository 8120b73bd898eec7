// Judges web and prometheus measurements off the operator's main thread: a small
// pool of worker threads (condition-worker.ts) with a fair queue and time budgets.
//
// Why: a condition's cost is the App author's (the condition and the size of the
// answer both are theirs), and on the main thread 250 ms of CEL at a time, for
// every check of every run at once, held the health probes and the lease renewal
// until the leader lost its lease (issue #24 S2). Here:
// - each task has a deadline: past it the worker is terminated and replaced, so
//   nothing a condition does (the library's own loops, native work the vm
//   watchdog cannot interrupt) outlives it; the measurement is Failed;
// - each App has a time budget (a token bucket of evaluation time): once spent,
//   its measurements are Failed at once, without evaluating, until it refills;
// - all Apps together have one too: once spent, tasks wait for it, so the pool
//   takes at most that share of a core on average, and `workers` cores at most;
// - the queue serves Apps in turn (round robin), so one App's twenty checks wait
//   behind each other, not in front of another App's one.
// Honest conditions take microseconds and never meet a budget.
import { Worker } from 'node:worker_threads';
import { EVALUATION_TIMEOUT_MS, type Judgement, judge, outOfTimeJudgement } from './condition.ts';

/** What the conditions judge: the measured value, secrets already masked. */
export interface JudgeRequest {
  result: unknown;
  success?: string | undefined;
  failure?: string | undefined;
}
export interface JudgeTask extends JudgeRequest {
  id: number;
}
export interface JudgeAnswer {
  id: number;
  judgement: Judgement;
  /** Time the worker spent judging, charged to the budgets. */
  ms: number;
}

/** Up to `ms` of evaluation time at once, refilled at `ms` every `perMs`. */
export interface Budget {
  ms: number;
  perMs: number;
}

/** Both conditions' watchdogs (250 ms each), and room for a busy machine. */
export const TASK_DEADLINE_MS = 2 * EVALUATION_TIMEOUT_MS + 500;
/** Four timed-out evaluations a minute; thousands of honest ones. */
export const APP_BUDGET: Budget = { ms: 1_000, perMs: 60_000 };
/** Half a core on average, whatever the number of Apps. */
export const TOTAL_BUDGET: Budget = { ms: 30_000, perMs: 60_000 };
/** One core at most; a worker's heap is small, as what it judges is bounded (condition.ts). */
export const WORKERS = 1;
/**
 * A worker costs about 17 MiB of RSS, and conditions run only while releases are
 * checked: an idle one goes after this long, and the next task starts another.
 */
export const IDLE_MS = 60_000;
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 4, stackSizeMb: 4 };

/** A token bucket over a clock in ms; its level may go below zero, a debt repaid before it serves again. */
export class TokenBucket {
  private readonly budget: Budget;
  private level: number;
  private at: number;

  constructor(budget: Budget, now: number) {
    this.budget = budget;
    this.level = budget.ms;
    this.at = now;
  }

  /** Time left now; at most the budget's ms. */
  available(now: number): number {
    const refill = ((now - this.at) * this.budget.ms) / this.budget.perMs;
    this.level = Math.min(this.budget.ms, this.level + Math.max(0, refill));
    this.at = now;
    return this.level;
  }

  spend(ms: number, now: number): void {
    this.level = this.available(now) - ms;
  }

  /** ms until there is time again. */
  waitMs(now: number): number {
    const level = this.available(now);
    return level > 0 ? 0 : Math.ceil(((1 - level) * this.budget.perMs) / this.budget.ms);
  }
}

/** Tasks by App, served in turn: the App served goes to the back of the line. */
export class FairQueue<T> {
  private readonly byApp = new Map<string, T[]>();

  push(app: string, task: T): void {
    const tasks = this.byApp.get(app);
    if (tasks) tasks.push(task);
    else this.byApp.set(app, [task]);
  }

  next(): { app: string; task: T } | undefined {
    for (const [app, tasks] of this.byApp) {
      const task = tasks.shift();
      this.byApp.delete(app);
      if (tasks.length > 0) this.byApp.set(app, tasks);
      if (task !== undefined) return { app, task };
    }
    return undefined;
  }

  remove(app: string, task: T): void {
    const tasks = this.byApp.get(app);
    const at = tasks?.indexOf(task) ?? -1;
    if (!tasks || at < 0) return;
    tasks.splice(at, 1);
    if (tasks.length === 0) this.byApp.delete(app);
  }

  get size(): number {
    let n = 0;
    for (const tasks of this.byApp.values()) n += tasks.length;
    return n;
  }

  drain(): T[] {
    const all = [...this.byApp.values()].flat();
    this.byApp.clear();
    return all;
  }
}

export interface ConditionPoolOptions {
  workers?: number;
  deadlineMs?: number;
  idleMs?: number;
  appBudget?: Budget;
  totalBudget?: Budget;
  /** The worker's script; condition-worker beside this module unless given (tests). */
  workerUrl?: URL;
  now?: () => number;
}

interface Pending extends JudgeRequest {
  app: string;
  resolve: (judgement: Judgement) => void;
  signal?: AbortSignal | undefined;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  task?: { id: number; pending: Pending; timer: NodeJS.Timeout };
  /** Set while the worker has nothing to do: it goes when this fires. */
  idle?: NodeJS.Timeout;
}

export class ConditionPool {
  private readonly o: Required<Omit<ConditionPoolOptions, 'workerUrl'>> & { workerUrl: URL };
  private readonly queue = new FairQueue<Pending>();
  private readonly slots = new Set<Slot>();
  private readonly apps = new Map<string, TokenBucket>();
  private readonly total: TokenBucket;
  private nextId = 0;
  private wakeup: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: ConditionPoolOptions = {}) {
    this.o = {
      workers: options.workers ?? WORKERS,
      deadlineMs: options.deadlineMs ?? TASK_DEADLINE_MS,
      idleMs: options.idleMs ?? IDLE_MS,
      appBudget: options.appBudget ?? APP_BUDGET,
      totalBudget: options.totalBudget ?? TOTAL_BUDGET,
      workerUrl: options.workerUrl ?? defaultWorkerUrl(),
      now: options.now ?? (() => performance.now()),
    };
    this.total = new TokenBucket(this.o.totalBudget, this.o.now());
  }

  /**
   * Judges the value for the App `app`; never rejects. Without a condition
   * there is nothing to evaluate, and no worker is asked.
   */
  judge(app: string, request: JudgeRequest, signal?: AbortSignal): Promise<Judgement> {
    if (!request.success && !request.failure) return Promise.resolve(judge(request.result));
    if (this.stopped || signal?.aborted) return Promise.resolve(cancelled());
    return new Promise((resolve) => {
      const pending: Pending = { app, ...request, resolve, signal };
      if (signal) {
        pending.onAbort = () => {
          this.queue.remove(app, pending);
          resolve(cancelled());
        };
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.queue.push(app, pending);
      this.pump();
    });
  }

  /** Terminates the workers; what waits is answered as cancelled. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.wakeup);
    for (const pending of this.queue.drain()) settle(pending, cancelled());
    const slots = [...this.slots];
    this.slots.clear();
    for (const slot of slots) {
      clearTimeout(slot.idle);
      if (slot.task) this.finish(slot, cancelled());
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** Tasks waiting for a worker or the total budget (tests, metrics). */
  get waiting(): number {
    return this.queue.size;
  }

  /** Worker threads started and not retired. */
  get workers(): number {
    return this.slots.size;
  }

  // ---- scheduling ----

  private pump(): void {
    while (!this.stopped && this.queue.size > 0) {
      const slot = this.idleSlot();
      if (!slot) return;
      const now = this.o.now();
      const wait = this.total.waitMs(now);
      if (wait > 0) {
        this.wakeIn(wait);
        return;
      }
      const next = this.queue.next();
      if (!next) return;
      if (this.appBucket(next.app, now).available(now) <= 0) {
        settle(next.task, this.overBudget(next.task.result));
        continue;
      }
      this.run(slot, next.task);
    }
  }

  /** A ready worker with no task, starting one when the pool has room; undefined when none is free. */
  private idleSlot(): Slot | undefined {
    for (const slot of this.slots) if (slot.ready && !slot.task) return slot;
    if (this.slots.size < this.o.workers) this.spawn();
    return undefined;
  }

  private wakeIn(ms: number): void {
    if (this.wakeup) return;
    this.wakeup = setTimeout(() => {
      this.wakeup = undefined;
      this.pump();
    }, ms);
    this.wakeup.unref();
  }

  private run(slot: Slot, pending: Pending): void {
    clearTimeout(slot.idle);
    const id = ++this.nextId;
    const timer = setTimeout(() => this.kill(slot), this.o.deadlineMs);
    timer.unref();
    slot.task = { id, pending, timer };
    const task: JudgeTask = { id, result: pending.result, success: pending.success, failure: pending.failure };
    slot.worker.postMessage(task);
  }

  private answered(slot: Slot, answer: JudgeAnswer): void {
    if (slot.task?.id !== answer.id) return;
    this.charge(slot.task.pending.app, answer.ms);
    this.finish(slot, answer.judgement);
    this.pump();
  }

  /** The deadline passed: the worker goes, whatever it was doing, and another takes its place. */
  private kill(slot: Slot): void {
    const task = slot.task;
    if (!task) return;
    this.charge(task.pending.app, this.o.deadlineMs);
    this.retire(slot);
    const why = `the conditions took longer than ${this.o.deadlineMs} ms and were stopped`;
    this.finish(slot, outOfTimeJudgement(why, task.pending.result));
    this.pump();
  }

  /** The worker died on its own (out of memory, a crash): its task gets an answer, and the slot goes. */
  private died(slot: Slot, error: Error & { code?: string }): void {
    this.retire(slot);
    if (!slot.ready) {
      // It never loaded (a missing file, a bad bundle): starting another would fail the same way, in a loop.
      for (const pending of this.queue.drain()) settle(pending, failedToStart(error));
      return;
    }
    const task = slot.task;
    if (task) {
      this.charge(task.pending.app, this.o.deadlineMs);
      const judgement =
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? outOfTimeJudgement('the conditions ran out of memory', task.pending.result)
          : { phase: 'Error' as const, message: `the conditions could not be evaluated: ${error.message}` };
      this.finish(slot, judgement);
    }
    this.pump();
  }

  private finish(slot: Slot, judgement: Judgement): void {
    const task = slot.task;
    if (!task) return;
    clearTimeout(task.timer);
    slot.task = undefined;
    settle(task.pending, judgement);
    if (this.slots.has(slot)) this.idleFrom(slot);
  }

  /** Retires the worker if it gets no task within idleMs (run() clears the timer). */
  private idleFrom(slot: Slot): void {
    clearTimeout(slot.idle);
    slot.idle = setTimeout(() => {
      if (!slot.task) this.retire(slot);
    }, this.o.idleMs);
    slot.idle.unref();
  }

  private spawn(): void {
    const worker = new Worker(this.o.workerUrl, { resourceLimits: WORKER_LIMITS });
    worker.unref();
    const slot: Slot = { worker, ready: false };
    this.slots.add(slot);
    worker.on('message', (message: JudgeAnswer | 'ready') => {
      if (message === 'ready') {
        slot.ready = true;
        this.idleFrom(slot);
        this.pump();
      } else {
        this.answered(slot, message);
      }
    });
    worker.on('error', (error) => this.died(slot, error));
    worker.on('exit', () => this.died(slot, new Error('the worker exited')));
  }

  private retire(slot: Slot): void {
    clearTimeout(slot.idle);
    if (!this.slots.delete(slot)) return;
    slot.worker.removeAllListeners();
    // Errors after this are the terminated worker's: nobody waits on it any more.
    slot.worker.on('error', () => {});
    void slot.worker.terminate();
  }

  // ---- budgets ----

  private charge(app: string, ms: number): void {
    const now = this.o.now();
    this.total.spend(ms, now);
    this.appBucket(app, now).spend(ms, now);
    this.prune(now);
  }

  private appBucket(app: string, now: number): TokenBucket {
    let bucket = this.apps.get(app);
    if (!bucket) {
      bucket = new TokenBucket(this.o.appBudget, now);
      this.apps.set(app, bucket);
    }
    return bucket;
  }

  /** A full bucket is the same as none: memory stays with the Apps that spent time lately. */
  private prune(now: number): void {
    for (const [app, bucket] of this.apps) if (bucket.available(now) >= this.o.appBudget.ms) this.apps.delete(app);
  }

  private overBudget(result: unknown): Judgement {
    const { ms, perMs } = this.o.appBudget;
    const why = `the App's conditions have used their time budget (${ms} ms of evaluation every ${perMs / 1000} s)`;
    return outOfTimeJudgement(why, result);
  }
}

function settle(pending: Pending, judgement: Judgement): void {
  if (pending.onAbort) pending.signal?.removeEventListener('abort', pending.onAbort);
  pending.resolve(judgement);
}

/** As web.ts's send says it; nobody records it, as the measurement is no longer wanted. */
function cancelled(): Judgement {
  return { phase: 'Error', message: 'the measurement was cancelled' };
}

function failedToStart(error: Error): Judgement {
  return {
    phase: 'Error',
    message: `the conditions could not be evaluated: their worker did not start (${error.message})`,
  };
}

/**
 * condition-worker beside this module: src/analysis/condition-worker.ts when Teal
 * runs from its sources, dist/condition-worker.js beside dist/teal.js when it runs
 * from the bundle (whose import.meta.url is teal.js's).
 */
function defaultWorkerUrl(): URL {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./condition-worker${ext}`, import.meta.url);
}
