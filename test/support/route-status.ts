// A gateway's verdict on the HTTPRoutes of a namespace, for the control-plane
// tests of the Gateway API switch (test/e2e/ping-pong.test.ts): it writes each
// route's status.parents Accepted and ResolvedRefs True at the route's
// generation, as a gateway controller does once it has taken the route, and
// can be held (the gateway has not caught up), so a test decides when.
// The traffic through a gateway is the data plane's (test/cluster/lb-model.ts).
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { clients } from './kube.ts';
import { watchChanges } from './watch.ts';

const { custom } = clients();
const ROUTES = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes' };

type Route = {
  metadata?: { name?: string; generation?: number };
  status?: { parents?: { conditions?: { type?: string; observedGeneration?: number }[] }[] };
};

export interface RouteStatus {
  /** The gateway stops taking new generations. */
  hold(): void;
  /** The gateway catches up with every route, and takes each new generation again. */
  release(): Promise<void>;
  stop(): void;
}

const taken = (route: Route) =>
  (route.status?.parents ?? []).some((p) =>
    (p.conditions ?? []).some((c) => c.type === 'Accepted' && c.observedGeneration === route.metadata?.generation),
  );

export async function routeStatus(namespace: string): Promise<RouteStatus> {
  let held = false;
  const accept = async (route: Route) => {
    const name = route.metadata?.name;
    const generation = route.metadata?.generation ?? 0;
    if (!name || held || taken(route)) return;
    const now = new Date().toISOString();
    const condition = (type: string) => ({
      type,
      status: 'True',
      reason: type,
      message: '',
      lastTransitionTime: now,
      observedGeneration: generation,
    });
    const body = {
      status: {
        parents: [
          {
            parentRef: { name: 'gw' },
            controllerName: 'teal.dev/e2e-gateway',
            conditions: [condition('Accepted'), condition('ResolvedRefs')],
          },
        ],
      },
    };
    await custom
      .patchNamespacedCustomObjectStatus(
        { ...ROUTES, namespace, name, body },
        // A merge patch: the status of this one parent, whole.
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch(() => {});
  };
  const stop = await watchChanges(
    `/apis/${ROUTES.group}/${ROUTES.version}/namespaces/${namespace}/httproutes`,
    {},
    (type, route: Route) => {
      if (type !== 'DELETED') void accept(route);
    },
  );
  return {
    hold: () => {
      held = true;
    },
    release: async () => {
      held = false;
      const list = (await custom.listNamespacedCustomObject({ ...ROUTES, namespace })) as { items: Route[] };
      await Promise.all(list.items.map(accept));
    },
    stop,
  };
}
