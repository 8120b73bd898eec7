import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Controller,
  type ReconcileFn as Handler,
  type ReconcileResult as HandlerResult,
} from '../../src/controller/controller.ts';
import {
  defaultControllerRateLimiter,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
} from '../../src/kube/rate-limiter.ts';
import { WorkQueue, type WorkqueueMetrics } from '../../src/kube/workqueue.ts';

/** Workers over the queue: the controller's loop (src/controller/controller.ts). */
function startWorkers(
  queue: WorkQueue,
  concurrency: number,
  reconcile: Handler,
  options: { onError?: (key: string, error: unknown) => void } = {},
): Promise<void> {
  return new Controller({
    queue,
    concurrency,
    reconcile,
    ...(options.onError ? { onError: options.onError } : {}),
  }).start();
}

function manualClock(start = 0) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

/** A turn of the real event loop: setImmediate is left unfaked (see beforeEach). */
const realImmediate = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Fires timers due by now + ms and lets pending promise callbacks run; then
 * turns the event loop a few times, since workers yield to it between keys.
 */
async function tick(ms = 0): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  for (let i = 0; i < 10; i++) await realImmediate();
}

/**
 * A handler whose calls stay in flight until the test finishes them, and
 * which records how many run at once, overall and per key.
 */
function controlledHandler() {
  const calls: string[] = [];
  const inFlight = new Map<string, PromiseWithResolvers<HandlerResult>[]>();
  let active = 0;
  let maxActive = 0;
  let maxActivePerKey = 0;
  const handler: Handler = async (key) => {
    calls.push(key);
    const pending = inFlight.get(key) ?? [];
    inFlight.set(key, pending);
    const call = Promise.withResolvers<HandlerResult>();
    pending.push(call);
    active++;
    maxActive = Math.max(maxActive, active);
    maxActivePerKey = Math.max(maxActivePerKey, pending.length);
    try {
      return await call.promise;
    } finally {
      active--;
      pending.splice(pending.indexOf(call), 1);
    }
  };
  const oldest = (key: string) => {
    const call = inFlight.get(key)?.[0];
    if (!call) throw new Error(`${key} is not being processed`);
    return call;
  };
  return {
    handler,
    calls,
    active: () => active,
    maxActive: () => maxActive,
    maxActivePerKey: () => maxActivePerKey,
    finish: (key: string, result?: HandlerResult) => oldest(key).resolve(result),
    fail: (key: string, error: Error) => oldest(key).reject(error),
  };
}

describe('ExponentialBackoffRateLimiter', () => {
  it('doubles from the base delay per failure and caps at the max', () => {
    const limiter = new ExponentialBackoffRateLimiter();
    const delays = Array.from({ length: 20 }, () => limiter.when('ns/a'));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    // 5 ms * 2^18 = 1310.72 s is past the 1000 s cap.
    expect(delays[17]).toBe(5 * 2 ** 17);
    expect(delays[18]).toBe(1_000_000);
    expect(delays[19]).toBe(1_000_000);
    expect(limiter.numRequeues('ns/a')).toBe(20);
  });

  it('stays at the cap however many failures there are', () => {
    const limiter = new ExponentialBackoffRateLimiter({ baseDelayMs: 1, maxDelayMs: 60_000 });
    let last = 0;
    for (let i = 0; i < 2000; i++) last = limiter.when('ns/a');
    expect(last).toBe(60_000);
  });

  it('keeps keys apart, and forget starts a key over', () => {
    const limiter = new ExponentialBackoffRateLimiter({ baseDelayMs: 100, maxDelayMs: 1000 });
    limiter.when('ns/a');
    limiter.when('ns/a');
    expect(limiter.when('ns/b')).toBe(100);
    expect(limiter.when('ns/a')).toBe(400);
    limiter.forget('ns/a');
    expect(limiter.numRequeues('ns/a')).toBe(0);
    expect(limiter.when('ns/a')).toBe(100);
    expect(limiter.numRequeues('ns/b')).toBe(1);
  });
});

describe('TokenBucketRateLimiter', () => {
  it('lets a burst through, then spaces callers 1/qps apart', () => {
    const clock = manualClock();
    const limiter = new TokenBucketRateLimiter({ now: clock.now });
    for (let i = 0; i < 100; i++) expect(limiter.when(`ns/k${i}`)).toBe(0);
    expect(limiter.when('ns/x')).toBeCloseTo(100);
    expect(limiter.when('ns/y')).toBeCloseTo(200);
    expect(limiter.when('ns/z')).toBeCloseTo(300);
    expect(limiter.numRequeues('ns/x')).toBe(0);
  });

  it('refills at qps, no higher than the burst', () => {
    const clock = manualClock();
    const limiter = new TokenBucketRateLimiter({ qps: 2, burst: 3, now: clock.now });
    for (let i = 0; i < 3; i++) expect(limiter.when('ns/a')).toBe(0);
    expect(limiter.when('ns/a')).toBeCloseTo(500);
    // One second pays the debt of one token and earns one more.
    clock.advance(1000);
    expect(limiter.when('ns/a')).toBe(0);
    expect(limiter.when('ns/a')).toBeCloseTo(500);
    clock.advance(3_600_000);
    for (let i = 0; i < 3; i++) expect(limiter.when('ns/a')).toBe(0);
    expect(limiter.when('ns/a')).toBeCloseTo(500);
  });

  it('rejects a bucket that could never give a token', () => {
    expect(() => new TokenBucketRateLimiter({ qps: 0 })).toThrow(RangeError);
    expect(() => new TokenBucketRateLimiter({ burst: 0 })).toThrow(RangeError);
  });
});

describe('defaultControllerRateLimiter', () => {
  it('takes the longer of the per-key backoff and the shared bucket', () => {
    const clock = manualClock();
    const limiter = defaultControllerRateLimiter({ now: clock.now });
    expect(limiter.when('ns/a')).toBe(5);
    expect(limiter.when('ns/a')).toBe(10);
    for (let i = 0; i < 98; i++) expect(limiter.when(`ns/k${i}`)).toBe(5);
    // The bucket is empty now, so even a first failure waits 100 ms.
    expect(limiter.when('ns/b')).toBeCloseTo(100);
    expect(limiter.numRequeues('ns/a')).toBe(2);
    limiter.forget('ns/a');
    expect(limiter.numRequeues('ns/a')).toBe(0);
  });

  it('is configurable', () => {
    const clock = manualClock();
    const limiter = defaultControllerRateLimiter({ baseDelayMs: 1, maxDelayMs: 3, qps: 1, burst: 1, now: clock.now });
    expect(limiter.when('ns/a')).toBe(1);
    expect(limiter.when('ns/a')).toBeCloseTo(1000);
    clock.advance(5000);
    expect(limiter.when('ns/a')).toBe(3);
  });

  it('MaxOfRateLimiter reports the most requeues and forgets in every limiter', () => {
    const a = new ExponentialBackoffRateLimiter();
    const b = new ExponentialBackoffRateLimiter();
    const limiter = new MaxOfRateLimiter(a, b);
    b.when('ns/a');
    b.when('ns/a');
    limiter.when('ns/a');
    expect(limiter.numRequeues('ns/a')).toBe(3);
    limiter.forget('ns/a');
    expect(a.numRequeues('ns/a') + b.numRequeues('ns/a')).toBe(0);
  });
});

describe('WorkQueue', () => {
  beforeEach(() => {
    // Workers yield with setImmediate between keys; tick() turns the real event loop for them.
    vi.useFakeTimers({ toNotFake: ['setImmediate', 'clearImmediate'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('as a queue', () => {
    it('hands keys out in order and holds a key only once while it waits', async () => {
      const queue = new WorkQueue();
      for (const key of ['ns/a', 'ns/b', 'ns/a', 'ns/c', 'ns/a']) queue.add(key);
      expect(queue.len()).toBe(3);
      expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(['ns/a', 'ns/b', 'ns/c']);
      expect(queue.len()).toBe(0);
    });

    it('processes a key added many times while waiting once', async () => {
      const queue = new WorkQueue();
      const handler = vi.fn(async () => {});
      for (let i = 0; i < 5; i++) queue.add('ns/a');
      startWorkers(queue, 1, handler);
      await tick(10);
      expect(handler).toHaveBeenCalledTimes(1);
      queue.shutdown();
    });

    it('re-queues a key added while processed once processing is done, never running it twice at once', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      startWorkers(queue, 4, h.handler);
      queue.add('ns/a');
      await tick();
      expect(h.calls).toEqual(['ns/a']);

      queue.add('ns/a');
      queue.add('ns/a');
      await tick();
      // Three idle workers, yet the dirty key waits for its own processing.
      expect(h.calls).toEqual(['ns/a']);
      expect(queue.len()).toBe(0);

      h.finish('ns/a');
      await tick();
      expect(h.calls).toEqual(['ns/a', 'ns/a']);
      h.finish('ns/a');
      await tick();
      expect(h.calls).toEqual(['ns/a', 'ns/a']);
      expect(h.maxActivePerKey()).toBe(1);
      queue.shutdown();
    });

    it('hands a key to a waiting get() without another get() taking it first', async () => {
      const queue = new WorkQueue();
      const first = queue.get();
      queue.add('ns/a');
      // A later caller finds the queue empty, since the key is already the first caller's.
      const second = queue.get();
      expect(await first).toBe('ns/a');
      queue.add('ns/b');
      expect(await second).toBe('ns/b');
      queue.shutdown();
    });
  });

  describe('workers', () => {
    it('run at most `concurrency` handlers at once and get through all keys', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      startWorkers(queue, 3, h.handler);
      const keys = Array.from({ length: 10 }, (_, i) => `ns/k${i}`);
      for (const key of keys) queue.add(key);
      await tick();
      expect(h.active()).toBe(3);
      expect(queue.len()).toBe(7);

      for (const key of keys) {
        h.finish(key);
        await tick();
        expect(h.active()).toBeLessThanOrEqual(3);
      }
      expect(h.calls).toEqual(keys);
      expect(h.maxActive()).toBe(3);
      expect(queue.len()).toBe(0);
      queue.shutdown();
    });

    it('never run the same key in two workers, under a storm of adds', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      startWorkers(queue, 8, h.handler);
      const runsOfA = () => h.calls.filter((k) => k === 'ns/a').length;
      for (let round = 0; round < 5; round++) {
        for (const key of ['ns/a', 'ns/b', 'ns/a', 'ns/b', 'ns/a']) queue.add(key);
        await tick();
        // Whatever the adds, the key is processed at most once at a time, and dirty at most once.
        expect(h.active()).toBe(2);
        h.finish('ns/a');
        h.finish('ns/b');
        await tick();
        // Finishing starts exactly one more run: the one owed to the adds that came during it.
        expect(runsOfA()).toBe(round + 2);
        expect(h.active()).toBe(2);
      }
      expect(h.maxActivePerKey()).toBe(1);
      queue.shutdown();
    });

    it('forget the key after a success and re-add it after requeueAfterMs', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      queue.addRateLimited('ns/a');
      queue.addRateLimited('ns/a');
      expect(queue.numRequeues('ns/a')).toBe(2);
      startWorkers(queue, 1, h.handler);
      await tick(5);
      expect(h.calls).toEqual(['ns/a']);

      h.finish('ns/a', { requeueAfterMs: 200 });
      await tick();
      expect(queue.numRequeues('ns/a')).toBe(0);
      await tick(199);
      expect(h.calls).toHaveLength(1);
      await tick(1);
      expect(h.calls).toHaveLength(2);

      // Without requeueAfterMs, the key is not seen again.
      h.finish('ns/a');
      await tick(60_000);
      expect(h.calls).toHaveLength(2);
      queue.shutdown();
    });

    it('retry a key whose handler throws, with growing backoff, until it succeeds', async () => {
      const queue = new WorkQueue();
      const errors: Array<[string, unknown]> = [];
      let failuresLeft = 3;
      const times: number[] = [];
      const boom = new Error('boom');
      startWorkers(
        queue,
        1,
        async () => {
          times.push(Date.now());
          if (failuresLeft-- > 0) throw boom;
        },
        { onError: (key, error) => errors.push([key, error]) },
      );
      const start = Date.now();
      queue.add('ns/a');
      await tick();
      expect(queue.numRequeues('ns/a')).toBe(1);
      await tick(100);
      expect(times.map((t) => t - start)).toEqual([0, 5, 15, 35]);
      expect(errors).toEqual([
        ['ns/a', boom],
        ['ns/a', boom],
        ['ns/a', boom],
      ]);
      expect(queue.numRequeues('ns/a')).toBe(0);
      queue.shutdown();
    });

    it('keep working when a handler throws synchronously or onError throws', async () => {
      const queue = new WorkQueue();
      const seen: string[] = [];
      const handler = ((key: string) => {
        seen.push(key);
        if (key === 'ns/bad') throw new Error('sync');
        return Promise.resolve();
      }) as Handler;
      startWorkers(queue, 1, handler, {
        onError: () => {
          throw new Error('logger broke');
        },
      });
      queue.add('ns/bad');
      queue.add('ns/good');
      await tick();
      expect(seen).toEqual(['ns/bad', 'ns/good']);
      await tick(5);
      expect(seen).toEqual(['ns/bad', 'ns/good', 'ns/bad']);
      queue.shutdown();
    });

    it('refuse a bad concurrency or a second start', () => {
      const queue = new WorkQueue();
      const handler = async () => {};
      expect(() => startWorkers(queue, 0, handler)).toThrow(RangeError);
      expect(() => startWorkers(queue, 1.5, handler)).toThrow(RangeError);
      const controller = new Controller({ queue, concurrency: 1, reconcile: handler });
      controller.start();
      expect(() => controller.start()).toThrow(/already started/);
      queue.shutdown();
    });
  });

  describe('delays', () => {
    it('addAfter makes a key ready only once its delay has passed', async () => {
      const queue = new WorkQueue();
      queue.addAfter('ns/a', 100);
      expect(queue.len()).toBe(0);
      await tick(99);
      expect(queue.len()).toBe(0);
      await tick(1);
      expect(queue.len()).toBe(1);
      queue.shutdown();
    });

    it('addAfter keeps the earliest due time and runs the key once', async () => {
      const queue = new WorkQueue();
      const handler = vi.fn(async () => {});
      startWorkers(queue, 1, handler);
      queue.addAfter('ns/a', 100);
      queue.addAfter('ns/a', 50);
      queue.addAfter('ns/a', 300);
      queue.addAfter('ns/b', 80);
      await tick(49);
      expect(handler).not.toHaveBeenCalled();
      await tick(1);
      expect(handler.mock.calls).toEqual([['ns/a']]);
      await tick(1000);
      expect(handler.mock.calls).toEqual([['ns/a'], ['ns/b']]);
      queue.shutdown();
    });

    it('add makes a waiting key due now, and it does not run again at its old due time', async () => {
      const queue = new WorkQueue();
      const handler = vi.fn(async () => {});
      startWorkers(queue, 1, handler);
      queue.addAfter('ns/a', 1000);
      queue.add('ns/a');
      await tick();
      expect(handler).toHaveBeenCalledTimes(1);
      await tick(5000);
      expect(handler).toHaveBeenCalledTimes(1);
      expect(vi.getTimerCount()).toBe(0);
      queue.shutdown();
    });

    it('addAfter on a key that is already ready changes nothing', async () => {
      const queue = new WorkQueue();
      queue.add('ns/a');
      queue.addAfter('ns/a', 10);
      expect(vi.getTimerCount()).toBe(0);
      expect(await queue.get()).toBe('ns/a');
      queue.done('ns/a');
      await tick(100);
      expect(queue.len()).toBe(0);
      queue.shutdown();
    });

    it('addAfter while the key is processed holds it until processing is done', async () => {
      const queue = new WorkQueue();
      queue.add('ns/a');
      expect(await queue.get()).toBe('ns/a');
      queue.addAfter('ns/a', 10);
      await tick(10);
      expect(queue.len()).toBe(0);
      queue.done('ns/a');
      expect(queue.len()).toBe(1);
      queue.shutdown();
    });

    it('addAfter with no delay adds at once', () => {
      const queue = new WorkQueue();
      queue.addAfter('ns/a', 0);
      queue.addAfter('ns/b', 0);
      expect(queue.len()).toBe(2);
      queue.shutdown();
    });

    it('addAfter refuses a delay that is not a finite number of milliseconds, 0 or more, and queues nothing', () => {
      const queue = new WorkQueue();
      for (const delay of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -5, -0.5]) {
        expect(() => queue.addAfter('ns/a', delay)).toThrow(
          new RangeError(`a queue delay must be a finite number of milliseconds, 0 or more; got ${delay}`),
        );
      }
      expect(queue.len()).toBe(0);
      expect(vi.getTimerCount()).toBe(0);
      queue.shutdown();
    });

    it('a handler asking for a NaN requeue has its key retried rate-limited, and onError is told', async () => {
      const queue = new WorkQueue();
      const errors: unknown[] = [];
      // NaN twice, then a plain success: an endless NaN would spin the old queue until it ran out of memory.
      const handler = vi.fn(async () => (handler.mock.calls.length <= 2 ? { requeueAfterMs: Number.NaN } : undefined));
      startWorkers(queue, 1, handler, { onError: (_key, error) => errors.push(error) });
      queue.add('ns/a');
      await tick();
      // Not again at once, as a NaN delay used to be taken, but after the backoff: 5 ms, then 10 ms.
      expect(handler).toHaveBeenCalledTimes(1);
      expect(errors).toEqual([expect.any(RangeError)]);
      expect(queue.numRequeues('ns/a')).toBe(1);
      await tick(4);
      expect(handler).toHaveBeenCalledTimes(1);
      await tick(1);
      expect(handler).toHaveBeenCalledTimes(2);
      expect(queue.numRequeues('ns/a')).toBe(2);
      await tick(10);
      expect(handler).toHaveBeenCalledTimes(3);
      expect(queue.numRequeues('ns/a')).toBe(0);
      queue.shutdown();
    });

    it('addRateLimited waits as long as the rate limiter says, and forget resets the backoff', async () => {
      const queue = new WorkQueue();
      const readyAfter = async () => {
        queue.addRateLimited('ns/a');
        let waited = 0;
        while (queue.len() === 0) {
          await tick(1);
          waited++;
        }
        await queue.get();
        queue.done('ns/a');
        return waited;
      };
      expect([await readyAfter(), await readyAfter(), await readyAfter(), await readyAfter()]).toEqual([5, 10, 20, 40]);
      expect(queue.numRequeues('ns/a')).toBe(4);
      queue.forget('ns/a');
      expect(queue.numRequeues('ns/a')).toBe(0);
      expect(await readyAfter()).toBe(5);
      queue.shutdown();
    });

    it('addRateLimited is held back by the shared token bucket', async () => {
      const queue = new WorkQueue({
        rateLimiter: defaultControllerRateLimiter({ qps: 10, burst: 2, now: () => performance.now() }),
      });
      for (const key of ['ns/a', 'ns/b', 'ns/c', 'ns/d']) queue.addRateLimited(key);
      await tick(5);
      expect(queue.len()).toBe(2);
      await tick(95);
      expect(queue.len()).toBe(3);
      await tick(100);
      expect(queue.len()).toBe(4);
      queue.shutdown();
    });

    it('runs delayed keys in due-time order', async () => {
      const queue = new WorkQueue();
      const delays = [70, 10, 50, 30, 90, 20, 80, 60, 40];
      for (const delay of delays) queue.addAfter(`ns/k${delay}`, delay);
      await tick(100);
      const order: Array<string | undefined> = [];
      while (queue.len() > 0) order.push(await queue.get());
      expect(order).toEqual([...delays].sort((a, b) => a - b).map((d) => `ns/k${d}`));
      queue.shutdown();
    });

    it('copes with delays longer than setTimeout can take', async () => {
      const queue = new WorkQueue();
      const day = 24 * 3_600_000;
      queue.addAfter('ns/a', 30 * day);
      await tick(25 * day);
      expect(queue.len()).toBe(0);
      await tick(5 * day);
      expect(queue.len()).toBe(1);
      queue.shutdown();
    });
  });

  describe('shutdown', () => {
    it('ignores new keys, drops waiting and delayed ones, clears timers and stops the workers', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      const stopped = startWorkers(queue, 1, h.handler);
      queue.add('ns/a');
      queue.add('ns/b');
      queue.addAfter('ns/c', 50);
      queue.addRateLimited('ns/d');
      await tick();
      expect(h.calls).toEqual(['ns/a']);

      queue.shutdown();
      expect(queue.isShuttingDown()).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
      expect(queue.len()).toBe(0);
      queue.add('ns/e');
      queue.addAfter('ns/f', 10);
      queue.addRateLimited('ns/g');
      expect(queue.len()).toBe(0);
      expect(queue.numRequeues('ns/g')).toBe(0);
      expect(await queue.get()).toBeUndefined();

      h.finish('ns/a', { requeueAfterMs: 1 });
      await tick(1000);
      expect(h.calls).toEqual(['ns/a']);
      await expect(stopped).resolves.toBeUndefined();
    });

    it('wakes workers waiting on an empty queue', async () => {
      const queue = new WorkQueue();
      const waiting = queue.get();
      const stopped = startWorkers(queue, 2, async () => {});
      queue.shutdown();
      expect(await waiting).toBeUndefined();
      await expect(stopped).resolves.toBeUndefined();
    });

    it('with drain, waits for handlers in flight and starts no new ones', async () => {
      const queue = new WorkQueue();
      const h = controlledHandler();
      const stopped = startWorkers(queue, 2, h.handler);
      for (const key of ['ns/a', 'ns/b', 'ns/c']) queue.add(key);
      await tick();
      queue.add('ns/a');

      let drained = false;
      const drain = queue.shutDownWithDrain().then(() => {
        drained = true;
      });
      await tick();
      expect(drained).toBe(false);

      h.finish('ns/a');
      await tick();
      expect(drained).toBe(false);
      // Neither the dirty ns/a nor the waiting ns/c started.
      expect(h.calls).toEqual(['ns/a', 'ns/b']);

      h.fail('ns/b', new Error('late failure'));
      await tick();
      expect(drained).toBe(true);
      await drain;
      await stopped;
      await tick(60_000);
      expect(h.calls).toEqual(['ns/a', 'ns/b']);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('with drain and nothing in flight, resolves at once', async () => {
      const queue = new WorkQueue();
      queue.add('ns/a');
      await expect(queue.shutDownWithDrain()).resolves.toBeUndefined();
    });
  });

  describe('metrics', () => {
    function recorder() {
      const log: string[] = [];
      const metrics: WorkqueueMetrics = {
        add: () => log.push('add'),
        depth: (n) => log.push(`depth ${n}`),
        queueLatency: (s) => log.push(`latency ${s}`),
        workDuration: (s) => log.push(`work ${s}`),
        retry: () => log.push('retry'),
      };
      return { log, metrics };
    }

    it('reports adds, depth, queue latency and work duration', async () => {
      const { log, metrics } = recorder();
      const queue = new WorkQueue({ metrics });
      queue.add('ns/a');
      queue.add('ns/a');
      queue.add('ns/b');
      await tick(30);
      await queue.get();
      await tick(50);
      queue.add('ns/a');
      queue.done('ns/a');
      expect(log).toEqual([
        'add',
        'depth 1',
        'add',
        'depth 2',
        'depth 1',
        'latency 0.03',
        'add',
        'depth 2',
        'work 0.05',
      ]);
      queue.shutdown();
    });

    it('counts a retry for every delayed add', () => {
      const { log, metrics } = recorder();
      const queue = new WorkQueue({ metrics });
      queue.addAfter('ns/a', 10);
      queue.addRateLimited('ns/b');
      queue.addRateLimited('ns/b');
      expect(log.filter((e) => e === 'retry')).toHaveLength(3);
      queue.shutdown();
    });

    it('measures unfinished work and the longest running processor', async () => {
      const queue = new WorkQueue();
      expect(queue.unfinishedWorkSeconds()).toBe(0);
      expect(queue.longestRunningProcessorSeconds()).toBe(0);
      queue.add('ns/a');
      await queue.get();
      await tick(2000);
      queue.add('ns/b');
      await queue.get();
      await tick(1000);
      expect(queue.unfinishedWorkSeconds()).toBe(4);
      expect(queue.longestRunningProcessorSeconds()).toBe(3);
      queue.done('ns/a');
      expect(queue.unfinishedWorkSeconds()).toBe(1);
      expect(queue.longestRunningProcessorSeconds()).toBe(1);
      queue.shutdown();
    });

    it('works with an injected clock', async () => {
      const clock = manualClock(1_000);
      const { log, metrics } = recorder();
      const queue = new WorkQueue({ now: clock.now, metrics });
      queue.add('ns/a');
      clock.advance(250);
      await queue.get();
      clock.advance(750);
      expect(queue.longestRunningProcessorSeconds()).toBe(0.75);
      queue.done('ns/a');
      expect(log).toContain('latency 0.25');
      expect(log).toContain('work 0.75');
      queue.shutdown();
    });
  });
});

describe('WorkQueue timers', () => {
  it('do not keep the process alive and are cleared on shutdown', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const clear = vi.spyOn(globalThis, 'clearTimeout');
    try {
      const queue = new WorkQueue();
      queue.addAfter('ns/a', 60_000);
      const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      queue.shutdown();
      expect(clear).toHaveBeenCalledWith(timer);
    } finally {
      spy.mockRestore();
      clear.mockRestore();
    }
  });
});

describe('WorkQueue and the event loop', () => {
  // Real timers: what is under test is that they get their turn.
  it('lets immediates, timers and a shutdown through while a handler that never awaits I/O requeues its key', async () => {
    const queue = new WorkQueue();
    // Only the old, starving queue ever gets this far; it stops the test rather than hang it.
    const cap = 10_000;
    let runs = 0;
    let runsBeforeImmediate: number | undefined;
    let runsBeforeTimer: number | undefined;
    setImmediate(() => {
      runsBeforeImmediate = runs;
    });
    setTimeout(() => {
      runsBeforeTimer = runs;
      void queue.shutDownWithDrain();
    }, 0);
    // A reconcile served from the cache alone: it resolves without waiting on anything.
    const handler: Handler = async () => {
      runs++;
      return runs < cap ? { requeueAfterMs: 0 } : undefined;
    };
    const stopped = startWorkers(queue, 1, handler);
    queue.add('ns/spin');
    await stopped;
    // The immediate was queued before the worker's first turn, so it ran after at most that one key.
    expect(runsBeforeImmediate).toBeLessThanOrEqual(1);
    expect(runsBeforeTimer).toBeDefined();
    expect(runsBeforeTimer).toBeLessThan(cap);
    expect(runs).toBeLessThan(cap);
  });
});
