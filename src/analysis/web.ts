// The web provider: one HTTP request to the user's URL, its JSON answer judged by
// successCondition and failureCondition. Also the HTTP plumbing prometheus.ts
// shares: a deadline, no redirects, a bounded answer, errors as text.
//
// A measurement never throws: whatever goes wrong is a MeasurementResult with
// phase Error and a bounded message, so the run's limits (consecutiveErrorLimit)
// decide what an Error means, not an exception in the controller.
//
// Secrets (headers from Secrets, via resolveCheck) reach the request only. What
// comes back is masked before anything is shown: the answer itself (a server may
// echo a header), and every error text (one may name the URL). Masking happens
// before any cut, so half a secret never survives a truncation.

import { type Check, MAX_MESSAGE_LENGTH, MAX_VALUE_LENGTH } from '../app/analysis-schema.ts';
import { MASK } from '../app/mask.ts';
import type { TrafficCheck } from '../app/traffic-schema.ts';
import { egressRefusalOf } from '../kube/egress.ts';
import type { Resolved } from './args.ts';
import { type Judgement, resultProblem, show } from './condition.ts';
import type { JudgeRequest } from './condition-pool.ts';
import { selectJsonPath } from './jsonpath.ts';
import { bounded, type MeasurementResult } from './measurement.ts';
import { type Expected, judgeSeen, readRevision } from './traffic.ts';

/** The most of an answer Teal reads: far above a health or metrics answer, and bounded memory per check. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

export interface MeasureOptions {
  /** Ends the request early: a cancelled run, a stopping operator. */
  signal?: AbortSignal;
  /** The global fetch unless given (tests). */
  fetch?: typeof fetch;
}

/** Judges a measured value by the conditions: the operator's ConditionPool, off its main thread. */
export type Judge = (request: JudgeRequest, signal?: AbortSignal) => Promise<Judgement>;

export interface JudgedOptions extends MeasureOptions {
  judge: Judge;
}

/** What a measurement needs from resolveCheck: the real values to send, and the mask for what comes back. */
export type Measured = Pick<Resolved, 'check' | 'redact'>;
type Redact = Resolved['redact'];

export async function measureWeb({ check, redact }: Measured, options: JudgedOptions): Promise<MeasurementResult> {
  try {
    const web = check.provider.web;
    if (!web) return errorResult('the check has no web provider', redact);
    const answer = await send(web.url, webRequest(web), {
      ...options,
      timeoutSeconds: web.timeoutSeconds,
      timeoutField: 'timeoutSeconds',
    });
    if (!answer.ok) return errorResult(answer.error, redact);
    if (answer.status < 200 || answer.status > 299) {
      return errorResult(`answered ${statusLine(answer)}: a web check needs a 2xx answer`, redact);
    }
    const result = webResult(answer.text, web.jsonPath);
    if (!result.ok) return errorResult(result.error, redact);
    return await verdict(result.value, check, redact, options);
  } catch (error) {
    return errorResult(`the measurement failed: ${errorText(error)}`, redact);
  }
}

/**
 * The traffic check's request (traffic.ts): the same request, deadline, egress
 * and masking as a web check's, judged by the revision the answer names
 * rather than by conditions.
 */
export async function measureRevision(
  { check, redact }: Measured,
  read: Pick<TrafficCheck, 'revisionHeader' | 'jsonPath'>,
  expected: Expected,
  options: MeasureOptions,
): Promise<MeasurementResult> {
  try {
    const web = check.provider.web;
    if (!web) return errorResult('the check has no web provider', redact);
    const request = webRequest(web);
    // Each request on a connection of its own, as a new client's: kube-proxy and L4 load balancers
    // balance connections, not requests, and a kept-alive one would ask the same pod for ever.
    const headers = new Headers(request.headers);
    headers.set('connection', 'close');
    const answer = await send(
      web.url,
      { ...request, headers },
      {
        ...options,
        timeoutSeconds: web.timeoutSeconds,
        timeoutField: 'timeoutSeconds',
      },
    );
    if (!answer.ok) return errorResult(answer.error, redact);
    if (answer.status < 200 || answer.status > 299) {
      return errorResult(`answered ${statusLine(answer)}: a traffic check needs a 2xx answer`, redact);
    }
    const result = judgeSeen(readRevision(answer, read), expected);
    return {
      ...result,
      ...(result.value !== undefined ? { value: bounded(redact(result.value), MAX_VALUE_LENGTH) } : {}),
      ...(result.message !== undefined ? { message: bounded(redact(result.message), MAX_MESSAGE_LENGTH) } : {}),
    };
  } catch (error) {
    return errorResult(`the request failed: ${errorText(error)}`, redact);
  }
}

type WebProvider = NonNullable<Check['provider']['web']>;

function webRequest(web: WebProvider): RequestInit {
  const headers = headersOf(web.headers);
  // The provider speaks JSON; a body with no declared type is most likely JSON too.
  if (web.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  return { method: web.method, headers, ...(web.body !== undefined ? { body: web.body } : {}) };
}

/** The check's headers, the last of a repeated key winning (as Argo Rollouts); JSON asked for unless set. */
export function headersOf(list: { key: string; value: string }[] | undefined): Headers {
  const headers = new Headers();
  for (const { key, value } of list ?? []) headers.set(key, value);
  if (!headers.has('accept')) headers.set('accept', 'application/json');
  return headers;
}

/**
 * The conditions' `result`: the JSON answer, or the part jsonPath selects. An
 * answer that is not JSON is `result` as a string, as the schema documents; with
 * a jsonPath it is an Error, as there is nothing to select from.
 */
export function webResult(
  text: string,
  jsonPath: string | undefined,
): { ok: true; value: unknown } | { ok: false; error: string } {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes a cut of the answer: a secret there could be cut in half.
    if (jsonPath === undefined) return { ok: true, value: text };
    return { ok: false, error: `the answer is not JSON, so jsonPath ${jsonPath} selects nothing` };
  }
  return jsonPath === undefined ? { ok: true, value: document } : selectJsonPath(document, jsonPath);
}

// ---- judging, shared with prometheus.ts ----

/**
 * Judges a measured value by the check's conditions. The conditions see the
 * value with secrets masked: they cannot name a secret (args.ts refuses one
 * there), and the message judge writes then quotes no secret.
 */
export async function verdict(
  result: unknown,
  check: Check,
  redact: Redact,
  { judge, signal }: Pick<JudgedOptions, 'judge' | 'signal'>,
): Promise<MeasurementResult> {
  // Bounded size and depth first, so masking walks a small value.
  const problem = resultProblem(result);
  if (problem) return errorResult(problem, redact);
  const masked = maskDeep(result, redact);
  const request = { result: masked, success: check.successCondition, failure: check.failureCondition };
  const { phase, message } = await judge(request, signal);
  return {
    phase,
    value: bounded(redact(show(masked)), MAX_VALUE_LENGTH),
    message: bounded(redact(message), MAX_MESSAGE_LENGTH),
  };
}

function maskDeep(value: unknown, redact: Redact): unknown {
  if (typeof value === 'string') return redact(value);
  // A secret of digits echoed as a JSON number.
  if (typeof value === 'number') return redact(String(value)) === String(value) ? value : MASK;
  if (Array.isArray(value)) return value.map((item) => maskDeep(item, redact));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), maskDeep(v, redact)]));
  }
  return value;
}

/** An Error measurement: the text masked, then cut. */
export function errorResult(text: string, redact: Redact): MeasurementResult {
  return { phase: 'Error', message: bounded(redact(text), MAX_MESSAGE_LENGTH) };
}

// ---- HTTP, shared with prometheus.ts ----

export type Answer =
  | { ok: true; status: number; statusText: string; headers: Headers; text: string }
  | { ok: false; error: string };

export interface SendOptions extends MeasureOptions {
  timeoutSeconds: number;
  /** How the check spells its timeout, for the message. */
  timeoutField: string;
}

/**
 * One request with a deadline and the caller's signal. Redirects are not
 * followed, and any 3xx is an Error: following one would send the check's
 * headers (tokens from Secrets) to a URL the server chose, possibly another host
 * or a Pod or metadata address, and Teal only asks the URL the user wrote.
 * Answers over MAX_ANSWER_BYTES are an Error, read no further.
 */
export async function send(url: string, init: RequestInit, options: SendOptions): Promise<Answer> {
  const timeout = AbortSignal.timeout(options.timeoutSeconds * 1000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const request = userinfoAsBasicAuth(url, init);
    const response = await (options.fetch ?? fetch)(request.url, { ...request.init, redirect: 'manual', signal });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      const location = response.headers.get('location');
      return {
        ok: false,
        error: `answered ${statusLine(response)}${location ? ` to ${location}` : ''}: Teal follows no redirects, so give the final URL`,
      };
    }
    const body = await readBounded(response);
    if (!body.ok) return body;
    return {
      ok: true,
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
      text: body.text,
    };
  } catch (error) {
    if (timeout.aborted) {
      return { ok: false, error: `no answer within ${options.timeoutSeconds}s (${options.timeoutField})` };
    }
    if (options.signal?.aborted) return { ok: false, error: 'the measurement was cancelled' };
    const refused = egressRefusalOf(error);
    if (refused) return { ok: false, error: refused.message };
    return { ok: false, error: `the request failed: ${errorText(error)}` };
  }
}

/**
 * A URL's user:password@ sent as Basic credentials, unless the check sets
 * Authorization itself: what Go's http.Client does for Argo Rollouts. fetch
 * refuses a URL with userinfo, and its error quotes the URL, password and all
 * (percent-encoded); the URL sent here never has any.
 */
export function userinfoAsBasicAuth(url: string, init: RequestInit): { url: string; init: RequestInit } {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return { url, init };
  const credentials = `${decoded(parsed.username)}:${decoded(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  const headers = new Headers(init.headers);
  if (!headers.has('authorization')) {
    headers.set('authorization', `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`);
  }
  return { url: parsed.toString(), init: { ...init, headers } };
}

/** Go's Userinfo.Password(): the percent-decoded text; one that does not decode is taken as written. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

async function readBounded(response: Response): Promise<{ ok: true; text: string } | { ok: false; error: string }> {
  const tooLarge = { ok: false as const, error: `the answer is larger than ${MAX_ANSWER_BYTES} bytes` };
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > MAX_ANSWER_BYTES) {
    await response.body?.cancel();
    return tooLarge;
  }
  if (!response.body) return { ok: true, text: '' };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      return tooLarge;
    }
    chunks.push(next.value);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

function statusLine(response: { status: number; statusText: string }): string {
  return `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
}

/** An error's message, with its cause's: fetch says only "fetch failed" and puts ECONNREFUSED in the cause. */
export function errorText(error: unknown): string {
  const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
  const cause = error instanceof Error ? error.cause : undefined;
  const first = message(error);
  if (cause === undefined) return first;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? `${String(cause.code)} ` : '';
  const detail = message(cause) || (cause instanceof AggregateError ? message(cause.errors[0]) : '');
  return `${first} (${code}${detail})`;
}
