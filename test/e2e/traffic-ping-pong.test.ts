// Ping-pong slots switched through a Gateway API gateway, with real traffic
// (issue #26 items 2.2 and 2.3): the data plane plays the kubelet for the
// App's pods (their servers answer with their revision), the gateway is the
// pod-aware load balancer model following the HTTPRoute's weights and writing
// its status, and a traffic loop runs through the gateway for the whole test,
// across a promote, an undo, an abort in preview and a promote with the
// operator killed -9 right after its route write. Each pod names the gateway's
// readiness gate: it becomes Ready only once the gateway registered it, which
// it does because the pod matched its slot's Service from creation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_SLOT } from '../../src/app/labels.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, intent, patchSpec, phase, type StoredApp, waitForApp, watchRoutes } from '../support/apps.ts';
import {
  type Answer,
  type DataPlane,
  dataPlaneSkipReason,
  type GatewayModel,
  installGatewayApi,
  LB_GATE_PREFIX,
  startTestDataPlane,
  type Traffic,
} from '../support/data-plane.ts';
import { clients, waitFor } from '../support/kube.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { createRoute, ROUTES } from '../support/routes.ts';
import { watchChanges } from '../support/watch.ts';

const { custom } = clients();
const skip = dataPlaneSkipReason();
const GATEWAY = 'gw';
const GATE = `${LB_GATE_PREFIX}${GATEWAY}`;

/** The App: two pods gated by the gateway, a readiness probe, and a preStop that outlasts the gateway's drain. */
function app() {
  const body = e2eApp('web', {
    blueGreen: {
      scaleDownDelaySeconds: 10,
      pingPong: { pingService: 'web-ping', pongService: 'web-pong' },
      trafficRouting: { gatewayAPI: { httpRoute: 'web' } },
    },
  });
  body.spec.template = {
    spec: {
      terminationGracePeriodSeconds: 10,
      readinessGates: [{ conditionType: GATE }],
      containers: [
        {
          name: 'app',
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
          lifecycle: { preStop: { exec: { command: ['sleep', '3'] } } },
        },
      ],
    },
  } as never;
  return body;
}

describe.skipIf(skip !== undefined)(
  `ping-pong through a gateway, with traffic${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    let world: OperatorNamespace;
    let ns: string;
    let dp: DataPlane | undefined;
    let gw: GatewayModel;
    let loop: Traffic | undefined;
    let routes: Awaited<ReturnType<typeof watchRoutes>>;
    const unlabelled: string[] = [];
    const stops: (() => void)[] = [];

    const readRoute = async () =>
      (await custom.getNamespacedCustomObject({ ...ROUTES, namespace: ns, name: 'web' })) as {
        metadata: { generation: number };
        spec: { rules: { backendRefs: { name: string; weight?: number }[] }[] };
      };
    const weights = async () => (await readRoute()).spec.rules[0]?.backendRefs.map((b) => `${b.name}=${b.weight}`);
    const answers = async (): Promise<Answer[]> => (await loop?.stats())?.answers ?? [];
    /** The latest 40 answers all from this revision (a pod-template hash): the gateway follows the route. */
    const servedBy = (hash: string, what: string) =>
      waitFor(`the latest 40 answers all from ${what}`, async () => {
        const recent = (await answers()).slice(-40);
        return recent.length === 40 && recent.every((a) => a.revision === hash) ? true : undefined;
      });
    /** Requests sent so far: where a switch's part of the answers starts, read once the loop stopped. */
    const sent = async (): Promise<number> => (await loop?.stats())?.sent ?? 0;
    /** From `from` to `end`: once `to` answered, `old` answered no more (one step, no flapping), and nothing else did. */
    const oneStep = (all: Answer[], [from, old, to]: [number, string, string], end: number) => {
      const segment = all.slice(from, end);
      const first = segment.findIndex((a) => a.revision === to);
      expect(first).toBeGreaterThanOrEqual(0);
      expect(segment.slice(first).filter((a) => a.revision === old)).toEqual([]);
      expect(segment.filter((a) => a.revision !== old && a.revision !== to && !a.error)).toEqual([]);
    };
    const active = (revision: number) => (a: StoredApp) =>
      phase('Healthy')(a) && a.status?.active?.revision === revision;
    const image = async (tag: string) => {
      await patchSpec(ns, 'web', { image: `registry.example.com/team/web:${tag}` });
      const previewed = await waitForApp(ns, 'web', `revision ${tag} in preview`, phase('Paused'));
      return previewed.status?.preview?.podTemplateHash ?? '';
    };

    beforeAll(async () => {
      await installGatewayApi();
      world = await operatorNamespace('traffic-pp');
      ns = world.ns;
      dp = await startTestDataPlane([ns]);
      gw = await dp.gateway({
        name: GATEWAY,
        namespace: ns,
        podAware: { healthCheckDelayMs: 2_000, drainDelayMs: 2_000 },
      });
      routes = await watchRoutes(ns, {
        'web-ping': { app: 'web', slot: 'ping' },
        'web-pong': { app: 'web', slot: 'pong' },
      });
      stops.push(routes.stop);
      stops.push(
        await watchChanges(
          `/api/v1/namespaces/${ns}/pods`,
          { labelSelector: 'teal.dev/app=web' },
          (type, pod: { metadata?: { name?: string; labels?: Record<string, string> } }) => {
            const slot = pod.metadata?.labels?.[LABEL_SLOT];
            if (type === 'ADDED' && slot !== 'ping' && slot !== 'pong')
              unlabelled.push(`${pod.metadata?.name}: ${slot}`);
          },
        ),
      );
      await createRoute(ns, 'web', GATEWAY, [
        { name: 'web-ping', weight: 0 },
        { name: 'web-pong', weight: 0 },
      ]);
    });

    afterAll(async () => {
      for (const stop of stops) stop();
      await loop?.stop().catch(() => {});
      await dp?.stop();
      await world?.stop();
    });

    it('promote, undo, abort and a promote with kill -9 after the route write: no failed request, no answer from a revision not serving', async () => {
      await createApp(ns, app());
      const released = await waitForApp(ns, 'web', 'first release Healthy', phase('Healthy'));
      const h1 = released.status?.active?.podTemplateHash ?? '';
      expect(await weights()).toEqual(['web-ping=100', 'web-pong=0']);
      loop = await dp?.traffic(gw.url, { rps: 100, timeoutMs: 10_000 });
      await servedBy(h1, 'revision 1');

      // Promote: revision 2 in pong, its pods registered (and gated Ready) while they take no traffic.
      const h2 = await image('2');
      const switches: [number, string, string][] = [];
      let from = await sent();
      await intent(ns, 'web', 'promote');
      await waitForApp(ns, 'web', 'revision 2 active', active(2));
      expect(await weights()).toEqual(['web-ping=0', 'web-pong=100']);
      await servedBy(h2, 'revision 2');
      switches.push([from, h1, h2]);

      // Undo: back to revision 1 in ping, one write of the weights.
      const generation = (await readRoute()).metadata.generation;
      from = await sent();
      await intent(ns, 'web', 'undo');
      await waitForApp(ns, 'web', 'revision 1 active again', active(1));
      expect((await readRoute()).metadata.generation).toBe(generation + 1);
      await servedBy(h1, 'revision 1');
      switches.push([from, h2, h1]);

      // Abort in preview: revision 3 (in pong, once revision 2 left it) never serves.
      const h3 = await image('3');
      await intent(ns, 'web', 'abort');
      await waitForApp(ns, 'web', 'revision 3 aborted', (a) => a.status?.abort?.revision === 3);
      expect(await weights()).toEqual(['web-ping=100', 'web-pong=0']);

      // Retry and promote, the operator killed -9 as soon as the route's weights move.
      await intent(ns, 'web', 'retry');
      await waitForApp(ns, 'web', 'revision 3 in preview again', phase('Paused'));
      const before = (await readRoute()).metadata.generation;
      from = await sent();
      await intent(ns, 'web', 'promote');
      await waitFor('the weights on pong', async () => ((await weights())?.[1] === 'web-pong=100' ? true : undefined), {
        intervalMs: 10,
      });
      await world.operator.kill();
      await world.startOperator();
      const done = await waitForApp(ns, 'web', 'revision 3 active', active(3));
      expect(done.status?.history?.filter((h) => h.revision === 3)).toHaveLength(1);
      expect((await readRoute()).metadata.generation).toBe(before + 1);
      await servedBy(h3, 'revision 3');
      switches.push([from, h1, h3]);

      const stats = await loop?.stop();
      loop = undefined;
      console.error(
        `ping-pong through the gateway: ${stats?.sent} sent, ${stats?.failed} failed, by revision ${JSON.stringify(stats?.byRevision)}`,
      );
      expect(stats?.failures).toEqual([]);
      // Each switch's part runs until the next one starts.
      for (const [i, step] of switches.entries()) {
        oneStep(stats?.answers ?? [], step, switches[i + 1]?.[0] ?? stats?.sent ?? 0);
      }
      // Revision 3 answered only after its promotion: nothing from it before `from`.
      expect((stats?.answers ?? []).slice(0, from).filter((a) => a.revision === h3)).toEqual([]);
      expect(unlabelled).toEqual([]);
      expect(world.invariant.violations).toEqual([]);
      expect(routes.violations).toEqual([]);
    });
  },
);
