// The tests' side of a real Prometheus (test/cluster/prometheus.ts): instant
// queries through its HTTP API, and waiting until a scrape has brought a value.
// Free of vitest.
import { waitFor } from './wait.ts';

export interface Sample {
  /** The series' labels, __name__ among them when the query keeps it. */
  metric: Record<string, string>;
  value: number;
  /** Seconds since the epoch, as Prometheus reports it. */
  timestamp: number;
}

type Point = [number, string];
interface QueryResponse {
  status: 'success' | 'error';
  error?: string;
  errorType?: string;
  data?: { resultType: 'vector' | 'scalar' | 'matrix' | 'string'; result: unknown };
}

/**
 * An instant query (GET /api/v1/query) at the server's now. A vector comes back as
 * its samples, a scalar as one sample without labels; a query error throws.
 */
export async function query(prometheusUrl: string, promql: string, time?: Date): Promise<Sample[]> {
  const params = new URLSearchParams({ query: promql });
  if (time) params.set('time', String(time.getTime() / 1000));
  const res = await fetch(`${prometheusUrl}/api/v1/query?${params}`);
  const body = (await res.json()) as QueryResponse;
  if (body.status !== 'success' || !body.data) {
    throw new Error(`query ${promql}: ${res.status} ${body.errorType ?? ''} ${body.error ?? ''}`.trim());
  }
  return samples(promql, body.data);
}

function samples(promql: string, data: NonNullable<QueryResponse['data']>): Sample[] {
  const point = ([timestamp, value]: Point, metric: Record<string, string>): Sample => ({
    metric,
    value: Number(value),
    timestamp,
  });
  switch (data.resultType) {
    case 'vector':
      return (data.result as { metric: Record<string, string>; value: Point }[]).map((s) => point(s.value, s.metric));
    case 'scalar':
      return [point(data.result as Point, {})];
    default:
      throw new Error(`query ${promql}: a ${data.resultType} result, not an instant vector or a scalar`);
  }
}

/**
 * Waits until Prometheus has scraped what the test expects: with a number, until
 * the query returns at least one sample and every sample has that value (NaN
 * matches NaN); with a function, until it holds for the samples. Returns them.
 * Polls the API (no fixed sleep); a busy machine only makes it take longer.
 */
export async function waitForScrape(
  prometheusUrl: string,
  promql: string,
  expected: number | ((samples: Sample[]) => boolean),
  { timeoutMs }: { timeoutMs?: number } = {},
): Promise<Sample[]> {
  const holds =
    typeof expected === 'number'
      ? (got: Sample[]) => got.length > 0 && got.every((s) => Object.is(s.value, expected) || s.value === expected)
      : expected;
  const want = typeof expected === 'number' ? String(expected) : 'as expected';
  return waitFor(
    `${promql} to be ${want}`,
    async () => {
      const got = await query(prometheusUrl, promql);
      // Thrown, so that a timeout reports what Prometheus had last.
      if (!holds(got)) throw new Error(`it returned ${JSON.stringify(got)}`);
      return got;
    },
    { intervalMs: 250, ...(timeoutMs ? { timeoutMs } : {}) },
  );
}
