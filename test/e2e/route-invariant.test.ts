// The e2e invariant watcher on HTTPRoutes (test/support/apps.ts watchRoutes,
// DESIGN §5 invariant 1, issue #26 item 2.3): a weight on a slot Service is
// a violation unless the ReplicaSets in that slot are fully available, by the
// same rule (unavailableServing) the active Services are held to. The watcher
// is tested here against ReplicaSets made by hand, with no operator: KWOK
// makes the pods of a schedulable ReplicaSet Ready; a ReplicaSet whose pods
// fit no node never becomes available.
import type { V1ReplicaSet } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_APP, LABEL_SLOT } from '../../src/app/labels.ts';
import { fullyAvailable, watchRoutes } from '../support/apps.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { createRoute, ROUTES } from '../support/routes.ts';

const { apps, custom } = clients();
const slots = {
  'web-ping': { app: 'web', slot: 'ping' },
  'web-pong': { app: 'web', slot: 'pong' },
  'web-spare': { app: 'web', slot: 'spare' },
};

let ns: string;
let removeNs: () => Promise<void>;
let watcher: Awaited<ReturnType<typeof watchRoutes>>;

/** A ReplicaSet of App web in a slot; `schedulable: false` pins its pods to no node, so it is never available. */
function replicaSet(name: string, slot: string, schedulable: boolean): V1ReplicaSet {
  const labels = { [LABEL_APP]: 'web', [LABEL_SLOT]: slot, rs: name };
  return {
    metadata: { name, labels },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{ name: 'app', image: 'registry.example.com/team/web:1' }],
          ...(schedulable ? {} : { nodeSelector: { 'teal.dev/no-such-node': 'true' } }),
        },
      },
    },
  };
}

async function setWeights(route: string, weights: Record<string, number>): Promise<void> {
  const backendRefs = Object.entries(weights).map(([name, weight]) => ({ name, port: 80, weight }));
  await custom.patchNamespacedCustomObject(
    { ...ROUTES, namespace: ns, name: route, body: { spec: { rules: [{ backendRefs }] } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

beforeAll(async () => {
  await installGatewayApi();
  ({ name: ns, remove: removeNs } = await createNamespace('route-invariant'));
  await apps.createNamespacedReplicaSet({ namespace: ns, body: replicaSet('ping', 'ping', true) });
  await apps.createNamespacedReplicaSet({ namespace: ns, body: replicaSet('pong', 'pong', false) });
  await waitFor('the ping ReplicaSet fully available', async () =>
    fullyAvailable(await apps.readNamespacedReplicaSet({ namespace: ns, name: 'ping' })) ? true : undefined,
  );
  watcher = await watchRoutes(ns, slots);
  await createRoute(ns, 'web', 'gw', [
    { name: 'web-ping', weight: 100 },
    { name: 'web-pong', weight: 0 },
    { name: 'other', weight: 5 },
  ]);
});

afterAll(async () => {
  watcher?.stop();
  await removeNs?.();
});

describe('the invariant watcher on HTTPRoutes', () => {
  it('passes a weight on a fully available slot, and a weight of 0 or on a Service that is no slot', async () => {
    await waitFor('the route as created checked', async () => (watcher.checks() === 1 ? true : undefined));
    await watcher.settled();
    expect(watcher.violations).toEqual([]);
  });

  it('flags a weight on a slot whose ReplicaSet is not fully available', async () => {
    const before = watcher.checks();
    await setWeights('web', { 'web-ping': 50, 'web-pong': 50 });
    const [violation] = await waitFor('a violation', async () =>
      watcher.violations.length > 0 ? watcher.violations : undefined,
    );
    expect(watcher.checks()).toBeGreaterThan(before);
    expect(violation).toContain('HTTPRoute web sent traffic to slot pong while ReplicaSet pong was');
    watcher.violations.splice(0);
  });

  it('flags a weight on a slot that no ReplicaSet with pods serves: the traffic has nowhere to go', async () => {
    await setWeights('web', { 'web-ping': 100, 'web-spare': 1 });
    const [violation] = await waitFor('a violation', async () =>
      watcher.violations.length > 0 ? watcher.violations : undefined,
    );
    expect(violation).toBe('HTTPRoute web sent traffic to slot spare while no ReplicaSet with pods serves it');
  });
});
