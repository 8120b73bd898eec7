// The test control plane: real kube-apiserver, etcd, kube-controller-manager
// and kube-scheduler run by kwokctl on 127.0.0.1 from binaries built by
// build-binaries.sh; KWOK simulates the kubelets, so pods never run.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePorts } from '../support/ports.ts';
import { StopWaiting, waitFor } from '../support/wait.ts';

const run = promisify(execFile);
const here = fileURLToPath(new URL('.', import.meta.url));
const STAGES = join(here, 'stages.yaml');
const OWNER_FILE = 'owner.pid';
export const NODE_NAME = 'kwok-node-0';

export interface Cluster {
  name: string;
  /** KWOK_WORKDIR of this cluster; kwokctl keeps pki, logs and pids under it. */
  workdir: string;
  kubeconfig: string;
  binDir: string;
  /** Environment in which kubectl and kwokctl reach this cluster. */
  env: NodeJS.ProcessEnv;
  /** The API server's audit log (JSON lines), when the cluster was started with an auditPolicy. */
  auditLog?: string;
}

/** Builds the binaries on first use, then returns their cached folder. */
export async function ensureBinaries(log: (line: string) => void = () => {}): Promise<string> {
  const child = execFile('bash', [join(here, 'build-binaries.sh')], { maxBuffer: 64 << 20 });
  child.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.startsWith('build-binaries:')) log(line);
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`build-binaries.sh failed with exit code ${code}`);
  return out.trim().split('\n').at(-1) as string;
}

/** The ports the binary runtime gives the components, named as kwokctl's options. */
const PORT_OPTIONS = [
  'etcdPeerPort',
  'etcdPort',
  'kubeApiserverPort',
  'kwokControllerPort',
  'kubeControllerManagerPort',
  'kubeSchedulerPort',
] as const;
export type ClusterPorts = Record<(typeof PORT_OPTIONS)[number], number>;

/**
 * Ports for one boot, chosen by the OS. Left to itself, kwokctl counts down
 * from 32767 in every process, so control planes booting at once on one
 * machine pick the same ports; the OS picks at random. Either way a port is
 * only free until its component binds it: startCluster boots again on a clash.
 */
export async function clusterPorts(): Promise<ClusterPorts> {
  const ports = await freePorts(PORT_OPTIONS.length);
  return Object.fromEntries(PORT_OPTIONS.map((option, i) => [option, ports[i]])) as ClusterPorts;
}

/** The kwokctl configuration: local binaries, loopback only, the given ports, and Teal's stages. */
export function kwokctlConfig(binDir: string, ports: ClusterPorts): string {
  return `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  bindAddress: 127.0.0.1
${PORT_OPTIONS.map((option) => `  ${option}: ${ports[option]}`).join('\n')}
  kubeBinaryPrefix: ${binDir}
  kubectlBinary: ${binDir}/kubectl
  etcdBinary: ${binDir}/etcd
  kwokControllerBinary: ${binDir}/kwok
  quietPull: true
  disableQPSLimits: true
  # Logs objects point kwok at a file to serve as a container's log: the build runner's real builds.
  enableCRDs:
  - Logs
  - PortForward
---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeIP: 127.0.0.1
  # Pod IPs apart from the API server's default Service range (10.0.0.0/24): in a traffic
  # test's data plane (data-plane.ts) no pod IP is also a ClusterIP.
  cidr: 10.244.0.1/16
  podPlayStageParallelism: 8
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 2
  # Serves pods/log (for Logs objects); kwok answered "Debug endpoints are disabled" without it.
  enableDebuggingHandlers: true
---
${readFileSync(STAGES, 'utf8')}`;
}

function clusterEnv(binDir: string, workdir: string, kubeconfig: string): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${binDir}:${process.env.PATH}`, KWOK_WORKDIR: workdir, KUBECONFIG: kubeconfig };
}

export interface StartOptions {
  name?: string;
  /** Where kwokctl keeps the cluster; a fresh temporary folder by default. */
  workdir?: string;
  log?: (line: string) => void;
  /** An audit policy (YAML): the API server then writes every request it matches to Cluster.auditLog. */
  auditPolicy?: string;
  /** The API server's Service IP range; its default, 10.0.0.0/24, holds about 250 Services. */
  serviceClusterIPRange?: string;
  /** Where each boot's ports come from: clusterPorts, unless a test hands out a taken one. */
  ports?: () => Promise<ClusterPorts>;
  /**
   * An AuthenticationConfiguration (YAML) for the API server's --authentication-config, written
   * into the workdir: a cluster of its own for a test of the API server's JWT authenticators.
   */
  authenticationConfig?: string;
  /**
   * kube-controller-manager flags (flag=value), e.g. controllers=*,-endpointslice-controller
   * for a test that runs that controller on its own (endpointslice-controller.ts).
   */
  controllerManagerArgs?: string[];
}

/**
 * How long each step of the boot may take. A bound against hangs, not a
 * performance check: on a busy 2-core machine the API server alone may need a
 * minute, and every step returns as soon as its condition holds.
 */
export const BOOT_STEP_MS = 5 * 60_000;
/** A single kubectl or kwokctl call that hangs is cut off, so that the step tries again. */
const CALL_MS = 60_000;
/**
 * Boots in all, on fresh ports after each port clash: a clash needs another
 * process to take a port in the moments between its pick and its bind.
 */
const BOOT_ATTEMPTS = 3;

/** Where a cluster started in workdir keeps its kubeconfig. */
export const kubeconfigOf = (workdir: string) => join(workdir, 'kubeconfig.yaml');

export async function startCluster(opts: StartOptions = {}): Promise<Cluster> {
  const log = opts.log ?? (() => {});
  reapStaleClusters(log);
  const binDir = await ensureBinaries(log);
  const workdir = opts.workdir ?? mkdtempSync(join(tmpdir(), 'teal-cluster-'));
  mkdirSync(workdir, { recursive: true });
  writeFileSync(join(workdir, OWNER_FILE), String(process.pid));
  const name = opts.name ?? 'teal-test';
  const kubeconfig = kubeconfigOf(workdir);
  const cluster: Cluster = { name, workdir, kubeconfig, binDir, env: clusterEnv(binDir, workdir, kubeconfig) };
  if (opts.auditPolicy !== undefined) {
    writeFileSync(join(workdir, AUDIT_POLICY), opts.auditPolicy);
    cluster.auditLog = join(logsDir(cluster), 'audit.log');
  }
  const serviceRange = opts.serviceClusterIPRange;
  const extraArgs = serviceRange ? ['--extra-args', `kube-apiserver=service-cluster-ip-range=${serviceRange}`] : [];
  if (opts.authenticationConfig !== undefined) {
    const file = join(workdir, 'authentication-config.yaml');
    writeFileSync(file, opts.authenticationConfig);
    extraArgs.push('--extra-args', `kube-apiserver=authentication-config=${file}`);
  }
  for (const arg of opts.controllerManagerArgs ?? []) extraArgs.push('--extra-args', `kube-controller-manager=${arg}`);
  await bootOnFreshPorts(cluster, opts.ports ?? clusterPorts, log, extraArgs);
  return cluster;
}

/**
 * Boots, and when a component could not bind its port boots again from
 * scratch on ports picked anew: started again, the component would meet the
 * same taken port. Any other failure, or a clash on the last boot, stops the
 * cluster and is thrown.
 */
async function bootOnFreshPorts(
  cluster: Cluster,
  ports: () => Promise<ClusterPorts>,
  log: (line: string) => void,
  extraArgs: string[],
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await boot(cluster, await ports(), log, extraArgs);
    } catch (err) {
      const clash = portClash(cluster);
      if (clash === undefined || attempt === BOOT_ATTEMPTS) {
        // The cause is usually in a component's own log, which stopCluster removes.
        printComponentLogs(cluster);
        await stopCluster(cluster).catch(() => {});
        throw err;
      }
      log(`test cluster: ${clash} (boot ${attempt} of ${BOOT_ATTEMPTS}); deleting it and booting again on other ports`);
      await deleteCluster(cluster);
    }
  }
}

/** What a component logs when another process holds its port; every component then exits. */
const BIND_FAILURE = /listen tcp (\S+): bind: address already in use/;

/** Which component could not listen on which address, if one of them could not. */
function portClash(cluster: Pick<Cluster, 'name' | 'workdir'>): string | undefined {
  const dir = logsDir(cluster);
  // The audit log holds API requests, not a component's own messages.
  const logs = existsSync(dir) ? readdirSync(dir).filter((file) => file !== 'audit.log') : [];
  for (const file of logs) {
    const address = BIND_FAILURE.exec(readFileSync(join(dir, file), 'utf8'))?.[1];
    if (address !== undefined)
      return `${file.replace(/\.log$/, '')} could not listen on ${address}, taken by another process`;
  }
  return undefined;
}

/**
 * kwokctl starts the components without waiting for them, and kwokctl's own
 * readiness wait does not fail the command: each step here waits for its own
 * condition and retries while a component is still starting.
 */
async function boot(
  cluster: Cluster,
  ports: ClusterPorts,
  log: (line: string) => void,
  extraArgs: string[] = [],
): Promise<void> {
  const config = join(cluster.workdir, 'kwokctl.yaml');
  writeFileSync(config, kwokctlConfig(cluster.binDir, ports));
  await createCluster(cluster, [
    ...['create', 'cluster', '--name', cluster.name, '--config', config, '--kubeconfig', cluster.kubeconfig],
    ...auditArgs(cluster),
    ...SINGLE_INSTANCE_ARGS,
    ...extraArgs,
  ]);
  // A component found stopped is started again: KWOK, for one, gives up on an API
  // server that is slow to answer (about 30 s) and exits.
  const restart = () => restartStoppedComponents(cluster, log);
  await waitForOutput(cluster, 'the API server to be ready', ['get', '--raw', '/readyz'], 'ok', restart);
  await waitFor('the node to be created', () => kubectlApply(cluster, nodeManifest(NODE_NAME)).then(() => true), {
    timeoutMs: BOOT_STEP_MS,
    intervalMs: 1_000,
  });
  await waitForOutput(
    cluster,
    `node/${NODE_NAME} to be Ready`,
    ['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
    'True',
    restart,
  );
  // The default ServiceAccount of a namespace comes from the controller-manager;
  // waiting for it here means tests never race it.
  await waitForOutput(
    cluster,
    'the default ServiceAccount',
    ['get', 'serviceaccount', 'default', '-n', 'default', '-o', 'name'],
    'serviceaccount/default',
    restart,
  );
}

/**
 * The controller-manager and the scheduler run once each, so they need no
 * leader election, and with it they exit when a renewal misses its 10 s
 * deadline: on a loaded machine that happened mid-run ("leaderelection
 * lost"), and from then on no pod was created or scheduled for any test.
 */
const SINGLE_INSTANCE_ARGS = [
  ...['--extra-args', 'kube-controller-manager=leader-elect=false'],
  ...['--extra-args', 'kube-scheduler=leader-elect=false'],
];

/**
 * kwokctl create, cut short once a component has found its port taken:
 * kwokctl would wait two minutes for an API server that cannot start
 * (its own port or etcd's taken) before it fails.
 */
async function createCluster(cluster: Cluster, args: string[]): Promise<void> {
  const cut = new AbortController();
  const watch = setInterval(() => portClash(cluster) !== undefined && cut.abort(), 1_000);
  try {
    await run(join(cluster.binDir, 'kwokctl'), args, { env: cluster.env, signal: cut.signal });
  } finally {
    clearInterval(watch);
  }
}

const AUDIT_POLICY = 'audit-policy.yaml';

/**
 * kwokctl writes the log to logs/audit.log. The API server would rotate it at
 * 100 MB by default, which a reader following it by offset would not see:
 * maxsize 0 keeps one file.
 */
function auditArgs(cluster: Cluster): string[] {
  if (cluster.auditLog === undefined) return [];
  return [
    ...['--kube-audit-policy', join(cluster.workdir, AUDIT_POLICY)],
    ...['--extra-args', 'kube-apiserver=audit-log-maxsize=0'],
  ];
}

/** kubectl's output, trimmed; a call that fails or hangs throws. */
export async function kubectlOutput(cluster: Pick<Cluster, 'binDir' | 'env'>, args: string[]): Promise<string> {
  const { stdout } = await run(join(cluster.binDir, 'kubectl'), [`--request-timeout=${CALL_MS / 1000}s`, ...args], {
    env: cluster.env,
    timeout: CALL_MS + 10_000,
  });
  return stdout.trim();
}

/**
 * Polls until kubectl prints want, for up to BOOT_STEP_MS; a refused connection
 * or another error (a component still starting) is tried again. before runs
 * ahead of each try.
 */
export async function waitForOutput(
  cluster: Pick<Cluster, 'binDir' | 'env'>,
  what: string,
  args: string[],
  want: string,
  before: () => Promise<void> = async () => {},
): Promise<void> {
  await waitFor(
    what,
    async () => {
      await before();
      const out = await kubectlOutput(cluster, args);
      if (out !== want) throw new Error(`kubectl ${args.join(' ')} printed ${JSON.stringify(out)}`);
      return true;
    },
    { timeoutMs: BOOT_STEP_MS, intervalMs: 1_000 },
  );
}

/** Starts again any component that has exited, and says which, with the end of its log. */
async function restartStoppedComponents(cluster: Cluster, log: (line: string) => void): Promise<void> {
  const kwokctl = join(cluster.binDir, 'kwokctl');
  const { stdout } = await run(kwokctl, ['get', 'components', '--name', cluster.name, '-o', 'wide'], {
    env: cluster.env,
    timeout: CALL_MS,
  });
  const stopped = stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, status]) => status === 'Stopped')
    .map(([component]) => component as string);
  if (stopped.length === 0) return;
  // Started again, it would fail the same way: the boot ends, and startCluster boots again.
  const clash = portClash(cluster);
  if (clash !== undefined) throw new StopWaiting(clash);
  for (const component of stopped) {
    log(`test cluster: ${component} has exited; starting it again. The end of its log:`);
    printLogTail(cluster, `${component}.log`);
  }
  // Starts only what is not running.
  await run(kwokctl, ['start', 'cluster', '--name', cluster.name], { env: cluster.env, timeout: CALL_MS });
}

const LOG_LINES = 30;
const LOG_LINE_CHARS = 400;

function logsDir(cluster: Pick<Cluster, 'name' | 'workdir'>): string {
  return join(cluster.workdir, 'clusters', cluster.name, 'logs');
}

/** The end of every component's log (kwok-controller, kube-apiserver, etcd, ...), to stderr. */
export function printComponentLogs(cluster: Pick<Cluster, 'name' | 'workdir'>): void {
  const dir = logsDir(cluster);
  if (!existsSync(dir)) {
    process.stderr.write(`test cluster: no component logs in ${dir}\n`);
    return;
  }
  for (const file of readdirSync(dir).sort()) printLogTail(cluster, file);
}

function printLogTail(cluster: Pick<Cluster, 'name' | 'workdir'>, file: string): void {
  const path = join(logsDir(cluster), file);
  if (!existsSync(path)) return;
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n').slice(-LOG_LINES);
  const cut = lines.map((l) => (l.length > LOG_LINE_CHARS ? `${l.slice(0, LOG_LINE_CHARS)}...` : l));
  process.stderr.write(`--- ${path} (last ${lines.length} lines) ---\n${cut.join('\n')}\n`);
}

/** Stops the components and removes what kwokctl made; the workdir stays. */
async function deleteCluster(cluster: Pick<Cluster, 'name' | 'workdir' | 'binDir'>): Promise<void> {
  const env = { ...process.env, KWOK_WORKDIR: cluster.workdir };
  await run(join(cluster.binDir, 'kwokctl'), ['delete', 'cluster', '--name', cluster.name], { env }).catch(() => {});
}

export async function stopCluster(cluster: Pick<Cluster, 'name' | 'workdir' | 'binDir'>): Promise<void> {
  await deleteCluster(cluster);
  rmSync(cluster.workdir, { recursive: true, force: true });
}

/** Synchronous stop, for signal handlers and process exit. */
export function stopClusterSync(cluster: Pick<Cluster, 'name' | 'workdir' | 'binDir'>): void {
  try {
    execFileSync(join(cluster.binDir, 'kwokctl'), ['delete', 'cluster', '--name', cluster.name], {
      env: { ...process.env, KWOK_WORKDIR: cluster.workdir },
      stdio: 'ignore',
    });
  } catch {
    // Already gone.
  }
  rmSync(cluster.workdir, { recursive: true, force: true });
}

/**
 * Kills clusters left by test runs that died without cleaning up (kill -9,
 * a crashed runner), found by an owner pid that no longer exists.
 */
export function reapStaleClusters(log: (line: string) => void = () => {}): void {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith('teal-cluster-')) continue;
    const workdir = join(tmpdir(), entry);
    const ownerFile = join(workdir, OWNER_FILE);
    if (!existsSync(ownerFile)) continue;
    const owner = Number(readFileSync(ownerFile, 'utf8'));
    if (isAlive(owner)) continue;
    log(`removing a stale test cluster in ${workdir}`);
    const clusters = join(workdir, 'clusters');
    for (const name of existsSync(clusters) ? readdirSync(clusters) : []) {
      for (const pidFile of readdirSync(join(clusters, name, 'pids'))) {
        const pid = Number(readFileSync(join(clusters, name, 'pids', pidFile), 'utf8'));
        if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
    }
    rmSync(workdir, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function nodeManifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { type: 'kwok', 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' },
    },
    spec: {},
  });
}

export async function kubectlApply(cluster: Pick<Cluster, 'binDir' | 'env'>, manifest: string): Promise<void> {
  const child = execFile(
    join(cluster.binDir, 'kubectl'),
    [`--request-timeout=${CALL_MS / 1000}s`, 'apply', '--server-side', '-f', '-'],
    { env: cluster.env, timeout: CALL_MS + 10_000 },
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin?.end(manifest);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`kubectl apply failed (${code ?? 'cut off'}): ${stderr.trim()}`);
}
