// The last word on a stop, kept by a thread of its own: once a stop has begun,
// the process is gone by the end of the grace period (and a little more), and
// at once if it grows its memory instead of letting go of it, whatever its main
// thread is doing.
//
// Why a thread: the grace timer (manager.ts) is a timer of the main thread's
// event loop, and an e2e operator was seen stuck right after SIGTERM with that
// loop never turning again, its resident memory growing by 200 MB/s outside the
// JS heap until the kernel killed it at 19 GB (issue #24): the timer never
// fired. A worker thread has an event loop of its own and is scheduled like any
// thread, so neither a busy nor a blocked main thread holds it up. It ends the
// process with SIGKILL, the one way that needs nothing of the main thread.
import { Worker } from 'node:worker_threads';

/** How long past the grace period the main thread has to exit on its own (exit code 1, saying why). */
export const STOP_OVERRUN_MS = 10_000;
/**
 * Growth of the resident set, from the start of the stop, that ends the process
 * at once (or half of what it held then, if that is more): a stop only lets go of
 * memory, so growth like this is a runaway.
 */
export const STOP_MEMORY_HEADROOM_BYTES = 512 * 1024 * 1024;
/** How often the thread looks. */
const CHECK_EVERY_MS = 100;

/** What the thread is told. */
export interface WatchdogData {
  pid: number;
  /** Epoch ms past which the process must be gone. */
  deadlineAt: number;
  /** Resident set size, in bytes, past which the process must be gone. */
  rssLimit: number;
  everyMs: number;
  gracefulShutdownTimeoutMs: number;
  /** STOP_OVERRUN_MS, handed over: the thread sees nothing of this module but its text. */
  overrunMs: number;
}

/** Why the process must go now, if it must. Pure: the thread's one decision. */
export function overrun(data: WatchdogData, now: number, rss: number): string | undefined {
  const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);
  if (rss > data.rssLimit) {
    return `stopping: resident memory grew to ${mib(rss)} MiB, past ${mib(data.rssLimit)} MiB: killing the process`;
  }
  if (now >= data.deadlineAt) {
    const grace = data.gracefulShutdownTimeoutMs / 1000;
    return `stopping: still running ${data.overrunMs / 1000}s past --graceful-shutdown-timeout (${grace}s), its event loop stuck: killing the process`;
  }
  return undefined;
}

/**
 * The thread's body, run from its source text in the worker (so the bundle
 * needs no second file). It may use only its arguments and globals.
 */
function watchdogThread(
  data: WatchdogData,
  decide: typeof overrun,
  writeSync: (fd: number, text: string) => unknown,
  proc: Pick<NodeJS.Process, 'kill' | 'memoryUsage'>,
): void {
  const timer = setInterval(() => {
    const why = decide(data, Date.now(), proc.memoryUsage.rss());
    if (why === undefined) return;
    clearInterval(timer);
    // Where the operator logs, in its shape. stdout is non-blocking (main.ts's log output opened it):
    // a full pipe refuses the line rather than holding this thread.
    try {
      writeSync(1, `${JSON.stringify({ level: 50, time: Date.now(), component: 'teal', msg: why })}\n`);
    } catch {}
    proc.kill(data.pid, 'SIGKILL');
  }, data.everyMs);
}

let armed = false;

/**
 * Starts the thread; called first thing when a stop begins (SIGTERM, SIGINT).
 * Idempotent: the first stop's deadline holds.
 */
export function watchStop(gracefulShutdownTimeoutMs: number, onError: (err: Error) => void): void {
  if (armed) return;
  armed = true;
  const rss = process.memoryUsage.rss();
  const data: WatchdogData = {
    pid: process.pid,
    deadlineAt: Date.now() + gracefulShutdownTimeoutMs + STOP_OVERRUN_MS,
    rssLimit: rss + Math.max(STOP_MEMORY_HEADROOM_BYTES, rss / 2),
    everyMs: CHECK_EVERY_MS,
    gracefulShutdownTimeoutMs,
    overrunMs: STOP_OVERRUN_MS,
  };
  const source = [
    "const { workerData } = require('node:worker_threads');",
    "const { writeSync } = require('node:fs');",
    `(${watchdogThread.toString()})(workerData, ${overrun.toString()}, writeSync, process);`,
  ].join('\n');
  const worker = new Worker(source, { eval: true, workerData: data, stdout: false, stderr: false });
  // It must never keep the process alive: a stop that ends ends it.
  worker.unref();
  // A thread that could not start leaves the grace timer alone in charge, as before; said, not thrown.
  worker.on('error', onError);
}
