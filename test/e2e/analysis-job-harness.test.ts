// Job checks on the real control plane, without the operator: Jobs made by
// analysisJobManifest run through the real Job controller, and Teal's KWOK
// stages (test/cluster/stages.yaml) make their pods pass, or fail on a label
// or an env value. What a later analysis e2e test relies on is proved here.
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinEnv } from '../../src/analysis/args.ts';
import {
  ANN_ANALYSIS_KEY,
  analysisJobManifest,
  analysisRunSelector,
  isAnalysisJobFor,
  jobMeasurement,
} from '../../src/analysis/job.ts';
import { type Check, CheckSchema } from '../../src/app/analysis-schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';

const { batch, core } = clients();
let ns: string;
let removeNs: () => Promise<void>;
let app: { name: string; namespace: string; uid: string };

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('analysis-job'));
  // A real App, so the Jobs' owner exists and the garbage collector leaves them be.
  const stored = await createApp(ns, e2eApp('weather'));
  app = { name: 'weather', namespace: ns, uid: stored.metadata.uid };
});
afterAll(async () => removeNs());

const env = () =>
  builtinEnv({
    appName: 'weather',
    appNamespace: ns,
    previewService: 'weather-preview',
    previewRevision: 3,
    previewImage: 'registry.example.com/team/web:2',
    sourceCommit: 'a3f1c2d4e5f60718293a4b5c6d7e8f9012345678',
  });

function check(name: string, podLabels: Record<string, string> = {}, extraEnv: { name: string; value: string }[] = []) {
  return CheckSchema.parse({
    name,
    provider: {
      job: {
        spec: {
          backoffLimit: 0,
          template: {
            metadata: { labels: podLabels },
            spec: {
              containers: [
                { name: 'smoke', image: 'curlimages/curl:8', args: ['-f', 'http://weather-preview/'], env: extraEnv },
              ],
            },
          },
        },
      },
    },
  });
}

async function runJob(key: string, c: Check): Promise<{ job: V1Job; pod: V1Pod }> {
  const body = analysisJobManifest({ app, key, check: c, env: env() });
  await batch.createNamespacedJob({ namespace: ns, body });
  const job = await waitFor(`Job ${body.metadata.name} to finish`, async () => {
    const j = await batch.readNamespacedJob({ name: body.metadata.name, namespace: ns });
    return jobMeasurement(j) ? j : undefined;
  });
  const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `job-name=${body.metadata.name}` });
  expect(pods.items).toHaveLength(1);
  return { job, pod: pods.items[0] as V1Pod };
}

const conditionOf = (job: V1Job, type: string) => job.status?.conditions?.find((c) => c.type === type);

describe('analysis Jobs under KWOK', () => {
  it('a Job check passes: its pod exits 0, the Job completes, the measurement is Successful', async () => {
    const { job, pod } = await runJob('pre-1/smoke/1', check('smoke'));
    expect(conditionOf(job, 'Complete')?.status).toBe('True');
    expect(conditionOf(job, 'Failed')).toBeUndefined();
    expect(jobMeasurement(job)).toEqual({ phase: 'Successful', message: 'the Job completed' });
    expect(pod.status?.phase).toBe('Succeeded');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
    // The built-ins reached the pod, and the owner and key survived the API server.
    expect(pod.spec?.containers[0]?.env).toEqual(env());
    expect(job.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'App', name: 'weather', uid: app.uid });
    expect(job.metadata?.annotations?.[ANN_ANALYSIS_KEY]).toBe('pre-1/smoke/1');
  });

  it('a pod labelled kwok.teal.dev/analysis-outcome=fail exits 1, and the measurement is Failed', async () => {
    const { job, pod } = await runJob(
      'pre-1/labelled/1',
      check('labelled', { 'kwok.teal.dev/analysis-outcome': 'fail' }),
    );
    expect(conditionOf(job, 'Failed')).toMatchObject({ status: 'True', reason: 'BackoffLimitExceeded' });
    expect(conditionOf(job, 'Complete')).toBeUndefined();
    expect(jobMeasurement(job)).toEqual({
      phase: 'Failed',
      message: `the Job failed: BackoffLimitExceeded: ${conditionOf(job, 'Failed')?.message}`,
    });
    expect(pod.status?.phase).toBe('Failed');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 1,
      message: 'check failed: kwok.teal.dev/analysis-outcome is fail',
    });
  });

  it('a container with KWOK_ANALYSIS_OUTCOME=fail exits 1, its other env intact, and the measurement is Failed', async () => {
    const outcome = { name: 'KWOK_ANALYSIS_OUTCOME', value: 'fail' };
    const { job, pod } = await runJob('pre-1/env/1', check('env', {}, [outcome]));
    expect(conditionOf(job, 'Failed')).toMatchObject({ status: 'True', reason: 'BackoffLimitExceeded' });
    expect(jobMeasurement(job)?.phase).toBe('Failed');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 1,
      message: 'check failed: KWOK_ANALYSIS_OUTCOME is fail',
    });
    expect(pod.spec?.containers[0]?.env).toEqual([outcome, ...env()]);
  });

  it('the same key names the same Job: a second create conflicts, and the Job found is adoptable', async () => {
    const body = analysisJobManifest({ app, key: 'pre-1/smoke/1', check: check('smoke'), env: env() });
    await expect(batch.createNamespacedJob({ namespace: ns, body })).rejects.toMatchObject({ code: 409 });
    const found = await batch.readNamespacedJob({ name: body.metadata.name, namespace: ns });
    expect(isAnalysisJobFor(found, 'weather', 'pre-1/smoke/1')).toBe(true);
    // The run's selector finds every Job of the run, for deleting them on cancel.
    const ofRun = await batch.listNamespacedJob({
      namespace: ns,
      labelSelector: analysisRunSelector('weather', 'pre-1'),
    });
    expect(ofRun.items.map((j) => j.metadata?.annotations?.[ANN_ANALYSIS_KEY]).sort()).toEqual([
      'pre-1/env/1',
      'pre-1/labelled/1',
      'pre-1/smoke/1',
    ]);
  });
});
