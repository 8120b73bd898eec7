// HTTPRoutes as the Gateway API tests make them (ping-pong, the gateway model,
// the route invariant): one rule whose backendRefs are Services on port 80.
import { ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION } from '../../src/rollout/route.ts';
import { clients } from './kube.ts';

/** The HTTPRoute API, as client-node's custom objects calls name it. */
export const ROUTES = { group: ROUTE_GROUP, version: ROUTE_VERSION, plural: ROUTE_PLURAL } as const;

/** A Service the rule sends to; no weight leaves the API's default (1). */
export interface Backend {
  name: string;
  weight?: number;
}

/** Creates HTTPRoute `name` in namespace, attached to Gateway `gateway`, with one rule of these backends. */
export async function createRoute(
  namespace: string,
  name: string,
  gateway: string,
  backends: readonly Backend[],
  hostnames?: readonly string[],
): Promise<void> {
  await clients().custom.createNamespacedCustomObject({
    ...ROUTES,
    namespace,
    body: {
      apiVersion: `${ROUTE_GROUP}/${ROUTE_VERSION}`,
      kind: 'HTTPRoute',
      metadata: { name },
      spec: {
        parentRefs: [{ name: gateway }],
        ...(hostnames ? { hostnames: [...hostnames] } : {}),
        rules: [{ backendRefs: backends.map((b) => ({ ...b, port: 80 })) }],
      },
    },
  });
}
