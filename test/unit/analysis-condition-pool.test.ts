// The ConditionPool (src/analysis/condition-pool.ts): conditions judged in worker
// threads, a worker past its deadline terminated and replaced, a time budget per
// App and in total, and Apps served in turn. Real worker threads run the real
// worker script; the slow condition is the one of issue #24 S2, which CEL's own
// watchdog stops at 250 ms.
import { setImmediate as turn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { Judgement } from '../../src/analysis/condition.ts';
import { type Budget, ConditionPool, FairQueue, TokenBucket } from '../../src/analysis/condition-pool.ts';
import { waitFor } from '../support/wait.ts';

const numbers = Array.from({ length: 9000 }, (_, i) => i * 1.5);
const slow = { result: numbers, success: 'result.all(a, result.all(b, a >= 0))' };
const honest = { result: { ok: true }, success: 'result.ok == true' };
/** A budget that never refills within a test. */
const never = (ms: number): Budget => ({ ms, perMs: 3_600_000 });

const pools: ConditionPool[] = [];
function pool(options: ConstructorParameters<typeof ConditionPool>[0] = {}): ConditionPool {
  const made = new ConditionPool(options);
  pools.push(made);
  return made;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.stop()));
});

describe('ConditionPool', () => {
  it('judges in a worker: the main thread turns while a slow condition runs', async () => {
    const p = pool();
    await p.judge('warm/up', honest);
    let settled = false;
    const judged = p.judge('ns/slow', slow).then((j) => {
      settled = true;
      return j;
    });
    await turn();
    expect(settled).toBe(false);
    const { phase, message } = await judged;
    expect(phase).toBe('Failed');
    expect(message).toMatch(
      /^successCondition ".+" took longer than 250 ms, so the measurement is Failed; result \[0,1\.5,/,
    );
  });

  it('gives the same verdicts as Argo rules say, and reads "__proto__" as a field', async () => {
    const p = pool();
    expect(await p.judge('ns/a', honest)).toEqual({
      phase: 'Successful',
      message: 'successCondition "result.ok == true" is true for result {"ok":true}',
    });
    expect(
      (await p.judge('ns/a', { result: [0.5], success: 'result[0] > 0.9', failure: 'result[0] < 0.1' })).phase,
    ).toBe('Inconclusive');
    const proto = await p.judge('ns/a', {
      result: JSON.parse('{"__proto__": {"p": 1}}'),
      success: 'result.__proto__.p == 1',
    });
    expect(proto.phase).toBe('Successful');
    expect(Object.hasOwn(Object.prototype, 'p')).toBe(false);
  });

  it('terminates a worker at its deadline and replaces it: the measurement is Failed, the next one judged', async () => {
    // A deadline shorter than CEL's own watchdog, so the kill is what stops it.
    const p = pool({ deadlineMs: 50 });
    const killed = await p.judge('ns/slow', slow);
    expect(killed.phase).toBe('Failed');
    expect(killed.message).toMatch(
      /^the conditions took longer than 50 ms and were stopped, so the measurement is Failed/,
    );
    expect(await p.judge('ns/other', honest)).toMatchObject({ phase: 'Successful' });
    expect(await p.judge('ns/slow', { result: 2, failure: 'result > 1' })).toMatchObject({ phase: 'Failed' });
  });

  it("an App that spent its time budget is Failed without evaluating, and another App's conditions still run", async () => {
    const p = pool({ appBudget: never(100) });
    const spent = await Promise.all([p.judge('ns/slow', slow), p.judge('ns/slow', slow), p.judge('ns/slow', honest)]);
    expect(spent.map((j) => j.phase)).toEqual(['Failed', 'Failed', 'Failed']);
    expect(spent[0]?.message).toMatch(/took longer than 250 ms/);
    for (const refused of spent.slice(1)) {
      expect(refused.message).toMatch(
        /^the App's conditions have used their time budget \(100 ms of evaluation every 3600 s\), so the measurement is Failed/,
      );
    }
    expect(await p.judge('ns/honest', honest)).toMatchObject({ phase: 'Successful' });
  });

  it('serves Apps in turn: an App that comes behind another waits for one of its tasks, not all', async () => {
    const p = pool();
    await p.judge('warm/up', honest);
    const order: string[] = [];
    const track = (name: string, judged: Promise<Judgement>) => judged.then(() => order.push(name));
    // The first goes to the worker at once; the other three wait in line as one App.
    const many = [1, 2, 3, 4].map((i) => track(`slow ${i}`, p.judge('ns/slow', slow)));
    const one = track('honest', p.judge('ns/honest', honest));
    await Promise.all([...many, one]);
    expect(order).toEqual(['slow 1', 'slow 2', 'honest', 'slow 3', 'slow 4']);
  });

  it('waits when the total budget is spent, and judges once it refills', async () => {
    // 100 ms a second in total: after 250 ms, the pool owes 150 ms and waits 1.5 s.
    const p = pool({ totalBudget: { ms: 100, perMs: 1_000 } });
    expect((await p.judge('ns/slow', slow)).phase).toBe('Failed');
    const later = p.judge('ns/honest', honest);
    await turn();
    expect(p.waiting).toBe(1);
    expect(await later).toMatchObject({ phase: 'Successful' });
    expect(p.waiting).toBe(0);
  });

  it('a task cancelled while it waits leaves the queue', async () => {
    const p = pool({ totalBudget: never(100) });
    await p.judge('ns/slow', slow);
    const abort = new AbortController();
    const waiting = p.judge('ns/honest', honest, abort.signal);
    await turn();
    expect(p.waiting).toBe(1);
    abort.abort();
    expect(await waiting).toEqual({ phase: 'Error', message: 'the measurement was cancelled' });
    expect(p.waiting).toBe(0);
  });

  it('retires a worker that has been idle, and starts another for the next task', async () => {
    const p = pool({ idleMs: 50 });
    expect(await p.judge('ns/a', honest)).toMatchObject({ phase: 'Successful' });
    expect(p.workers).toBe(1);
    await waitFor('the idle worker to go', async () => (p.workers === 0 ? true : undefined), { intervalMs: 10 });
    expect(await p.judge('ns/a', honest)).toMatchObject({ phase: 'Successful' });
    expect(p.workers).toBe(1);
  });

  it('without a condition asks no worker; a worker that cannot start is an Error, not a hang', async () => {
    const p = pool({ workerUrl: new URL('./no-such-worker.ts', import.meta.url) });
    expect(await p.judge('ns/a', { result: 1 })).toMatchObject({ phase: 'Successful' });
    const broken = await p.judge('ns/a', honest);
    expect(broken.phase).toBe('Error');
    expect(broken.message).toMatch(/^the conditions could not be evaluated: their worker did not start/);
  });
});

describe('TokenBucket', () => {
  it('spends into debt, refills at its rate, and holds no more than its budget', () => {
    const bucket = new TokenBucket({ ms: 1_000, perMs: 60_000 }, 0);
    expect(bucket.available(0)).toBe(1_000);
    bucket.spend(1_250, 0);
    expect(bucket.available(0)).toBe(-250);
    expect(bucket.waitMs(0)).toBe(15_060);
    expect(bucket.available(15_060)).toBeGreaterThan(0);
    expect(bucket.available(10_000_000)).toBe(1_000);
  });
});

describe('FairQueue', () => {
  it('serves each App in turn, in the order they came', () => {
    const queue = new FairQueue<string>();
    for (const task of ['a1', 'a2', 'a3']) queue.push('a', task);
    queue.push('b', 'b1');
    queue.push('c', 'c1');
    queue.push('b', 'b2');
    queue.remove('a', 'a3');
    const served: string[] = [];
    for (let next = queue.next(); next; next = queue.next()) served.push(next.task);
    expect(served).toEqual(['a1', 'b1', 'c1', 'a2', 'b2']);
    expect(queue.size).toBe(0);
  });
});
