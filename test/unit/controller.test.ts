// The controller's one decision over a reconcile's outcome, the slow backoff
// of errors that need a person, and the status a failed reconcile writes.
import { ApiException } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppStatus } from '../../src/app/schema.ts';
import { Controller, decide } from '../../src/controller/controller.ts';
import { ActionFailed } from '../../src/controller/executor.ts';
import { failedSummary } from '../../src/controller/summary.ts';
import { errorMessage, isConflict, isTerminal } from '../../src/kube/errors.ts';
import { WorkQueue } from '../../src/kube/workqueue.ts';

const apiError = (code: number, message: string) =>
  new ApiException(code, 'HTTP error', JSON.stringify({ kind: 'Status', code, message }), {});

const forbidden = () =>
  new ActionFailed(
    { kind: 'deleteJob', namespace: 'apps', name: 'web-build-1', why: 'superseded' },
    'deleting build Job apps/web-build-1',
    apiError(403, 'jobs.batch "web-build-1" is forbidden'),
  );

describe('decide', () => {
  it('forgets the key after a success, and re-adds it after a requeue it asked for', () => {
    expect(decide({})).toEqual({ next: 'forget', result: 'success' });
    expect(decide({ requeueAfterMs: 1500 })).toEqual({ next: 'requeueAfter', afterMs: 1500, result: 'requeue_after' });
    expect(decide({ requeueAfterMs: 0 })).toEqual({ next: 'requeueAfter', afterMs: 0, result: 'requeue_after' });
  });

  it('backs off from a wake-up time that is not a finite number of milliseconds, 0 or more', () => {
    for (const requeueAfterMs of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      expect(decide({ requeueAfterMs })).toEqual({ next: 'rateLimited', result: 'error' });
    }
  });

  it('sends an error that needs a person (403, 422, 400) to the slow backoff, through the executor wrapping it', () => {
    expect(decide({ error: forbidden() })).toEqual({ next: 'terminalBackoff', result: 'error' });
    for (const code of [400, 401, 403, 405, 406, 413, 415, 422]) {
      expect(decide({ error: apiError(code, 'no') }).next).toBe('terminalBackoff');
    }
  });

  it('retries anything else rate-limited: conflicts, throttling, server errors, timeouts', () => {
    for (const error of [
      apiError(409, 'the object has been modified'),
      apiError(429, 'too many requests'),
      apiError(500, 'etcd'),
      apiError(503, 'unavailable'),
      new Error('API request timed out after 1500 ms'),
    ]) {
      expect(decide({ error })).toEqual({ next: 'rateLimited', result: 'error' });
    }
  });
});

describe('API errors read through a wrapper', () => {
  it('keep their code and say what was being done', () => {
    const err = forbidden();
    expect(isTerminal(err)).toBe(true);
    expect(isConflict(new ActionFailed({ kind: 'addFinalizer' }, 'adding', apiError(409, 'stale')))).toBe(true);
    expect(errorMessage(err)).toBe('deleting build Job apps/web-build-1: 403: jobs.batch "web-build-1" is forbidden');
  });
});

describe('Controller', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toNotFake: ['setImmediate', 'clearImmediate'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const turn = async (ms = 0) => {
    await vi.advanceTimersByTimeAsync(ms);
    for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };

  it('retries a refused write after seconds, doubling, not at the queue’s millisecond backoff', async () => {
    const queue = new WorkQueue();
    const calls: number[] = [];
    const decisions: string[] = [];
    const start = Date.now();
    let refusals = 3;
    new Controller({
      queue,
      concurrency: 1,
      reconcile: async () => {
        calls.push(Date.now() - start);
        if (refusals-- > 0) throw forbidden();
      },
      onError: (_key, _err, decision) => decisions.push(decision.next),
    }).start();
    queue.add('apps/web');
    await turn();
    expect(calls).toEqual([0]);
    await turn(4_999);
    expect(calls).toEqual([0]);
    await turn(1);
    await turn(10_000);
    await turn(20_000);
    expect(calls).toEqual([0, 5_000, 15_000, 35_000]);
    expect(decisions).toEqual(['terminalBackoff', 'terminalBackoff', 'terminalBackoff']);
    // Success forgets the backoff: the next refusal waits 5 s again.
    refusals = 1;
    queue.add('apps/web');
    await turn();
    await turn(5_000);
    expect(calls.slice(4)).toEqual([35_000, 40_000]);
    queue.shutdown();
  });

  it('records each reconcile with its result, and how many workers are busy', async () => {
    const queue = new WorkQueue();
    const results: string[] = [];
    const busy: number[] = [];
    new Controller({
      queue,
      concurrency: 2,
      reconcile: async (key) => (key === 'apps/later' ? { requeueAfterMs: 60_000 } : undefined),
      metrics: { reconciled: (_s, result) => results.push(result), workers: (_max, active) => busy.push(active) },
    }).start();
    queue.add('apps/now');
    queue.add('apps/later');
    await turn();
    expect(results.sort()).toEqual(['requeue_after', 'success']);
    expect(busy.at(-1)).toBe(0);
    expect(Math.max(...busy)).toBeGreaterThan(0);
    queue.shutdown();
  });
});

describe('failedSummary', () => {
  const status: AppStatus = {
    phase: 'Healthy',
    message: 'revision 1 is active',
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Healthy',
        message: 'revision 1 is active',
        observedGeneration: 1,
        lastTransitionTime: '2026-11-22T10:00:00.000Z',
      },
    ],
  };

  it('keeps what was true, says Ready=False/ReconcileError with the failure, and keeps the phase', () => {
    const failure = 'creating build Job apps/web-build-1: 403: forbidden';
    const { status: next, events } = failedSummary(status, failure, 2, '2026-11-22T11:00:00.000Z');
    expect(next.phase).toBe('Healthy');
    expect(next.message).toBe(`reconcile failed: ${failure}`);
    expect(next.conditions).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'ReconcileError',
        message: `reconcile failed: ${failure}`,
        observedGeneration: 2,
        lastTransitionTime: '2026-11-22T11:00:00.000Z',
      },
    ]);
    expect(events).toEqual([{ type: 'Warning', reason: 'ReconcileError', message: failure }]);
  });

  it('records the Warning once per distinct failure, not at every retry', () => {
    const first = failedSummary(status, 'a: 403', 1, '2026-11-22T11:00:00.000Z');
    const again = failedSummary(first.status, 'a: 403', 1, '2026-11-22T11:00:05.000Z');
    expect(again.events).toEqual([]);
    expect(again.status).toEqual(first.status);
    const other = failedSummary(first.status, 'b: 422', 1, '2026-11-22T11:00:10.000Z');
    expect(other.events.map((e) => e.message)).toEqual(['b: 422']);
  });
});
