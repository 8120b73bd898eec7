// The controller's work queue, after client-go's workqueue (typed, delaying
// and rate-limiting queue in one). Only the data structure: the worker loop
// that takes keys from it is the controller's (controller/controller.ts).
//
// Each key has at most one pending run: it is either ready (in the FIFO),
// waiting for a due time, or neither. An add makes it ready now, an addAfter
// only ever moves its due time earlier. A key is never processed by two
// workers at once; one added while it is processed is marked dirty and
// becomes ready again when processing is done.
import { type Clock, defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.ts';

/**
 * Hooks for controller-runtime's workqueue_* metrics. Unfinished work and
 * the longest running processor are read from the queue when scraped.
 */
export interface WorkqueueMetrics {
  /** workqueue_adds_total */
  add(): void;
  /** workqueue_depth: keys waiting to be processed, including ones re-added while being processed. */
  depth(n: number): void;
  /** workqueue_queue_duration_seconds: from the add to the start of processing. */
  queueLatency(seconds: number): void;
  /** workqueue_work_duration_seconds */
  workDuration(seconds: number): void;
  /** workqueue_retries_total: every addAfter and addRateLimited, as client-go counts them. */
  retry(): void;
}

export const noopWorkqueueMetrics: WorkqueueMetrics = {
  add() {},
  depth() {},
  queueLatency() {},
  workDuration() {},
  retry() {},
};

export interface WorkQueueOptions {
  rateLimiter?: RateLimiter;
  metrics?: WorkqueueMetrics;
  /** Monotonic milliseconds; defaults to performance.now(). */
  now?: Clock;
}

// setTimeout fires at once for longer delays, so long waits are taken in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Throws unless delayMs is a finite number of milliseconds, 0 or more. */
function checkDelay(delayMs: number): void {
  if (!Number.isFinite(delayMs) || delayMs < 0) {
    throw new RangeError(`a queue delay must be a finite number of milliseconds, 0 or more; got ${delayMs}`);
  }
}

export class WorkQueue {
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: WorkqueueMetrics;
  private readonly now: Clock;

  private readonly ready = new Fifo();
  /** Keys that need processing: the ready ones and those re-added while processed. */
  private readonly dirty = new Set<string>();
  /** Key to the time its processing started. */
  private readonly processing = new Map<string, number>();
  /** Key to the time it was first added since it was last taken, for queue latency. */
  private readonly addedAt = new Map<string, number>();
  private readonly waiting = new DelayHeap();
  private timer: NodeJS.Timeout | undefined;
  private timerDueAt = 0;

  private readonly getters: Array<(key: string | undefined) => void> = [];
  private readonly drainers: Array<() => void> = [];
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.now = options.now ?? (() => performance.now());
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ now: this.now });
    this.metrics = options.metrics ?? noopWorkqueueMetrics;
  }

  /** Makes the key ready now, unless it is already; ignored after shutdown. */
  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.waiting.delete(key)) this.arm();
    this.enqueue(key);
  }

  /**
   * Makes the key ready after delayMs (0: now), or earlier if it already had an
   * earlier due time. A delay that is not a finite number of milliseconds, 0 or
   * more, is a bug in the caller: it throws rather than run the key again at once.
   */
  addAfter(key: string, delayMs: number): void {
    checkDelay(delayMs);
    if (this.shuttingDown) return;
    this.metrics.retry();
    if (delayMs === 0) {
      this.add(key);
      return;
    }
    // Ready now, or ready again as soon as its processing ends: nothing is earlier.
    if (this.dirty.has(key)) return;
    if (this.waiting.upsert(key, this.now() + delayMs)) this.arm();
  }

  /** Retries the key after the rate limiter's delay, counting one more failure. */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Resets the key's backoff; does not remove it from the queue. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  /** Keys ready to be processed now (client-go's Len). */
  len(): number {
    return this.ready.length;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /**
   * Takes the next ready key and marks it processing; the caller must call
   * done(key) afterwards. Resolves undefined once the queue shuts down.
   */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    if (this.ready.length > 0) return Promise.resolve(this.take());
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Ends processing of the key; if it was re-added meanwhile it becomes ready again. */
  done(key: string): void {
    const startedAt = this.processing.get(key);
    if (startedAt === undefined) return;
    this.processing.delete(key);
    this.metrics.workDuration((this.now() - startedAt) / 1000);
    if (this.dirty.has(key)) this.push(key);
    if (this.processing.size === 0 && this.shuttingDown) {
      for (const drained of this.drainers.splice(0)) drained();
    }
  }

  /**
   * Stops at once: new adds are ignored, ready and delayed keys are dropped
   * and no handler starts again. Handlers already running carry on.
   */
  shutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.waiting.clear();
    this.arm();
    this.ready.clear();
    this.dirty.clear();
    this.addedAt.clear();
    this.metrics.depth(0);
    for (const getter of this.getters.splice(0)) getter(undefined);
  }

  /** Shuts down, then resolves once every key being processed is done. */
  shutDownWithDrain(): Promise<void> {
    this.shutdown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainers.push(resolve));
  }

  /** Seconds of work so far in all keys being processed (workqueue_unfinished_work_seconds). */
  unfinishedWorkSeconds(): number {
    const now = this.now();
    let totalMs = 0;
    for (const startedAt of this.processing.values()) totalMs += now - startedAt;
    return totalMs / 1000;
  }

  /** Seconds the longest running key has been processed (workqueue_longest_running_processor_seconds). */
  longestRunningProcessorSeconds(): number {
    const now = this.now();
    let longestMs = 0;
    for (const startedAt of this.processing.values()) longestMs = Math.max(longestMs, now - startedAt);
    return longestMs / 1000;
  }

  private enqueue(key: string): void {
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (!this.addedAt.has(key)) this.addedAt.set(key, this.now());
    this.metrics.add();
    this.metrics.depth(this.dirty.size);
    if (!this.processing.has(key)) this.push(key);
  }

  private push(key: string): void {
    this.ready.push(key);
    // Workers wait only on an empty queue, so this takes the key just pushed;
    // taking it here means no other get() can claim it before the worker resumes.
    const getter = this.getters.shift();
    if (getter) getter(this.take());
  }

  private take(): string | undefined {
    const key = this.ready.shift();
    if (key === undefined) return undefined;
    const now = this.now();
    this.dirty.delete(key);
    this.processing.set(key, now);
    const addedAt = this.addedAt.get(key);
    this.addedAt.delete(key);
    this.metrics.depth(this.dirty.size);
    if (addedAt !== undefined) this.metrics.queueLatency((now - addedAt) / 1000);
    return key;
  }

  /** Keeps one timer, set for the earliest due time. */
  private arm(): void {
    const next = this.waiting.peek();
    if (this.timer !== undefined && next?.dueAt === this.timerDueAt) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (next === undefined) return;
    const delay = Math.min(Math.max(0, next.dueAt - this.now()), MAX_TIMER_MS);
    this.timerDueAt = next.dueAt;
    this.timer = setTimeout(() => this.fire(), delay);
    // Waiting keys alone must not keep the process alive.
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    const now = this.now();
    for (let next = this.waiting.peek(); next !== undefined && next.dueAt <= now; next = this.waiting.peek()) {
      this.waiting.pop();
      this.enqueue(next.key);
    }
    this.arm();
  }
}

/** A FIFO with O(1) shift. */
class Fifo {
  private items: string[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: string): void {
    this.items.push(item);
  }

  shift(): string | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++];
    // Drop the consumed prefix once it is most of the array.
    if (this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

interface Waiting {
  key: string;
  dueAt: number;
  index: number;
}

/** Keys by due time, earliest first, at most one entry per key. */
class DelayHeap {
  private readonly heap: Waiting[] = [];
  private readonly byKey = new Map<string, Waiting>();

  peek(): Waiting | undefined {
    return this.heap[0];
  }

  /** Adds the key or moves its due time earlier; returns whether anything changed. */
  upsert(key: string, dueAt: number): boolean {
    const existing = this.byKey.get(key);
    if (existing) {
      if (existing.dueAt <= dueAt) return false;
      existing.dueAt = dueAt;
      this.up(existing.index);
      return true;
    }
    const entry = { key, dueAt, index: this.heap.length };
    this.heap.push(entry);
    this.byKey.set(key, entry);
    this.up(entry.index);
    return true;
  }

  pop(): Waiting | undefined {
    const top = this.heap[0];
    if (top) this.removeAt(0);
    return top;
  }

  delete(key: string): boolean {
    const entry = this.byKey.get(key);
    if (!entry) return false;
    this.removeAt(entry.index);
    return true;
  }

  clear(): void {
    this.heap.length = 0;
    this.byKey.clear();
  }

  private removeAt(index: number): void {
    const removed = this.heap[index];
    const last = this.heap.pop();
    if (!removed || !last) return;
    this.byKey.delete(removed.key);
    if (last === removed) return;
    this.heap[index] = last;
    last.index = index;
    this.down(index);
    this.up(last.index);
  }

  private up(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(index: number): void {
    let i = index;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < this.heap.length && this.less(left, smallest)) smallest = left;
      if (right < this.heap.length && this.less(right, smallest)) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }

  private less(a: number, b: number): boolean {
    const x = this.heap[a];
    const y = this.heap[b];
    return x !== undefined && y !== undefined && x.dueAt < y.dueAt;
  }

  private swap(a: number, b: number): void {
    const x = this.heap[a];
    const y = this.heap[b];
    if (x === undefined || y === undefined) return;
    this.heap[a] = y;
    this.heap[b] = x;
    x.index = b;
    y.index = a;
  }
}
