// Every API request but a watch runs under a timeout and the lease-loss
// fence. (The flags that would let a write outlive its lease are refused:
// test/unit/operator-flags.test.ts.)
import { describe, expect, it } from 'vitest';
import { isLongRunning, RequestTimeoutError, requestSignal } from '../../src/kube/client.ts';

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
