// Every API request but a watch runs under a timeout and the lease-loss
// fence. (The flags that would let a write outlive its lease are refused:
// test/unit/operator-flags.test.ts.)
import { HttpMethod, RequestContext } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  alsoAbortedBy,
  DeadlineError,
  isLongRunning,
  RequestTimeoutError,
  requestSignal,
  withDeadline,
} from '../../src/kube/client.ts';

const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

describe('requestSignal', () => {
  it('is undefined when nothing bounds the request', () => {
    expect(requestSignal({})).toBeUndefined();
  });

  it('aborts with the fence, for requests in flight and later ones alike', async () => {
    const fence = new AbortController();
    const inFlight = requestSignal({ fence: fence.signal, timeoutMs: 60_000 });
    fence.abort(new Error('lost the lease'));
    expect(inFlight?.aborted).toBe(true);
    expect((await aborted(inFlight as AbortSignal)) as Error).toHaveProperty('message', 'lost the lease');
    expect(requestSignal({ fence: fence.signal, timeoutMs: 60_000 })?.aborted).toBe(true);
  });

  it('aborts after the timeout, with a reason that says how long it waited', async () => {
    const signal = requestSignal({ timeoutMs: 5 });
    expect(signal?.aborted).toBe(false);
    const reason = await aborted(signal as AbortSignal);
    expect(reason).toBeInstanceOf(RequestTimeoutError);
    expect((reason as Error).message).toBe('API request timed out after 5 ms');
  });

  it('keeps the request’s own signal', () => {
    const own = new AbortController();
    const signal = requestSignal({ timeoutMs: 60_000 }, own.signal);
    own.abort(new Error('caller gave up'));
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toHaveProperty('message', 'caller gave up');
  });

  it('each request gets its own timer, started when it is sent', () => {
    const bounds = { timeoutMs: 60_000 };
    expect(requestSignal(bounds)).not.toBe(requestSignal(bounds));
  });
});

describe('isLongRunning', () => {
  it.each([
    ['https://127.0.0.1:6443/api/v1/namespaces/a/pods?watch=true&resourceVersion=1', true],
    ['https://127.0.0.1:6443/api/v1/namespaces/a/pods/p/log?follow=true', true],
    ['https://127.0.0.1:6443/api/v1/namespaces/a/pods?limit=500', false],
    ['https://127.0.0.1:6443/apis/apps/v1/namespaces/a/replicasets/x', false],
    ['https://127.0.0.1:6443/api/v1/pods?watch=false', false],
  ])('%s: %s', (url, expected) => {
    expect(isLongRunning(url)).toBe(expected);
  });
});

describe('alsoAbortedBy (a call with a signal of its own, as the elections’ Lease requests)', () => {
  const LEASE_URL = 'https://127.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/teal-system/leases/teal-controller';

  /** The signal a request goes out with: the KubeConfig's bounds set first, then the call's middleware. */
  async function sentWith(own: AbortSignal, bounds?: AbortSignal): Promise<AbortSignal | undefined> {
    const context = new RequestContext(LEASE_URL, HttpMethod.PUT);
    if (bounds) context.setSignal(bounds);
    const [middleware] = alsoAbortedBy(own).middleware ?? [];
    if (!middleware) throw new Error('no middleware');
    return (await middleware.pre(context).toPromise()).getSignal();
  }

  it('keeps the fence: a fenced replica’s Lease request is aborted', async () => {
    const fence = new AbortController();
    const signal = await sentWith(
      new AbortController().signal,
      requestSignal({ fence: fence.signal, timeoutMs: 60_000 }),
    );
    expect(signal?.aborted).toBe(false);
    fence.abort(new Error('lost the lease'));
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toHaveProperty('message', 'lost the lease');
  });

  it('keeps the request timeout', async () => {
    const signal = await sentWith(new AbortController().signal, requestSignal({ timeoutMs: 5 }));
    expect(await aborted(signal as AbortSignal)).toBeInstanceOf(RequestTimeoutError);
  });

  it('adds the call’s own signal', async () => {
    const own = new AbortController();
    const signal = await sentWith(own.signal, requestSignal({ timeoutMs: 60_000 }));
    own.abort(new Error('elector stopped'));
    expect(signal?.reason).toHaveProperty('message', 'elector stopped');
  });

  it('is the call’s own signal alone when the KubeConfig sets no bounds', async () => {
    const own = new AbortController();
    expect(await sentWith(own.signal)).toBe(own.signal);
  });
});

describe('withDeadline', () => {
  it('aborts the attempt once its time has passed, with a DeadlineError', async () => {
    const reason = await withDeadline(5, undefined, (signal) => aborted(signal));
    expect(reason).toBeInstanceOf(DeadlineError);
    expect((reason as Error).message).toBe('deadline of 5 ms passed');
  });

  it('aborts it on stop, with the stop’s reason', async () => {
    const stop = new AbortController();
    const attempt = withDeadline(60_000, stop.signal, (signal) => aborted(signal));
    stop.abort(new Error('stopping'));
    expect(await attempt).toHaveProperty('message', 'stopping');
  });

  it('leaves no timer behind once the attempt ends', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    await withDeadline(60_000, undefined, async () => 'done');
    await expect(withDeadline(60_000, undefined, async () => Promise.reject(new Error('failed')))).rejects.toThrow();
    expect(timers()).toBe(before);
  });
});
