// Every API request but a watch runs under a timeout and the lease-loss
// fence; the operator refuses request timings that would let a write outlive
// its lease.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
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

const run = promisify(execFile);
const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

async function start(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, [MAIN, ...args], { timeout: 20_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

// Each case starts a Node process: slow on a busy machine.
describe('request and shutdown timing flags', { timeout: 60_000 }, () => {
  it.each([
    [['--request-timeout', '10'], '--request-timeout: must be shorter than --renew-deadline (10s)'],
    [
      ['--renew-deadline', '4', '--request-timeout', '4'],
      '--request-timeout: must be shorter than --renew-deadline (4s)',
    ],
    [['--request-timeout', '0'], '--request-timeout: must be at least 0.1s'],
    [['--graceful-shutdown-timeout', '0'], '--graceful-shutdown-timeout: must be at least 0.1s'],
    [['--lease-duration', '10', '--renew-deadline', '10'], '--renew-deadline: must be shorter than --lease-duration'],
  ])('%j is refused: %s', async (args, message) => {
    const { code, stderr } = await start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });
});
