// A stop that cannot end by itself still ends (src/stop-watchdog.ts): an
// operator whose main thread never yields again after SIGTERM, as the runaway
// operators of issue #24 did (last line "stopping: ...", the grace timer never
// fired, resident memory growing by 200 MB/s to 19 GB), is ended by its stop
// watchdog thread: past --graceful-shutdown-timeout when it only spins, and as
// soon as its memory grows past the bound when it grows. The fault is
// test/support/stuck-after-sigterm.ts, loaded into the real operator.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { StopWaiting } from '../support/wait.ts';

const STUCK = fileURLToPath(new URL('../support/stuck-after-sigterm.ts', import.meta.url));
/** Far above the watchdog's bound (512 MiB over what the operator held): this test ends the process there itself. */
const RSS_CEILING_KB = 1.5 * 1024 * 1024;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

/** Resident set of a live process in kB; undefined once it has exited. */
function rssKb(pid: number): number | undefined {
  try {
    const line = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** An operator on a namespace of its own that gets stuck once SIGTERM begins its stop. */
async function stuckOperator(prefix: string, how: 'spin' | 'grow', extraArgs: string[] = []): Promise<Operator> {
  const ns = await createNamespace(prefix);
  cleanups.push(ns.remove);
  const op = await startOperator({
    namespace: ns.name,
    nodeFlags: ['--import', STUCK],
    env: { TEAL_TEST_STUCK: how },
    extraArgs,
    // Its exit is what the test is about: never started again.
    restartOnLeaseLoss: false,
  });
  cleanups.push(() => op.kill());
  return op;
}

/**
 * SIGTERM, then waits for the process to be gone, noting the most memory it
 * held meanwhile; one that reaches RSS_CEILING_KB is killed here and fails the test.
 */
async function stopWatchingMemory(
  op: Operator,
): Promise<{ code: number | null; signal: string | null; peakKb: number }> {
  const pid = op.process.pid ?? 0;
  // 'close', not 'exit': its output is whole only once its pipes have closed.
  const exited = new Promise<void>((resolve) => op.process.once('close', () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  let peakKb = rssKb(pid) ?? 0;
  op.process.kill('SIGTERM');
  await waitFor('the operator to be gone after SIGTERM', async () => {
    if (gone) return true;
    const kb = rssKb(pid);
    if (kb !== undefined) peakKb = Math.max(peakKb, kb);
    if (kb !== undefined && kb > RSS_CEILING_KB) {
      op.process.kill('SIGKILL');
      throw new StopWaiting(`the stopping operator grew to ${kb} kB and was still running`);
    }
    return undefined;
  });
  return { code: op.process.exitCode, signal: op.process.signalCode, peakKb };
}

describe('a stop whose event loop never turns again', () => {
  it('is ended past --graceful-shutdown-timeout by the watchdog thread, which says why', async () => {
    const op = await stuckOperator('stuck-spin', 'spin', ['--graceful-shutdown-timeout', '2s']);
    const { signal, peakKb } = await stopWatchingMemory(op);
    expect(signal).toBe('SIGKILL');
    expect(op.logs()).toContain('"msg":"stopping: readiness off, draining reconciles, releasing the lease"');
    expect(op.logs()).toMatch(
      /"level":50,[^\n]*"msg":"stopping: still running 10s past --graceful-shutdown-timeout \(2s\), its event loop stuck: killing the process"/,
    );
    expect(peakKb).toBeLessThan(RSS_CEILING_KB);
  });

  it('whose memory runs away is ended once it has grown past the bound, long before the grace period ends', async () => {
    // The default grace period (20s): at 200 MB/s, 4 GB would pile up before it ended.
    const op = await stuckOperator('stuck-grow', 'grow');
    const { signal, peakKb } = await stopWatchingMemory(op);
    expect(signal).toBe('SIGKILL');
    expect(op.logs()).toMatch(
      /"level":50,[^\n]*"msg":"stopping: resident memory grew to \d+ MiB, past \d+ MiB: killing/,
    );
    expect(op.logs()).not.toContain('past --graceful-shutdown-timeout');
    expect(peakKb).toBeLessThan(RSS_CEILING_KB);
  });
});
