// The prometheus provider: an instant PromQL query against the user's address
// (GET <address>/api/v1/query), the answer judged by successCondition and
// failureCondition. The HTTP side, judging and masking are web.ts's.
//
// `result`, as in Argo Rollouts: a scalar is a number; a vector is a list of its
// samples' values, one per series, labels dropped; an empty vector is an empty
// list, judged like any other value, so `result[0] < 0.05` over it is an Error
// ("the provider returned no data") and `size(result) == 0` can accept it.
// Prometheus writes NaN and ±Inf as strings; they come through as numbers.

import type { Check } from '../app/analysis-schema.ts';
import type { MeasurementResult } from './measurement.ts';
import { errorResult, errorText, headersOf, type JudgedOptions, type Measured, send, verdict } from './web.ts';

export async function measurePrometheus(
  { check, redact }: Measured,
  options: JudgedOptions,
): Promise<MeasurementResult> {
  try {
    const prometheus = check.provider.prometheus;
    if (!prometheus) return errorResult('the check has no prometheus provider', redact);
    const answer = await send(
      queryUrl(prometheus),
      { method: 'GET', headers: headersOf(prometheus.headers) },
      { ...options, timeoutSeconds: prometheus.timeout, timeoutField: 'timeout' },
    );
    if (!answer.ok) return errorResult(answer.error, redact);
    const result = queryResult(answer.status, answer.statusText, answer.text);
    if (!result.ok) return errorResult(result.error, redact);
    return await verdict(result.value, check, redact, options);
  } catch (error) {
    return errorResult(`the measurement failed: ${errorText(error)}`, redact);
  }
}

type PrometheusProvider = NonNullable<Check['provider']['prometheus']>;

/** The address may carry a path prefix (a Prometheus behind a proxy at /prometheus): the API goes under it. */
export function queryUrl({ address, query }: Pick<PrometheusProvider, 'address' | 'query'>): string {
  const url = new URL(address);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/api/v1/query`;
  url.searchParams.set('query', query);
  return url.toString();
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

interface ApiAnswer {
  status?: unknown;
  errorType?: unknown;
  error?: unknown;
  data?: { resultType?: unknown; result?: unknown };
}

/**
 * The conditions' `result` from the API's answer. Prometheus answers errors
 * (a bad query, a timeout) with a 4xx or 5xx and a JSON body naming them; any
 * other answer that is not a successful one is an Error naming the HTTP status.
 */
export function queryResult(status: number, statusText: string, text: string): Outcome {
  let body: ApiAnswer;
  try {
    body = JSON.parse(text) as ApiAnswer;
  } catch {
    const http = `${status}${statusText ? ` ${statusText}` : ''}`;
    return { ok: false, error: `the answer (${http}) is not JSON: is the address that of a Prometheus server?` };
  }
  if (body?.status === 'error') {
    return { ok: false, error: `Prometheus refused the query: ${String(body.errorType)}: ${String(body.error)}` };
  }
  if (status < 200 || status > 299 || body?.status !== 'success' || typeof body.data !== 'object') {
    return { ok: false, error: `Prometheus answered ${status} without a query result` };
  }
  return resultOf(body.data.resultType, body.data.result);
}

function resultOf(resultType: unknown, result: unknown): Outcome {
  switch (resultType) {
    case 'scalar':
      return sampleOf(result);
    case 'vector':
      return vectorOf(result);
    default:
      return {
        ok: false,
        error: `the query gives a ${String(resultType)}: a check needs an instant vector or a scalar`,
      };
  }
}

function vectorOf(result: unknown): Outcome {
  if (!Array.isArray(result)) return { ok: false, error: 'Prometheus answered a vector that is not a list' };
  const values: number[] = [];
  for (const series of result) {
    const sample = sampleOf(typeof series === 'object' && series !== null ? series.value : undefined);
    if (!sample.ok) return sample;
    values.push(sample.value);
  }
  return { ok: true, value: values };
}

/** A `[timestamp, "value"]` pair's value. */
function sampleOf(pair: unknown): { ok: true; value: number } | { ok: false; error: string } {
  const text = Array.isArray(pair) ? pair[1] : undefined;
  const value = typeof text === 'string' ? sampleValue(text) : undefined;
  if (value === undefined) return { ok: false, error: 'Prometheus answered a sample without a value' };
  return { ok: true, value };
}

/** Prometheus's number text: Go's float format, with NaN, +Inf and -Inf. */
export function sampleValue(text: string): number | undefined {
  const special = SPECIAL_VALUES.get(text);
  if (special !== undefined) return special;
  const value = text.trim() === '' ? Number.NaN : Number(text);
  return Number.isNaN(value) ? undefined : value;
}

// A Map, not an object literal: a sample text such as "constructor" must find nothing.
const SPECIAL_VALUES = new Map<string, number>([
  ['NaN', Number.NaN],
  ['+Inf', Number.POSITIVE_INFINITY],
  ['Inf', Number.POSITIVE_INFINITY],
  ['-Inf', Number.NEGATIVE_INFINITY],
]);
