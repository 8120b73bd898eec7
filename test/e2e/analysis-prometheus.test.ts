// The prometheus provider (src/analysis/prometheus.ts) against a real Prometheus
// (Debian's, on 127.0.0.1) scraping an exporter the test controls: `result` is a
// list of sample values for a vector and a number for a scalar, as in Argo
// Rollouts; an empty vector is judged like Argo (an Error when the condition
// needs a sample); a query Prometheus refuses is an Error naming its errorType.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCheck } from '../../src/analysis/args.ts';
import { ConditionPool } from '../../src/analysis/condition-pool.ts';
import { measurePrometheus } from '../../src/analysis/prometheus.ts';
import { type CheckInput, CheckSchema } from '../../src/app/analysis-schema.ts';
import { type Prometheus, startPrometheus } from '../cluster/prometheus.ts';
import { type Exporter, startExporter } from '../support/exporter.ts';
import { waitForScrape } from '../support/prometheus.ts';

let exporter: Exporter;
let prom: Prometheus;
const pool = new ConditionPool();

beforeAll(async () => {
  exporter = await startExporter();
  exporter.set('teal_test_error_ratio', { app: 'good' }, 0.01);
  exporter.set('teal_test_error_ratio', { app: 'bad' }, 0.2);
  prom = await startPrometheus({ targets: [exporter.target], log: (line) => console.error(line) });
  await waitForScrape(prom.url, 'teal_test_error_ratio', (samples) => samples.length === 2);
});

afterAll(async () => {
  await pool.stop();
  await prom?.stop();
  await exporter?.close();
});

type Conditions = Pick<CheckInput, 'successCondition' | 'failureCondition'>;

function measure(query: string, conditions: Conditions, address = prom.url) {
  const check = CheckSchema.parse({ name: 'errors', ...conditions, provider: { prometheus: { address, query } } });
  const resolved = resolveCheck(check, [], { appName: 'a', appNamespace: 'n' });
  if (!resolved.ok) throw new Error(resolved.errors.join('; '));
  return measurePrometheus(resolved, { judge: (request) => pool.judge('n/a', request) });
}

const lowErrors = { successCondition: 'result[0] < 0.05' };

describe('measurePrometheus against a real Prometheus', () => {
  it('a vector whose value meets successCondition is Successful, shown as a list', async () => {
    const m = await measure('teal_test_error_ratio{app="good"}', lowErrors);
    expect(m).toEqual({
      phase: 'Successful',
      value: '[0.01]',
      message: 'successCondition "result[0] < 0.05" is true for result [0.01]',
    });
  });

  it('one that does not is Failed, naming the condition and the value', async () => {
    const m = await measure('teal_test_error_ratio{app="bad"}', lowErrors);
    expect(m).toMatchObject({ phase: 'Failed', value: '[0.2]' });
    expect(m.message).toBe('successCondition "result[0] < 0.05" is false for result [0.2]');
  });

  it('a vector of several series is a list of their values', async () => {
    const m = await measure('sort(teal_test_error_ratio)', { successCondition: 'result.all(r, r < 0.05)' });
    expect(m).toMatchObject({ phase: 'Failed', value: '[0.01,0.2]' });
  });

  it('an empty vector is an empty list: an Error for a condition that needs a sample, as in Argo', async () => {
    const empty = 'teal_test_error_ratio{app="none"}';
    const m = await measure(empty, lowErrors);
    expect(m.phase).toBe('Error');
    expect(m.value).toBe('[]');
    expect(m.message).toMatch(/the result is empty, the provider returned no data/);
    expect(await measure(empty, { successCondition: 'size(result) == 0' })).toMatchObject({ phase: 'Successful' });
  });

  it('a scalar is a number', async () => {
    const m = await measure('scalar(teal_test_error_ratio{app="good"})', { successCondition: 'result < 0.05' });
    expect(m).toMatchObject({ phase: 'Successful', value: '0.01' });
  });

  it('NaN and +Inf come through as numbers', async () => {
    expect(await measure('0/0', { successCondition: 'isNaN(result)' })).toMatchObject({
      phase: 'Successful',
      value: 'NaN',
    });
    expect(await measure('vector(1/0)', { failureCondition: 'isInf(result[0])' })).toMatchObject({
      phase: 'Failed',
      value: '[Infinity]',
    });
  });

  it('a query Prometheus refuses is an Error naming its errorType', async () => {
    const m = await measure('sum(', lowErrors);
    expect(m.phase).toBe('Error');
    expect(m.value).toBeUndefined();
    expect(m.message).toMatch(/^Prometheus refused the query: bad_data: /);
  });

  it('a range query is an Error: a check needs an instant vector or a scalar', async () => {
    const m = await measure('teal_test_error_ratio[5m]', lowErrors);
    expect(m).toEqual({
      phase: 'Error',
      message: 'the query gives a matrix: a check needs an instant vector or a scalar',
    });
  });

  it('an address with a trailing slash reaches the same API', async () => {
    const m = await measure('teal_test_error_ratio{app="good"}', lowErrors, `${prom.url}/`);
    expect(m.phase).toBe('Successful');
  });
});
