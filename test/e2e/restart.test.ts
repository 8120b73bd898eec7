// restart end to end (issue #15): the operator runs as a child process, KWOK
// plays the kubelets (a replacement pod becomes ready on its own, an evicted
// one goes at once). Watches, not polls, follow the active Service's ready
// endpoints and the App's status throughout, so a dip between two reads
// cannot hide.
import { PolicyV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { AppStatus } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  getApp,
  intent,
  patchSpec,
  phase,
  readyEndpoints,
  replicaSetsOf,
  type StoredApp,
  selectorHash,
  waitForApp,
} from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { clients, kubeConfig, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { serviceAccount } from '../support/users.ts';
import { watchChanges } from '../support/watch.ts';

const { core } = clients();
const policy = kubeConfig().makeApiClient(PolicyV1Api);
let ns: string;
let world: OperatorNamespace;
let operator: Operator;
let invariant: Invariant;

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

beforeAll(async () => {
  world = await operatorNamespace('restart');
  ({ ns, operator, invariant } = world);
});

afterAll(async () => {
  await world?.stop();
});

/** A 3-replica App, released; returns it Healthy with its active hash. */
async function released(name: string, blueGreen: Record<string, unknown> = {}): Promise<StoredApp> {
  await createApp(ns, e2eApp(name, { replicas: 3, blueGreen: { scaleDownDelaySeconds: 600, ...blueGreen } }));
  const app = await waitForApp(ns, name, 'first release Healthy', phase('Healthy'));
  await waitFor(`${name}: 3 ready endpoints`, async () =>
    (await readyEndpoints(ns, name)).length === 3 ? true : undefined,
  );
  return app;
}

async function podNames(name: string, hash: string): Promise<string[]> {
  const pods = await core.listNamespacedPod({
    namespace: ns,
    labelSelector: `${LABEL_APP}=${name},${LABEL_HASH}=${hash}`,
  });
  return pods.items.map((p) => p.metadata?.name ?? '').sort();
}

/** The fewest ready endpoints the Service's EndpointSlices showed, at every change, from now on. */
async function watchReadyEndpoints(service: string): Promise<{ min: () => number; stop: () => void }> {
  const ready = new Map<string, number>();
  let min = Number.POSITIVE_INFINITY;
  type Slice = { metadata?: { name?: string }; endpoints?: { conditions?: { ready?: boolean } }[] };
  const stop = await watchChanges(
    `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
    { labelSelector: `kubernetes.io/service-name=${service}` },
    (type, slice: Slice) => {
      const name = slice.metadata?.name ?? '';
      if (type === 'DELETED') ready.delete(name);
      else ready.set(name, (slice.endpoints ?? []).filter((e) => e.conditions?.ready).length);
      min = Math.min(
        min,
        [...ready.values()].reduce((a, b) => a + b, 0),
      );
    },
  );
  stops.push(stop);
  return { min: () => min, stop };
}

/** The most pods the App's status listed as being evicted at once, at every change, from now on. */
async function watchEvictions(name: string): Promise<{ most: () => number }> {
  let most = 0;
  const stop = await watchChanges(
    `/apis/teal.dev/v1alpha1/namespaces/${ns}/apps`,
    { fieldSelector: `metadata.name=${name}` },
    (_type, app: { status?: AppStatus }) => {
      most = Math.max(most, app.status?.restart?.evicting?.length ?? 0);
    },
  );
  stops.push(stop);
  return { most: () => most };
}

const finished = (app: StoredApp) => app.status?.restart?.finishedAt !== undefined && phase('Healthy')(app);

async function eventsOf(name: string, reason: string): Promise<string[]> {
  const events = await core.listNamespacedEvent({
    namespace: ns,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return events.items.map((e) => e.message ?? '');
}

/**
 * The messages of an Event that goes with a status: the operator records a plan's Events once its status has
 * landed, so they may follow the status a test waited for.
 */
async function recordedEvents(name: string, reason: string): Promise<string[]> {
  return waitFor(`the ${reason} Event of ${name}`, async () => {
    const messages = await eventsOf(name, reason);
    return messages.length > 0 ? messages : undefined;
  });
}

/** Every pod of the revision replaced, the revision, history and Services as they were. */
async function expectRestarted(name: string, before: StoredApp, oldPods: string[]): Promise<StoredApp> {
  const after = await waitForApp(ns, name, 'the restart finished', finished);
  const hash = before.status?.active?.podTemplateHash ?? '';
  expect(after.status?.active).toEqual(before.status?.active);
  expect(after.status?.history).toEqual(before.status?.history);
  expect(await selectorHash(ns, name)).toBe(hash);
  expect((await replicaSetsOf(ns, name)).map((rs) => rs.metadata?.labels?.[LABEL_HASH])).toEqual([hash]);
  const now = await podNames(name, hash);
  expect(now).toHaveLength(3);
  expect(now.filter((p) => oldPods.includes(p))).toEqual([]);
  expect(after.status?.restart).toMatchObject({ revision: before.status?.active?.revision, podsReplaced: 3 });
  return after;
}

describe('restart', () => {
  it('kubectl teal restart replaces every pod, one at a time, never below 2 ready endpoints', async () => {
    const before = await released('web');
    const hash = before.status?.active?.podTemplateHash ?? '';
    const oldPods = await podNames('web', hash);
    const endpoints = await watchReadyEndpoints('web');
    const evictions = await watchEvictions('web');

    const run = await tealIn(ns, 'restart', 'web');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('restart of revision 1 requested');

    await expectRestarted('web', before, oldPods);
    expect(evictions.most()).toBe(1);
    expect(endpoints.min()).toBeGreaterThanOrEqual(2);
    expect(await eventsOf('web', 'RestartRequested')).toHaveLength(1);
    expect(await recordedEvents('web', 'Restarted')).toEqual([expect.stringContaining('3 pods replaced')]);
    await waitFor('3 ready endpoints again', async () =>
      (await readyEndpoints(ns, 'web')).length === 3 ? true : undefined,
    );
  });

  it('maxUnavailable: 2 replaces two pods at a time', async () => {
    const before = await released('pair', { maxUnavailable: 2 });
    const oldPods = await podNames('pair', before.status?.active?.podTemplateHash ?? '');
    const endpoints = await watchReadyEndpoints('pair');
    const evictions = await watchEvictions('pair');

    await intent(ns, 'pair', 'restart');
    await expectRestarted('pair', before, oldPods);
    expect(evictions.most()).toBe(2);
    expect(endpoints.min()).toBeGreaterThanOrEqual(1);
  });

  it('waits out a PodDisruptionBudget that refuses the eviction, and carries on after the operator is killed', async () => {
    const before = await released('crash');
    const oldPods = await podNames('crash', before.status?.active?.podTemplateHash ?? '');
    const endpoints = await watchReadyEndpoints('crash');
    // No disruption allowed: every eviction is refused (429) until it goes.
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'crash' },
        spec: { minAvailable: 3, selector: { matchLabels: { [LABEL_APP]: 'crash' } } },
      },
    });

    await intent(ns, 'crash', 'restart');
    await recordedEvents('crash', 'RestartBlocked');
    const blocked = await getApp(ns, 'crash');
    expect(blocked.status?.restart).toMatchObject({ refusals: expect.any(Number), evicting: [expect.any(String)] });
    expect(blocked.status?.conditions?.find((c) => c.type === 'Ready')?.reason).not.toBe('ReconcileError');
    expect(await podNames('crash', before.status?.active?.podTemplateHash ?? '')).toEqual(oldPods);

    await operator.kill();
    await policy.deleteNamespacedPodDisruptionBudget({ namespace: ns, name: 'crash' });
    operator = await world.startOperator();
    await expectRestarted('crash', before, oldPods);
    expect(endpoints.min()).toBeGreaterThanOrEqual(2);
    expect(await eventsOf('crash', 'RestartBlocked')).toHaveLength(1);
    expect(await recordedEvents('crash', 'Restarted')).toHaveLength(1);
  });

  it('is refused while a preview is up: 409 from the API, exit 1 from the CLI, RestartRejected from the operator', async () => {
    const before = await released('busy');
    await patchSpec(ns, 'busy', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'busy', 'revision 2 in preview', (a) => phase('Paused')(a) && a.status?.preview !== undefined);
    const oldPods = await podNames('busy', before.status?.active?.podTemplateHash ?? '');

    const cli = await tealIn(ns, 'restart', 'busy');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(
      'cannot be restarted while a release is in progress: revision 2 is on its way to active',
    );

    const token = await serviceAccount(ns, 'restarter', ['get', 'restart']);
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/api/v1/namespaces/${ns}/apps/busy/restart`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ message: expect.stringContaining('revision 2 is on its way to active') });

    // Written past both (kubectl annotate): the operator refuses it by the same rule.
    const id = await intent(ns, 'busy', 'restart');
    const taken = await waitForApp(
      ns,
      'busy',
      'the restart intent handled',
      (a) => a.status?.handledIntents?.restart === id,
    );
    expect(taken.status?.restart).toBeUndefined();
    expect(await recordedEvents('busy', 'RestartRejected')).toEqual([
      expect.stringContaining('revision 2 is on its way to active'),
    ]);
    expect(await podNames('busy', before.status?.active?.podTemplateHash ?? '')).toEqual(oldPods);
    expect((await getApp(ns, 'busy')).status?.history).toEqual(before.status?.history);
  });

  it('kept invariant 1 at every active Service change', () => {
    expect(invariant.violations).toEqual([]);
  });
});
