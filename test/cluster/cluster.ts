// The test control plane: real kube-apiserver, etcd, kube-controller-manager
// and kube-scheduler run by kwokctl on 127.0.0.1 from binaries built by
// build-binaries.sh; KWOK simulates the kubelets, so pods never run.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

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

/** The kwokctl configuration: local binaries, loopback only, and Teal's stages. */
export function kwokctlConfig(binDir: string): string {
  return `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  bindAddress: 127.0.0.1
  kubeBinaryPrefix: ${binDir}
  kubectlBinary: ${binDir}/kubectl
  etcdBinary: ${binDir}/etcd
  kwokControllerBinary: ${binDir}/kwok
  quietPull: true
  disableQPSLimits: true
---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeIP: 127.0.0.1
  cidr: 10.0.0.1/16
  podPlayStageParallelism: 8
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 2
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
}

export async function startCluster(opts: StartOptions = {}): Promise<Cluster> {
  const log = opts.log ?? (() => {});
  reapStaleClusters(log);
  const binDir = await ensureBinaries(log);
  const workdir = opts.workdir ?? mkdtempSync(join(tmpdir(), 'teal-cluster-'));
  mkdirSync(workdir, { recursive: true });
  writeFileSync(join(workdir, OWNER_FILE), String(process.pid));
  const name = opts.name ?? 'teal-test';
  const kubeconfig = join(workdir, 'kubeconfig.yaml');
  const config = join(workdir, 'kwokctl.yaml');
  writeFileSync(config, kwokctlConfig(binDir));
  const env = clusterEnv(binDir, workdir, kubeconfig);
  const cluster: Cluster = { name, workdir, kubeconfig, binDir, env };
  try {
    await run(
      join(binDir, 'kwokctl'),
      ['create', 'cluster', '--name', name, '--config', config, '--kubeconfig', kubeconfig, '--wait', '300s'],
      { env },
    );
    await kubectlApply(cluster, nodeManifest(NODE_NAME));
    await run(join(binDir, 'kubectl'), ['wait', '--for=condition=Ready', `node/${NODE_NAME}`, '--timeout=300s'], {
      env,
    });
    // The default ServiceAccount of a namespace comes from the controller-manager;
    // waiting for it here means tests never race it.
    await run(
      join(binDir, 'kubectl'),
      ['wait', '--for=create', 'serviceaccount/default', '-n', 'default', '--timeout=300s'],
      {
        env,
      },
    );
  } catch (err) {
    await stopCluster(cluster).catch(() => {});
    throw err;
  }
  return cluster;
}

export async function stopCluster(cluster: Pick<Cluster, 'name' | 'workdir' | 'binDir'>): Promise<void> {
  const env = { ...process.env, KWOK_WORKDIR: cluster.workdir };
  await run(join(cluster.binDir, 'kwokctl'), ['delete', 'cluster', '--name', cluster.name], { env }).catch(() => {});
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
  const child = execFile(join(cluster.binDir, 'kubectl'), ['apply', '--server-side', '-f', '-'], { env: cluster.env });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin?.end(manifest);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`kubectl apply failed: ${stderr.trim()}`);
}
