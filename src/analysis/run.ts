// One analysis run as a pure state machine over durable state (App status),
// with Argo Rollouts' measurement semantics: interval, count, initialDelay,
// failureLimit, inconclusiveLimit and consecutiveErrorLimit.
//
// Surviving kill -9 (restart, leader handover) without repeating or losing a
// measurement rests on three rules:
//
// 1. Write-ahead. stepRun records a measurement as started (phase Running, its
//    ordinal n, startedAt) in the state it returns, together with the action
//    that takes it. The caller persists that state before carrying out the
//    action. Killed before the write: status holds no trace and no I/O has
//    happened, so the next stepRun starts the same measurement n afresh. Killed
//    after it: status says n is in flight, and stepRun never starts another
//    one for that check while it is.
// 2. Stable identity. A measurement is named by its key, `<run id>/<check>/<n>`.
//    While it is in flight every stepRun hands the action out again (resume:
//    true), and the executor makes a repeat of a key harmless: a job check
//    creates its Job under a name derived from the key, or adopts the one that
//    already exists; web and prometheus checks only read, so after a restart
//    the request runs once more, and one measurement is recorded either way.
//    recordMeasurement accepts a result only for the measurement in flight
//    with that n, so a late or repeated report changes nothing.
// 3. A deadline for every measurement in flight: startedAt + the provider's
//    timeout + RESULT_GRACE_MS. Past it stepRun ends the measurement as an
//    Error itself (retried like any Error, counted against
//    consecutiveErrorLimit), so a lost executor, a deleted Job or pods that
//    never start cannot hang the run, and cannot pass it either.
//
// stepRun reads time only from `nowMs` and the state's own timestamps, so
// replaying it on the same state and time gives the same result, and the
// requeue time it returns is the exact next deadline, never a polling period.

import {
  type AnalysisRunStatus,
  type Check,
  type CheckPhase,
  type CheckStatus,
  MAX_MESSAGE_LENGTH,
  MAX_VALUE_LENGTH,
  MEASUREMENT_HISTORY_LIMIT,
  type MeasurementStatus,
  providerOf,
  type RunPhase,
} from '../app/analysis-schema.ts';
import { parseDuration } from '../app/duration.ts';
import { bounded, conditionText, type FinalPhase, type MeasurementResult } from './measurement.ts';

/** Wait after an Error before the next try, whatever the interval (Argo's DefaultErrorRetryInterval). */
export const ERROR_RETRY_MS = 10_000;
/**
 * Measurements of a run start together, at most once per this gap: each
 * start is a status write (rule 1), and checks on different intervals would
 * otherwise each write on their own time. A check due meanwhile waits for the
 * next start, at most this long. The same gap bounds how often results are
 * recorded (controller/analysis-runner.ts).
 */
export const MEASUREMENT_WRITE_GAP_MS = 1_000;
/** Time an executor has, past the provider's own timeout, to report a result. */
export const RESULT_GRACE_MS = 30_000;
const RUN_MESSAGE_LENGTH = 1024;

/** Take (or, after a restart, carry on with) measurement n of a check. */
export interface MeasureAction {
  type: 'measure';
  /** `<run id>/<check>/<n>`: executing the same key twice must have the effect of once. */
  key: string;
  check: string;
  n: number;
  startedAt: string;
  /** When stepRun gives up on a result and records an Error. */
  deadlineAtMs: number;
  /** True when status already held this measurement as started: it may be under way. */
  resume: boolean;
}

export interface Verdict {
  phase: RunPhase;
  /** Names the check, the measured value and the condition that decided it. */
  message: string;
}

export interface Step {
  state: AnalysisRunStatus;
  actions: MeasureAction[];
  /** The next exact deadline: a measurement due, or one in flight timing out. */
  requeueAtMs?: number;
  verdict: Verdict;
}

export function startRun(id: string, checks: readonly Check[], nowMs: number): AnalysisRunStatus {
  return {
    id,
    phase: 'Running',
    startedAt: iso(nowMs),
    checks: checks.map((c) => ({
      name: c.name,
      provider: providerOf(c),
      phase: 'Pending',
      taken: 0,
      count: 0,
      successful: 0,
      failed: 0,
      inconclusive: 0,
      error: 0,
      consecutiveError: 0,
      measurements: [],
    })),
  };
}

/** Advances the run to `nowMs`. Pure, and a fixed point: replaying it on its own output adds nothing. */
export function stepRun(checks: readonly Check[], state: AnalysisRunStatus, nowMs: number): Step {
  if (state.phase !== 'Running') return { state, actions: [], verdict: verdictOf(state) };
  const mismatch = checkSetChange(checks, state);
  if (mismatch) return ended(finish(structuredClone(state), 'Error', mismatch, nowMs));
  const next = structuredClone(state);
  const pairs = next.checks.map((status) => ({ status, check: specOf(checks, status.name) }));
  for (const { check, status } of pairs) expireLate(check, status, nowMs);
  for (const { check, status } of pairs) assessCheck(check, status);
  const decided = decidedBy(pairs);
  if (decided) return ended(finish(next, decided.phase, decided.message, nowMs));
  if (pairs.every((p) => p.status.phase === 'Successful')) {
    return ended(finish(next, 'Successful', successMessage(next), nowMs));
  }
  return schedule(next, pairs, nowMs);
}

/**
 * Records the result of measurement n of a check. Accepted only while that
 * very measurement is in flight, so replaying a report, or a report that comes
 * after the deadline ended the measurement, changes nothing (recorded: false).
 * The caller redacts secrets from value and message first (args.ts redact).
 */
export function recordMeasurement(
  state: AnalysisRunStatus,
  checkName: string,
  measurement: MeasurementResult & { n: number },
  nowMs: number,
): { state: AnalysisRunStatus; recorded: boolean } {
  if (state.phase !== 'Running') return { state, recorded: false };
  const index = state.checks.findIndex((c) => c.name === checkName);
  const last = state.checks[index]?.measurements.at(-1);
  if (last?.phase !== 'Running' || last.n !== measurement.n) return { state, recorded: false };
  const next = structuredClone(state);
  const status = next.checks[index] as CheckStatus;
  complete(status, measurement, nowMs);
  return { state: next, recorded: true };
}

/**
 * Ends a run that is no longer wanted (a new revision, an abort). Cancelled is
 * not Successful: a cancelled run proves nothing. Measurements in flight end
 * with it; the executor deletes what is no longer in inFlight(state).
 */
export function cancelRun(state: AnalysisRunStatus, reason: string, nowMs: number): AnalysisRunStatus {
  if (state.phase !== 'Running') return state;
  return finish(structuredClone(state), 'Cancelled', `cancelled: ${reason}`, nowMs);
}

/** Measurements whose Jobs (or requests) should exist now; anything else of this App's runs may go. */
export function inFlight(state: AnalysisRunStatus): { key: string; check: string; n: number }[] {
  if (state.phase !== 'Running') return [];
  return state.checks.flatMap((c) => {
    const last = c.measurements.at(-1);
    return last?.phase === 'Running' ? [{ key: measurementKey(state, c.name, last.n), check: c.name, n: last.n }] : [];
  });
}

export function measurementKey(state: AnalysisRunStatus, check: string, n: number): string {
  return `${state.id}/${check}/${n}`;
}

export function verdictOf(state: AnalysisRunStatus): Verdict {
  return { phase: state.phase, message: state.message ?? '' };
}

/** Count to reach: Argo's EffectiveCount, where the schema forbids an interval without count. */
export function effectiveCount(check: Check): number {
  return check.count ?? 1;
}

/** How long a provider may take for one measurement, before the grace. */
export function timeoutMs(check: Check): number {
  const { job, web, prometheus } = check.provider;
  if (web) return web.timeoutSeconds * 1000;
  if (prometheus) return prometheus.timeout * 1000;
  return (job?.spec.activeDeadlineSeconds ?? 600) * 1000;
}

// ---- steps ----

type Pair = { check: Check; status: CheckStatus };

function specOf(checks: readonly Check[], name: string): Check {
  const check = checks.find((c) => c.name === name);
  if (!check) throw new Error(`check ${name} missing from the spec`);
  return check;
}

/** The run measures what it started with; the caller starts a new run when the checks change. */
function checkSetChange(checks: readonly Check[], state: AnalysisRunStatus): string | undefined {
  const want = checks.map((c) => c.name).sort();
  const have = state.checks.map((c) => c.name).sort();
  if (want.length === have.length && want.every((n, i) => n === have[i])) return undefined;
  return `the checks changed during the run (${have.join(', ')} → ${want.join(', ')}): start a new run`;
}

function expireLate(check: Check, status: CheckStatus, nowMs: number) {
  const last = status.measurements.at(-1);
  if (last?.phase !== 'Running' || nowMs < deadlineOf(check, last)) return;
  const seconds = (timeoutMs(check) + RESULT_GRACE_MS) / 1000;
  complete(status, { phase: 'Error', message: `no result within ${seconds}s of the start` }, nowMs);
}

function deadlineOf(check: Check, m: MeasurementStatus): number {
  return Date.parse(m.startedAt) + timeoutMs(check) + RESULT_GRACE_MS;
}

/** Argo's counters: Errors do not count toward count, and only Errors extend the streak. */
function complete(status: CheckStatus, result: MeasurementResult, nowMs: number) {
  const m = status.measurements.at(-1) as MeasurementStatus;
  m.phase = result.phase;
  m.finishedAt = iso(nowMs);
  if (result.value !== undefined) m.value = bounded(result.value, MAX_VALUE_LENGTH);
  if (result.message !== undefined) m.message = bounded(result.message, MAX_MESSAGE_LENGTH);
  if (result.phase === 'Error') {
    status.error++;
    status.consecutiveError++;
    return;
  }
  status.count++;
  status.consecutiveError = 0;
  if (result.phase === 'Successful') status.successful++;
  else if (result.phase === 'Failed') status.failed++;
  else status.inconclusive++;
}

/** Argo's assessMetricStatus, without consecutiveSuccessLimit. */
function assessCheck(check: Check, status: CheckStatus) {
  const { phase, message } = checkPhase(check, status);
  status.phase = phase;
  if (message !== undefined) status.message = message;
}

function checkPhase(check: Check, status: CheckStatus): { phase: CheckPhase; message?: string } {
  const last = status.measurements.at(-1);
  if (!last) return { phase: 'Pending' };
  if (last.phase === 'Running') return { phase: 'Running' };
  const limit = limitBroken(check, status);
  if (limit) return limit;
  if (status.count >= effectiveCount(check)) return { phase: 'Successful', message: `count (${status.count}) reached` };
  return { phase: 'Running' };
}

// Checked in Argo's order, the later winning: a run of Errors outranks a failure.
function limitBroken(check: Check, s: CheckStatus): { phase: CheckPhase; message: string } | undefined {
  let broken: { phase: CheckPhase; message: string } | undefined;
  if (s.failed > check.failureLimit) {
    broken = { phase: 'Failed', message: `failed (${s.failed}) > failureLimit (${check.failureLimit})` };
  }
  if (s.inconclusive > check.inconclusiveLimit) {
    const message = `inconclusive (${s.inconclusive}) > inconclusiveLimit (${check.inconclusiveLimit})`;
    broken = { phase: 'Inconclusive', message };
  }
  if (s.consecutiveError > check.consecutiveErrorLimit) {
    const message = `consecutiveErrors (${s.consecutiveError}) > consecutiveErrorLimit (${check.consecutiveErrorLimit})`;
    broken = { phase: 'Error', message };
  }
  return broken;
}

const SEVERITY: Partial<Record<CheckPhase, number>> = { Inconclusive: 1, Error: 2, Failed: 3 };

/** A check that broke a limit ends the run at once (Argo terminates the run); the worst one names it. */
function decidedBy(pairs: Pair[]): Verdict | undefined {
  let worst: Pair | undefined;
  for (const pair of pairs) {
    const severity = SEVERITY[pair.status.phase] ?? 0;
    if (severity > (worst ? (SEVERITY[worst.status.phase] ?? 0) : 0)) worst = pair;
  }
  if (!worst) return undefined;
  return { phase: worst.status.phase as RunPhase, message: decisionMessage(worst) };
}

const VERBS: Partial<Record<CheckPhase, string>> = {
  Failed: 'failed',
  Inconclusive: 'was inconclusive',
  Error: 'could not be measured',
};

function decisionMessage({ check, status }: Pair): string {
  const last = status.measurements.findLast((m) => m.phase !== 'Running');
  const head = `check "${check.name}" ${VERBS[status.phase] ?? status.phase}: ${status.message}`;
  return last ? `${head}; measurement ${last.n}: ${lastWords(check, last)}` : head;
}

/** The last measurement in the words status has for it, always with its value when it had one. */
function lastWords(check: Check, m: MeasurementStatus): string {
  const value = m.value !== undefined ? `value ${m.value}` : undefined;
  if (m.message !== undefined) {
    return value && !m.message.includes(m.value ?? '') ? `${m.message} (${value})` : m.message;
  }
  const phase = m.phase as FinalPhase;
  const why = conditionText(check, phase) ?? endWords(check, phase);
  return value ? `${value}: ${why}` : why;
}

function endWords(check: Check, phase: FinalPhase): string {
  if (!check.provider.job) return phase.toLowerCase();
  return {
    Successful: 'the Job completed',
    Failed: 'the Job failed',
    Inconclusive: 'the Job was stopped',
    Error: 'error',
  }[phase];
}

function successMessage(state: AnalysisRunStatus): string {
  const parts = state.checks.map((c) => `"${c.name}" ${c.successful}/${c.count} successful`);
  return `all checks passed: ${parts.join(', ')}`;
}

function finish(state: AnalysisRunStatus, phase: RunPhase, message: string, nowMs: number): AnalysisRunStatus {
  const terminated = bounded(`terminated: ${message}`, MAX_MESSAGE_LENGTH);
  for (const status of state.checks) {
    const last = status.measurements.at(-1);
    // Ended with the run, not counted: the verdict no longer depends on it.
    if (last?.phase === 'Running') {
      last.phase = 'Inconclusive';
      last.finishedAt = iso(nowMs);
      last.message = terminated;
    }
    // As Argo ends every metric of a terminated run: no check of an ended run is left
    // Pending or Running. Cancelled, not Successful: it stopped before reaching its verdict.
    if (status.phase === 'Pending' || status.phase === 'Running') {
      status.phase = 'Cancelled';
      status.message = terminated;
    }
  }
  state.phase = phase;
  state.message = bounded(message, RUN_MESSAGE_LENGTH);
  state.finishedAt = iso(nowMs);
  return state;
}

function ended(state: AnalysisRunStatus): Step {
  return { state, actions: [], verdict: verdictOf(state) };
}

function schedule(state: AnalysisRunStatus, pairs: Pair[], nowMs: number): Step {
  const actions: MeasureAction[] = [];
  const wakeAt: number[] = [];
  const nextStart = lastStartMs(pairs) + MEASUREMENT_WRITE_GAP_MS;
  for (const { check, status } of pairs) {
    if (status.phase === 'Successful') continue;
    let last = status.measurements.at(-1);
    const resume = last?.phase === 'Running';
    if (!resume) {
      const due = Math.max(dueAt(check, status, state.startedAt), nextStart);
      if (nowMs < due) {
        wakeAt.push(due);
        continue;
      }
      last = begin(status, nowMs);
    }
    const m = last as MeasurementStatus;
    const deadlineAtMs = deadlineOf(check, m);
    wakeAt.push(deadlineAtMs);
    const key = measurementKey(state, check.name, m.n);
    actions.push({ type: 'measure', key, check: check.name, n: m.n, startedAt: m.startedAt, deadlineAtMs, resume });
  }
  const requeueAtMs = wakeAt.length > 0 ? Math.min(...wakeAt) : undefined;
  return {
    state,
    actions,
    ...(requeueAtMs !== undefined ? { requeueAtMs } : {}),
    verdict: { phase: 'Running', message: runningMessage(pairs, actions, requeueAtMs) },
  };
}

/** When the run last started measurements (status keeps each check's latest); -Infinity before the first. */
function lastStartMs(pairs: Pair[]): number {
  const starts = pairs.flatMap(({ status }) => status.measurements.map((m) => Date.parse(m.startedAt)));
  return Math.max(Number.NEGATIVE_INFINITY, ...starts);
}

/** Argo's timing: the first after initialDelay, then interval after the last ended, 10s after an Error. */
function dueAt(check: Check, status: CheckStatus, runStartedAt: string): number {
  const last = status.measurements.at(-1);
  if (status.taken === 0 || !last?.finishedAt) {
    return Date.parse(runStartedAt) + (check.initialDelay ? parseDuration(check.initialDelay) : 0);
  }
  const wait = last.phase === 'Error' ? ERROR_RETRY_MS : check.interval ? parseDuration(check.interval) : 0;
  return Date.parse(last.finishedAt) + wait;
}

function begin(status: CheckStatus, nowMs: number): MeasurementStatus {
  status.taken++;
  const m: MeasurementStatus = { n: status.taken, phase: 'Running', startedAt: iso(nowMs) };
  status.measurements.push(m);
  // Keep the newest; the one in flight is always the last.
  status.measurements.splice(0, Math.max(0, status.measurements.length - MEASUREMENT_HISTORY_LIMIT));
  status.phase = 'Running';
  return m;
}

function runningMessage(pairs: Pair[], actions: MeasureAction[], requeueAtMs: number | undefined): string {
  const passed = pairs.filter((p) => p.status.phase === 'Successful').length;
  const measuring = actions.map((a) => `"${a.check}" #${a.n}`);
  const head = `${passed} of ${pairs.length} checks passed`;
  if (measuring.length > 0) return `${head}; measuring ${measuring.join(', ')}`;
  return requeueAtMs !== undefined ? `${head}; next measurement at ${iso(requeueAtMs)}` : head;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
