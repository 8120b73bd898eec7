// The two controllers under test, behind one interface: how each is started,
// what its objects look like, when one is converged or paused on a preview,
// how it is promoted, and which audit events are its own requests. Both get
// the same pod template (2 replicas, 1 container, port 8080) and the same
// blue/green settings (no auto-promotion, a full-size preview, no scale-down delay).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  type CoreV1Api,
  type CustomObjectsApi,
  type KubernetesListObject,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { intentAnnotation } from '../src/app/intents.ts';
import { LABEL_HASH } from '../src/app/labels.ts';
import { GROUP, PLURAL, VERSION } from '../src/app/schema.ts';
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
} from './argo-rollout.ts';
import { type AuditEvent, isArgoRequest, isTealRequest } from './audit.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
export const IMAGE = 'registry.example.com/bench/web';
const REPLICAS = 2;
const PORT = 8080;
const container = (image: string) => ({ name: 'app', image, ports: [{ containerPort: PORT }] });
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface Clients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
}

/** A controller process, started once per run and again for the cold start. */
export interface Running {
  pid: number;
  /** Whether its readiness (or health) endpoint answers 200 now. */
  ready(): Promise<boolean>;
  /** Its heap: after a forced GC for Teal, Go's heap in use (no GC forced) for Argo. */
  heap(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** A Rollout's or an App's status, as far as the bench reads it. */
export interface Workload extends KubernetesObject {
  status?: {
    phase?: string;
    observedGeneration?: number | string;
    preview?: unknown;
    currentPodHash?: string;
    stableRS?: string;
    blueGreen?: { activeSelector?: string; previewSelector?: string };
    controllerPause?: boolean;
    pauseConditions?: { reason?: string }[] | null;
  };
}

export interface ServiceObject extends KubernetesObject {
  spec?: { selector?: Record<string, string> };
}

export interface Subject {
  id: 'teal' | 'argo';
  /** The controller and how it runs, for the table's header. */
  title: string;
  namespace: string;
  /** Whether the request is this controller's, by its user agent. */
  own(e: AuditEvent): boolean;
  install(): Promise<void>;
  /** What a user writes beside the App before it, untimed: Argo's two Services. */
  prepare?(name: string): Promise<void>;
  create(name: string): Promise<void>;
  objectsPath: string;
  list(): Promise<KubernetesListObject<Workload>>;
  /** The label selector of the active Services, and the pod-template hash each selects. */
  activeServices: string;
  selectedHash(svc: ServiceObject): string | undefined;
  converged(obj: Workload): boolean;
  /** Paused on a preview of a new revision, waiting for promotion. */
  pausedOnPreview(obj: Workload): boolean;
  setImage(name: string, image: string): Promise<void>;
  promote(name: string): Promise<void>;
  start(): Promise<Running>;
}

export interface SubjectOptions {
  clients: Clients;
  /** The controller's own kubeconfig (the cluster admin; not the bench's impersonating one). */
  kubeconfig: string;
  logDir: string;
  apply: (manifest: string) => Promise<void>;
}

/** The operator's own HTTP GET, with a bound so a hung process reads as not ready. */
async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

const children = new Set<ChildProcess>();

/** Kills every controller still running: the bench exits on an error or Ctrl-C without leaving one behind. */
export function killControllers(): void {
  for (const child of children) child.kill('SIGKILL');
}

function spawnLogged(command: string, args: string[], log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const out = openSync(log, 'a');
  const child = spawn(command, args, { stdio: ['ignore', out, out], env });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** SIGTERM, then SIGKILL if it has not exited within a grace period. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(kill);
}

// ---- Teal ----

/** A Teal operator run from the sources with these flags, its heap readable after a GC (heap-probe.mjs). */
export interface OperatorProcess {
  pid: number;
  heap(): Promise<number | undefined>;
  stop(): Promise<void>;
  kill(): void;
}

export function spawnOperator(opts: { args: string[]; logFile: string; heapFile: string }): OperatorProcess {
  const child = spawnLogged(
    process.execPath,
    ['--expose-gc', '--import', join(root, 'bench/heap-probe.mjs'), join(root, 'src/main.ts'), ...opts.args],
    opts.logFile,
    { ...process.env, TEAL_BENCH_HEAP_FILE: opts.heapFile },
  );
  return {
    pid: child.pid ?? -1,
    heap: () => tealHeap(child, opts.heapFile),
    stop: () => stopProcess(child),
    kill: () => child.kill('SIGKILL'),
  };
}

export interface TealOptions extends SubjectOptions {
  /** Run src/main.ts even when the bundle exists. */
  source: boolean;
  /** Extra node flags (TEAL_OPERATOR_NODE_ARGS), e.g. GC settings under trial. */
  nodeArgs: string[];
}

export function tealEntry(source: boolean): { path: string; how: string } {
  const bundle = join(root, 'dist/teal.js');
  if (!source && existsSync(bundle)) {
    // The bundle is built apart (npm run bundle) and may be older than the source: say when.
    const built = statSync(bundle).mtime.toISOString().slice(0, 16).replace('T', ' ');
    return { path: bundle, how: `bundle dist/teal.js, built ${built} UTC` };
  }
  return {
    path: join(root, 'src/main.ts'),
    how: source ? 'source src/main.ts' : 'source src/main.ts: no dist/teal.js',
  };
}

export function teal(opts: TealOptions, namespace: string): Subject {
  const { clients, kubeconfig, logDir } = opts;
  const entry = tealEntry(opts.source);
  // The bundle runs as the image runs it (the Dockerfile's flags and ENV), so the bench measures
  // what ships; the source runs as `make run` does. TEAL_OPERATOR_NODE_ARGS replaces the flags.
  const runtime = entry.path.endsWith('dist/teal.js')
    ? { nodeArgs: entrypointFlags(), env: imageEnv() }
    : { nodeArgs: [], env: {} };
  const nodeArgs = opts.nodeArgs.length > 0 ? opts.nodeArgs : runtime.nodeArgs;
  const api = { group: GROUP, version: VERSION, namespace, plural: PLURAL };
  return {
    id: 'teal',
    title: `Teal (${[entry.how, ...nodeArgs].join(' ')})`,
    namespace,
    own: isTealRequest,
    install: async () => {
      for (const crd of ['teal.dev_apps.yaml', 'teal.dev_analysistemplates.yaml']) {
        await opts.apply(readFileSync(join(root, 'config/crd', crd), 'utf8'));
      }
    },
    create: async (name) => {
      await clients.custom.createNamespacedCustomObject({
        ...api,
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'App',
          metadata: { name },
          spec: {
            image: `${IMAGE}:1`,
            replicas: REPLICAS,
            template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: PORT }] }] } },
            strategy: {
              blueGreen: { autoPromotionEnabled: false, previewReplicaCount: REPLICAS, scaleDownDelaySeconds: 0 },
            },
          },
        },
      });
    },
    objectsPath: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
    list: async () => (await clients.custom.listNamespacedCustomObject(api)) as KubernetesListObject<Workload>,
    activeServices: 'teal.dev/role=active',
    selectedHash: (svc) => svc.spec?.selector?.[LABEL_HASH],
    converged: (a) => a.status?.phase === 'Healthy' && a.status.observedGeneration === a.metadata?.generation,
    pausedOnPreview: (a) =>
      a.status?.phase === 'Paused' &&
      a.status.preview !== undefined &&
      a.status.observedGeneration === a.metadata?.generation,
    setImage: async (name, image) => {
      await clients.custom.patchNamespacedCustomObject({ ...api, name, body: { spec: { image } } }, merge);
    },
    promote: async (name) => {
      const intent = { id: `bench-${name}-${Date.now()}`, by: 'bench', via: 'api', at: new Date().toISOString() };
      const body = { metadata: { annotations: { [intentAnnotation('promote')]: JSON.stringify(intent) } } };
      await clients.custom.patchNamespacedCustomObject({ ...api, name, body }, merge);
    },
    start: async () => {
      const port = await freePort();
      const heapFile = join(logDir, `teal-heap-${port}.json`);
      const child = spawnLogged(
        process.execPath,
        [
          '--expose-gc',
          '--import',
          join(root, 'bench/heap-probe.mjs'),
          ...nodeArgs,
          entry.path,
          ...['--kubeconfig', kubeconfig, '--namespace', namespace, '--leader-elect=false'],
          ...['--http-addr', `127.0.0.1:${port}`, '--log-level', 'warn'],
        ],
        join(logDir, 'teal.log'),
        { ...process.env, ...runtime.env, TEAL_BENCH_HEAP_FILE: heapFile },
      );
      return {
        pid: child.pid ?? -1,
        ready: () => httpOk(`http://127.0.0.1:${port}/readyz`),
        heap: () => tealHeap(child, heapFile),
        stop: () => stopProcess(child),
      };
    },
  };
}

/** Asks the probe (bench/heap-probe.mjs) for a GC and the heap after it. */
async function tealHeap(child: ChildProcess, file: string): Promise<number | undefined> {
  const before = existsSync(file) ? statSync(file).mtimeMs : 0;
  const seq = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { seq: number }).seq : 0;
  child.kill('SIGUSR2');
  for (let i = 0; i < 300; i++) {
    await sleep(100);
    if (!existsSync(file) || statSync(file).mtimeMs < before) continue;
    try {
      const usage = JSON.parse(readFileSync(file, 'utf8')) as { seq: number; heapUsed: number };
      if (usage.seq > seq) return usage.heapUsed;
    } catch {
      // Read while being written: the next try reads it whole.
    }
  }
  return undefined;
}

// ---- Argo Rollouts ----

const ROLE = 'bench.teal.dev/role';

export interface ArgoOptions extends SubjectOptions {
  /** The folder build-argo.sh printed: bin/rollouts-controller and crds/. */
  home: string;
  version: string;
}

export function argo(opts: ArgoOptions, namespace: string): Subject {
  const { clients, kubeconfig, logDir, home } = opts;
  const api = { ...ARGO, namespace };
  const service = (name: string, role: string) => ({
    metadata: { name: role === 'active' ? name : `${name}-preview`, labels: { [ROLE]: role } },
    spec: { selector: { app: name }, ports: [{ port: 80, targetPort: PORT }] },
  });
  return {
    id: 'argo',
    title: `Argo Rollouts ${opts.version} (built from Go modules)`,
    namespace,
    own: isArgoRequest,
    install: async () => {
      for (const crd of argoCrds(home)) await opts.apply(crd);
    },
    // A user of Argo writes the Services the Rollout names; Teal writes its own. Created before
    // the clock starts, so that converging times the controller, not the bench's creates.
    prepare: async (name) => {
      await clients.core.createNamespacedService({ namespace, body: service(name, 'active') });
      await clients.core.createNamespacedService({ namespace, body: service(name, 'preview') });
    },
    create: async (name) => {
      await clients.custom.createNamespacedCustomObject({
        ...api,
        body: blueGreenRollout(name, container(`${IMAGE}:1`), { replicas: REPLICAS, scaleDownDelaySeconds: 0 }),
      });
    },
    objectsPath: `/apis/${ARGO.group}/${ARGO.version}/namespaces/${namespace}/${ARGO.plural}`,
    list: async () => (await clients.custom.listNamespacedCustomObject(api)) as KubernetesListObject<Workload>,
    activeServices: `${ROLE}=active`,
    selectedHash: (svc) => svc.spec?.selector?.[ARGO_HASH],
    converged: (r) =>
      r.status?.phase === 'Healthy' &&
      r.status.currentPodHash !== undefined &&
      r.status.stableRS === r.status.currentPodHash &&
      r.status.blueGreen?.activeSelector === r.status.currentPodHash,
    pausedOnPreview: (r) => pausedOnPreview(r.status),
    // A merge patch replaces the containers list whole: the same container, the new image.
    setImage: async (name, image) => {
      const body = { spec: { template: { spec: { containers: [container(image)] } } } };
      await clients.custom.patchNamespacedCustomObject({ ...api, name, body }, merge);
    },
    // As `kubectl argo rollouts promote` does for a paused blue/green Rollout.
    promote: async (name) => {
      await clients.custom.patchNamespacedCustomObjectStatus({ ...api, name, body: { status: PROMOTE_STATUS } }, merge);
    },
    start: async () => {
      const [metrics, health] = [await freePort(), await freePort()];
      const child = spawnLogged(
        join(home, 'bin/rollouts-controller'),
        argoControllerArgs(kubeconfig, namespace, { metrics, health }),
        join(logDir, 'argo.log'),
      );
      return {
        pid: child.pid ?? -1,
        ready: () => httpOk(`http://127.0.0.1:${health}/healthz`),
        heap: () => goHeap(`http://127.0.0.1:${metrics}/metrics`),
        stop: () => stopProcess(child),
      };
    },
  };
}

/** Go's heap in use from the controller's metrics (go_memstats_heap_alloc_bytes): no GC is forced. */
async function goHeap(url: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
    const value = /^go_memstats_heap_alloc_bytes (\S+)$/m.exec(text)?.[1];
    return value === undefined ? undefined : Number(value);
  } catch {
    return undefined;
  }
}
