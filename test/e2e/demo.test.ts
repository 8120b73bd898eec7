// What `make dev` sets up: examples/weather-app as a local repository whose
// post-receive hook signs a generic webhook, and its App. A push in the clone
// builds a new revision into preview, where its pre-promotion check (a Job,
// which KWOK completes) runs and passes; promote and undo work as the README says.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AppInput } from '../../src/app/schema.ts';
import { type Demo, prepareDemo } from '../cluster/demo.ts';
import { createApp, intent, phase, waitForApp } from '../support/apps.ts';
import { clients, createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const git = promisify(execFile);
const { batch } = clients();
let ns: string;
let removeNs: () => Promise<void>;
let workdir: string;
let operator: Operator;
let demo: Demo;

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('demo'));
  workdir = await mkdtemp(join(tmpdir(), 'teal-demo-'));
  const secretFile = join(workdir, 'webhook-secret');
  await writeFile(secretFile, 'a demo webhook secret', { mode: 0o600 });
  operator = await startOperator({
    namespace: ns,
    // Polling every 10 s (app.yaml) must not be what finds the push: the webhook must.
    extraArgs: ['--allow-file-git', `--webhook-secret-file=${secretFile}`],
  });
  demo = await prepareDemo(workdir, `http://127.0.0.1:${operator.healthPort}/webhooks/generic`);
});

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

it('releases the example, then a pushed change through the hook and its check, promote and undo', async () => {
  expect(demo.reused).toBe(false);
  await createApp(ns, parse(demo.manifest) as AppInput);
  const first = await waitForApp(ns, 'weather', 'first release', phase('Healthy'));
  expect(first.status?.active?.revision).toBe(1);

  const data = join(demo.clone, 'sample_data.json');
  await writeFile(data, (await readFile(data, 'utf8')).replace('clear sky', 'light rain'));
  await git('git', ['commit', '-qam', 'Seoul: light rain'], { cwd: demo.clone });
  const pushed = await git('git', ['push'], { cwd: demo.clone });
  // git relays the hook's output as "remote:" lines.
  expect(pushed.stderr).toContain(`webhook 202 {"matched":["${ns}/weather"]}`);
  const head = (await git('git', ['rev-parse', 'HEAD'], { cwd: demo.clone })).stdout.trim();

  // Paused from the moment the preview is available: promotion waits for the check as well.
  const paused = await waitForApp(
    ns,
    'weather',
    'the push in preview, its check passed',
    (a) => phase('Paused')(a) && a.status?.prePromotionAnalysis?.phase === 'Successful',
  );
  expect(paused.status?.preview?.revision).toBe(2);
  expect(paused.status?.source?.commit).toBe(head);
  const run = paused.status?.prePromotionAnalysis;
  expect(run?.revision).toBe(2);
  expect(run?.checks).toMatchObject([{ name: 'smoke', provider: 'job', phase: 'Successful', successful: 1 }]);
  expect(paused.status?.conditions?.find((c) => c.type === 'AnalysisPassed')).toMatchObject({
    status: 'True',
    reason: 'AnalysisSuccessful',
  });
  // The check's Job ran in the App's namespace, with the preview's Service in its env.
  const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: 'teal.dev/analysis-check=smoke' });
  const env = jobs.items[0]?.spec?.template.spec?.containers[0]?.env ?? [];
  expect(env).toContainEqual({ name: 'TEAL_PREVIEW_SERVICE', value: 'weather-preview' });
  await intent(ns, 'weather', 'promote');
  const promoted = await waitForApp(
    ns,
    'weather',
    'promoted',
    (a) => phase('Healthy')(a) && a.status?.active?.revision === 2,
  );
  // It passed its check: nothing was skipped.
  expect(promoted.status?.history?.at(-1)).toMatchObject({ revision: 2, promotedVia: 'kubectl' });
  expect(promoted.status?.history?.at(-1)?.checksSkipped).toBeUndefined();
  await intent(ns, 'weather', 'undo');
  await waitForApp(ns, 'weather', 'undone', (a) => phase('Healthy')(a) && a.status?.active?.revision === 1);
});

it('keeps the clone from an earlier run, with its commits', async () => {
  const again = await prepareDemo(workdir, 'http://127.0.0.1:1/webhooks/generic');
  expect(again.reused).toBe(true);
  const log = await git('git', ['log', '--format=%s'], { cwd: again.clone });
  expect(log.stdout.split('\n')[0]).toBe('Seoul: light rain');
});
