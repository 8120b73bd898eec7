// Waiting on a condition, for the tests and for the test control plane's boot.
// Free of vitest, so that `make dev` (test/cluster/cli.ts) shares it.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How long a wait may take before a test fails. A bound against hangs, not a
 * performance check: a busy CI machine may be many times slower than a quiet
 * one, and a passing wait returns as soon as its condition holds.
 */
export const WAIT_MS = 120_000;

/** Thrown by a check when trying again cannot help: the wait ends at once with it. */
export class StopWaiting extends Error {}

/**
 * Polls until check returns a value other than undefined, or fails with the
 * last reason; a check that throws StopWaiting ends the wait at once.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  { timeoutMs = WAIT_MS, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(intervalMs);
  }
}
