// What a new App costs the API server, counted exactly by a recording proxy in
// front of the real one: Events only on the transitions that matter, and no
// read of a Service the cache holds (all of them: Teal's, and those it may adopt);
// the list without a namespace reviews a user's access once per namespace, and
// again only once the cached review is over (issue #25).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eApp } from '../fixtures/apps.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { createApp, phase, waitForApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount } from '../support/users.ts';

const APPS = 4;
const ACCESS_REVIEWS = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
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

  it('a list without a namespace reviews access once per namespace: the next list adds no review; a removed RoleBinding hides the rows within the cache time', async () => {
    operator ??= await startOperator({ namespace: ns, kubeconfig: recorder.kubeconfig });
    // An App of its own, so that this test holds without the one above.
    await createApp(ns, e2eApp('cost-list'));
    const token = await serviceAccount(ns, 'lister', ['list']);
    const base = `http://127.0.0.1:${operator.healthPort}`;
    const list = async () => {
      const res = await fetch(`${base}/api/v1/apps`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { items: { metadata: { namespace: string } }[] }).items;
    };
    // The App cache may still be filling after the operator's start.
    await waitFor('the list shows the namespace', async () => ((await list()).length > 0 ? true : undefined));
    const before = recorder.count('POST', ACCESS_REVIEWS);
    const items = await list();
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((i) => i.metadata.namespace === ns)).toBe(true);
    expect(recorder.count('POST', ACCESS_REVIEWS) - before).toBe(0);

    await clients().rbac.deleteNamespacedRoleBinding({ namespace: ns, name: 'lister-lister' });
    // The cached review ends within ACCESS_CACHE_TTL_MS (10 s); the deadline is generous.
    await waitFor('the list without the namespace', async () => ((await list()).length === 0 ? true : undefined));
  });
});
