// The Gateway API gateway of the traffic harness (issue #26 §1): the load
// balancer model behind a Gateway of its own, on the real data plane. It
// follows the backendRefs of the HTTPRoute attached to its Gateway with their
// weights, writes the route's Accepted and ResolvedRefs at the generation it
// has programmed, and, pod-aware, sends requests only to targets registered
// after the health-check delay. What Teal's Gateway API switch (issue #26 §2
// item 3) moves and waits on.
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  type BackendTarget,
  type DataPlane,
  dataPlaneSkipReason,
  GATEWAY_CONTROLLER,
  type GatewayModel,
  LB_GATE_PREFIX,
  startGateway,
  startTestDataPlane,
} from '../support/data-plane.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { createRoute, ROUTES } from '../support/routes.ts';

const { apps, core, custom } = clients();
const skip = dataPlaneSkipReason();

const GROUP = 'gateway.networking.k8s.io';
const GATEWAY = 'web';
const GATE = `${LB_GATE_PREFIX}${GATEWAY}`;
const HEALTH_CHECK_DELAY_MS = 3_000;
const DRAIN_DELAY_MS = 5_000;

interface Route {
  metadata: { generation: number };
  status?: {
    parents?: {
      controllerName: string;
      conditions: { type: string; status: string; reason: string; observedGeneration?: number }[];
    }[];
  };
}

/** Pods labelled app=web, color=<color>, deploy=<name>, serving on 8080, naming the gateway's gate. */
function deployment(name: string, color: string, replicas: number): V1Deployment {
  const labels = { app: 'web', color, deploy: name };
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'registry.example.com/team/web:1',
              ports: [{ containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
            },
          ],
          readinessGates: [{ conditionType: GATE }],
        },
      },
    },
  };
}

describe.skipIf(skip !== undefined)(`the Gateway API gateway${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;
  let dp: DataPlane | undefined;
  let gw: GatewayModel;

  const getRoute = async () =>
    (await custom.getNamespacedCustomObject({ ...ROUTES, namespace: ns, name: 'web' })) as Route;
  /** Sets the route's one rule's backendRefs (Service port 80): [service, weight] pairs; returns the new generation. */
  const setBackends = async (backends: [string, number][]): Promise<number> => {
    const backendRefs = backends.map(([name, weight]) => ({ name, port: 80, weight }));
    const patched = (await custom.patchNamespacedCustomObject(
      { ...ROUTES, namespace: ns, name: 'web', body: { spec: { rules: [{ backendRefs }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Route;
    return patched.metadata.generation;
  };
  /** The gateway's conditions on the route, once both are at `generation`. */
  const waitForStatus = (generation: number) =>
    waitFor(`the route's status at generation ${generation}`, async () => {
      const route = await getRoute();
      const mine = route.status?.parents?.find((p) => p.controllerName === GATEWAY_CONTROLLER)?.conditions ?? [];
      const at = mine.filter((c) => c.observedGeneration === generation);
      return route.metadata.generation === generation && at.length === 2
        ? Object.fromEntries(at.map((c) => [c.type, c]))
        : undefined;
    });
  const pods = async (deploy: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: `deploy=${deploy}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const hashOf = (p: V1Pod | undefined) => p?.metadata?.labels?.['pod-template-hash'] ?? '';
  const targetsOf = (service: string): BackendTarget[] => gw.targets().filter((t) => t.service === service);
  const waitForRegistered = (service: string, count: number) =>
    waitFor(`${count} registered targets of ${service}`, async () => {
      const t = targetsOf(service).filter((x) => x.state === 'healthy' && x.answering);
      return t.length === count ? t : undefined;
    });
  const requests = async (n: number): Promise<Answer[]> => {
    const out: Answer[] = [];
    for (let i = 0; i < n; i++) out.push((await dp?.request(gw.url, 20_000)) ?? { t: 0, error: 'no data plane' });
    return out;
  };
  const startGatewayOn = (name: string) =>
    dp ? startGateway(dp, { name, namespace: ns }) : Promise.reject(new Error('no data plane'));
  const service = (name: string, color: string) =>
    core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name },
        spec: { selector: { app: 'web', color }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });

  beforeAll(async () => {
    const created = await createNamespace('traffic');
    ns = created.name;
    removeNs = created.remove;
    dp = await startTestDataPlane([ns]);
    await service('web-ping', 'blue');
    await service('web-pong', 'green');
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('blue', 'blue', 2) });
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('green', 'green', 2) });
    gw = await startGateway(dp, {
      name: GATEWAY,
      namespace: ns,
      podAware: { healthCheckDelayMs: HEALTH_CHECK_DELAY_MS, drainDelayMs: DRAIN_DELAY_MS },
    });
    await createRoute(ns, 'web', GATEWAY, [
      { name: 'web-ping', weight: 100 },
      { name: 'web-pong', weight: 0 },
    ]);
  });

  afterAll(async () => {
    await dp?.stop();
    await removeNs?.();
  });

  it('has its GatewayClass and Gateway accepted, and writes the route status at each generation it programs', async () => {
    const gatewayClass = (await custom.getClusterCustomObject({
      group: GROUP,
      version: 'v1',
      plural: 'gatewayclasses',
      name: gw.gatewayClassName,
    })) as { spec: { controllerName: string }; status: { conditions: { type: string; status: string }[] } };
    expect(gatewayClass.spec.controllerName).toBe(GATEWAY_CONTROLLER);
    expect(gatewayClass.status.conditions.find((c) => c.type === 'Accepted')?.status).toBe('True');
    const gateway = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      plural: 'gateways',
      namespace: ns,
      name: GATEWAY,
    })) as { status: { addresses: { value: string }[]; conditions: { type: string; status: string }[] } };
    expect(`http://${gateway.status.addresses[0]?.value}/`).toBe(gw.url);
    expect(gateway.status.conditions.filter((c) => c.status === 'True').map((c) => c.type)).toEqual([
      'Accepted',
      'Programmed',
    ]);
    const first = await waitForStatus(1);
    expect(first.Accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(first.ResolvedRefs).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
    await waitForRegistered('web-ping', 2);
    await waitForRegistered('web-pong', 2);
    // 50/50: once the gateway says generation 2 is programmed, both backends answer, interleaved.
    const second = await waitForStatus(
      await setBackends([
        ['web-ping', 50],
        ['web-pong', 50],
      ]),
    );
    expect(second.Accepted?.status).toBe('True');
    const [blue, green] = [hashOf((await pods('blue'))[0]), hashOf((await pods('green'))[0])];
    const split = await requests(10);
    expect(split.filter((a) => a.revision === blue).length).toBeGreaterThanOrEqual(4);
    expect(split.filter((a) => a.revision === green).length).toBeGreaterThanOrEqual(4);
    expect(split.filter((a) => a.error)).toEqual([]);
  });

  it('moves every new request from 100/0 to 0/100 with no failed request', async () => {
    const [blue, green] = [hashOf((await pods('blue'))[0]), hashOf((await pods('green'))[0])];
    await waitForStatus(
      await setBackends([
        ['web-ping', 100],
        ['web-pong', 0],
      ]),
    );
    const loop = await dp?.traffic(gw.url, { rps: 50, timeoutMs: 20_000 });
    await waitFor('the latest 50 answers all from blue', async () => {
      const recent = (await loop?.stats())?.answers.slice(-50) ?? [];
      return recent.length === 50 && recent.every((a) => a.revision === blue) ? true : undefined;
    });
    const generation = await setBackends([
      ['web-ping', 0],
      ['web-pong', 100],
    ]);
    await waitForStatus(generation);
    // Programmed: every request sent from now on goes to green.
    const after = await requests(20);
    expect(after.map((a) => a.revision)).toEqual(Array(20).fill(green));
    await waitFor('the latest 50 answers all from green', async () => {
      const recent = (await loop?.stats())?.answers.slice(-50) ?? [];
      return recent.length === 50 && recent.every((a) => a.revision === green) ? true : undefined;
    });
    const stats = await loop?.stop();
    console.error(
      `gateway 100/0 -> 0/100: ${stats?.sent} sent, ${stats?.failed} failed, by revision ${JSON.stringify(stats?.byRevision)}`,
    );
    expect(stats?.failures).toEqual([]);
    expect(stats?.byRevision[blue]).toBeGreaterThan(0);
    expect(stats?.byRevision[green]).toBeGreaterThan(0);
    // Once green took a request, blue took none: the switch is one step, with no flapping.
    const answers = stats?.answers ?? [];
    const firstGreen = answers.findIndex((a) => a.revision === green);
    expect(answers.slice(firstGreen).filter((a) => a.revision === blue)).toEqual([]);
  });

  it('a backendRef to a missing Service: ResolvedRefs False (BackendNotFound), its share answers 500', async () => {
    const generation = await setBackends([['web-gone', 1]]);
    const status = await waitForStatus(generation);
    expect(status.Accepted).toMatchObject({ status: 'True' });
    expect(status.ResolvedRefs).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(await requests(2)).toEqual([
      expect.objectContaining({ status: 500, error: 'HTTP 500: invalid backend' }),
      expect.objectContaining({ status: 500, error: 'HTTP 500: invalid backend' }),
    ]);
    // The Service made: the refs resolve at the same generation.
    await service('web-gone', 'blue');
    await waitFor('ResolvedRefs True once the Service exists', async () => {
      const s = await waitForStatus(generation);
      return s.ResolvedRefs?.status === 'True' ? true : undefined;
    });
  });

  it('without podAware: follows the ready endpoints at once, with no health-check delay, and sets no gate', async () => {
    const plain = await startGatewayOn('plain');
    await createRoute(ns, 'plain', 'plain', [{ name: 'web-ping' }]);
    const targets = await waitFor('2 targets of web-ping', async () => {
      const t = plain.targets().filter((x) => x.service === 'web-ping' && x.state === 'healthy');
      return t.length === 2 ? t : undefined;
    });
    for (const t of targets) expect(t.registeredAt).toBe(t.seenAt);
    const blue = hashOf((await pods('blue'))[0]);
    expect((await dp?.request(plain.url, 20_000))?.revision).toBe(blue);
    // Its own route only: the web route is the other gateway's, which this one leaves alone.
    const web = await getRoute();
    expect(web.status?.parents?.length).toBe(1);
    const gates = (await pods('blue')).flatMap((p) => p.status?.conditions ?? []).map((c) => c.type);
    expect(gates).not.toContain(`${LB_GATE_PREFIX}plain`);
    await plain.stop();
  });

  it('pod-aware: a new backend gets requests only once its targets are registered, and its pods the gate (then Ready)', async () => {
    await service('web-gray', 'gray');
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('gray', 'gray', 2) });
    // Their probes pass, but they name the gate, which no backend of the route has set: not Ready yet.
    const condition = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type)?.status;
    await waitFor('2 gray pods with their containers ready', async () => {
      const list = await pods('gray');
      return list.length === 2 && list.every((p) => condition(p, 'ContainersReady') === 'True') ? true : undefined;
    });
    expect((await pods('gray')).map((p) => condition(p, 'Ready'))).toEqual(['False', 'False']);
    await waitForStatus(await setBackends([['web-gray', 100]]));
    // Answered and checked after its answer: sent while no gray target was registered, it was refused.
    const registered = () => targetsOf('web-gray').some((t) => t.registeredAt !== undefined);
    let inGap: Answer | undefined;
    while (!inGap && !registered()) {
      const probe = await dp?.request(gw.url, 20_000);
      if (!registered()) inGap = probe;
    }
    const targets = await waitForRegistered('web-gray', 2);
    for (const t of targets) expect((t.registeredAt ?? 0) - t.seenAt).toBeGreaterThanOrEqual(HEALTH_CHECK_DELAY_MS);
    // A machine stalled through the whole delay leaves no probe in the gap; the registration delay still held.
    if (inGap) expect(inGap).toMatchObject({ status: 503, error: 'HTTP 503: no registered target' });
    const gray = hashOf((await pods('gray'))[0]);
    expect((await requests(4)).map((a) => a.revision)).toEqual(Array(4).fill(gray));
    await waitFor('the gate on the gray pods, and so Ready', async () =>
      (await pods('gray')).every((p) => condition(p, GATE) === 'True' && condition(p, 'Ready') === 'True')
        ? true
        : undefined,
    );
    // The backends no longer in the route drain, then are gone.
    await waitFor('the old backends drained and gone', async () =>
      targetsOf('web-ping').length + targetsOf('web-pong').length + targetsOf('web-gone').length === 0
        ? true
        : undefined,
    );
  });
});
