// A pod-aware load balancer model for traffic tests (issue #26 §1), behaving
// like the AWS Load Balancer Controller in IP mode: it follows a Service's
// EndpointSlices, registers a target (pod IP:port) only once the health-check
// delay has passed since it appeared and while it answers its health check,
// sets its readiness-gate condition on the registered pods whose spec names
// that gate, and keeps a deregistered target draining for the drain delay.
// Its listener, on an address of its own inside the data plane's network
// namespace, sends new connections to registered targets only (agent.ts).
//
// The real controller's webhook adds the gate to a pod's spec.readinessGates
// when the pod is created and a Service of a TargetGroupBinding selects it;
// readinessGates cannot change afterwards. The model has no webhook: a pod
// names the gate at creation (its template does, as the webhook would have
// written it) or never does, and the model reads only that.
//
// The gateway (startGateway) is the same model behind a Gateway API Gateway
// of its own GatewayClass: it follows the backendRefs of the HTTPRoute
// attached to that Gateway, one target group per backend Service as the
// Service model has one, splits new connections by the backendRefs' weights,
// and writes the route's Accepted and ResolvedRefs once it has programmed the
// route's generation (lb-plan.ts decides; this file reads and writes).
import {
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1EndpointSlice,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Answer } from './data-plane/agent.ts';
import {
  type Delays,
  type Endpoint,
  endpointsOf,
  GATEWAY_CONTROLLER,
  GATEWAY_GROUP,
  type HttpRoute,
  LB_GATE_PREFIX,
  LB_GATE_REASON,
  listenerBackends,
  parentRefTo,
  planRoute,
  planTargets,
  podsToGate,
  type RoutePlan,
  routeOrder,
  routeParents,
  type Target,
} from './data-plane/lb-plan.ts';

export type { Target } from './data-plane/lb-plan.ts';

/** The controller's look at the Service's endpoints and health checks. */
const POLL_MS = 250;
/** The ALB's default HealthCheckTimeoutSeconds: a busy machine's stall is not an unhealthy target. */
const HEALTH_CHECK_TIMEOUT_MS = 5_000;

type Call = <T>(path: string, body?: Record<string, unknown>) => Promise<T>;
type Log = (line: string) => void;

/** Pod-aware target groups: registration after the health-check delay, a drain, and the readiness gate. */
export interface PodAware extends Delays {
  /** The path its health checks ask each target; '/' unless said. */
  healthCheckPath?: string;
}

export interface LoadBalancerOptions extends PodAware {
  /** Names the load balancer and its gate (LB_GATE_PREFIX + name). */
  name: string;
  namespace: string;
  service: string;
}

export interface LoadBalancer {
  /** http://<its address in the namespace>/ */
  url: string;
  /** The readiness-gate condition type it sets on pods that name it. */
  gate: string;
  /** Its targets now: initial, healthy (registered) or draining. */
  targets: () => Target[];
  /** Connections open through the listener, by target. */
  open: () => Promise<Record<string, number>>;
  /** Client connections open at the listener, those it refused included. */
  clients: () => Promise<number>;
  stop: () => Promise<void>;
}

export async function startLoadBalancer(
  kc: KubeConfig,
  call: Call,
  address: string,
  options: LoadBalancerOptions,
  log: Log,
): Promise<LoadBalancer> {
  const { listener } = await call<{ listener: string }>('/lb/listen', { ip: address, port: 80 });
  const gate = `${LB_GATE_PREFIX}${options.name}`;
  const groups = new TargetGroups(kc, call, { namespace: options.namespace, gate, podAware: options });
  const backends = [{ service: options.service, weight: 1 }];
  const loop = new Loop(`lb ${options.name}`, log, async () => {
    const pods = await groups.refresh([options.service]);
    await call('/lb/targets', { listener, ...listenerBackends(backends, groups.byService) });
    await groups.setGates(pods);
  });
  return {
    url: `http://${address}/`,
    gate,
    targets: () => [...(groups.byService.get(options.service)?.values() ?? [])],
    open: async () => (await call<{ open: Record<string, number> }>('/lb/open', { listener })).open,
    clients: async () => (await call<{ clients: number }>('/lb/open', { listener })).clients,
    stop: async () => {
      await loop.stop();
      await call('/lb/close', { listener });
    },
  };
}

/** A round every POLL_MS until stopped; a failed round is logged and the next one tries again. */
class Loop {
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(what: string, log: Log, round: () => Promise<void>) {
    this.done = (async () => {
      while (!this.stopped) {
        await round().catch((err) => log(`${what}: ${String(err)}`));
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/**
 * The target groups of one listener, one per backend Service of a namespace,
 * and the look at the API server they come from. Pod-aware (an ALB's target
 * groups): lb-plan.ts's registration, drain and gate. Otherwise (a gateway
 * following EndpointSlices): a group is the Service's ready endpoints, now.
 */
class TargetGroups {
  /** Targets by backend Service; a Service no longer a backend stays while its targets drain. */
  readonly byService = new Map<string, Map<string, Target>>();
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;
  private readonly call: Call;
  private readonly options: { namespace: string; gate: string; podAware?: PodAware };

  constructor(kc: KubeConfig, call: Call, options: TargetGroups['options']) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
    this.call = call;
    this.options = options;
  }

  /** Plans every group from the namespace's EndpointSlices and pods now; returns the pods, by name. */
  async refresh(services: string[]): Promise<Map<string, V1Pod>> {
    const { namespace } = this.options;
    const [slices, podList] = await Promise.all([
      this.discovery.listNamespacedEndpointSlice({ namespace }),
      this.core.listNamespacedPod({ namespace }),
    ]);
    const pods = new Map<string, V1Pod>(podList.items.map((p) => [p.metadata?.name ?? '', p]));
    const bySlice = new Map<string, V1EndpointSlice[]>();
    for (const slice of slices.items) {
      const service = slice.metadata?.labels?.['kubernetes.io/service-name'] ?? '';
      bySlice.set(service, [...(bySlice.get(service) ?? []), slice]);
    }
    for (const service of new Set([...services, ...this.byService.keys()])) {
      const wanted = services.includes(service);
      const endpoints = wanted ? this.endpoints(bySlice.get(service) ?? [], pods) : [];
      const next = await this.plan(this.byService.get(service) ?? new Map(), endpoints);
      if (next.size === 0 && !wanted) this.byService.delete(service);
      else this.byService.set(service, next);
    }
    return pods;
  }

  /** Sets the gate on the pods each pod-aware group has registered. */
  async setGates(pods: Map<string, V1Pod>): Promise<void> {
    if (!this.options.podAware) return;
    for (const group of this.byService.values()) {
      for (const pod of podsToGate(group, pods, this.options.gate)) await this.setGate(pod);
    }
  }

  private endpoints(slices: V1EndpointSlice[], pods: Map<string, V1Pod>): Endpoint[] {
    // Not pod-aware: no pod is read, so no gate is either; ready endpoints only.
    return endpointsOf(slices, this.options.podAware ? pods : new Map(), this.options.gate);
  }

  private async plan(last: Map<string, Target>, endpoints: Endpoint[]): Promise<Map<string, Target>> {
    const { podAware } = this.options;
    if (!podAware) {
      const ready = new Map(endpoints.map((e) => [e.target, true]));
      return planTargets(last, endpoints, ready, Date.now(), { healthCheckDelayMs: 0, drainDelayMs: 0 });
    }
    const answering = new Map(
      await Promise.all(endpoints.map(async (e) => [e.target, await this.check(e.target, podAware)] as const)),
    );
    return planTargets(last, endpoints, answering, Date.now(), podAware);
  }

  private async check(target: string, podAware: PodAware): Promise<boolean> {
    const url = `http://${target}${podAware.healthCheckPath ?? '/'}`;
    const answer = await this.call<Answer>('/request', { url, timeoutMs: HEALTH_CHECK_TIMEOUT_MS });
    return answer.status === 200;
  }

  private async setGate(pod: V1Pod): Promise<void> {
    const condition = {
      type: this.options.gate,
      status: 'True',
      reason: LB_GATE_REASON,
      lastTransitionTime: new Date().toISOString(),
    };
    await this.core.patchNamespacedPodStatus(
      {
        name: pod.metadata?.name ?? '',
        namespace: this.options.namespace,
        body: { status: { conditions: [condition] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  }
}

// ---------- the gateway

export interface GatewayOptions {
  /** The Gateway's name in the namespace; it names the gate too (LB_GATE_PREFIX + name). */
  name: string;
  /** Where the Gateway is made, and the HTTPRoutes and Services it serves are read (allowedRoutes: Same). */
  namespace: string;
  /**
   * Pod-aware target groups, as an ALB's behind the AWS Load Balancer
   * Controller's Gateway API support: a backend's endpoint is registered after
   * healthCheckDelayMs while it answers, drains for drainDelayMs, and its pod
   * gets the gate when it names it. Absent: the gateway sends to each backend
   * Service's ready endpoints as soon as it sees them, and to nothing else.
   */
  podAware?: PodAware;
}

/** A target of the gateway and the backend Service whose group holds it. */
export interface BackendTarget extends Target {
  service: string;
}

export interface GatewayModel {
  /** http://<its address in the namespace>/, also in the Gateway's status.addresses. */
  url: string;
  name: string;
  namespace: string;
  /** Its own GatewayClass (cluster-scoped, removed by stop()), of controllerName GATEWAY_CONTROLLER. */
  gatewayClassName: string;
  /** The readiness-gate condition type it sets on pods that name it (pod-aware only). */
  gate: string;
  /** Its targets now, every backend's. */
  targets: () => BackendTarget[];
  /** Connections open through the listener, by target. */
  open: () => Promise<Record<string, number>>;
  /** Client connections open at the listener, those it refused included. */
  clients: () => Promise<number>;
  /** Stops following routes, closes the listener, deletes the Gateway and its GatewayClass. */
  stop: () => Promise<void>;
}

const GATEWAY_VERSION = 'v1';

/**
 * Makes the GatewayClass and Gateway, accepted and programmed at `address`,
 * and follows the HTTPRoute attached to the Gateway (the oldest, if several):
 * each round it plans the route (planRoute), plans each backend's target
 * group, programs the listener with the backends' weights, then writes the
 * route's status at the generation just programmed.
 */
export async function startGateway(
  kc: KubeConfig,
  call: Call,
  address: string,
  options: GatewayOptions,
  log: Log,
): Promise<GatewayModel> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const { name, namespace } = options;
  const gatewayClassName = `lb-model-${namespace}-${name}`;
  await createGateway(custom, gatewayClassName, options, address);
  const { listener } = await call<{ listener: string }>('/lb/listen', { ip: address, port: 80 });
  const gate = `${LB_GATE_PREFIX}${name}`;
  const groups = new TargetGroups(kc, call, { namespace, gate, podAware: options.podAware });
  const core = kc.makeApiClient(CoreV1Api);
  const loop = new Loop(`gateway ${name}`, log, async () => {
    const services = new Set(
      (await core.listNamespacedService({ namespace })).items.map((s) => s.metadata?.name ?? ''),
    );
    const routes = (
      (await custom.listNamespacedCustomObject({
        group: GATEWAY_GROUP,
        version: GATEWAY_VERSION,
        namespace,
        plural: 'httproutes',
      })) as { items: HttpRoute[] }
    ).items
      .filter((r) => parentRefTo(r, options))
      .sort(routeOrder);
    const plans = routes.map((route, i) => ({ route, plan: planRoute(route, services, i === 0) }));
    const backends = plans[0]?.plan.backends ?? [];
    const pods = await groups.refresh(backends.filter((b) => !b.invalid).map((b) => b.service));
    await call('/lb/targets', { listener, ...listenerBackends(backends, groups.byService) });
    await groups.setGates(pods);
    for (const { route, plan } of plans) await writeRouteStatus(custom, route, plan, options);
  });
  return {
    url: `http://${address}/`,
    name,
    namespace,
    gatewayClassName,
    gate,
    targets: () =>
      [...groups.byService].flatMap(([service, group]) => [...group.values()].map((t) => ({ ...t, service }))),
    open: async () => (await call<{ open: Record<string, number> }>('/lb/open', { listener })).open,
    clients: async () => (await call<{ clients: number }>('/lb/open', { listener })).clients,
    stop: async () => {
      await loop.stop();
      await call('/lb/close', { listener });
      await deleteGateway(custom, gatewayClassName, options).catch((err) => log(`gateway ${name}: ${String(err)}`));
    },
  };
}

const accepted = (type: string, generation: number, message: string) => ({
  type,
  status: 'True',
  reason: type,
  message,
  observedGeneration: generation,
  lastTransitionTime: new Date().toISOString(),
});

/** The GatewayClass and the Gateway (one HTTP listener on port 80), each with the status its controller writes. */
async function createGateway(
  custom: CustomObjectsApi,
  gatewayClassName: string,
  { name, namespace }: GatewayOptions,
  address: string,
): Promise<void> {
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const group = GATEWAY_GROUP;
  const version = GATEWAY_VERSION;
  const gatewayClass = (await custom.createClusterCustomObject({
    group,
    version,
    plural: 'gatewayclasses',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'GatewayClass',
      metadata: { name: gatewayClassName },
      spec: { controllerName: GATEWAY_CONTROLLER },
    },
  })) as { metadata: { generation: number } };
  await custom.patchClusterCustomObjectStatus(
    {
      group,
      version,
      plural: 'gatewayclasses',
      name: gatewayClassName,
      body: { status: { conditions: [accepted('Accepted', gatewayClass.metadata.generation, 'lb-model')] } },
    },
    mergePatch,
  );
  const gateway = (await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'gateways',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'Gateway',
      metadata: { name },
      spec: { gatewayClassName, listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    },
  })) as { metadata: { generation: number } };
  const generation = gateway.metadata.generation;
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      namespace,
      plural: 'gateways',
      name,
      body: {
        status: {
          addresses: [{ type: 'IPAddress', value: address }],
          conditions: [
            accepted('Accepted', generation, 'lb-model gateway'),
            accepted('Programmed', generation, `listening on ${address}:80`),
          ],
        },
      },
    },
    mergePatch,
  );
}

async function deleteGateway(custom: CustomObjectsApi, gatewayClassName: string, options: GatewayOptions) {
  const gone = (err: { code?: number }) => {
    if (err.code !== 404) throw err;
  };
  const group = GATEWAY_GROUP;
  const version = GATEWAY_VERSION;
  await custom.deleteNamespacedCustomObject({ group, version, plural: 'gateways', ...options }).catch(gone);
  await custom
    .deleteClusterCustomObject({ group, version, plural: 'gatewayclasses', name: gatewayClassName })
    .catch(gone);
}

/** The route's status.parents entry for this plan, written only when it says something new. */
async function writeRouteStatus(
  custom: CustomObjectsApi,
  route: HttpRoute,
  plan: RoutePlan,
  gateway: GatewayOptions,
): Promise<void> {
  const parentRef = parentRefTo(route, gateway);
  if (!parentRef) return;
  const parents = routeParents(route, parentRef, plan, route.metadata.generation ?? 0, new Date().toISOString());
  const withoutTimes = (p: unknown) =>
    JSON.stringify(p, (key, value) => (key === 'lastTransitionTime' ? undefined : value));
  if (withoutTimes(parents) === withoutTimes(route.status?.parents ?? [])) return;
  // The resourceVersion read: a route changed since (409) is planned again next round, not marked with this plan.
  const resourceVersion = (route.metadata as { resourceVersion?: string }).resourceVersion;
  const changedSince = (err: { code?: number }) => {
    if (err.code !== 409) throw err;
  };
  await custom
    .patchNamespacedCustomObjectStatus(
      {
        group: GATEWAY_GROUP,
        version: GATEWAY_VERSION,
        namespace: route.metadata.namespace,
        plural: 'httproutes',
        name: route.metadata.name,
        body: { metadata: { resourceVersion }, status: { parents } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    .catch(changedSince);
}
