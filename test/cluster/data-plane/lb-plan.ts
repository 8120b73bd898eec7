// The load balancer model's decisions (test/cluster/lb-model.ts), pure: which
// endpoints of a Service become targets, when a target is registered, when a
// deregistered one has drained, and which pods get the readiness gate's
// condition. Modelled on the AWS Load Balancer Controller in IP mode.
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';

/**
 * The model's readiness-gate condition types: this prefix and the load balancer's name. It comes from
 * the list of load balancers' gates of kubectl teal lint, which finds the model by its gate.
 */
export { LB_MODEL_GATE_PREFIX as LB_GATE_PREFIX } from '../../../src/rollout/load-balancers.ts';
export const LB_GATE_REASON = 'RegisteredAndHealthy';

export interface Endpoint {
  /** ip:port, the target an ALB in IP mode registers. */
  target: string;
  pod: string;
}

export interface Target extends Endpoint {
  /** initial: seen, waiting out the health-check delay; healthy: registered; draining: deregistered. */
  state: 'initial' | 'healthy' | 'draining';
  /** Milliseconds (Date.now()) when the endpoint was seen, registered, deregistered. */
  seenAt: number;
  registeredAt?: number;
  drainingSince?: number;
  /** Whether it passes its health checks: a registered one fails only after UNHEALTHY_THRESHOLD checks in a row. */
  answering: boolean;
  /** Health checks failed in a row. */
  failedChecks?: number;
}

/**
 * Failed health checks in a row that make a registered target unhealthy: the
 * ALB's default UnhealthyThresholdCount. One check cut by a busy moment does
 * not take a target out of service.
 */
export const UNHEALTHY_THRESHOLD = 2;

export interface Delays {
  healthCheckDelayMs: number;
  drainDelayMs: number;
}

/** Whether a pod's spec names the gate: the real controller's webhook adds it only when the pod is created. */
export function namesGate(pod: V1Pod | undefined, gate: string): boolean {
  return (pod?.spec?.readinessGates ?? []).some((g) => g.conditionType === gate);
}

/** The pod's containers are ready (its readiness probe passed), whatever its readiness gates say. */
function containersReady(pod: V1Pod | undefined): boolean {
  return pod?.status?.conditions?.some((c) => c.type === 'ContainersReady' && c.status === 'True') === true;
}

/**
 * The Service's endpoints the load balancer targets: ready ones, and (as the
 * real controller does) not-ready ones of pods that name its gate and whose
 * containers are ready: their Ready waits on the load balancer itself, so the
 * EndpointSlice has them neither ready nor serving. Not terminating.
 */
export function endpointsOf(slices: V1EndpointSlice[], pods: Map<string, V1Pod>, gate: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const slice of slices) {
    const port = slice.ports?.[0]?.port;
    if (port === undefined) continue;
    for (const e of slice.endpoints ?? []) {
      const pod = e.targetRef?.kind === 'Pod' ? (e.targetRef.name ?? '') : '';
      const c = e.conditions ?? {};
      const wanted =
        c.ready === true ||
        (c.terminating !== true && namesGate(pods.get(pod), gate) && containersReady(pods.get(pod)));
      for (const ip of wanted ? e.addresses : []) out.push({ target: `${ip}:${port}`, pod });
    }
  }
  return out;
}

/** The next targets from the last ones, the endpoints now, and this round's health checks. */
export function planTargets(
  last: Map<string, Target>,
  endpoints: Endpoint[],
  answering: Map<string, boolean>,
  now: number,
  delays: Delays,
): Map<string, Target> {
  const next = new Map<string, Target>();
  for (const e of endpoints) {
    const was = last.get(e.target);
    // Another pod at the address (a freed pod IP given again, the old pod's removal missed between two
    // rounds) is a new target: seen now, its own health-check delay, the gate set on it, not on the old one.
    const fresh = !was || was.state === 'draining' || was.pod !== e.pod;
    const t: Target = fresh ? { ...e, state: 'initial', seenAt: now, answering: false } : { ...was };
    const passed = answering.get(e.target) ?? false;
    t.failedChecks = passed ? 0 : (t.failedChecks ?? 0) + 1;
    t.answering = t.state === 'healthy' ? t.failedChecks < UNHEALTHY_THRESHOLD : passed;
    if (t.state === 'initial' && t.answering && now - t.seenAt >= delays.healthCheckDelayMs) {
      t.state = 'healthy';
      t.registeredAt = now;
    }
    next.set(e.target, t);
  }
  for (const [key, t] of last) {
    if (next.has(key)) continue;
    const since = t.state === 'draining' ? (t.drainingSince ?? now) : now;
    // A target only seen, never registered, has nothing to drain.
    if (t.state === 'initial' || now - since >= delays.drainDelayMs) continue;
    next.set(key, { ...t, state: 'draining', drainingSince: since });
  }
  return next;
}

/**
 * What the listener sends to: new connections to registered targets that answer. Draining ones, and
 * registered ones failing their checks, get no new connections and keep their open ones, as an ALB
 * does: an unhealthy target is not cut.
 */
export function listenerTargets(targets: Map<string, Target>): { registered: string[]; draining: string[] } {
  const all = [...targets.values()];
  return {
    registered: all.filter((t) => t.state === 'healthy' && t.answering).map((t) => t.target),
    draining: all.filter((t) => t.state === 'draining' || (t.state === 'healthy' && !t.answering)).map((t) => t.target),
  };
}

/** Pods registered and healthy whose spec names the gate and whose condition is not True yet. */
export function podsToGate(targets: Map<string, Target>, pods: Map<string, V1Pod>, gate: string): V1Pod[] {
  const out: V1Pod[] = [];
  for (const t of targets.values()) {
    const pod = pods.get(t.pod);
    if (t.state !== 'healthy' || !t.answering || !pod || !namesGate(pod, gate)) continue;
    if (pod.status?.conditions?.some((c) => c.type === gate && c.status === 'True')) continue;
    out.push(pod);
  }
  return out;
}

// ---------- the gateway: the model following an HTTPRoute's backendRefs (Gateway API)

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** The GatewayClass controllerName of the model's gateways, and of the route status entries they write. */
export const GATEWAY_CONTROLLER = 'lb-model.teal.dev/gateway';

export interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface RouteParentStatus {
  parentRef: ParentRef;
  controllerName: string;
  conditions: Condition[];
}

export interface BackendRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  port?: number;
  weight?: number;
}

/** The fields of an HTTPRoute the gateway reads and writes. */
export interface HttpRoute {
  metadata: { name: string; namespace: string; generation?: number; creationTimestamp?: string | Date };
  spec?: {
    parentRefs?: ParentRef[];
    rules?: { matches?: unknown[]; filters?: unknown[]; backendRefs?: BackendRef[] }[];
  };
  status?: { parents?: RouteParentStatus[] };
}

/** One backend of the served rule: a Service of the route's namespace, or why it cannot be one. */
export interface Backend {
  service: string;
  weight: number;
  /** Why the ref is not a Service the gateway can send to (its share answers 500), as a ResolvedRefs reason. */
  invalid?: 'BackendNotFound' | 'InvalidKind' | 'RefNotPermitted';
}

export interface RoutePlan {
  /** Accepted: the route names this gateway and the model can serve it; else why not. */
  accepted: { ok: boolean; reason: string; message: string };
  resolvedRefs: { ok: boolean; reason: string; message: string };
  backends: Backend[];
}

export interface GatewayRef {
  namespace: string;
  name: string;
}

/** Whether a parentRef names the Gateway (group, kind and namespace defaulted as the API defines them). */
export function namesGateway(ref: ParentRef, routeNamespace: string, gateway: GatewayRef): boolean {
  return (
    (ref.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? routeNamespace) === gateway.namespace &&
    ref.name === gateway.name
  );
}

/** The route's parentRef that names the gateway, if one does. */
export function parentRefTo(route: HttpRoute, gateway: GatewayRef): ParentRef | undefined {
  return route.spec?.parentRefs?.find((r) => namesGateway(r, route.metadata.namespace, gateway));
}

/** The order in which routes attached to one listener are taken: oldest first, then by name, as the API asks. */
export function routeOrder(a: HttpRoute, b: HttpRoute): number {
  const t = (r: HttpRoute) => new Date(r.metadata.creationTimestamp ?? 0).getTime();
  return t(a) - t(b) || a.metadata.name.localeCompare(b.metadata.name);
}

function backendOf(ref: BackendRef, routeNamespace: string, services: Set<string>): Backend {
  const weight = ref.weight ?? 1;
  if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service') {
    return { service: ref.name, weight, invalid: 'InvalidKind' };
  }
  // The model reads no ReferenceGrant: a Service of another namespace is never permitted.
  if ((ref.namespace ?? routeNamespace) !== routeNamespace)
    return { service: ref.name, weight, invalid: 'RefNotPermitted' };
  if (!services.has(ref.name)) return { service: ref.name, weight, invalid: 'BackendNotFound' };
  return { service: ref.name, weight };
}

/**
 * What the gateway makes of a route attached to it, given the Services of the
 * route's namespace: the model serves one rule matching every request (its
 * listener forwards connections, it reads no path or header), so a route of
 * more rules, or with matches or filters, is not Accepted (UnsupportedValue);
 * `served` false: another route holds the listener.
 */
export function planRoute(route: HttpRoute, services: Set<string>, served: boolean): RoutePlan {
  const rules = route.spec?.rules ?? [];
  const rule = rules[0];
  const everyPath = (m: unknown) => JSON.stringify(m) === JSON.stringify({ path: { type: 'PathPrefix', value: '/' } });
  const unsupported =
    rules.length !== 1
      ? `the lb-model gateway serves a route of one rule; this one has ${rules.length}`
      : !(rule?.matches ?? []).every(everyPath) || (rule?.filters ?? []).length > 0
        ? 'the lb-model gateway serves rules without matches (other than PathPrefix /) or filters'
        : !served
          ? 'the lb-model gateway serves one HTTPRoute; an older one is attached'
          : undefined;
  const backends = (rule?.backendRefs ?? []).map((r) => backendOf(r, route.metadata.namespace, services));
  const bad = backends.find((b) => b.invalid);
  return {
    accepted: unsupported
      ? { ok: false, reason: 'UnsupportedValue', message: unsupported }
      : { ok: true, reason: 'Accepted', message: 'programmed in the lb-model gateway' },
    resolvedRefs: bad
      ? { ok: false, reason: bad.invalid ?? '', message: `backendRef ${bad.service}: ${bad.invalid}` }
      : { ok: true, reason: 'ResolvedRefs', message: 'every backendRef is a Service of the route namespace' },
    backends: unsupported ? [] : backends,
  };
}

/**
 * The route's status.parents with the gateway's entry for this plan at this
 * generation; other controllers' and parents' entries are kept, and a
 * condition whose status did not change keeps its lastTransitionTime.
 */
export function routeParents(
  route: HttpRoute,
  parentRef: ParentRef,
  plan: RoutePlan,
  generation: number,
  now: string,
): RouteParentStatus[] {
  const parents = route.status?.parents ?? [];
  const mine = (p: RouteParentStatus) =>
    p.controllerName === GATEWAY_CONTROLLER &&
    namesGateway(p.parentRef, route.metadata.namespace, {
      namespace: parentRef.namespace ?? route.metadata.namespace,
      name: parentRef.name,
    });
  const before = parents.find(mine)?.conditions ?? [];
  const condition = (type: string, c: RoutePlan['accepted']): Condition => {
    const status = c.ok ? 'True' : 'False';
    const was = before.find((b) => b.type === type);
    const lastTransitionTime = was?.status === status && was.lastTransitionTime ? was.lastTransitionTime : now;
    return { type, status, reason: c.reason, message: c.message, observedGeneration: generation, lastTransitionTime };
  };
  const entry: RouteParentStatus = {
    parentRef,
    controllerName: GATEWAY_CONTROLLER,
    conditions: [condition('Accepted', plan.accepted), condition('ResolvedRefs', plan.resolvedRefs)],
  };
  return [...parents.filter((p) => !mine(p)), entry];
}

/** A backend as the listener sees it: its weight and registered targets, or invalid (its share answers 500). */
export interface ListenerBackend {
  weight: number;
  registered: string[];
  invalid?: boolean;
}

/**
 * Smooth weighted round robin (nginx's): which backend the next connection
 * goes to, deterministic, and as even as the weights allow at every point;
 * `current` is the running state, one number per backend, updated in place.
 * Backends of weight 0 get nothing; -1 when every weight is 0.
 */
export function pickWeighted(weights: number[], current: number[]): number {
  const total = weights.reduce((sum, w) => sum + Math.max(0, w), 0);
  if (total === 0) return -1;
  let best = -1;
  for (let i = 0; i < weights.length; i++) {
    const w = Math.max(0, weights[i] ?? 0);
    current[i] = (current[i] ?? 0) + w;
    if (w > 0 && (best < 0 || (current[i] ?? 0) > (current[best] ?? 0))) best = i;
  }
  current[best] = (current[best] ?? 0) - total;
  return best;
}

/**
 * What the listener is programmed with: each backend's weight and registered
 * targets (an invalid one marked), and every group's draining targets, those
 * of a Service no longer a backend included.
 */
export function listenerBackends(
  backends: Pick<Backend, 'service' | 'weight' | 'invalid'>[],
  groups: Map<string, Map<string, Target>>,
): { backends: ListenerBackend[]; draining: string[] } {
  return {
    backends: backends.map((b) =>
      b.invalid
        ? { weight: b.weight, registered: [], invalid: true }
        : { weight: b.weight, registered: listenerTargets(groups.get(b.service) ?? new Map()).registered },
    ),
    draining: [...groups.values()].flatMap((g) => listenerTargets(g).draining),
  };
}
