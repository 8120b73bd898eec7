import { describe, expect, it } from 'vitest';
import type { FinalPhase, MeasurementResult } from '../../src/analysis/measurement.ts';
import {
  cancelRun,
  ERROR_RETRY_MS,
  inFlight,
  MEASUREMENT_WRITE_GAP_MS,
  RESULT_GRACE_MS,
  recordMeasurement,
  type Step,
  startRun,
  stepRun,
} from '../../src/analysis/run.ts';
import { type AnalysisRunStatus, type Check, type CheckInput, CheckSchema } from '../../src/app/analysis-schema.ts';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const S = 1000;

function check(over: Partial<CheckInput> = {}): Check {
  return CheckSchema.parse({
    name: 'error-rate',
    successCondition: 'result[0] < 0.05',
    provider: { prometheus: { address: 'http://127.0.0.1:9090', query: 'rate(errors[1m])' } },
    ...over,
  });
}

function job(over: Partial<CheckInput> = {}): Check {
  return CheckSchema.parse({
    name: 'smoke',
    provider: {
      job: { spec: { template: { spec: { containers: [{ name: 'smoke', image: 'busybox', command: ['true'] }] } } } },
    },
    ...over,
  });
}

const result = (phase: FinalPhase, value?: string, message?: string): MeasurementResult => ({
  phase,
  ...(value !== undefined ? { value } : {}),
  ...(message !== undefined ? { message } : {}),
});

/**
 * Runs one check to its verdict: each measurement is taken the moment it is
 * due (the requeue time stepRun gave) and answered one second later.
 */
function drive(c: Check, answers: FinalPhase[]) {
  let state = startRun('pre-1', [c], T0);
  let now = T0;
  let step: Step = stepRun([c], state, now);
  const startedAt: number[] = [];
  for (const phase of answers) {
    const action = step.actions[0];
    if (!action) break;
    startedAt.push(now);
    now += S;
    state = recordMeasurement(step.state, c.name, { n: action.n, ...result(phase, '0.5') }, now).state;
    step = stepRun([c], state, now);
    if (step.verdict.phase !== 'Running') break;
    if (step.actions.length === 0 && step.requeueAtMs !== undefined) {
      now = step.requeueAtMs;
      step = stepRun([c], step.state, now);
    }
  }
  return { step, startedAt, measured: startedAt.length, checkStatus: step.state.checks[0] };
}

describe('a check with no interval', () => {
  it('takes one measurement at once and passes on it', () => {
    const c = check();
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    expect(first.actions).toEqual([
      {
        type: 'measure',
        key: 'pre-1/error-rate/1',
        check: 'error-rate',
        n: 1,
        startedAt: '2026-03-01T12:00:00.000Z',
        deadlineAtMs: T0 + 30 * S + RESULT_GRACE_MS,
        resume: false,
      },
    ]);
    expect(first.state.checks[0]?.measurements).toEqual([
      { n: 1, phase: 'Running', startedAt: '2026-03-01T12:00:00.000Z' },
    ]);
    const { state } = recordMeasurement(
      first.state,
      'error-rate',
      { n: 1, phase: 'Successful', value: '[0.01]' },
      T0 + S,
    );
    const done = stepRun([c], state, T0 + S);
    expect(done.verdict.phase).toBe('Successful');
    expect(done.actions).toEqual([]);
    expect(done.requeueAtMs).toBeUndefined();
    expect(done.state.finishedAt).toBe('2026-03-01T12:00:01.000Z');
  });
});

describe('limits (Argo semantics)', () => {
  it.each<[string, Partial<CheckInput>, FinalPhase[], string, number]>([
    ['failureLimit 0: one failure fails', {}, ['Failed'], 'Failed', 1],
    [
      'failureLimit 1: one failure in three passes',
      { failureLimit: 1, count: 3, interval: '10s' },
      ['Failed', 'Successful', 'Successful'],
      'Successful',
      3,
    ],
    [
      'failureLimit 1: the second failure fails',
      { failureLimit: 1, count: 3, interval: '10s' },
      ['Failed', 'Failed', 'Successful'],
      'Failed',
      2,
    ],
    [
      'failureLimit 1 with count 1: a failure within the limit passes',
      { failureLimit: 1 },
      ['Failed'],
      'Successful',
      1,
    ],
    ['inconclusiveLimit 0: one inconclusive stops', {}, ['Inconclusive'], 'Inconclusive', 1],
    [
      'inconclusiveLimit 1: one allowed',
      { inconclusiveLimit: 1, count: 2, interval: '10s' },
      ['Inconclusive', 'Successful'],
      'Successful',
      2,
    ],
    [
      'inconclusiveLimit 1: the second stops',
      { inconclusiveLimit: 1, count: 3, interval: '10s' },
      ['Inconclusive', 'Inconclusive'],
      'Inconclusive',
      2,
    ],
    [
      'consecutiveErrorLimit 4 (default): the fifth error in a row errs',
      {},
      ['Error', 'Error', 'Error', 'Error', 'Error'],
      'Error',
      5,
    ],
    [
      'consecutiveErrorLimit 4: four errors then a success passes',
      {},
      ['Error', 'Error', 'Error', 'Error', 'Successful'],
      'Successful',
      5,
    ],
    ['consecutiveErrorLimit 0: the first error errs', { consecutiveErrorLimit: 0 }, ['Error'], 'Error', 1],
    [
      'consecutiveErrorLimit 1: a success resets the streak',
      { consecutiveErrorLimit: 1, count: 3, interval: '10s' },
      ['Error', 'Successful', 'Error', 'Successful', 'Error', 'Successful'],
      'Successful',
      6,
    ],
    [
      'errors do not count toward count',
      { count: 2, interval: '10s' },
      ['Error', 'Successful', 'Error', 'Successful'],
      'Successful',
      4,
    ],
    [
      'a run of errors outranks failures within the limit',
      { failureLimit: 5, consecutiveErrorLimit: 1, count: 6, interval: '1s' },
      ['Failed', 'Error', 'Error'],
      'Error',
      3,
    ],
  ])('%s', (_title, over, answers, verdict, measured) => {
    const run = drive(check(over), answers);
    expect(run.step.verdict.phase).toBe(verdict);
    expect(run.measured).toBe(measured);
    expect(run.checkStatus?.taken).toBe(measured);
  });

  it('keeps Argo counters: count excludes errors, consecutiveError resets on any non-error', () => {
    const run = drive(check({ count: 3, interval: '5s', failureLimit: 1 }), [
      'Error',
      'Failed',
      'Error',
      'Successful',
      'Successful',
    ]);
    expect(run.checkStatus).toMatchObject({
      taken: 5,
      count: 3,
      successful: 2,
      failed: 1,
      inconclusive: 0,
      error: 2,
      consecutiveError: 0,
      phase: 'Successful',
    });
  });
});

describe('timing: exact requeue times', () => {
  it('waits initialDelay from the run start, then measures at exactly that time', () => {
    const c = check({ initialDelay: '45s' });
    const state = startRun('pre-1', [c], T0);
    const early = stepRun([c], state, T0);
    expect(early.actions).toEqual([]);
    expect(early.requeueAtMs).toBe(T0 + 45 * S);
    expect(stepRun([c], state, T0 + 45 * S - 1).actions).toEqual([]);
    expect(stepRun([c], state, T0 + 45 * S).actions.map((a) => a.key)).toEqual(['pre-1/error-rate/1']);
  });

  it('measures interval after the end of the previous measurement, count times', () => {
    const c = check({ interval: '30s', count: 3 });
    const { startedAt, step } = drive(c, ['Successful', 'Successful', 'Successful']);
    // Each answer arrives 1s after its start; the next is due 30s after that answer.
    expect(startedAt.map((t) => (t - T0) / S)).toEqual([0, 31, 62]);
    expect(step.verdict.phase).toBe('Successful');
  });

  it('asks to be woken exactly when the next measurement is due, not before', () => {
    const c = check({ interval: '30s', count: 2 });
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const answered = recordMeasurement(first.state, c.name, { n: 1, phase: 'Successful' }, T0 + 2 * S).state;
    const waiting = stepRun([c], answered, T0 + 2 * S);
    expect(waiting.actions).toEqual([]);
    expect(waiting.requeueAtMs).toBe(T0 + 32 * S);
    expect(waiting.verdict).toEqual({
      phase: 'Running',
      message: '0 of 1 checks passed; next measurement at 2026-03-01T12:00:32.000Z',
    });
    expect(stepRun([c], answered, T0 + 32 * S - 1).actions).toEqual([]);
    expect(stepRun([c], answered, T0 + 32 * S).actions.map((a) => a.n)).toEqual([2]);
  });

  it('retries an Error after 10s, whatever the interval', () => {
    const c = check({ interval: '5m', count: 2 });
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const errored = recordMeasurement(
      first.state,
      c.name,
      { n: 1, phase: 'Error', message: 'connection refused' },
      T0 + S,
    );
    expect(stepRun([c], errored.state, T0 + S).requeueAtMs).toBe(T0 + S + ERROR_RETRY_MS);
  });

  it('wakes at the earliest deadline of several checks', () => {
    const a = check({ name: 'a', initialDelay: '1m' });
    const b = check({ name: 'b', initialDelay: '20s' });
    const step = stepRun([a, b], startRun('pre-1', [a, b], T0), T0);
    expect(step.requeueAtMs).toBe(T0 + 20 * S);
  });

  it('ends a measurement with no result by its deadline as an Error, and retries it', () => {
    const c = check({ provider: { web: { url: 'http://127.0.0.1:8080/', timeoutSeconds: 5 } } });
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const deadline = T0 + 5 * S + RESULT_GRACE_MS;
    expect(first.requeueAtMs).toBe(deadline);
    expect(stepRun([c], first.state, deadline - 1).state.checks[0]?.measurements[0]?.phase).toBe('Running');
    const late = stepRun([c], first.state, deadline);
    expect(late.state.checks[0]?.measurements[0]).toMatchObject({
      n: 1,
      phase: 'Error',
      message: 'no result within 35s of the start',
    });
    expect(late.state.checks[0]?.consecutiveError).toBe(1);
    expect(late.requeueAtMs).toBe(deadline + ERROR_RETRY_MS);
    // A result for the expired measurement arrives afterwards: ignored.
    expect(recordMeasurement(late.state, c.name, { n: 1, phase: 'Successful' }, deadline + 1).recorded).toBe(false);
  });

  it('gives a job check its activeDeadlineSeconds, plus the grace, to report', () => {
    const c = job();
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    expect(first.actions[0]?.deadlineAtMs).toBe(T0 + 600 * S + RESULT_GRACE_MS);
  });
});

describe('several checks', () => {
  it('start their measurements together, at most once a second, whatever their intervals (issue #24 S4)', () => {
    // 20 checks on 20 different intervals, each answer coming back at its own time.
    const checks = Array.from({ length: 20 }, (_, i) =>
      check({ name: `c${i}`, interval: `${S + 100 * i}ms`, count: 1000, failureLimit: 0 }),
    );
    let state = startRun('pre-1', checks, T0);
    let now = T0;
    const starts: number[] = [];
    let answers: { check: string; n: number; at: number }[] = [];
    for (let steps = 0; now < T0 + 60 * S && steps < 10_000; steps++) {
      for (const a of answers.filter((a) => a.at <= now)) {
        state = recordMeasurement(state, a.check, { n: a.n, ...result('Successful', '0.01') }, now).state;
      }
      answers = answers.filter((a) => a.at > now);
      const step = stepRun(checks, state, now);
      state = step.state;
      const fresh = step.actions.filter((a) => !a.resume);
      if (fresh.length > 0) starts.push(now);
      answers.push(...fresh.map((a, i) => ({ check: a.check, n: a.n, at: now + 50 + 37 * i })));
      now = Math.min(...answers.map((a) => a.at), step.requeueAtMs ?? Number.POSITIVE_INFINITY);
    }
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] ?? 0));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(MEASUREMENT_WRITE_GAP_MS);
    // Each start is one status write: at most one a second, and every check still measured on.
    expect(starts.length).toBeLessThanOrEqual(61);
    expect(Math.min(...state.checks.map((c) => c.successful))).toBeGreaterThanOrEqual(12);
  });

  it('ends the run at once when one fails, terminating the others in flight', () => {
    const slow = job();
    const fast = check();
    const started = stepRun([slow, fast], startRun('pre-1', [slow, fast], T0), T0);
    expect(inFlight(started.state).map((m) => m.key)).toEqual(['pre-1/smoke/1', 'pre-1/error-rate/1']);
    const failed = recordMeasurement(started.state, 'error-rate', { n: 1, phase: 'Failed', value: '[0.2]' }, T0 + S);
    const step = stepRun([slow, fast], failed.state, T0 + S);
    expect(step.verdict.phase).toBe('Failed');
    expect(step.actions).toEqual([]);
    expect(inFlight(step.state)).toEqual([]);
    expect(step.state.checks[0]?.measurements[0]).toMatchObject({
      phase: 'Inconclusive',
      finishedAt: '2026-03-01T12:00:01.000Z',
    });
    expect(step.state.checks[0]?.measurements[0]?.message).toMatch(/^terminated: check "error-rate" failed/);
    // Terminated, not measured: the counters stay as they were.
    expect(step.state.checks[0]).toMatchObject({ count: 0, inconclusive: 0 });
  });

  it('ends every other check with the run: none is left Pending or Running under a decided run', () => {
    const waiting = check({ name: 'later', initialDelay: '1m' });
    const inFlightCheck = job();
    const fast = check();
    const all = [waiting, inFlightCheck, fast];
    const started = stepRun(all, startRun('pre-1', all, T0), T0);
    expect(started.state.checks.map((c) => c.phase)).toEqual(['Pending', 'Running', 'Running']);
    const failed = recordMeasurement(started.state, 'error-rate', { n: 1, phase: 'Failed', value: '[0.2]' }, T0 + S);
    const step = stepRun(all, failed.state, T0 + S);
    expect(step.verdict.phase).toBe('Failed');
    expect(step.state.checks.map((c) => c.phase)).toEqual(['Cancelled', 'Cancelled', 'Failed']);
    expect(step.state.checks[0]?.message).toMatch(/^terminated: check "error-rate" failed/);
  });

  it('names the worst check when two decide in the same step: Failed over Inconclusive', () => {
    const a = check({ name: 'a', successCondition: 'result > 1', failureCondition: 'result < 0' });
    const b = check({ name: 'b' });
    let state = stepRun([a, b], startRun('pre-1', [a, b], T0), T0).state;
    state = recordMeasurement(state, 'a', { n: 1, phase: 'Inconclusive', value: '0.5' }, T0 + S).state;
    state = recordMeasurement(state, 'b', { n: 1, phase: 'Failed', value: '[0.3]' }, T0 + S).state;
    const step = stepRun([a, b], state, T0 + S);
    expect(step.verdict.phase).toBe('Failed');
    expect(step.verdict.message).toMatch(/^check "b" failed/);
  });

  it('passes when every check passes, and says so', () => {
    const a = check({ name: 'a' });
    const b = job();
    let state = stepRun([a, b], startRun('pre-1', [a, b], T0), T0).state;
    state = recordMeasurement(state, 'a', { n: 1, phase: 'Successful', value: '[0.01]' }, T0 + S).state;
    const half = stepRun([a, b], state, T0 + S);
    expect(half.verdict).toEqual({ phase: 'Running', message: '1 of 2 checks passed; measuring "smoke" #1' });
    state = recordMeasurement(half.state, 'smoke', { n: 1, phase: 'Successful' }, T0 + 2 * S).state;
    expect(stepRun([a, b], state, T0 + 2 * S).verdict).toEqual({
      phase: 'Successful',
      message: 'all checks passed: "a" 1/1 successful, "smoke" 1/1 successful',
    });
  });

  it('refuses to go on when the checks differ from those the run started with', () => {
    const a = check({ name: 'a' });
    const state = startRun('pre-1', [a], T0);
    const step = stepRun([a, check({ name: 'b' })], state, T0);
    expect(step.verdict.phase).toBe('Error');
    expect(step.verdict.message).toBe('the checks changed during the run (a → a, b): start a new run');
  });
});

describe('verdict messages name the check, the value and the condition', () => {
  const at = (c: Check, r: MeasurementResult) => {
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const state = recordMeasurement(first.state, c.name, { n: 1, ...r }, T0 + S).state;
    return stepRun([c], state, T0 + S).verdict;
  };
  const failedOne = 'failed: failed (1) > failureLimit (0); measurement 1:';

  it.each<[string, Check, MeasurementResult, string]>([
    [
      "a failed successCondition, in judge's words",
      check(),
      result('Failed', '[0.12]', 'successCondition "result[0] < 0.05" is false for result [0.12]'),
      `check "error-rate" ${failedOne} successCondition "result[0] < 0.05" is false for result [0.12]`,
    ],
    [
      'a failed successCondition, recorded without a message',
      check(),
      result('Failed', '[0.12]'),
      `check "error-rate" ${failedOne} value [0.12]: successCondition "result[0] < 0.05" is false`,
    ],
    [
      'a failureCondition that held, recorded without a message',
      check({ successCondition: undefined, failureCondition: 'result.errors > 0' }),
      result('Failed', '{"errors":3}'),
      `check "error-rate" ${failedOne} value {"errors":3}: failureCondition "result.errors > 0" is true`,
    ],
    [
      'an inconclusive value',
      check({ successCondition: 'result > 0.9', failureCondition: 'result < 0.5' }),
      result('Inconclusive', '0.7'),
      'check "error-rate" was inconclusive: inconclusive (1) > inconclusiveLimit (0); measurement 1: value 0.7: neither successCondition "result > 0.9" nor failureCondition "result < 0.5" is true',
    ],
    [
      "a failed Job, in the executor's words",
      job(),
      result('Failed', undefined, 'Job pre-1-smoke-1 failed: BackoffLimitExceeded'),
      `check "smoke" ${failedOne} Job pre-1-smoke-1 failed: BackoffLimitExceeded`,
    ],
    ['a failed Job, recorded without a message', job(), result('Failed'), `check "smoke" ${failedOne} the Job failed`],
    [
      'an error past the limit',
      check({ consecutiveErrorLimit: 0 }),
      result('Error', undefined, 'received non 2xx response code: 500'),
      'check "error-rate" could not be measured: consecutiveErrors (1) > consecutiveErrorLimit (0); measurement 1: received non 2xx response code: 500',
    ],
    [
      'a message that leaves the value out gets it added',
      check({ consecutiveErrorLimit: 0 }),
      result('Error', 'not json', 'could not evaluate successCondition'),
      'check "error-rate" could not be measured: consecutiveErrors (1) > consecutiveErrorLimit (0); measurement 1: could not evaluate successCondition (value not json)',
    ],
  ])('%s', (_title, c, r, message) => {
    expect(at(c, r).message).toBe(message);
  });
});

describe('durability: replay and kill -9', () => {
  const c = check({ interval: '10s', count: 2 });

  it('is deterministic: the same state and time give the same step', () => {
    const state = startRun('pre-1', [c], T0);
    expect(stepRun([c], state, T0)).toEqual(stepRun([c], state, T0));
  });

  it('never starts a second measurement while one is in flight: replay resumes the same key', () => {
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const replay = stepRun([c], first.state, T0);
    expect(replay.state).toEqual(first.state);
    expect(replay.actions).toEqual(first.actions.map((a) => ({ ...a, resume: true })));
    // A restart later (before the deadline) hands out the same measurement again.
    const restarted = stepRun([c], first.state, T0 + 20 * S);
    expect(restarted.state.checks[0]?.taken).toBe(1);
    expect(restarted.actions.map((a) => [a.key, a.resume])).toEqual([['pre-1/error-rate/1', true]]);
  });

  it('records a result once: a replayed report changes nothing', () => {
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const once = recordMeasurement(first.state, c.name, { n: 1, phase: 'Successful', value: '[0]' }, T0 + S);
    expect(once.recorded).toBe(true);
    const twice = recordMeasurement(once.state, c.name, { n: 1, phase: 'Successful', value: '[0]' }, T0 + 2 * S);
    expect(twice).toEqual({ state: once.state, recorded: false });
    const wrongN = recordMeasurement(first.state, c.name, { n: 2, phase: 'Failed' }, T0 + S);
    expect(wrongN.recorded).toBe(false);
  });

  it('killed before the status write: the measurement starts afresh with the same n', () => {
    const state = startRun('pre-1', [c], T0);
    stepRun([c], state, T0); // computed, never persisted
    const again = stepRun([c], state, T0 + 3 * S);
    expect(again.actions.map((a) => [a.key, a.resume])).toEqual([['pre-1/error-rate/1', false]]);
  });

  it('killed between two measurements: the run goes on where status says, at the same due time', () => {
    const { state } = recordMeasurement(
      stepRun([c], startRun('pre-1', [c], T0), T0).state,
      c.name,
      { n: 1, phase: 'Successful' },
      T0 + S,
    );
    const persisted = stepRun([c], state, T0 + S).state;
    const restarted = stepRun([c], JSON.parse(JSON.stringify(persisted)) as AnalysisRunStatus, T0 + 5 * S);
    expect(restarted.actions).toEqual([]);
    expect(restarted.requeueAtMs).toBe(T0 + 11 * S);
  });

  it('keeps the latest 10 measurements, and the ordinals go on', () => {
    const many = check({ interval: '1s', count: 12 });
    const run = drive(many, Array(12).fill('Successful'));
    expect(run.step.verdict.phase).toBe('Successful');
    expect(run.checkStatus?.measurements.map((m) => m.n)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(run.checkStatus?.count).toBe(12);
  });

  it('bounds what a provider reports', () => {
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const { state } = recordMeasurement(
      first.state,
      c.name,
      { n: 1, phase: 'Error', value: 'v'.repeat(500), message: 'm'.repeat(500) },
      T0 + S,
    );
    const m = state.checks[0]?.measurements[0];
    expect(m?.value).toHaveLength(128);
    expect(m?.value?.endsWith('…')).toBe(true);
    expect(m?.message).toHaveLength(256);
  });
});

describe('cancellation', () => {
  it('ends the run as Cancelled (not Successful), terminating what is in flight', () => {
    const c = job();
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const cancelled = cancelRun(first.state, 'revision 4 replaced revision 3', T0 + S);
    expect(cancelled.phase).toBe('Cancelled');
    expect(cancelled.message).toBe('cancelled: revision 4 replaced revision 3');
    expect(cancelled.finishedAt).toBe('2026-03-01T12:00:01.000Z');
    expect(inFlight(cancelled)).toEqual([]);
    expect(cancelled.checks[0]?.measurements[0]?.phase).toBe('Inconclusive');
    // The check ends with its run too (Argo ends every metric of a terminated run): never Running for good.
    expect(cancelled.checks[0]).toMatchObject({
      phase: 'Cancelled',
      message: 'terminated: cancelled: revision 4 replaced revision 3',
    });
  });

  it('ends every check, whatever it was doing: in flight, waiting for its interval, or not yet started', () => {
    const inFlightCheck = job();
    const between = check({ name: 'between', count: 3, interval: '1m' });
    const notYet = check({ name: 'not-yet', initialDelay: '5m' });
    const done = check({ name: 'done' });
    const all = [inFlightCheck, between, notYet, done];
    let state = stepRun(all, startRun('pre-1', all, T0), T0).state;
    state = recordMeasurement(state, 'between', { n: 1, phase: 'Successful', value: '[0.01]' }, T0 + S).state;
    state = recordMeasurement(state, 'done', { n: 1, phase: 'Successful', value: '[0.01]' }, T0 + S).state;
    state = stepRun(all, state, T0 + S).state;
    expect(state.checks.map((c) => c.phase)).toEqual(['Running', 'Running', 'Pending', 'Successful']);
    const cancelled = cancelRun(state, 'aborted by alice (cli)', T0 + 2 * S);
    expect(cancelled.checks.map((c) => c.phase)).toEqual(['Cancelled', 'Cancelled', 'Cancelled', 'Successful']);
    // A check that had reached its verdict keeps it, and its own words.
    expect(cancelled.checks[3]?.message).toBe('count (1) reached');
  });

  it('is final and idempotent: no more measurements, no more results, a second cancel changes nothing', () => {
    const c = check();
    const first = stepRun([c], startRun('pre-1', [c], T0), T0);
    const cancelled = cancelRun(first.state, 'aborted', T0 + S);
    expect(cancelRun(cancelled, 'again', T0 + 2 * S)).toBe(cancelled);
    const after = stepRun([c], cancelled, T0 + 60 * S);
    expect(after).toEqual({
      state: cancelled,
      actions: [],
      verdict: { phase: 'Cancelled', message: 'cancelled: aborted' },
    });
    expect(recordMeasurement(cancelled, c.name, { n: 1, phase: 'Successful' }, T0 + 2 * S).recorded).toBe(false);
  });

  it('cancels a run that has not measured yet', () => {
    const c = check({ initialDelay: '1m' });
    const cancelled = cancelRun(startRun('pre-1', [c], T0), 'new commit', T0 + S);
    expect(cancelled.phase).toBe('Cancelled');
    expect(cancelled.checks[0]?.measurements).toEqual([]);
    expect(cancelled.checks[0]?.phase).toBe('Cancelled');
  });
});
