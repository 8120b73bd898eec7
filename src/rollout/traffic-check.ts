// The switch's traffic check as a planner step (issue #26 item 2.4): once a
// revision is active, its check (analysis/traffic.ts) asks the URL users reach
// until it has answered consecutiveSuccessLimit times in a row, within the
// switch's verification bound. The switch counts as verified only once it
// passed; failed, the App says so (the TrafficChecked condition and a Warning
// naming the URL's host and what answered) and the old revision stays up, as
// for any switch that could not be verified.
//
// Its requests go out as MeasureRequests, taken by the controller's analysis
// runner once the status naming them in flight has landed, as the checks' are.
import { type ArgSource, mergeArgs } from '../analysis/args.ts';
import {
  type Expected,
  hostOf,
  recordTraffic,
  startTraffic,
  stepTraffic,
  type TrafficRequest,
  trafficCheckAsCheck,
  trafficKey,
} from '../analysis/traffic.ts';
import type { TrafficCheck, TrafficCheckStatus } from '../app/traffic-schema.ts';
import type { MeasureRequest } from './cluster-actions.ts';
import { condition, emit, type Planner } from './planner.ts';
import { ConditionReason as CR, EventReason as ER } from './reasons.ts';

/** Where the traffic check leaves a switch. */
export type TrafficGate =
  | { state: 'none' | 'passed' }
  | { state: 'waiting'; message: string }
  | { state: 'failed'; message: string };

export const trafficCheckOf = (p: Pick<Planner, 'app'>): TrafficCheck | undefined =>
  p.app.spec.strategy.blueGreen.switch?.trafficCheck;

/**
 * The traffic check of `active`, the revision switched to: started at its
 * first call for that revision, advanced to now, and its verdict. boundMs is
 * the switch's verification bound, counted from the check's start.
 */
export function trafficGate(p: Planner, active: Expected, boundMs: number): TrafficGate {
  const spec = trafficCheckOf(p);
  if (!spec) {
    forgetTrafficCheck(p);
    return { state: 'none' };
  }
  const host = hostOf(spec.url);
  const before = p.status.trafficCheck;
  const state = before?.podTemplateHash === active.podTemplateHash ? recordAnswer(p, before) : begin(p, active, host);
  const step = stepTraffic(spec, state, p.nowMs, boundMs, host);
  p.status.trafficCheck = step.state;
  if (step.wakeAtMs !== undefined) p.wakeAt.push(step.wakeAtMs);
  if (step.request) {
    const { key, n, startedAt, deadlineAtMs, resume } = step.request;
    p.measure.push({
      kind: 'traffic',
      key,
      n,
      startedAt,
      deadlineAtMs,
      resume,
      ...request(p, spec, active),
    });
  }
  return report(p, before, step.state);
}

/** No traffic check configured: none in status either, so nothing stays in flight. */
export function forgetTrafficCheck(p: Planner): void {
  delete p.status.trafficCheck;
  p.status.conditions = p.status.conditions?.filter((c) => c.type !== 'TrafficChecked');
}

/** The answer to the request in flight, if it came in. */
function recordAnswer(p: Planner, state: TrafficCheckStatus): TrafficCheckStatus {
  const n = state.phase === 'Running' ? state.inFlight?.n : undefined;
  if (n === undefined) return state;
  const result = p.input.analysis?.results.get(trafficKey(state, n));
  return result ? recordTraffic(state, n, result, p.nowMs) : state;
}

function begin(p: Planner, active: Expected, host: string): TrafficCheckStatus {
  emit(p, {
    type: 'Normal',
    reason: ER.TrafficCheckStarted,
    message: `traffic check of revision ${active.revision} started at ${host}`,
  });
  return startTraffic(active, p.nowMs);
}

function request(
  p: Planner,
  spec: TrafficCheck,
  active: Expected,
): Omit<MeasureRequest, keyof TrafficRequest | 'kind'> {
  // The schema's args are an App's: each has a value or a Secret, so merging alone cannot fail.
  const merged = mergeArgs([], spec.args);
  const args: ArgSource[] = merged.ok ? merged.args : [];
  const { app } = p;
  return {
    check: trafficCheckAsCheck(spec),
    args,
    builtins: { appName: app.metadata.name, appNamespace: app.metadata.namespace ?? '' },
    revision: { read: pick(spec), expected: active },
  };
}

const pick = ({ revisionHeader, jsonPath }: TrafficCheck) => ({
  ...(revisionHeader !== undefined ? { revisionHeader } : {}),
  ...(jsonPath !== undefined ? { jsonPath } : {}),
});

function report(p: Planner, before: TrafficCheckStatus | undefined, after: TrafficCheckStatus): TrafficGate {
  const message = after.message ?? '';
  const changed = before?.podTemplateHash !== after.podTemplateHash || before.phase !== after.phase;
  if (after.phase === 'Successful') {
    if (changed) emit(p, { type: 'Normal', reason: ER.TrafficCheckPassed, message });
    condition(p, 'TrafficChecked', 'True', CR.TrafficCheckPassed, message);
    return { state: 'passed' };
  }
  if (after.phase === 'Failed') {
    if (changed) emit(p, { type: 'Warning', reason: ER.TrafficCheckFailed, message });
    condition(p, 'TrafficChecked', 'False', CR.TrafficCheckFailed, message);
    return { state: 'failed', message: `traffic check: ${message}` };
  }
  condition(p, 'TrafficChecked', 'False', CR.TrafficCheckRunning, message);
  return { state: 'waiting', message: `traffic check: ${message}` };
}
