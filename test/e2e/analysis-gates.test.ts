// Checks before promotion, end to end: the operator runs as a child process
// against the real control plane, job checks are real Jobs whose pods KWOK
// passes or fails (test/cluster/stages.yaml), and a watcher checks invariant 1
// at every change of an active Service throughout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analysisJobName } from '../../src/analysis/job.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, intent, patchSpec, phase, type StoredApp, selectorHash, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { clients } from '../support/kube.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';

const { batch } = clients();
let ns: string;
let world: OperatorNamespace;
let invariant: Invariant;

beforeAll(async () => {
  world = await operatorNamespace('analysis-gates');
  ({ ns, invariant } = world);
});

afterAll(async () => {
  await world?.stop();
});

/** A job check whose pod passes, or fails when `outcome` is fail (a KWOK stage reads the label). */
function jobCheck(name: string, outcome: 'pass' | 'fail' = 'pass') {
  return {
    name,
    provider: {
      job: {
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: { 'kwok.teal.dev/analysis-outcome': outcome } },
            spec: { containers: [{ name: 'smoke', image: 'curlimages/curl:8', args: ['-f', 'http://preview/'] }] },
          },
        },
      },
    },
  };
}

function app(name: string, blueGreen: Record<string, unknown>): AppInput {
  return e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 2, ...blueGreen } });
}

async function released(body: AppInput): Promise<StoredApp> {
  await createApp(ns, body);
  return waitForApp(ns, body.metadata.name, 'first release Healthy', phase('Healthy'));
}

const newImage = (name: string, tag: string) => patchSpec(ns, name, { image: `registry.example.com/team/web:${tag}` });
const conditionOf = (a: StoredApp, type: string) => a.status?.conditions?.find((c) => c.type === type);

describe('pre-promotion checks', () => {
  it('a passing job check promotes automatically, and only once it has passed', async () => {
    const first = await released(
      app('auto', { autoPromotionEnabled: true, prePromotionAnalysis: { metrics: [jobCheck('smoke')] } }),
    );
    // The first release is fast-tracked: no checks ran.
    expect(first.status?.prePromotionAnalysis).toBeUndefined();
    expect(conditionOf(first, 'AnalysisPassed')).toMatchObject({ status: 'True', reason: 'NoAnalysis' });
    await newImage('auto', '2');
    const done = await waitForApp(
      ns,
      'auto',
      'revision 2 active',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 2,
    );
    const run = done.status?.prePromotionAnalysis;
    expect(run).toMatchObject({ revision: 2, phase: 'Successful' });
    expect(run?.checks[0]).toMatchObject({ name: 'smoke', provider: 'job', phase: 'Successful', successful: 1 });
    // The switch came after the check passed.
    const passedAt = Date.parse(run?.finishedAt ?? '');
    const promotedAt = Date.parse(done.status?.history?.at(-1)?.promotedAt ?? '');
    expect(promotedAt).toBeGreaterThanOrEqual(passedAt);
    expect(conditionOf(done, 'AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSuccessful' });
    // The Job of the measurement stays for its logs, with Teal's labels.
    const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: 'teal.dev/app=auto,teal.dev/analysis' });
    expect(jobs.items.map((j) => j.metadata?.annotations?.['teal.dev/analysis-key'])).toEqual([`${run?.id}/smoke/1`]);
    // kubectl teal logs finds that Job's pod (KWOK's pods have no logs to give: the CLI says so, naming it).
    const job = analysisJobName('auto', `${run?.id}/smoke/1`);
    const logs = await tealIn(ns, 'logs', 'auto', '--check', 'smoke');
    const found = logs.stdout.length > 0 || new RegExp(`analysis pod "${job}-[a-z0-9]+" has no logs`).test(logs.stderr);
    expect(found, logs.stderr).toBe(true);
    const unknown = await tealIn(ns, 'logs', 'auto', '--check', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/has no run with a check "nope" \(its checks: smoke\)/);
  });

  it('a failing job check aborts the release: Degraded, AnalysisFailed, active never moves', async () => {
    const first = await released(
      app('failing', { autoPromotionEnabled: true, prePromotionAnalysis: { metrics: [jobCheck('smoke', 'fail')] } }),
    );
    const activeBefore = await selectorHash(ns, 'failing');
    await newImage('failing', '2');
    const aborted = await waitForApp(ns, 'failing', 'aborted by its check', (a) => a.status?.abort !== undefined);
    expect(aborted.status?.abort).toMatchObject({ revision: 2, by: 'teal', via: 'analysis' });
    const settled = await waitForApp(ns, 'failing', 'Degraded', phase('Degraded'));
    expect(settled.status?.message).toMatch(/check "smoke" failed/);
    expect(conditionOf(settled, 'Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(conditionOf(settled, 'Aborted')).toMatchObject({ status: 'True', reason: 'AnalysisFailed' });
    expect(conditionOf(settled, 'AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(settled.status?.active?.revision).toBe(first.status?.active?.revision);
    expect(await selectorHash(ns, 'failing')).toBe(activeBefore);
  });

  it('with manual promotion, the App waits Paused once the checks passed, and promote carries it', async () => {
    await released(app('manual', { prePromotionAnalysis: { metrics: [jobCheck('smoke')] } }));
    await newImage('manual', '2');
    const paused = await waitForApp(
      ns,
      'manual',
      'checks passed, waiting for promotion',
      (a) => a.status?.prePromotionAnalysis?.phase === 'Successful' && phase('Paused')(a),
    );
    expect(paused.status?.active?.revision).toBe(1);
    await intent(ns, 'manual', 'promote');
    await waitForApp(ns, 'manual', 'revision 2 active', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
  });
});

afterAll(() => {
  expect(invariant.violations).toEqual([]);
});
