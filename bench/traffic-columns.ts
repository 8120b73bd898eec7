// The traffic bench's columns (bench/traffic.ts): each a controller and the
// way it switches, behind one interface: how it is started and killed, how an
// App or Rollout is written, what the bench reads to know it is waiting for
// promotion, switched, settled or aborted, and the writes a user makes to
// promote, abort and undo. Every column gets the same workload: 2 replicas, one
// container serving on 8080, blue/green with manual promotion, a full-size
// preview, and the same scale-down delays.
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type CoreV1Api,
  type CustomObjectsApi,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { intentAnnotation } from '../src/app/intents.ts';
import { LABEL_APP, LABEL_HASH, LABEL_SLOT } from '../src/app/labels.ts';
import { GROUP, PLURAL, VERSION } from '../src/app/schema.ts';
import { ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION } from '../src/rollout/route.ts';
import { LB_GATE_PREFIX } from '../test/cluster/data-plane/lb-plan.ts';
import type { DataPlane, GatewayModel } from '../test/cluster/data-plane.ts';
import { entrypointFlags, imageEnv } from '../test/support/dockerfile.ts';
import { freePort } from '../test/support/ports.ts';
import {
  ARGO,
  ARGO_HASH,
  argoControllerArgs,
  argoCrds,
  blueGreenRollout,
  PROMOTE_STATUS,
  pausedOnPreview,
  type RolloutStatus,
} from './argo-rollout.ts';
import { tealEntry } from './subjects.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const REPLICAS = 2;
const PORT = 8080;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface Clients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}

/** A running controller. */
export interface Controller {
  pid: number;
  ready(): Promise<boolean>;
  /** SIGKILL, and its exit. */
  kill(): Promise<void>;
  /** SIGTERM, and its exit. */
  stop(): Promise<void>;
}

export interface ColumnOptions {
  clients: Clients;
  kubeconfig: string;
  logDir: string;
  /** Seconds the replaced revision stays up after a switch, and an aborted preview after the abort. */
  scaleDownDelaySeconds: number;
  /** Teal from src/main.ts even when the bundle dist/teal.js exists. */
  tealSource?: boolean;
  /** The data plane, once started: the gateway columns start a gateway per App on it. */
  dataPlane?: () => DataPlane | undefined;
  /** The pod-aware delays of the gateway of the ping-pong column (the load balancer model's). */
  podAware?: { healthCheckDelayMs: number; drainDelayMs: number };
}

export interface Column {
  id: string;
  /** The column's heading in the table, and what runs. */
  title: string;
  how: string;
  namespace: string;
  /** The CRDs, as manifests to apply. */
  crds(): string[];
  start(): Promise<Controller>;
  /** The first release of `name` at `image`, and whatever a user writes beside it (Argo's Services). */
  create(name: string, image: string): Promise<void>;
  /** Deletes what create wrote. */
  remove(name: string): Promise<void>;
  /** The revision (pod-template hash) the active Service selects. */
  activeRevision(name: string): Promise<string | undefined>;
  /** The active Service's ClusterIP and port, as a URL. */
  clusterUrl(name: string): Promise<string>;
  /** The revision waiting for promotion once its preview is available; undefined before. */
  waitingPreview(name: string): Promise<string | undefined>;
  /** The controller says `revision` is active (switched, whatever is still to scale down). */
  switched(name: string, revision: string): Promise<boolean>;
  /** Pod counts by revision, terminating pods included. */
  pods(name: string): Promise<Map<string, number>>;
  /** The object's resourceVersion: the bench writes only once it has been calm for a moment. */
  version(name: string): Promise<string | undefined>;
  setImage(name: string, image: string): Promise<void>;
  promote(name: string): Promise<void>;
  abort(name: string): Promise<void>;
  /** The controller has taken the abort of `revision`. */
  abortTaken(name: string, revision: string): Promise<boolean>;
  /**
   * Back to the revision that served before (at `image`): Teal's undo intent; for Argo what
   * `kubectl argo rollouts undo` writes (the previous template), after which its blue/green may
   * preview that revision and wait for a promote (undoWaitsForPromote).
   */
  undo(name: string, image: string): Promise<void>;
  /** Whether an undo may pause on a preview that must be promoted (Argo), or always switches by itself (Teal). */
  undoWaitsForPromote: boolean;
  /**
   * The URL of the column's own load balancer path for `name` (the gateway the ping-pong columns start in
   * create, following the App's HTTPRoute); absent: the pod-aware load balancer model in front of the
   * active Service, which the scenario starts.
   */
  lbUrl?(name: string): string;
  /**
   * The controller's switch to `revision` is written where it first moves traffic: for the ping-pong
   * columns the route's weights (all on the slot `revision`'s pods run in), before the active Service
   * follows; absent: the active Service selects it. The kill scenario kills right after this.
   */
  switchWritten?(name: string, revision: string): Promise<boolean>;
}

function spawnLogged(command: string, args: string[], log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const out = openSync(log, 'a');
  return spawn(command, args, { stdio: ['ignore', out, out], env });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

function controller(child: ChildProcess, readyUrl: string): Controller {
  return {
    pid: child.pid ?? -1,
    ready: () => httpOk(readyUrl),
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    stop: async () => {
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited(child);
      clearTimeout(kill);
    },
  };
}

/** Pods of one workload counted by a revision label, terminating ones included. */
async function podsBy(core: CoreV1Api, namespace: string, selector: string, label: string) {
  const list = await core.listNamespacedPod({ namespace, labelSelector: selector });
  const out = new Map<string, number>();
  for (const p of list.items) {
    const rev = p.metadata?.labels?.[label] ?? '';
    out.set(rev, (out.get(rev) ?? 0) + 1);
  }
  return out;
}

async function clusterUrlOf(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  const spec = (await core.readNamespacedService({ namespace, name })).spec;
  const port = spec?.ports?.[0]?.port;
  if (!spec?.clusterIP || spec.clusterIP === 'None' || !port)
    throw new Error(`Service ${namespace}/${name} has no ClusterIP`);
  return `http://${spec.clusterIP}:${port}/`;
}

const notFound = (err: unknown) => (err as { code?: number }).code === 404;

// ---- Teal (plain selector): the active Service's selector is switched by a write, as today.

interface App extends KubernetesObject {
  metadata: KubernetesObject['metadata'] & { generation?: number };
  status?: {
    phase?: string;
    observedGeneration?: number;
    active?: { podTemplateHash?: string };
    preview?: { podTemplateHash?: string };
    conditions?: { type: string; status: string }[];
    handledIntents?: Record<string, string>;
  };
}

/**
 * Teal's ways of switching:
 * - plain: the active Service's selector, no blueGreen.switch (the scale-down delay counts from the switch);
 * - drain: the same with blueGreen.switch: {} (the delay counts only once the active Service's
 *   EndpointSlices list only the new revision's pods, all ready and serving);
 * - pingpong: blueGreen.pingPong and trafficRouting.gatewayAPI, the switch one write of the HTTPRoute's
 *   weights, through a gateway with pod-aware target groups whose readiness gate the pods name;
 * - gateway: the same through a gateway sending to the slot Services' ready endpoints as soon as it sees them.
 */
export type TealVariant = 'plain' | 'drain' | 'pingpong' | 'gateway';

const TEAL_TITLES: Record<TealVariant, { id: string; title: string }> = {
  plain: { id: 'teal', title: 'Teal (plain selector)' },
  drain: { id: 'drain', title: 'Teal (drain-verified)' },
  pingpong: { id: 'pingpong', title: 'Teal (ping-pong)' },
  gateway: { id: 'gateway', title: 'Teal (Gateway API)' },
};

/** The blue/green fields of a variant beyond the workload every column shares. */
function tealBlueGreen(variant: TealVariant, name: string): Record<string, unknown> {
  if (variant === 'drain') return { switch: {} };
  if (variant === 'plain') return {};
  return {
    pingPong: { pingService: `${name}-ping`, pongService: `${name}-pong` },
    trafficRouting: { gatewayAPI: { httpRoute: name } },
  };
}

/** The gateway a ping-pong App's route attaches to; it names the pods' readiness gate too. */
const gatewayName = (name: string) => `gw-${name}`;

export function tealPlain(opts: ColumnOptions, namespace: string, variant: TealVariant = 'plain'): Column {
  const { clients, scaleDownDelaySeconds } = opts;
  const api = { group: GROUP, version: VERSION, namespace, plural: PLURAL };
  const entry = tealEntry(opts.tealSource ?? false);
  const runtime = entry.path.endsWith('dist/teal.js')
    ? { nodeArgs: entrypointFlags(), env: imageEnv() }
    : { nodeArgs: [], env: {} };
  const get = async (name: string) => (await clients.custom.getNamespacedCustomObject({ ...api, name })) as App;
  const current = (a: App) => a.status?.observedGeneration === a.metadata?.generation;
  const intent = async (name: string, action: 'promote' | 'abort' | 'undo') => {
    const id = `bench-${action}-${Date.now()}`;
    const value = JSON.stringify({ id, by: 'bench', via: 'api', at: new Date().toISOString() });
    const body = { metadata: { annotations: { [intentAnnotation(action)]: value } } };
    await clients.custom.patchNamespacedCustomObject({ ...api, name, body }, merge);
    return id;
  };
  const lastAbort = new Map<string, string>();
  const routed = variant === 'pingpong' || variant === 'gateway';
  const podAware = variant === 'pingpong' ? opts.podAware : undefined;
  const gateways = new Map<string, GatewayModel>();
  const route = { group: ROUTE_GROUP, version: ROUTE_VERSION, namespace, plural: ROUTE_PLURAL };
  /**
   * As a user of ping-pong sets up once: the gateway (here the load balancer model's, started on the
   * data plane) and the HTTPRoute naming both slot Services, whose weights Teal writes.
   */
  const frontDoor = async (name: string) => {
    const dp = opts.dataPlane?.();
    if (!dp) throw new Error(`${variant}: the data plane is not started`);
    gateways.set(name, await dp.gateway({ name: gatewayName(name), namespace, ...(podAware ? { podAware } : {}) }));
    await clients.custom.createNamespacedCustomObject({
      ...route,
      body: {
        apiVersion: `${ROUTE_GROUP}/${ROUTE_VERSION}`,
        kind: 'HTTPRoute',
        metadata: { name },
        spec: {
          parentRefs: [{ name: gatewayName(name) }],
          rules: [
            {
              backendRefs: ['ping', 'pong'].map((slot) => ({ name: `${name}-${slot}`, port: 80, weight: 0 })),
            },
          ],
        },
      },
    });
  };
  return {
    ...TEAL_TITLES[variant],
    how:
      `Teal from the ${entry.how}` +
      (routed
        ? `, through the gateway model (test/cluster/lb-model.ts startGateway)${podAware ? ` with pod-aware target groups (${podAware.healthCheckDelayMs / 1000} s registration, ${podAware.drainDelayMs / 1000} s drain) whose readiness gate the pods name` : ', sending to ready endpoints as soon as it sees them (not pod-aware)'}`
        : ''),
    namespace,
    crds: () =>
      ['teal.dev_apps.yaml', 'teal.dev_analysistemplates.yaml'].map((f) =>
        readFileSync(join(root, 'config/crd', f), 'utf8'),
      ),
    start: async () => {
      const port = await freePort();
      const child = spawnLogged(
        process.execPath,
        [
          ...runtime.nodeArgs,
          entry.path,
          ...['--kubeconfig', opts.kubeconfig, '--namespace', namespace, '--leader-elect=false'],
          ...['--http-addr', `127.0.0.1:${port}`, '--log-level', 'warn'],
        ],
        join(opts.logDir, 'teal.log'),
        { ...process.env, ...runtime.env },
      );
      return controller(child, `http://127.0.0.1:${port}/readyz`);
    },
    create: async (name, image) => {
      if (routed) await frontDoor(name);
      const gates = podAware ? { readinessGates: [{ conditionType: `${LB_GATE_PREFIX}${gatewayName(name)}` }] } : {};
      await clients.custom.createNamespacedCustomObject({
        ...api,
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'App',
          metadata: { name },
          spec: {
            image,
            replicas: REPLICAS,
            template: { spec: { ...gates, containers: [{ name: 'app', ports: [{ containerPort: PORT }] }] } },
            strategy: {
              blueGreen: {
                autoPromotionEnabled: false,
                previewReplicaCount: REPLICAS,
                scaleDownDelaySeconds,
                abortScaleDownDelaySeconds: scaleDownDelaySeconds,
                ...tealBlueGreen(variant, name),
              },
            },
          },
        },
      });
    },
    remove: async (name) => {
      const ignore = (err: unknown) => {
        if (!notFound(err)) throw err;
      };
      await clients.custom.deleteNamespacedCustomObject({ ...api, name }).catch(ignore);
      if (!routed) return;
      await clients.custom.deleteNamespacedCustomObject({ ...route, name }).catch(ignore);
      await gateways.get(name)?.stop();
      gateways.delete(name);
    },
    ...(routed
      ? {
          lbUrl: (name: string) => {
            const gw = gateways.get(name);
            if (!gw) throw new Error(`${variant} ${name}: no gateway`);
            return gw.url;
          },
          switchWritten: async (name: string, revision: string) => {
            const pods = await clients.core.listNamespacedPod({
              namespace,
              labelSelector: `${LABEL_APP}=${name},${LABEL_HASH}=${revision}`,
            });
            const slot = pods.items[0]?.metadata?.labels?.[LABEL_SLOT];
            const r = (await clients.custom.getNamespacedCustomObject({ ...route, name })) as {
              spec?: { rules?: { backendRefs?: { name: string; weight?: number }[] }[] };
            };
            const refs = r.spec?.rules?.[0]?.backendRefs ?? [];
            return slot !== undefined && refs.every((b) => (b.name === `${name}-${slot}`) === (b.weight ?? 1) > 0);
          },
        }
      : {}),
    activeRevision: async (name) =>
      (await clients.core.readNamespacedService({ namespace, name })).spec?.selector?.[LABEL_HASH],
    clusterUrl: (name) => clusterUrlOf(clients.core, namespace, name),
    waitingPreview: async (name) => {
      const a = await get(name);
      const available = a.status?.conditions?.find((c) => c.type === 'PreviewAvailable')?.status === 'True';
      return current(a) && a.status?.phase === 'Paused' && available ? a.status?.preview?.podTemplateHash : undefined;
    },
    switched: async (name, revision) => {
      const a = await get(name);
      return current(a) && a.status?.phase === 'Healthy' && a.status.active?.podTemplateHash === revision;
    },
    pods: (name) => podsBy(clients.core, namespace, `${LABEL_APP}=${name}`, LABEL_HASH),
    version: async (name) => (await get(name)).metadata?.resourceVersion,
    setImage: async (name, image) => {
      await clients.custom.patchNamespacedCustomObject({ ...api, name, body: { spec: { image } } }, merge);
    },
    promote: async (name) => {
      await intent(name, 'promote');
    },
    abort: async (name) => {
      lastAbort.set(name, await intent(name, 'abort'));
    },
    abortTaken: async (name) => {
      const a = await get(name);
      return a.status?.handledIntents?.abort === lastAbort.get(name);
    },
    undo: async (name) => {
      await intent(name, 'undo');
    },
    undoWaitsForPromote: false,
  };
}

// ---- Argo Rollouts (selector swap)

interface Rollout extends KubernetesObject {
  status?: RolloutStatus;
}

export function argoSelectorSwap(opts: ColumnOptions & { home: string; version: string }, namespace: string): Column {
  const { clients, scaleDownDelaySeconds, home } = opts;
  const api = { ...ARGO, namespace };
  const container = (image: string) => ({ name: 'app', image, ports: [{ containerPort: PORT }] });
  const get = async (name: string) => (await clients.custom.getNamespacedCustomObject({ ...api, name })) as Rollout;
  const service = (name: string, preview: boolean) => ({
    metadata: { name: preview ? `${name}-preview` : name },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: PORT }] },
  });
  const setImage = async (name: string, image: string) => {
    const body = { spec: { template: { spec: { containers: [container(image)] } } } };
    await clients.custom.patchNamespacedCustomObject({ ...api, name, body }, merge);
  };
  const statusPatch = async (name: string, status: Record<string, unknown>) => {
    await clients.custom.patchNamespacedCustomObjectStatus({ ...api, name, body: { status } }, merge);
  };
  return {
    id: 'argo',
    title: 'Argo (selector swap)',
    how: `Argo Rollouts ${opts.version}, built from Go modules (test/cluster/build-argo.sh)`,
    namespace,
    crds: () => argoCrds(home),
    start: async () => {
      const [metrics, health] = [await freePort(), await freePort()];
      const child = spawnLogged(
        join(home, 'bin/rollouts-controller'),
        argoControllerArgs(opts.kubeconfig, namespace, { metrics, health }),
        join(opts.logDir, 'argo.log'),
      );
      return controller(child, `http://127.0.0.1:${health}/healthz`);
    },
    create: async (name, image) => {
      await clients.core.createNamespacedService({ namespace, body: service(name, false) });
      await clients.core.createNamespacedService({ namespace, body: service(name, true) });
      const delays = { replicas: REPLICAS, scaleDownDelaySeconds, abortScaleDownDelaySeconds: scaleDownDelaySeconds };
      await clients.custom.createNamespacedCustomObject({
        ...api,
        body: blueGreenRollout(name, container(image), delays),
      });
    },
    remove: async (name) => {
      const ignore = (err: unknown) => {
        if (!notFound(err)) throw err;
      };
      await clients.custom.deleteNamespacedCustomObject({ ...api, name }).catch(ignore);
      await clients.core.deleteNamespacedService({ namespace, name }).catch(ignore);
      await clients.core.deleteNamespacedService({ namespace, name: `${name}-preview` }).catch(ignore);
    },
    activeRevision: async (name) =>
      (await clients.core.readNamespacedService({ namespace, name })).spec?.selector?.[ARGO_HASH],
    clusterUrl: (name) => clusterUrlOf(clients.core, namespace, name),
    waitingPreview: async (name) => {
      const s = (await get(name)).status;
      return pausedOnPreview(s) ? s?.currentPodHash : undefined;
    },
    switched: async (name, revision) => {
      const s = (await get(name)).status;
      return (
        s?.phase === 'Healthy' &&
        s.stableRS === revision &&
        s.currentPodHash === revision &&
        s.blueGreen?.activeSelector === revision
      );
    },
    pods: (name) => podsBy(clients.core, namespace, `app=${name}`, ARGO_HASH),
    version: async (name) => (await get(name)).metadata?.resourceVersion,
    setImage,
    // As `kubectl argo rollouts promote` does for a paused blue/green Rollout.
    promote: (name) => statusPatch(name, PROMOTE_STATUS),
    // As `kubectl argo rollouts abort` does.
    abort: (name) => statusPatch(name, { abort: true }),
    abortTaken: async (name) => {
      const s = (await get(name)).status;
      return s?.abort === true && s.phase === 'Degraded';
    },
    // `kubectl argo rollouts undo` writes the previous revision's template back: here, its image.
    undo: (name, image) => setImage(name, image),
    undoWaitsForPromote: true,
  };
}
