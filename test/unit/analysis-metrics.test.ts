// teal_analysis_* (src/controller/reconcile-metrics.ts): counted from the
// status before and after a write, so each run and each measurement counts
// once, when first written ended, however often a status is written again.
import { describe, expect, it } from 'vitest';
import type { MeasurementStatus } from '../../src/app/analysis-schema.ts';
import type { AppAnalysisRun, AppStatus } from '../../src/app/schema.ts';
import { Metrics } from '../../src/controller/metrics.ts';
import { countTransitions } from '../../src/controller/reconcile-metrics.ts';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

/** Measurement n of a check: started at 10n s, ended `took` seconds later unless Running. */
const measurement = (n: number, phase: MeasurementStatus['phase'], took = 2): MeasurementStatus => ({
  n,
  phase,
  startedAt: at(10 * n),
  ...(phase === 'Running' ? {} : { finishedAt: at(10 * n + took) }),
});

function run(id: string, phase: AppAnalysisRun['phase'], web: MeasurementStatus[], job: MeasurementStatus[] = []) {
  const check = (name: string, provider: 'web' | 'job', measurements: MeasurementStatus[]) => ({
    name,
    provider,
    phase: 'Running' as const,
    taken: measurements.length,
    count: 0,
    successful: 0,
    failed: 0,
    inconclusive: 0,
    error: 0,
    consecutiveError: 0,
    measurements,
  });
  return {
    id,
    revision: 2,
    podTemplateHash: 'hash2',
    phase,
    startedAt: at(0),
    checks: [check('healthz', 'web', web), check('smoke', 'job', job)],
  } satisfies AppAnalysisRun;
}

/** The counters as plain numbers, by their labels. */
async function counts(metrics: Metrics) {
  const values = async (name: string) =>
    Object.fromEntries(
      ((await metrics.registry.getSingleMetric(name)?.get())?.values ?? []).map((v) => [
        Object.values(v.labels).join('/'),
        v.value,
      ]),
    );
  return {
    runs: await values('teal_analysis_runs_total'),
    measurements: await values('teal_analysis_measurements_total'),
  };
}

/** The histogram's count and sum for a provider. */
async function durations(metrics: Metrics, provider: string) {
  const name = 'teal_analysis_measurement_duration_seconds';
  const values = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
  const of = (suffix: string) =>
    values.find((v) => 'metricName' in v && v.metricName === `${name}_${suffix}` && v.labels.provider === provider)
      ?.value ?? 0;
  return { count: of('count'), sum: of('sum') };
}

describe('teal_analysis_* from the status diff', () => {
  it('counts each measurement once, when first written ended, by provider and phase', async () => {
    const metrics = new Metrics();
    const s1: AppStatus = { prePromotionAnalysis: run('r1', 'Running', [measurement(1, 'Running')]) };
    countTransitions(metrics, undefined, s1);
    expect(await counts(metrics)).toEqual({ runs: {}, measurements: {} });

    const s2: AppStatus = {
      prePromotionAnalysis: run(
        'r1',
        'Running',
        [measurement(1, 'Successful', 3), measurement(2, 'Running')],
        [measurement(1, 'Failed', 90)],
      ),
    };
    countTransitions(metrics, s1, s2);
    // The same write again (a replay, or a status that only changed elsewhere): nothing new.
    countTransitions(metrics, s2, s2);
    countTransitions(metrics, s2, { ...s2, phase: 'Paused' });
    expect(await counts(metrics)).toEqual({
      runs: {},
      measurements: { 'web/Successful': 1, 'job/Failed': 1 },
    });
    expect(await durations(metrics, 'web')).toEqual({ count: 1, sum: 3 });
    expect(await durations(metrics, 'job')).toEqual({ count: 1, sum: 90 });

    const s3: AppStatus = {
      prePromotionAnalysis: run(
        'r1',
        'Failed',
        [measurement(1, 'Successful', 3), measurement(2, 'Error', 10)],
        [measurement(1, 'Failed', 90)],
      ),
    };
    countTransitions(metrics, s2, s3);
    countTransitions(metrics, s3, s3);
    expect(await counts(metrics)).toEqual({
      runs: { 'pre/Failed': 1 },
      measurements: { 'web/Successful': 1, 'web/Error': 1, 'job/Failed': 1 },
    });
  });

  it('counts a run under its kind once it ends, and one replaced before it ended as Cancelled', async () => {
    const metrics = new Metrics();
    const running: AppStatus = { postPromotionAnalysis: run('p1', 'Running', [measurement(1, 'Successful')]) };
    countTransitions(metrics, undefined, running);
    // A new revision: another run, under another id, whose first measurement is not the old one's.
    const next: AppStatus = { postPromotionAnalysis: run('p2', 'Running', [measurement(1, 'Successful')]) };
    countTransitions(metrics, running, next);
    const passed: AppStatus = { postPromotionAnalysis: run('p2', 'Successful', [measurement(1, 'Successful')]) };
    countTransitions(metrics, next, passed);
    countTransitions(metrics, passed, passed);
    const cancelled: AppStatus = { prePromotionAnalysis: run('r3', 'Cancelled', []) };
    countTransitions(
      metrics,
      { ...passed, prePromotionAnalysis: run('r3', 'Running', []) },
      { ...passed, ...cancelled },
    );
    expect((await counts(metrics)).runs).toEqual({ 'post/Cancelled': 1, 'post/Successful': 1, 'pre/Cancelled': 1 });
    expect((await counts(metrics)).measurements).toEqual({ 'web/Successful': 2 });
  });

  it('labels nothing with an object name', async () => {
    const metrics = new Metrics();
    countTransitions(metrics, undefined, {
      prePromotionAnalysis: run('web-2-pre', 'Successful', [measurement(1, 'Successful')]),
    });
    const text = await metrics.registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('teal_analysis_'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toMatch(/web-2-pre|healthz|smoke|hash2/);
  });
});
