// Ping-pong slots with a Gateway API switch on the real control plane
// (issue #26 items 2.2 and 2.3): the Gateway API CRDs installed from the pinned
// module, the operator as a child process, and a gateway's verdict on the
// routes written by test/support/route-status.ts, held when a test needs the
// gateway not to have caught up. Invariant 1 is watched on the active Services
// and on the routes (a weight only on a slot whose revision is fully available).
// Traffic through a gateway is test/e2e/traffic-ping-pong.test.ts's.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_SLOT } from '../../src/app/labels.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  getApp,
  intent,
  patchSpec,
  phase,
  replicaSetOf,
  replicaSetsOf,
  selectorHash,
  waitForApp,
  watchRoutes,
} from '../support/apps.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { clients, waitFor } from '../support/kube.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { type RouteStatus, routeStatus } from '../support/route-status.ts';
import { createRoute as createHttpRoute, ROUTES } from '../support/routes.ts';
import { watchChanges } from '../support/watch.ts';

const { core, custom } = clients();
let ns: string;
let world: OperatorNamespace;
let gateway: RouteStatus;
let routes: Awaited<ReturnType<typeof watchRoutes>>;
const slots: Record<string, { app: string; slot: string }> = {};

beforeAll(async () => {
  await installGatewayApi();
  world = await operatorNamespace('pingpong');
  ns = world.ns;
  gateway = await routeStatus(ns);
  routes = await watchRoutes(ns, slots);
});

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

afterAll(async () => {
  routes?.stop();
  gateway?.stop();
  await world?.stop();
});

type StoredRoute = {
  metadata: { generation: number };
  spec: { hostnames?: string[]; rules: { backendRefs: { name: string; weight?: number }[] }[] };
};

/** The route someone made for App `name`: both slots at weight 0 and a third backend Teal must leave alone. */
async function createRoute(name: string): Promise<void> {
  for (const slot of ['ping', 'pong']) slots[`${name}-${slot}`] = { app: name, slot };
  await createRouteNamed(name, name);
}

async function createRouteNamed(route: string, name: string): Promise<void> {
  const backends = [
    { name: `${name}-ping`, weight: 0 },
    { name: `${name}-pong`, weight: 0 },
    { name: 'other', weight: 5 },
  ];
  await createHttpRoute(ns, route, 'gw', backends, [`${name}.example.com`]);
}

const readRoute = async (name: string) =>
  (await custom.getNamespacedCustomObject({ ...ROUTES, namespace: ns, name })) as StoredRoute;
const weights = async (name: string) =>
  (await readRoute(name)).spec.rules[0]?.backendRefs.map((b) => `${b.name}=${b.weight}`);

function pingPongApp(name: string, route = name) {
  return e2eApp(name, {
    blueGreen: {
      scaleDownDelaySeconds: 30,
      pingPong: { pingService: `${name}-ping`, pongService: `${name}-pong` },
      trafficRouting: { gatewayAPI: { httpRoute: route } },
    },
  });
}

/** Every pod of the App as first seen: it must carry its slot label from creation. */
async function watchPodSlots(app: string): Promise<{ unlabelled: string[]; seen: () => number }> {
  const unlabelled: string[] = [];
  let seen = 0;
  const stop = await watchChanges(
    `/api/v1/namespaces/${ns}/pods`,
    { labelSelector: `teal.dev/app=${app}` },
    (type, pod: { metadata?: { name?: string; labels?: Record<string, string> } }) => {
      if (type !== 'ADDED') return;
      seen += 1;
      const slot = pod.metadata?.labels?.[LABEL_SLOT];
      if (slot !== 'ping' && slot !== 'pong') unlabelled.push(`${pod.metadata?.name}: ${slot}`);
    },
  );
  stops.push(stop);
  return { unlabelled, seen: () => seen };
}

async function released(name: string): Promise<string> {
  await createRoute(name);
  await createApp(ns, pingPongApp(name));
  const app = await waitForApp(ns, name, 'first release Healthy', phase('Healthy'));
  return app.status?.active?.podTemplateHash ?? '';
}

async function previewed(name: string, tag: string): Promise<string> {
  await patchSpec(ns, name, { image: `registry.example.com/team/web:${tag}` });
  const app = await waitForApp(ns, name, `revision ${tag} in preview`, phase('Paused'));
  return app.status?.preview?.podTemplateHash ?? '';
}

const isActive = (revision: number) => (a: Awaited<ReturnType<typeof getApp>>) =>
  phase('Healthy')(a) && a.status?.active?.revision === revision;

describe('ping-pong slots switched through an HTTPRoute', () => {
  it('promote and undo each move the two weights once, the active Service only after the gateway took the route', async () => {
    const pods = await watchPodSlots('pp');
    const h1 = await released('pp');
    expect(await weights('pp')).toEqual(['pp-ping=100', 'pp-pong=0', 'other=5']);
    expect((await getApp(ns, 'pp')).status?.stablePingPong).toBe('ping');
    for (const slot of ['ping', 'pong']) {
      const svc = await core.readNamespacedService({ namespace: ns, name: `pp-${slot}` });
      expect(svc.spec?.selector).toEqual({ 'teal.dev/app': 'pp', [LABEL_SLOT]: slot });
    }

    const h2 = await previewed('pp', '2');
    const rs2 = await replicaSetOf(ns, 'pp', h2);
    expect(rs2?.spec?.template?.metadata?.labels?.[LABEL_SLOT]).toBe('pong');
    expect(rs2?.spec?.selector?.matchLabels).not.toHaveProperty(LABEL_SLOT);

    gateway.hold();
    const before = (await readRoute('pp')).metadata.generation;
    await intent(ns, 'pp', 'promote');
    await waitFor('the weights on pong', async () => ((await weights('pp'))?.[1] === 'pp-pong=100' ? true : undefined));
    const waiting = await waitForApp(ns, 'pp', 'waiting for the gateway', (a) =>
      (a.status?.message ?? '').includes('waiting for Accepted and ResolvedRefs'),
    );
    expect(waiting.status?.active?.revision).toBe(1);
    expect(await selectorHash(ns, 'pp')).toBe(h1);
    await gateway.release();
    const promoted = await waitForApp(ns, 'pp', 'revision 2 active', isActive(2));
    expect(await selectorHash(ns, 'pp')).toBe(h2);
    expect(promoted.status?.stablePingPong).toBe('pong');
    const after = await readRoute('pp');
    expect(after.metadata.generation).toBe(before + 1);
    expect(after.spec.hostnames).toEqual(['pp.example.com']);
    expect(await weights('pp')).toEqual(['pp-ping=0', 'pp-pong=100', 'other=5']);

    // Undo while revision 1 is still up in ping (scaleDownDelaySeconds 30): one more write of the weights.
    await intent(ns, 'pp', 'undo');
    const undone = await waitForApp(ns, 'pp', 'revision 1 active again', isActive(1));
    expect(undone.status?.stablePingPong).toBe('ping');
    expect(await selectorHash(ns, 'pp')).toBe(h1);
    expect((await readRoute('pp')).metadata.generation).toBe(before + 2);
    expect(await weights('pp')).toEqual(['pp-ping=100', 'pp-pong=0', 'other=5']);

    expect(pods.seen()).toBeGreaterThan(0);
    expect(pods.unlabelled).toEqual([]);
    expect(world.invariant.violations).toEqual([]);
    expect(routes.violations).toEqual([]);
    expect(routes.checks()).toBeGreaterThan(0);
  });

  it('kill -9 right after the route write: the next operator finishes the switch, writing the route once', async () => {
    await released('crash');
    const h2 = await previewed('crash', '2');
    gateway.hold();
    const before = (await readRoute('crash')).metadata.generation;
    await intent(ns, 'crash', 'promote');
    await waitFor(
      'the weights on pong',
      async () => ((await weights('crash'))?.[1] === 'crash-pong=100' ? true : undefined),
      { intervalMs: 10 },
    );
    await world.operator.kill();
    const midway = await getApp(ns, 'crash');
    expect(midway.status?.active?.revision).toBe(1);
    await gateway.release();
    await world.startOperator();
    const done = await waitForApp(ns, 'crash', 'revision 2 active', isActive(2));
    expect(await selectorHash(ns, 'crash')).toBe(h2);
    expect(done.status?.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect((await readRoute('crash')).metadata.generation).toBe(before + 1);
    expect(world.invariant.violations).toEqual([]);
    expect(routes.violations).toEqual([]);
  });

  it('abort while the gateway has not taken the switch puts the weights back on the stable slot', async () => {
    const h1 = await released('ab');
    await previewed('ab', '2');
    gateway.hold();
    await intent(ns, 'ab', 'promote');
    await waitFor('the weights on pong', async () => ((await weights('ab'))?.[1] === 'ab-pong=100' ? true : undefined));
    await intent(ns, 'ab', 'abort');
    await waitFor('the weights back on ping', async () =>
      (await weights('ab'))?.[0] === 'ab-ping=100' ? true : undefined,
    );
    await gateway.release();
    const aborted = await waitForApp(ns, 'ab', 'aborted', (a) => a.status?.phase === 'Degraded');
    expect(aborted.status?.active?.revision).toBe(1);
    expect(await selectorHash(ns, 'ab')).toBe(h1);
    expect(await weights('ab')).toEqual(['ab-ping=100', 'ab-pong=0', 'other=5']);
  });

  it('puts back weights someone edited, with a Warning Event', async () => {
    await released('edit');
    await custom.patchNamespacedCustomObject({
      ...ROUTES,
      namespace: ns,
      name: 'edit',
      body: [
        { op: 'replace', path: '/spec/rules/0/backendRefs/0/weight', value: 50 },
        { op: 'replace', path: '/spec/rules/0/backendRefs/1/weight', value: 50 },
      ],
    });
    await waitFor('the weights put back', async () =>
      (await weights('edit'))?.join() === 'edit-ping=100,edit-pong=0,other=5' ? true : undefined,
    );
    const events = await waitFor('the RouteEdited Event', async () => {
      const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=edit' });
      const found = list.items.filter((e) => e.reason === 'RouteEdited');
      return found.length > 0 ? found : undefined;
    });
    expect(events[0]?.message).toContain('was changed by someone else (ping 50, pong 50)');
  });

  it('a route that does not exist is an InvalidSpec naming it, and nothing is deployed', async () => {
    await createApp(ns, pingPongApp('lost', 'nowhere'));
    const app = await waitForApp(ns, 'lost', 'InvalidSpec', (a) =>
      (a.status?.conditions ?? []).some((c) => c.type === 'InvalidSpec' && c.status === 'True'),
    );
    expect(app.status?.message).toBe(
      `invalid spec: spec.strategy.blueGreen.trafficRouting.gatewayAPI.httpRoute: HTTPRoute ${ns}/nowhere not found`,
    );
    expect(await replicaSetsOf(ns, 'lost')).toEqual([]);
    // Once the route is made, its App is woken and releases.
    slots['lost-ping'] = { app: 'lost', slot: 'ping' };
    slots['lost-pong'] = { app: 'lost', slot: 'pong' };
    await createRouteNamed('nowhere', 'lost');
    await waitForApp(ns, 'lost', 'first release Healthy', phase('Healthy'));
    expect(await weights('nowhere')).toEqual(['lost-ping=100', 'lost-pong=0', 'other=5']);
  });
});
