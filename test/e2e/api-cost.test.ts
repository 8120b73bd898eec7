// What a new App costs the API server, counted exactly by a recording proxy in
// front of the real one: Events only on the transitions that matter, and no
// read of a Service the cache holds (all of them: Teal's, and those it may adopt).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eApp } from '../fixtures/apps.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { createApp, phase, waitForApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const APPS = 4;
let ns: string;
let removeNs: () => Promise<void>;
let root: string;
let recorder: ApiRecorder;
let operator: Operator | undefined;

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('api-cost'));
  root = await mkdtemp(join(tmpdir(), 'teal-api-cost-'));
  recorder = await startApiRecorder(root);
});

afterAll(async () => {
  await operator?.stop();
  await recorder?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('API cost', () => {
  it(`${APPS} new Apps: two Events each, and no Service or ConfigMap read by name`, async () => {
    operator = await startOperator({ namespace: ns, kubeconfig: recorder.kubeconfig });
    const names = Array.from({ length: APPS }, (_, i) => `cost-${i}`);
    for (const name of names) await createApp(ns, e2eApp(name));
    for (const name of names) await waitForApp(ns, name, 'Healthy', phase('Healthy'));
    // The PhaseHealthy Event is recorded once the Healthy status has landed: it may follow it.
    const eventsPath = `/api/v1/namespaces/${ns}/events`;
    await waitFor('two Events for each App', async () => recorder.count('POST', eventsPath) >= 2 * APPS || undefined);

    const events = recorder.count('POST', eventsPath);
    const serviceReads = names.map(
      (name) =>
        recorder.count('GET', `/api/v1/namespaces/${ns}/services/${name}`) +
        recorder.count('GET', `/api/v1/namespaces/${ns}/services/${name}-preview`),
    );
    const statusWrites = names.map((name) =>
      recorder.count('PUT', `/apis/teal.dev/v1alpha1/namespaces/${ns}/apps/${name}/status`),
    );
    const reasons = (await clients().core.listNamespacedEvent({ namespace: ns })).items.map((e) => e.reason);
    console.log(
      `${APPS} Apps: ${events} Events (${reasons}), Service reads ${serviceReads}, status writes ${statusWrites}`,
    );
    // ScalingReplicaSet (from 0, first release) and PhaseHealthy.
    expect(events).toBe(2 * APPS);
    // Whether the namespace has a notifications default (it has none), the ConfigMap cache says.
    expect(recorder.count('GET', `/api/v1/namespaces/${ns}/configmaps/teal-notifications`)).toBe(0);
    // Whether a Service exists, Teal's or someone's to adopt, the cache says.
    expect(serviceReads).toEqual(names.map(() => 0));
  });
});
