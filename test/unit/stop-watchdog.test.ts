// The stop watchdog's one decision (src/stop-watchdog.ts); the thread itself ending
// a stuck operator is test/e2e/stop-watchdog.test.ts.
import { describe, expect, it } from 'vitest';
import { overrun, STOP_OVERRUN_MS, type WatchdogData } from '../../src/stop-watchdog.ts';

const MiB = 1024 * 1024;
const data: WatchdogData = {
  pid: 1,
  deadlineAt: 100_000,
  rssLimit: 700 * MiB,
  everyMs: 100,
  gracefulShutdownTimeoutMs: 20_000,
  overrunMs: STOP_OVERRUN_MS,
};

describe('overrun', () => {
  it('lets a stop run while it is within its deadline and its memory bound', () => {
    expect(overrun(data, 99_999, 700 * MiB)).toBeUndefined();
  });

  it('ends it at the deadline, naming the grace period and the overrun', () => {
    expect(overrun(data, 100_000, 200 * MiB)).toBe(
      'stopping: still running 10s past --graceful-shutdown-timeout (20s), its event loop stuck: killing the process',
    );
  });

  it('ends it as soon as its memory is past the bound, before the deadline', () => {
    expect(overrun(data, 1_000, 701 * MiB)).toBe(
      'stopping: resident memory grew to 701 MiB, past 700 MiB: killing the process',
    );
  });
});
