// The traffic check (issue #26 item 2.4) as a pure state machine over durable
// state (App status.trafficCheck): after a switch, one GET of the URL users
// reach at a time, until consecutiveSuccessLimit answers in a row name the new
// revision, within the switch's verification bound.
//
// The requests are taken as analysis/run.ts takes a web check's measurements:
// write-ahead (the state names request n in flight before the controller sends
// it), by a stable key, with a deadline for each request in flight, and the
// requeue time is always the exact next deadline. A restart (kill -9, a new
// leader) sends the request in flight again; the answers already counted stay
// counted, as status has them. An answer kept only in the old process's memory
// is lost with it and asked for again: never counted twice.
//
// What counts: an answer that names the new revision (its pod-template hash,
// what TEAL_REVISION holds, or its revision number) adds one; an answer that
// names anything else (the old revision) and a request that fails (an error, a
// non-2xx answer, a timeout) start the count again from 0.
import { type Check, MAX_MESSAGE_LENGTH, MAX_VALUE_LENGTH } from '../app/analysis-schema.ts';
import { parseDuration } from '../app/duration.ts';
import type { TrafficCheck, TrafficCheckStatus } from '../app/traffic-schema.ts';
import { selectJsonPath } from './jsonpath.ts';
import { bounded, type MeasurementResult } from './measurement.ts';
import { RESULT_GRACE_MS } from './run.ts';

/** The revision the check waits to see: either of its names counts. */
export interface Expected {
  podTemplateHash: string;
  revision: number;
}

/** A request to send (or, after a restart, to send again). */
export interface TrafficRequest {
  /** `traffic-<hash>-<start>/<n>`: the same request after a restart has the same key. */
  key: string;
  n: number;
  startedAt: string;
  deadlineAtMs: number;
  resume: boolean;
}

export interface TrafficStep {
  state: TrafficCheckStatus;
  request?: TrafficRequest;
  /** The next exact deadline: a request due, one in flight timing out, or the bound. */
  wakeAtMs?: number;
}

// ---- reading an answer ----

export type Seen = { ok: true; revision: string } | { ok: false; error: string };

/**
 * The revision an answer names: the revisionHeader's value, the value at
 * jsonPath, or with neither, the whole body; with both, they must agree.
 */
export function readRevision(
  answer: { headers: Pick<Headers, 'get'>; text: string },
  spec: Pick<TrafficCheck, 'revisionHeader' | 'jsonPath'>,
): Seen {
  const named: string[] = [];
  if (spec.revisionHeader !== undefined) {
    const value = answer.headers.get(spec.revisionHeader);
    if (value === null || value.trim() === '') {
      return { ok: false, error: `the answer has no ${spec.revisionHeader} header` };
    }
    named.push(value.trim());
  }
  if (spec.jsonPath !== undefined || spec.revisionHeader === undefined) {
    const body = bodyRevision(answer.text, spec.jsonPath);
    if (!body.ok) return body;
    named.push(body.revision);
  }
  const [first = '', second] = named;
  if (second !== undefined && second !== first) {
    return { ok: true, revision: `${first} (header) / ${second} (body)` };
  }
  return { ok: true, revision: first };
}

function bodyRevision(text: string, jsonPath: string | undefined): Seen {
  if (jsonPath === undefined) {
    const trimmed = text.trim();
    if (trimmed === '') return { ok: false, error: 'the answer is empty: it names no revision' };
    if (/^[[{]/.test(trimmed)) {
      return {
        ok: false,
        error: 'the answer is JSON: set jsonPath (or revisionHeader) to say where it names the revision',
      };
    }
    return { ok: true, revision: trimmed };
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes a cut of the answer: a secret there could be cut in half.
    return { ok: false, error: `the answer is not JSON, so jsonPath ${jsonPath} selects nothing` };
  }
  const value = selectJsonPath(document, jsonPath);
  if (!value.ok) return value;
  if (typeof value.value === 'string' && value.value.trim() !== '') return { ok: true, revision: value.value.trim() };
  if (typeof value.value === 'number' && Number.isFinite(value.value))
    return { ok: true, revision: String(value.value) };
  return { ok: false, error: `the value at jsonPath ${jsonPath} is not a revision (a string or a number)` };
}

/** Whether a revision seen is the one expected: by its hash, or by its number. */
export function isExpected(seen: string, expected: Expected): boolean {
  return seen === expected.podTemplateHash || seen === String(expected.revision);
}

/** An answer as a measurement: Successful when it names the new revision, Failed when another, Error when none. */
export function judgeSeen(seen: Seen, expected: Expected): MeasurementResult {
  if (!seen.ok) return { phase: 'Error', message: bounded(seen.error, MAX_MESSAGE_LENGTH) };
  const value = bounded(seen.revision, MAX_VALUE_LENGTH);
  return isExpected(seen.revision, expected) ? { phase: 'Successful', value } : { phase: 'Failed', value };
}

/**
 * The check as a web check, so the controller takes it with the web checks'
 * machinery: arguments and Secrets bound, the URL checked once they are in,
 * the answer masked, the egress rules applied.
 */
export function trafficCheckAsCheck(spec: TrafficCheck): Check {
  return {
    name: 'traffic',
    failureLimit: 0,
    inconclusiveLimit: 0,
    consecutiveErrorLimit: 0,
    provider: {
      web: {
        method: 'GET',
        url: spec.url,
        ...(spec.headers ? { headers: spec.headers } : {}),
        timeoutSeconds: spec.timeoutSeconds,
        ...(spec.jsonPath !== undefined ? { jsonPath: spec.jsonPath } : {}),
      },
    },
  };
}

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

/**
 * Placeholders the check cannot fill, each naming its field: the check has
 * only its own args (no preview or template here), so an unknown one would
 * make every request an error, and the switch would fail for a typo.
 */
export function trafficCheckProblems(spec: TrafficCheck, field: string): string[] {
  const declared = new Set((spec.args ?? []).map((a) => a.name));
  const texts: [string, string][] = [
    ['url', spec.url],
    ...(spec.headers ?? []).map((h, i): [string, string] => [`headers[${i}].value`, h.value]),
  ];
  return texts.flatMap(([name, text]) =>
    [...text.matchAll(PLACEHOLDER)].flatMap(([whole, inner = '']) => {
      const arg = /^\s*args\.([A-Za-z_][A-Za-z0-9_-]*)\s*$/.exec(inner)?.[1];
      if (arg !== undefined && declared.has(arg)) return [];
      return [`${field}.${name}: ${whole} names no argument of ${field}.args`];
    }),
  );
}

/**
 * The URL's host, as messages name it: never its path or query (a token may
 * sit there), never its userinfo; a host that is a placeholder is not shown.
 */
export function hostOf(url: string): string {
  try {
    const host = new URL(url).host;
    if (host !== '' && !host.includes('{') && !host.includes('%7B')) return host;
  } catch {}
  return 'the trafficCheck url';
}

// ---- the state machine ----

export function startTraffic(expected: Expected, nowMs: number): TrafficCheckStatus {
  return {
    podTemplateHash: expected.podTemplateHash,
    revision: expected.revision,
    phase: 'Running',
    startedAt: iso(nowMs),
    taken: 0,
    consecutive: 0,
  };
}

export function trafficKey(state: Pick<TrafficCheckStatus, 'podTemplateHash' | 'startedAt'>, n: number): string {
  return `traffic-${state.podTemplateHash}-${Date.parse(state.startedAt).toString(36)}/${n}`;
}

/** The key of the request in flight, if any: what the controller keeps sending (or its answer). */
export function trafficInFlight(state: TrafficCheckStatus | undefined): string | undefined {
  if (state?.phase !== 'Running' || !state.inFlight) return undefined;
  return trafficKey(state, state.inFlight.n);
}

/**
 * Records the answer to request n. Accepted only while that very request is
 * in flight: a repeated or late answer changes nothing.
 */
export function recordTraffic(
  state: TrafficCheckStatus,
  n: number,
  result: MeasurementResult,
  nowMs: number,
): TrafficCheckStatus {
  if (state.phase !== 'Running' || state.inFlight?.n !== n) return state;
  const next = structuredClone(state);
  delete next.inFlight;
  next.lastAt = iso(nowMs);
  if (result.phase === 'Successful') {
    next.consecutive++;
    delete next.lastError;
  } else {
    next.consecutive = 0;
  }
  if (result.phase === 'Error') {
    next.lastError = bounded(result.message ?? 'the request failed', MAX_MESSAGE_LENGTH);
  } else {
    delete next.lastError;
    if (result.value !== undefined) next.lastSeen = bounded(result.value, MAX_VALUE_LENGTH);
  }
  return next;
}

/**
 * Advances the check to nowMs: passed once the count is reached, failed once
 * boundMs have passed since it started, else the next request (or the one in
 * flight, again) and when to wake. Pure, and a fixed point on its own output.
 */
export function stepTraffic(
  spec: TrafficCheck,
  state: TrafficCheckStatus,
  nowMs: number,
  boundMs: number,
  host: string,
): TrafficStep {
  if (state.phase !== 'Running') return { state };
  const next = expireLate(spec, state, nowMs);
  if (next.consecutive >= spec.consecutiveSuccessLimit) {
    return { state: finish(next, 'Successful', passedMessage(spec, next, host), nowMs) };
  }
  const boundAt = Date.parse(next.startedAt) + boundMs;
  if (nowMs >= boundAt) return { state: finish(next, 'Failed', failedMessage(spec, next, host, boundMs), nowMs) };
  if (next.inFlight) {
    const deadlineAtMs = deadlineOf(spec, next.inFlight.startedAt);
    const request = { key: trafficKey(next, next.inFlight.n), ...next.inFlight, deadlineAtMs, resume: true };
    return { state: running(spec, next, host), request, wakeAtMs: Math.min(deadlineAtMs, boundAt) };
  }
  const due = next.lastAt === undefined ? Date.parse(next.startedAt) : Date.parse(next.lastAt) + intervalMs(spec);
  if (nowMs < due) return { state: running(spec, next, host), wakeAtMs: Math.min(due, boundAt) };
  const n = next.taken + 1;
  next.taken = n;
  next.inFlight = { n, startedAt: iso(nowMs) };
  const deadlineAtMs = deadlineOf(spec, next.inFlight.startedAt);
  const request = { key: trafficKey(next, n), n, startedAt: next.inFlight.startedAt, deadlineAtMs, resume: false };
  return { state: running(spec, next, host), request, wakeAtMs: Math.min(deadlineAtMs, boundAt) };
}

/** A request whose answer never came (a lost executor) is an error past its deadline. */
function expireLate(spec: TrafficCheck, state: TrafficCheckStatus, nowMs: number): TrafficCheckStatus {
  if (!state.inFlight || nowMs < deadlineOf(spec, state.inFlight.startedAt)) return state;
  const seconds = (spec.timeoutSeconds * 1000 + RESULT_GRACE_MS) / 1000;
  return recordTraffic(state, state.inFlight.n, { phase: 'Error', message: `no answer within ${seconds}s` }, nowMs);
}

const deadlineOf = (spec: TrafficCheck, startedAt: string) =>
  Date.parse(startedAt) + spec.timeoutSeconds * 1000 + RESULT_GRACE_MS;

const intervalMs = (spec: TrafficCheck) => parseDuration(spec.interval);

function finish(
  state: TrafficCheckStatus,
  phase: TrafficCheckStatus['phase'],
  message: string,
  nowMs: number,
): TrafficCheckStatus {
  const next = { ...state, phase, message: bounded(message, 1024), finishedAt: iso(nowMs) };
  delete next.inFlight;
  return next;
}

function running(spec: TrafficCheck, state: TrafficCheckStatus, host: string): TrafficCheckStatus {
  const message = `${state.consecutive} of ${spec.consecutiveSuccessLimit} answers in a row from revision ${state.revision} at ${host}${lastWords(state)}`;
  return { ...state, message };
}

function passedMessage(spec: TrafficCheck, state: TrafficCheckStatus, host: string): string {
  return `revision ${state.revision} answered ${state.consecutive} times in a row at ${host} (consecutiveSuccessLimit ${spec.consecutiveSuccessLimit})`;
}

function failedMessage(spec: TrafficCheck, state: TrafficCheckStatus, host: string, boundMs: number): string {
  return `revision ${state.revision} did not answer ${spec.consecutiveSuccessLimit} times in a row at ${host} within ${boundMs / 1000}s: ${state.consecutive} in a row at the end, ${state.taken} requests${lastWords(state)}`;
}

/** What the latest request saw, in the words status and events use. */
function lastWords(state: TrafficCheckStatus): string {
  if (state.lastError !== undefined) return `; last request: ${state.lastError}`;
  if (state.lastSeen !== undefined) return `; last answer named ${state.lastSeen}`;
  return '';
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
