// Pre- and post-promotion checks as planner steps (Argo Rollouts'
// prePromotionAnalysis and postPromotionAnalysis), pure like the rest of the
// planner: a run lives in App status (status.prePromotionAnalysis and
// status.postPromotionAnalysis), is advanced by analysis/run.ts's stepRun, and
// its measurements go out as MeasureRequests that the controller carries out
// only once the status that starts them has landed (write-ahead, run.ts rule 1).
//
// Where Argo Rollouts has been caught out, the rules here are:
// - the checks run whether promotion is auto or by hand (Argo #4503);
// - a run, once started, does not depend on the preview staying saturated: a
//   pod restart or a scale event neither passes, cancels nor hangs it (Argo
//   #2931); every measurement in flight has a deadline (run.ts rule 3);
// - auto promotion waits for both the checks and autoPromotionSeconds (Argo #3271).
import type { Builtins } from '../analysis/args.ts';
import { runIdOf } from '../analysis/job.ts';
import { cancelRun, inFlight, recordMeasurement, startRun, stepRun } from '../analysis/run.ts';
import type { AnalysisRunStatus, MeasurementStatus, RunPhase } from '../app/analysis-schema.ts';
import { sha } from '../app/hash.ts';
import { ANALYSIS_FIELD, type AnalysisKind, type AppAnalysisRun, type AppStatus } from '../app/schema.ts';
import type { MeasureRequest } from './cluster-actions.ts';
import { condition, type Desired, emit, type Gate, type Planner, type RunSpec } from './planner.ts';
import { ConditionReason as CR, EventReason as ER } from './reasons.ts';
import { serviceName } from './service.ts';

const WORDS: Record<AnalysisKind, string> = { pre: 'pre-promotion checks', post: 'post-promotion checks' };

const OPEN_NONE: Gate = { state: 'open', why: 'none' };

// ---- predicates ----

/** The promotion of this revision skips its checks: --skip-checks, or --full as Argo Rollouts' full promotion. */
export function isSkippingChecks(status: AppStatus, hash: string): boolean {
  const promotion = status.promotion;
  return promotion?.podTemplateHash === hash && (promotion.skipChecks === true || promotion.full === true);
}

/** Active, but not yet stable: its post-promotion checks stand between. */
export function isAwaitingPostChecks(status: AppStatus, hash: string): boolean {
  return (
    status.active?.podTemplateHash === hash && status.stable !== undefined && status.stable.podTemplateHash !== hash
  );
}

/** What the run measures: its checks and arguments as assembled, templates included. */
export const runSpecHash = (spec: RunSpec): string => sha(JSON.stringify(spec)).slice(0, 16);

/**
 * The run still measures what the spec asks for: any change of a check (a
 * condition, a limit, a template's metric) or of an argument starts a new
 * run, so no run mixes measurements judged two ways.
 */
function measuresSameChecks(spec: RunSpec, run: AppAnalysisRun): boolean {
  if (run.specHash !== undefined) return run.specHash === runSpecHash(spec);
  const want = spec.checks.map((c) => c.name).sort();
  const have = run.checks.map((c) => c.name).sort();
  return want.length === have.length && want.every((n, i) => n === have[i]);
}

// ---- the two gates ----

/**
 * The checks between a previewed revision and its promotion. They start once
 * the preview is fully available and, once started, run to their end.
 */
export function prePromotionGate(p: Planner, desired: Desired, previewReady: boolean, fastTrack: boolean): Gate {
  const spec = p.runs.pre;
  if (!spec || fastTrack) {
    cancelRunning(
      p,
      'pre',
      spec ? `revision ${desired.number} goes active without a preview` : 'no checks are configured',
    );
    return OPEN_NONE;
  }
  const passed = p.status.prePromotionAnalysis;
  // --full after the checks passed skips nothing that still stood.
  if (passed?.podTemplateHash === desired.hash && passed.phase === 'Successful')
    return { state: 'open', why: 'passed' };
  if (isSkippingChecks(p.status, desired.hash)) {
    cancelRunning(
      p,
      'pre',
      `revision ${desired.number} was promoted with its checks skipped by ${p.status.promotion?.by}`,
    );
    return { state: 'open', why: 'skipped' };
  }
  const current = currentRun(p, 'pre', spec, desired);
  if (!current) {
    if (!previewReady) return { state: 'waiting', message: `${WORDS.pre} start once the preview is available` };
    return gateOf(advance(p, 'pre', spec, begin(p, 'pre', spec, desired), desired));
  }
  return gateOf(advance(p, 'pre', spec, current, desired));
}

/**
 * The checks between an active revision and stable, started by the switch
 * (startPostChecks). Passed, the revision becomes stable; failed, the release
 * is aborted here and the next plan switches back (rollBack in bluegreen.ts):
 * the abort lands in status before the Service moves, so a restart in between
 * switches back once, never twice and never not at all.
 */
export function postPromotionGate(p: Planner, desired: Desired): Gate {
  if (!isAwaitingPostChecks(p.status, desired.hash)) return OPEN_NONE;
  const spec = p.runs.post;
  if (!spec) {
    cancelRunning(p, 'post', 'no checks are configured');
    makeStable(p, desired, 'postPromotionAnalysis was removed');
    return OPEN_NONE;
  }
  if (isSkippingChecks(p.status, desired.hash)) {
    cancelRunning(
      p,
      'post',
      `revision ${desired.number} was promoted with its checks skipped by ${p.status.promotion?.by}`,
    );
    makeStable(p, desired, `its ${WORDS.post} were skipped`);
    markSkipped(p.status, desired.hash);
    delete p.status.promotion;
    return { state: 'open', why: 'skipped' };
  }
  const run = advance(
    p,
    'post',
    spec,
    currentRun(p, 'post', spec, desired) ?? begin(p, 'post', spec, desired),
    desired,
  );
  const gate = gateOf(run);
  if (gate.state === 'open') makeStable(p, desired, `its ${WORDS.post} passed`);
  return gate;
}

/** Starts the post-promotion run in the plan that switches: the two land in status together. */
export function startPostChecks(p: Planner, desired: Desired, fastTrack: boolean): boolean {
  const spec = p.runs.post;
  if (!spec || fastTrack || isSkippingChecks(p.status, desired.hash) || !p.status.stable) return false;
  if (p.status.stable.podTemplateHash === desired.hash) return false;
  advance(p, 'post', spec, begin(p, 'post', spec, desired), desired);
  return true;
}

/** Ends whatever run is still measuring: an abort, or a revision no longer wanted. */
export function cancelRunning(p: Planner, kind: AnalysisKind, reason: string): void {
  const run = p.status[ANALYSIS_FIELD[kind]];
  if (run?.phase !== 'Running') return;
  const cancelled = {
    ...cancelRun(run, reason, p.nowMs),
    revision: run.revision,
    podTemplateHash: run.podTemplateHash,
  };
  p.status[ANALYSIS_FIELD[kind]] = cancelled;
  emit(p, { type: 'Normal', reason: ER.AnalysisRunCancelled, message: runWords(kind, cancelled) });
}

/** A run for another revision than the one releasing is no longer wanted. */
export function cancelStaleRuns(p: Planner, desired: Desired | undefined): void {
  for (const kind of ['pre', 'post'] as const) {
    const run = p.status[ANALYSIS_FIELD[kind]];
    if (run?.phase === 'Running' && run.podTemplateHash !== desired?.hash) {
      cancelRunning(
        p,
        kind,
        desired ? `revision ${desired.number} replaced revision ${run.revision}` : 'no revision is wanted',
      );
    }
  }
}

/**
 * Analysis Jobs go once nothing waits for them: a measurement in flight keeps
 * its Job (in the status this plan started from, too, until the new one has
 * landed), and a finished Job of the latest run of each kind stays for its
 * logs unless that run was cancelled. The rest (superseded or cancelled runs,
 * measurements that ran past their deadline) are deleted, with their pods.
 */
export function pruneAnalysisJobs(p: Planner): void {
  const before = new Set<string>();
  const now = new Set<string>();
  const latest = new Set<string>();
  for (const field of Object.values(ANALYSIS_FIELD)) {
    for (const m of inFlightOf(p.app.status?.[field])) before.add(m);
    for (const m of inFlightOf(p.status[field])) now.add(m);
    const run = p.status[field];
    if (run && run.phase !== 'Cancelled') latest.add(run.id);
  }
  for (const job of p.input.observed.analysisJobs ?? []) {
    if (job.deleting || now.has(job.key)) continue;
    if (job.result && latest.has(runIdOf(job.key))) continue;
    // Its measurement ends in this plan: the Job goes once that has landed, at the next reconcile, which is now.
    if (before.has(job.key)) {
      p.wakeAt.push(p.nowMs);
      continue;
    }
    const why = job.key === '' ? 'it names no measurement' : `measurement ${job.key} no longer waits for it`;
    p.actions.push({ kind: 'deleteAnalysisJob', name: job.name, why });
  }
}

const inFlightOf = (run: AnalysisRunStatus | undefined): string[] => (run ? inFlight(run).map((m) => m.key) : []);

// ---- runs ----

/** The run of this kind for this revision that still counts, or undefined when a new one is due. */
function currentRun(p: Planner, kind: AnalysisKind, spec: RunSpec, desired: Desired): AppAnalysisRun | undefined {
  const run = p.status[ANALYSIS_FIELD[kind]];
  // A run of another revision was cancelled already (cancelStaleRuns): it does not count here.
  if (!run || run.podTemplateHash !== desired.hash) return undefined;
  if (run.phase === 'Running' && !measuresSameChecks(spec, run)) {
    cancelRunning(p, kind, 'the checks changed');
    return undefined;
  }
  // A cancelled run proves nothing: once what cancelled it is over (an abort retried), the checks run again.
  return run.phase === 'Cancelled' ? undefined : run;
}

function begin(p: Planner, kind: AnalysisKind, spec: RunSpec, desired: Desired): AppAnalysisRun {
  // Unique per start: a Job of an earlier run is never taken for one of this run.
  const id = `${kind}-${desired.hash}-${p.nowMs.toString(36)}`;
  const run = {
    ...startRun(id, spec.checks, p.nowMs),
    revision: desired.number,
    podTemplateHash: desired.hash,
    specHash: runSpecHash(spec),
  };
  emit(p, {
    type: 'Normal',
    reason: ER.AnalysisRunStarted,
    message: `${WORDS[kind]} of revision ${desired.number} started: ${spec.checks.map((c) => c.name).join(', ')}`,
  });
  return run;
}

/** Records the results that came in, steps the run to now, and hands out the measurements due. */
function advance(p: Planner, kind: AnalysisKind, spec: RunSpec, run: AppAnalysisRun, desired: Desired): AppAnalysisRun {
  const before = run;
  let state: AnalysisRunStatus = run;
  for (const m of inFlight(run)) {
    const result = p.input.analysis?.results.get(m.key);
    if (result) state = recordMeasurement(state, m.check, { ...result, n: m.n }, p.nowMs).state;
  }
  const step = stepRun(spec.checks, state, p.nowMs);
  if (step.requeueAtMs !== undefined) p.wakeAt.push(step.requeueAtMs);
  const builtins = builtinsFor(p, desired);
  for (const action of step.actions) {
    const check = spec.checks.find((c) => c.name === action.check);
    if (!check) continue;
    const { type: _, check: __, ...measurement } = action;
    p.measure.push({ ...measurement, kind, check, args: spec.args, builtins });
  }
  // While it runs, its message says where it stands: the measurement under way, or when the next is due.
  const message = step.state.phase === 'Running' ? { message: step.verdict.message } : {};
  const next: AppAnalysisRun = {
    ...step.state,
    ...message,
    revision: run.revision,
    podTemplateHash: run.podTemplateHash,
    ...(run.specHash !== undefined ? { specHash: run.specHash } : {}),
  };
  p.status[ANALYSIS_FIELD[kind]] = next;
  reportMeasurements(p, kind, run.revision, before, next);
  if (before.phase === 'Running' && next.phase !== 'Running') reportEnd(p, kind, next);
  return next;
}

/** What an inconclusive result leaves to a person. */
export const inconclusiveMessage = (gate: Gate & { message: string }) =>
  `${gate.message}; retry runs the checks again, promote --skip-checks accepts the revision, abort returns to stable`;

function gateOf(run: AppAnalysisRun): Gate {
  const message = run.message ?? '';
  switch (run.phase) {
    case 'Successful':
      return { state: 'open', why: 'passed' };
    case 'Running':
    case 'Cancelled':
      return { state: 'waiting', message };
    case 'Inconclusive':
      return { state: 'inconclusive', message };
    case 'Failed':
    case 'Error':
      return { state: 'failed', message };
  }
}

function makeStable(p: Planner, desired: Desired, why: string): void {
  const { status } = p;
  if (!status.active) return;
  status.stable = { ...status.active };
  emit(p, { type: 'Normal', reason: ER.Stable, message: `revision ${desired.number} is stable: ${why}` });
}

/** History says the revision went on without its checks: the entry of its switch. */
function markSkipped(status: AppStatus, hash: string): void {
  const history = status.history ?? [];
  const at = history.findLastIndex((h) => h.podTemplateHash === hash);
  if (at >= 0) status.history = history.map((h, i) => (i === at ? { ...h, checksSkipped: true } : h));
}

function builtinsFor(p: Planner, desired: Desired): Builtins {
  const { app } = p;
  return {
    appName: app.metadata.name,
    appNamespace: app.metadata.namespace ?? '',
    previewService: serviceName(app, 'preview'),
    previewRevision: desired.number,
    previewImage: desired.image,
    ...(desired.commit ? { sourceCommit: desired.commit } : {}),
  };
}

// ---- what users see ----

const RUN_EVENT: Record<Exclude<RunPhase, 'Running'>, string> = {
  Successful: ER.AnalysisRunSuccessful,
  Failed: ER.AnalysisRunFailed,
  Inconclusive: ER.AnalysisRunInconclusive,
  Error: ER.AnalysisRunError,
  Cancelled: ER.AnalysisRunCancelled,
};

function runWords(kind: AnalysisKind, run: AppAnalysisRun): string {
  return `${WORDS[kind]} of revision ${run.revision} ${run.phase.toLowerCase()}: ${run.message ?? ''}`;
}

function reportEnd(p: Planner, kind: AnalysisKind, run: AppAnalysisRun): void {
  if (run.phase === 'Running') return;
  const fine = run.phase === 'Successful' || run.phase === 'Cancelled';
  emit(p, { type: fine ? 'Normal' : 'Warning', reason: RUN_EVENT[run.phase], message: runWords(kind, run) });
}

/** One Warning per measurement that ended Failed or Error in this plan. */
function reportMeasurements(
  p: Planner,
  kind: AnalysisKind,
  revision: number,
  before: AnalysisRunStatus,
  after: AnalysisRunStatus,
): void {
  for (const check of after.checks) {
    const earlier = before.checks.find((c) => c.name === check.name);
    for (const m of check.measurements) {
      const was = earlier?.measurements.find((e) => e.n === m.n);
      if ((m.phase === 'Failed' || m.phase === 'Error') && was?.phase !== m.phase) {
        emit(p, {
          type: 'Warning',
          reason: ER.MeasurementFailed,
          message: `${WORDS[kind]} of revision ${revision}, check "${check.name}" measurement ${m.n}: ${measurementWords(m)}`,
        });
      }
    }
  }
}

function measurementWords(m: MeasurementStatus): string {
  const value = m.value !== undefined ? `value ${m.value}` : undefined;
  return [m.phase.toLowerCase(), value, m.message].filter(Boolean).join(', ');
}

const RUN_REASON: Record<RunPhase, { status: 'True' | 'False'; reason: string }> = {
  Running: { status: 'False', reason: CR.AnalysisRunning },
  Successful: { status: 'True', reason: CR.AnalysisSuccessful },
  Failed: { status: 'False', reason: CR.AnalysisFailed },
  Error: { status: 'False', reason: CR.AnalysisError },
  Inconclusive: { status: 'False', reason: CR.AnalysisInconclusive },
  Cancelled: { status: 'False', reason: CR.AnalysisCancelled },
};

/**
 * AnalysisPassed, for `kubectl wait`: the checks where the release stands, or,
 * with none standing, how the desired revision's latest checks ended.
 */
export function reportAnalysis(
  p: Planner,
  desired: Desired | undefined,
  checks: { kind: AnalysisKind; gate: Gate } | undefined,
): void {
  const gate = checks?.gate;
  if (gate?.state === 'waiting') {
    condition(p, 'AnalysisPassed', 'False', CR.AnalysisRunning, gate.message);
    return;
  }
  if (gate?.state === 'open' && gate.why === 'skipped') {
    condition(
      p,
      'AnalysisPassed',
      'True',
      CR.AnalysisSkipped,
      `the checks of revision ${desired?.number} were skipped`,
    );
    return;
  }
  const run = [p.status.postPromotionAnalysis, p.status.prePromotionAnalysis].find(
    (r) => r !== undefined && r.podTemplateHash === desired?.hash,
  );
  // Promoted with the checks skipped: the run the skip cancelled, or the Inconclusive one a
  // person then skipped, is not the last word; only a run that passed outranks the skip.
  const skipped =
    desired !== undefined &&
    (isSkippingChecks(p.status, desired.hash) ||
      (p.status.history ?? []).findLast((h) => h.podTemplateHash === desired.hash)?.checksSkipped === true);
  if (run && !(skipped && run.phase !== 'Successful')) {
    const { status, reason } = RUN_REASON[run.phase];
    condition(p, 'AnalysisPassed', status, reason, `${run.id}: ${run.message ?? run.phase}`);
    return;
  }
  if (skipped)
    condition(
      p,
      'AnalysisPassed',
      'True',
      CR.AnalysisSkipped,
      `the checks of revision ${desired?.number} were skipped`,
    );
  else condition(p, 'AnalysisPassed', 'True', CR.NoAnalysis, 'no checks stand before this revision');
}

export type { MeasureRequest };
