// A real data plane for traffic tests: a network namespace the test makes
// (ip netns), a real kube-proxy inside it (nftables mode) fed by the test
// cluster's API server through a Unix socket, and a kubelet stand-in for the
// pods of the namespaces the test names (whose names start with traffic-, which
// KWOK leaves Running and not Ready; see stages.yaml): each pod's server
// answers on its pod IP inside the namespace, the pod is Ready only once its
// readiness probe answers, and a deleted pod drains (preStop, then new
// connections refused, in-flight requests finish within the grace period).
// Requests go only to the namespace's own addresses: it has no device but lo.
// Needs root (dataPlaneUnavailable says why not). Free of vitest, like the
// rest of test/cluster; test/support/data-plane.ts wires it into e2e tests.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  type KubeConfig,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { waitFor } from '../support/wait.ts';
import type { AgentConfig, Answer, TrafficStats } from './data-plane/agent.ts';
import { gatedReadyStatus, type PodServe, podProbe, podServe, podStop, readyStatus } from './data-plane/pod-plan.ts';
import { relayServer } from './data-plane/relay.ts';
import {
  type GatewayModel,
  type GatewayOptions,
  type LoadBalancer,
  type LoadBalancerOptions,
  startGateway,
  startLoadBalancer,
} from './lb-model.ts';

export type { Answer, TrafficStats } from './data-plane/agent.ts';
export { DATA_PLANE_READY_REASON } from './data-plane/pod-plan.ts';
export type {
  BackendTarget,
  GatewayModel,
  GatewayOptions,
  LoadBalancer,
  LoadBalancerOptions,
  Target,
} from './lb-model.ts';

const run = promisify(execFile);

/** Namespaces whose app pods the data plane plays the kubelet for (KWOK's stages leave them to it). */
export const TRAFFIC_NAMESPACE_PREFIX = 'traffic';
/** Every data plane's network namespace and folder: teal-dp-<owner pid>-<hex>, so a stale one is known by its owner. */
const NAME_PREFIX = 'teal-dp-';
const AGENT = fileURLToPath(new URL('./data-plane/agent.ts', import.meta.url));
/** Inside the namespace only: the API relay and kube-proxy's health and metrics ports. */
const API_PORT = 6443;
/** The address requests to ClusterIPs leave from, inside the namespace: neither a pod IP (10.244/16) nor a ClusterIP. */
const CLIENT_IP = '10.254.254.1';
/** Load balancer models' and gateways' listeners take 10.253.0.<n>: neither a pod IP, a ClusterIP nor the client's. */
const LB_ADDRESS_PREFIX = '10.253.0.';
const HEALTHZ_PORT = 10256;
const METRICS_PORT = 10249;
/** The kubelet stand-in's look at the pods, and its readiness probes' period. */
const POLL_MS = 250;
const PROBE_TIMEOUT_MS = 1_000;

export interface DataPlaneOptions {
  kc: KubeConfig;
  binDir: string;
  /** The namespaces (each traffic-*) whose app pods get servers. */
  namespaces: string[];
  /** The node kube-proxy runs as (KWOK's). */
  nodeName: string;
  /**
   * The agent's niceness (kube-proxy, the pods' servers, the load balancer's listener, the traffic
   * loops), below 0 to run before the control plane and the controllers under test on a busy
   * machine: it stands in for other machines' kernels and pods, which a busy control plane does not
   * slow. The bench uses it; tests run at 0.
   */
  nice?: number;
  log?: (line: string) => void;
}

export interface TrafficOptions {
  rps: number;
  timeoutMs: number;
  maxMs?: number;
  maxInFlight?: number;
}

export interface Traffic {
  stats: () => Promise<TrafficStats>;
  /** Stops sending, waits for the requests in flight, and returns every answer. */
  stop: () => Promise<TrafficStats>;
}

export interface DataPlane {
  /** The network namespace's name. */
  name: string;
  /** One GET from inside the namespace, on a new connection. */
  request: (url: string, timeoutMs?: number) => Promise<Answer>;
  /**
   * A bounded loop of GETs from inside the namespace (data-plane/traffic.ts): rps a second, each on a
   * new connection and cut at timeoutMs, at most maxInFlight open at once (256 unless said), ending at maxMs.
   */
  traffic: (url: string, opts: TrafficOptions) => Promise<Traffic>;
  /** Which pod holds GET /hold/<token> open, if one does; release(token) lets it answer. */
  held: (token: string) => Promise<string | undefined>;
  release: (token: string) => Promise<void>;
  /** The namespace's nftables ruleset: kube-proxy's rules. */
  ruleset: () => Promise<string>;
  /** The readiness probes of a pod (namespace/name) that got no 200, so far. */
  probeFailures: (key: string) => number;
  /** Keys (namespace/name) of the pods whose servers are up (draining ones included). */
  serving: () => Promise<string[]>;
  /** Keys (namespace/name) of the pods being stopped: in their preStop hook or draining. */
  stopping: () => Promise<string[]>;
  /** A pod-aware load balancer model (lb-model.ts) in front of a Service, listening at an address of its own here. */
  loadBalancer: (options: LoadBalancerOptions) => Promise<LoadBalancer>;
  /**
   * A Gateway API gateway (lb-model.ts startGateway): a Gateway and GatewayClass of its own, following the
   * HTTPRoute attached to the Gateway, listening at an address of its own here. The CRDs must be installed.
   */
  gateway: (options: GatewayOptions) => Promise<GatewayModel>;
  /**
   * A way in from outside the namespace: http://127.0.0.1:<port> on the host, each connection made again
   * inside the namespace to host:port (a ClusterIP, a load balancer's listener), as a node port or an
   * external load balancer takes clients to a Service. What the operator, which runs on the host, can
   * reach, for the traffic check. Closed with the data plane.
   */
  entry: (host: string, port: number) => Promise<string>;
  stop: () => Promise<void>;
}

/** Why this machine cannot run the data plane, or undefined when it can. */
export function dataPlaneUnavailable(binDir: string): string | undefined {
  if (process.getuid?.() !== 0) return 'the data plane makes a network namespace: needs root';
  if (!existsSync(join(binDir, 'kube-proxy'))) return `no kube-proxy in ${binDir}: run make binaries`;
  try {
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no nft (Debian package nftables): run make build-tools';
  }
  const probe = `${NAME_PREFIX}probe-${process.pid}-${randomBytes(3).toString('hex')}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' });
    execFileSync('ip', ['netns', 'exec', probe, 'nft', 'list', 'ruleset'], { stdio: 'pipe' });
  } catch (err) {
    return `the kernel refused a network namespace with nftables: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`;
  } finally {
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
  }
  return undefined;
}

/** The owner pid in a data plane's name, or NaN for a name that is not one. */
function ownerOf(name: string): number {
  const m = /^teal-dp-(?:probe-)?(\d+)-[0-9a-f]+$/.exec(name);
  return m ? Number(m[1]) : Number.NaN;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills what runs in a network namespace and deletes it, and its folder. Sync: it also runs at exit. */
function removeSync(name: string, log: (line: string) => void): void {
  try {
    const pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {}
    }
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch (err) {
    if (existsSync(`/run/netns/${name}`)) log(`data plane ${name}: ${String(err)}`);
  }
  rmSync(join(tmpdir(), name), { recursive: true, force: true });
}

/** Removes data planes (namespaces, their processes, folders) left by runs that died without cleaning up. */
export function reapStaleDataPlanes(log: (line: string) => void = () => {}): void {
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  const dirs = readdirSync(tmpdir());
  for (const name of new Set([...netns, ...dirs].filter((n) => n.startsWith(NAME_PREFIX)))) {
    const owner = ownerOf(name);
    if (Number.isNaN(owner) || isAlive(owner)) continue;
    log(`removing a stale data plane ${name} (its owner ${owner} is gone)`);
    removeSync(name, log);
  }
}

async function serviceCidrs(kc: KubeConfig): Promise<string[]> {
  const list = await kc.makeApiClient(NetworkingV1Api).listServiceCIDR();
  const cidrs = list.items.flatMap((s) => s.spec?.cidrs ?? []).filter((c) => !c.includes(':'));
  if (cidrs.length === 0) throw new Error('the API server lists no IPv4 ServiceCIDR');
  return cidrs;
}

/** A kubeconfig for kube-proxy: the same credentials, the API server at the relay inside the namespace. */
function relayKubeconfig(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user) throw new Error('the kubeconfig has no current cluster or user');
  const file = (data: string | undefined, path: string | undefined, key: string) =>
    data ? { [`${key}-data`]: data } : path ? { [key]: path } : {};
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: {
          server: `https://127.0.0.1:${API_PORT}`,
          ...file(cluster.caData, cluster.caFile, 'certificate-authority'),
        },
      },
    ],
    users: [
      {
        name: 'u',
        user: {
          ...file(user.certData, user.certFile, 'client-certificate'),
          ...file(user.keyData, user.keyFile, 'client-key'),
          ...(user.token ? { token: user.token } : {}),
        },
      },
    ],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'c',
  });
}

function kubeProxyConfig(kubeconfig: string, nodeName: string): string {
  return JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'nftables',
    clientConnection: { kubeconfig },
    hostnameOverride: nodeName,
    bindAddress: '127.0.0.1',
    healthzBindAddress: `127.0.0.1:${HEALTHZ_PORT}`,
    metricsBindAddress: `127.0.0.1:${METRICS_PORT}`,
    // The namespace's own conntrack table: leave its limits alone.
    conntrack: { maxPerCore: 0, min: 0 },
    configSyncPeriod: '1m',
  });
}

/** The host end of the API relay: a Unix socket piped to the API server on 127.0.0.1. */
async function apiBridge(kc: KubeConfig, socket: string): Promise<net.Server> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  if (server.hostname !== '127.0.0.1') throw new Error(`the API server is at ${server.host}, not on 127.0.0.1`);
  const bridge = relayServer(() => net.connect(Number(server.port), '127.0.0.1'));
  await new Promise<void>((resolve) => bridge.listen(socket, resolve));
  return bridge;
}

function control(socket: string) {
  return <T>(path: string, body: Record<string, unknown> = {}): Promise<T> =>
    new Promise((resolve, reject) => {
      const req = http.request({ socketPath: socket, path, method: 'POST' }, (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          raw += c;
        });
        res.on('end', () => {
          try {
            const parsed = JSON.parse(raw) as T & { error?: string };
            if (res.statusCode === 200) resolve(parsed);
            else reject(new Error(`data plane ${path}: ${parsed.error ?? raw}`));
          } catch (err) {
            reject(err);
          }
        });
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
}

type Control = ReturnType<typeof control>;

export async function startDataPlane(options: DataPlaneOptions): Promise<DataPlane> {
  const log = options.log ?? (() => {});
  for (const ns of options.namespaces) {
    if (!ns.startsWith(`${TRAFFIC_NAMESPACE_PREFIX}-`)) {
      throw new Error(`namespace ${ns}: KWOK makes pods Ready outside ${TRAFFIC_NAMESPACE_PREFIX}-* namespaces`);
    }
  }
  reapStaleDataPlanes(log);
  const name = `${NAME_PREFIX}${process.pid}-${randomBytes(3).toString('hex')}`;
  const dir = join(tmpdir(), name);
  mkdirSync(dir, { recursive: true });
  const onExit = () => removeSync(name, log);
  process.once('exit', onExit);
  let bridge: net.Server | undefined;
  let agent: ChildProcess | undefined;
  let kubelet: Kubelet | undefined;
  const stop = async () => {
    kubelet?.stop();
    await kubelet?.done;
    agent?.stdin?.end();
    if (agent && agent.exitCode === null) await new Promise((resolve) => agent?.once('exit', resolve));
    bridge?.close();
    removeSync(name, log);
    process.off('exit', onExit);
  };
  try {
    await makeNetworkNamespace(name, await serviceCidrs(options.kc));
    bridge = await apiBridge(options.kc, join(dir, 'api.sock'));
    agent = startAgent(name, dir, options);
    const call = control(join(dir, 'control.sock'));
    await waitForKubeProxy(agent, dir, call);
    kubelet = new Kubelet(options.kc, options.namespaces, call, log);
    const balancers: Pick<LoadBalancer, 'stop'>[] = [];
    let addresses = 0;
    const loadBalancer = async (lb: LoadBalancerOptions) => {
      const started = await startLoadBalancer(options.kc, call, `${LB_ADDRESS_PREFIX}${++addresses}`, lb, log);
      balancers.push(started);
      return started;
    };
    const gateway = async (gw: GatewayOptions) => {
      const started = await startGateway(options.kc, call, `${LB_ADDRESS_PREFIX}${++addresses}`, gw, log);
      balancers.push(started);
      return started;
    };
    const entries: net.Server[] = [];
    const entry = async (host: string, port: number) => {
      const socket = join(dir, `entry-${entries.length + 1}.sock`);
      await call('/entry/open', { socket, host, port });
      const server = relayServer(() => net.connect(socket));
      entries.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    };
    const stopAll = async () => {
      for (const server of entries) server.close();
      for (const lb of balancers) await lb.stop().catch((err) => log(`load balancer: ${String(err)}`));
      await stop();
    };
    return dataPlaneApi(name, call, kubelet, { loadBalancer, gateway, entry }, stopAll);
  } catch (err) {
    log(`data plane ${name} failed to start; kube-proxy said: ${tail(join(dir, 'kube-proxy.log'))}`);
    await stop();
    throw err;
  }
}

/** The namespace: lo up, the client's own address, and a route for each Service range. */
async function makeNetworkNamespace(name: string, serviceRanges: string[]): Promise<void> {
  await run('ip', ['netns', 'add', name]);
  await run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  // Without a route, connect() to a ClusterIP fails before the output hook's DNAT runs. Requests
  // leave from an address of their own: the kernel would otherwise pick a pod's IP on lo, and a
  // request from a pod to itself is hairpin traffic, which kube-proxy masquerades.
  await run('ip', ['-n', name, 'addr', 'add', `${CLIENT_IP}/32`, 'dev', 'lo']);
  for (const cidr of serviceRanges) await run('ip', ['-n', name, 'route', 'add', cidr, 'dev', 'lo', 'src', CLIENT_IP]);
}

/** The agent inside the namespace (`ip netns exec`), which starts kube-proxy there. */
function startAgent(name: string, dir: string, options: DataPlaneOptions): ChildProcess {
  writeFileSync(join(dir, 'kubeconfig.json'), relayKubeconfig(options.kc));
  writeFileSync(join(dir, 'kube-proxy.json'), kubeProxyConfig(join(dir, 'kubeconfig.json'), options.nodeName));
  const config: AgentConfig = {
    controlSocket: join(dir, 'control.sock'),
    apiSocket: join(dir, 'api.sock'),
    apiPort: API_PORT,
    healthzPort: HEALTHZ_PORT,
    kubeProxy: {
      bin: join(options.binDir, 'kube-proxy'),
      args: [`--config=${join(dir, 'kube-proxy.json')}`, '--v=2'],
      log: join(dir, 'kube-proxy.log'),
    },
  };
  const agentLog = openSync(join(dir, 'agent.log'), 'a');
  const nice = options.nice ? ['nice', '-n', String(options.nice)] : [];
  return spawn('ip', ['netns', 'exec', name, ...nice, process.execPath, AGENT, JSON.stringify(config)], {
    stdio: ['pipe', agentLog, agentLog],
  });
}

/** kube-proxy's /healthz answers 200 once it has synced its rules from the API server. */
async function waitForKubeProxy(agent: ChildProcess, dir: string, call: Control): Promise<void> {
  await waitFor(
    'kube-proxy in the data plane to be healthy',
    async () => {
      if (agent.exitCode !== null) throw new Error(`the data plane agent exited: ${tail(join(dir, 'agent.log'))}`);
      const { kubeProxy } = await call<{ kubeProxy: number | string }>('/health');
      return kubeProxy === 200 ? true : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

type Serving = { keys: string[]; stopping: string[] };
/** The agent's keys are namespace/name/uid. */
const podKeyOf = (serverKey: string) => serverKey.split('/').slice(0, 2).join('/');

function dataPlaneApi(
  name: string,
  call: Control,
  kubelet: Kubelet,
  ways: Pick<DataPlane, 'loadBalancer' | 'gateway' | 'entry'>,
  stop: () => Promise<void>,
): DataPlane {
  return {
    name,
    request: (url, timeoutMs = 5_000) => call<Answer>('/request', { url, timeoutMs }),
    traffic: async (url, opts) => {
      const { id } = await call<{ id: string }>('/traffic/start', { url, ...opts });
      return {
        stats: () => call<TrafficStats>('/traffic/stats', { id }),
        stop: () => call<TrafficStats>('/traffic/stop', { id }),
      };
    },
    held: async (token) => (await call<{ pod?: string }>('/held', { token })).pod,
    release: (token) => call('/release', { token }),
    ruleset: async () => (await call<{ text: string }>('/ruleset')).text,
    probeFailures: (key) => kubelet.probeFailures.get(key) ?? 0,
    serving: async () => (await call<Serving>('/serving')).keys.map(podKeyOf),
    stopping: async () => (await call<Serving>('/serving')).stopping.map(podKeyOf),
    ...ways,
    stop,
  };
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A pod the stand-in has a server up for: namespace/name/uid, so a pod made again under its name is another. */
const serverKey = (serve: PodServe, uid: string) => `${serve.key}/${uid}`;

/**
 * The kubelet's part for the data plane, from a look at the pods every
 * POLL_MS: a Running pod with an IP gets its server, then its readiness probe
 * until it answers 200, then Ready; a pod with a deletionTimestamp is stopped
 * (podStop) and then removed, as a kubelet removes a pod whose containers have
 * exited. Ready is what a kubelet computes: the probe answered and every
 * readiness gate the pod names is True (a gate set later, by a load balancer,
 * makes it Ready then; ContainersReady is the probe's part alone). A pod gone from the API server (KWOK's deadline stage, a forced
 * delete) has its server cut at once.
 */
class Kubelet {
  readonly probeFailures = new Map<string, number>();
  readonly done: Promise<void>;
  private stopped = false;
  /** serverKey → what is being done for that pod; one step at a time per pod. */
  private readonly handled = new Map<string, Promise<void>>();
  /** Pods (uid:gates) whose Ready is being brought in line with their readiness gates. */
  private readonly gating = new Set<string>();
  private readonly core: CoreV1Api;
  private readonly namespaces: string[];
  private readonly call: Control;
  private readonly log: (line: string) => void;

  constructor(kc: KubeConfig, namespaces: string[], call: Control, log: (line: string) => void) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.namespaces = namespaces;
    this.call = call;
    this.log = log;
    this.done = this.loop();
  }

  stop(): void {
    this.stopped = true;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      await this.look().catch((err) => this.log(`data plane: list pods: ${String(err)}`));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    // Steps still running (a pod in a long preStop) end with the agent, which stop() ends next.
  }

  private async look(): Promise<void> {
    const pods = (
      await Promise.all(this.namespaces.map((namespace) => this.core.listNamespacedPod({ namespace })))
    ).flatMap((l) => l.items);
    const present = new Set<string>();
    for (const pod of pods) {
      const serve = podServe(pod);
      const uid = pod.metadata?.uid ?? '';
      if (serve) present.add(serverKey(serve, uid));
      if (pod.metadata?.deletionTimestamp) this.once(`${uid}:stop`, () => this.terminate(pod, serve));
      else if (serve) {
        this.once(`${uid}:serve`, () => this.start(pod, serve));
        this.followGates(pod);
      }
    }
    const serving = (await this.call<{ keys: string[] }>('/serving')).keys;
    for (const key of serving) if (!present.has(key)) void this.call('/kill', { key }).catch(() => {});
  }

  private once(step: string, action: () => Promise<void>): void {
    if (this.handled.has(step)) return;
    this.handled.set(
      step,
      action().catch((err) => {
        if (!this.stopped) this.log(`data plane: ${step}: ${err instanceof Error ? err.message : String(err)}`);
      }),
    );
  }

  private async start(pod: V1Pod, serve: PodServe): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    await this.call('/serve', { ...serve, key: serverKey(serve, uid) });
    const probe = podProbe(pod, serve);
    const url = `http://${serve.ip}:${probe.port}${probe.path}`;
    while (!this.stopped && !this.handled.has(`${uid}:stop`)) {
      const answer = await this.call<Answer>('/request', { url, timeoutMs: PROBE_TIMEOUT_MS });
      if (answer.status === 200) return this.patchStatus(pod, readyStatus(pod, new Date()));
      this.probeFailures.set(serve.key, (this.probeFailures.get(serve.key) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** A readiness gate's condition changed on a pod whose containers are ready: Ready follows, as a kubelet's does. */
  private followGates(pod: V1Pod): void {
    const status = gatedReadyStatus(pod, new Date());
    const key = `${pod.metadata?.uid ?? ''}:gates`;
    if (!status || this.gating.has(key)) return;
    this.gating.add(key);
    void this.patchStatus(pod, status)
      .catch((err) => this.log(`data plane: ${key}: ${String(err)}`))
      .finally(() => this.gating.delete(key));
  }

  private async patchStatus(pod: V1Pod, status: Record<string, unknown>): Promise<void> {
    await this.core.patchNamespacedPodStatus(
      { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  }

  private async terminate(pod: V1Pod, serve: PodServe | undefined): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    await this.handled.get(`${uid}:serve`);
    if (serve) await this.call('/stop', { key: serverKey(serve, uid), ...podStop(pod) });
    // Its containers have exited: the kubelet's final delete (grace 0) removes the pod. Gone already is fine.
    await this.core
      .deleteNamespacedPod({
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? '',
        gracePeriodSeconds: 0,
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 404) throw err;
      });
  }
}
