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
  /** Whether its latest health check answered 200. */
  answering: boolean;
}

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
    const fresh = !was || was.state === 'draining';
    const t: Target = fresh ? { ...e, state: 'initial', seenAt: now, answering: false } : { ...was };
    t.answering = answering.get(e.target) ?? false;
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

/** What the listener sends to: new connections to registered targets that answer; draining ones keep theirs. */
export function listenerTargets(targets: Map<string, Target>): { registered: string[]; draining: string[] } {
  const all = [...targets.values()];
  return {
    registered: all.filter((t) => t.state === 'healthy' && t.answering).map((t) => t.target),
    draining: all.filter((t) => t.state === 'draining').map((t) => t.target),
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
