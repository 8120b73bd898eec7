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
import {
  CoreV1Api,
  DiscoveryV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Answer } from './data-plane/agent.ts';
import {
  type Delays,
  endpointsOf,
  LB_GATE_PREFIX,
  LB_GATE_REASON,
  listenerTargets,
  planTargets,
  podsToGate,
  type Target,
} from './data-plane/lb-plan.ts';

export type { Target } from './data-plane/lb-plan.ts';

/** The controller's look at the Service's endpoints and health checks. */
const POLL_MS = 250;
const HEALTH_CHECK_TIMEOUT_MS = 1_000;

type Call = <T>(path: string, body?: Record<string, unknown>) => Promise<T>;

export interface LoadBalancerOptions extends Delays {
  /** Names the load balancer and its gate (LB_GATE_PREFIX + name). */
  name: string;
  namespace: string;
  service: string;
  /** The path its health checks ask each target; '/' unless said. */
  healthCheckPath?: string;
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
  stop: () => Promise<void>;
}

export async function startLoadBalancer(
  kc: KubeConfig,
  call: Call,
  address: string,
  options: LoadBalancerOptions,
  log: (line: string) => void,
): Promise<LoadBalancer> {
  const { listener } = await call<{ listener: string }>('/lb/listen', { ip: address, port: 80 });
  const controller = new Controller(kc, call, listener, options, log);
  return {
    url: `http://${address}/`,
    gate: controller.gate,
    targets: () => [...controller.targets.values()],
    open: async () => (await call<{ open: Record<string, number> }>('/lb/open', { listener })).open,
    stop: async () => {
      controller.stopped = true;
      await controller.done;
      await call('/lb/close', { listener });
    },
  };
}

class Controller {
  readonly gate: string;
  targets = new Map<string, Target>();
  stopped = false;
  readonly done: Promise<void>;
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;
  private readonly call: Call;
  private readonly listener: string;
  private readonly options: LoadBalancerOptions;
  private readonly log: (line: string) => void;

  constructor(kc: KubeConfig, call: Call, listener: string, options: LoadBalancerOptions, log: (line: string) => void) {
    this.call = call;
    this.listener = listener;
    this.options = options;
    this.log = log;
    this.gate = `${LB_GATE_PREFIX}${options.name}`;
    this.core = kc.makeApiClient(CoreV1Api);
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      await this.round().catch((err) => this.log(`lb ${this.options.name}: ${String(err)}`));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  private async round(): Promise<void> {
    const { namespace, service } = this.options;
    const [slices, podList] = await Promise.all([
      this.discovery.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${service}` }),
      this.core.listNamespacedPod({ namespace }),
    ]);
    const pods = new Map<string, V1Pod>(podList.items.map((p) => [p.metadata?.name ?? '', p]));
    const endpoints = endpointsOf(slices.items, pods, this.gate);
    const answering = new Map(
      await Promise.all(endpoints.map(async (e) => [e.target, await this.check(e.target)] as const)),
    );
    this.targets = planTargets(this.targets, endpoints, answering, Date.now(), this.options);
    await this.call('/lb/targets', { listener: this.listener, ...listenerTargets(this.targets) });
    for (const pod of podsToGate(this.targets, pods, this.gate)) await this.setGate(pod);
  }

  private async check(target: string): Promise<boolean> {
    const url = `http://${target}${this.options.healthCheckPath ?? '/'}`;
    const answer = await this.call<Answer>('/request', { url, timeoutMs: HEALTH_CHECK_TIMEOUT_MS });
    return answer.status === 200;
  }

  private async setGate(pod: V1Pod): Promise<void> {
    const condition = {
      type: this.gate,
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
