// The traffic tests' data plane (test/cluster/data-plane.ts) on the shared
// test cluster: a real kube-proxy in a network namespace of the test's own,
// and servers for the pods of the traffic-* namespaces the test names.
import { inject } from 'vitest';
import { NODE_NAME } from '../cluster/cluster.ts';
import {
  type DataPlane,
  dataPlaneUnavailable,
  type GatewayModel,
  type GatewayOptions,
  startDataPlane,
} from '../cluster/data-plane.ts';
import { applyGatewayApi } from '../cluster/gateway-api.ts';
import { kubeConfig } from './kube.ts';

export { GATEWAY_CONTROLLER, LB_GATE_PREFIX } from '../cluster/data-plane/lb-plan.ts';
export type {
  Answer,
  BackendTarget,
  DataPlane,
  GatewayModel,
  GatewayOptions,
  LoadBalancer,
  Target,
  Traffic,
  TrafficStats,
} from '../cluster/data-plane.ts';
export { DATA_PLANE_READY_REASON } from '../cluster/data-plane.ts';

/** Why traffic tests are skipped here (not root, no namespaces, no nft or kube-proxy), or undefined. */
export function dataPlaneSkipReason(): string | undefined {
  return dataPlaneUnavailable(inject('binDir'));
}

/** A data plane serving the pods of these traffic-* namespaces (createNamespace('traffic')); stop() removes it. */
export function startTestDataPlane(namespaces: string[]): Promise<DataPlane> {
  return startDataPlane({
    kc: kubeConfig(),
    binDir: inject('binDir'),
    namespaces,
    nodeName: NODE_NAME,
    log: (line) => console.error(line),
  });
}

let gatewayApi: Promise<string[]> | undefined;

/**
 * Installs the Gateway API's standard channel (sigs.k8s.io/gateway-api at
 * GATEWAY_API_VERSION of test/cluster/versions.env) on the shared cluster,
 * once per test file, and resolves with the CRDs' names once all are
 * established. Needs no root. Test files may call it concurrently: the apply
 * is server-side, so again is a no-op.
 */
export function installGatewayApi(): Promise<string[]> {
  gatewayApi ??= applyGatewayApi({
    binDir: inject('binDir'),
    env: { ...process.env, KUBECONFIG: inject('kubeconfig') },
  }).catch((err) => {
    gatewayApi = undefined;
    throw err;
  });
  return gatewayApi;
}

/**
 * A Gateway API gateway on the data plane (the load balancer model following
 * HTTPRoutes, test/cluster/lb-model.ts): installs the CRDs if need be, makes
 * the Gateway `options.name` in `options.namespace` and its own GatewayClass,
 * and serves the HTTPRoute whose parentRefs name that Gateway. Send traffic to
 * `url`; Teal waits on the route's Accepted and ResolvedRefs, which it writes
 * with observedGeneration once that generation is programmed. dp.stop() (or
 * its own stop()) removes it.
 */
export async function startGateway(dp: DataPlane, options: GatewayOptions): Promise<GatewayModel> {
  await installGatewayApi();
  return dp.gateway(options);
}
