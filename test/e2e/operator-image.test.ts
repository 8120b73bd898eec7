// The operator image as the chart deploys it: built from the repository's
// Dockerfile by what `make image` runs (test/cluster/operator-image.ts: the
// project's rootless BuildKit, FROM a node:24-slim stand-in served as Docker
// Hub's mirror), pushed to a test registry, pulled back and run with runc the
// way a kubelet runs the chart's Deployment: its command and args, its user,
// a read-only root, an emptyDir at /tmp, no capabilities, the ServiceAccount's
// token, CA and namespace where a pod has them, and KUBERNETES_SERVICE_HOST/PORT.
// It answers --help, reaches /readyz against the test cluster, and releases an App.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USAGE } from '../../src/config.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import {
  type ContainerOptions,
  type PulledImage,
  pullImage,
  type RunningImage,
  runImage,
} from '../cluster/image-run.ts';
import { buildOperatorImage } from '../cluster/operator-image.ts';
import { MANIFEST_ACCEPT, type Registry, startRegistry } from '../cluster/registry.ts';
import { releaseAndPromote } from '../support/apps.ts';
import { CHART, helm, helmErrors } from '../support/helm.ts';
import { createNamespace, kubeConfig, serviceAccountToken, waitFor } from '../support/kube.ts';
import { find, type Manifest, parseManifests } from '../support/manifests.ts';
import { freePort } from '../support/ports.ts';
import { StopWaiting } from '../support/wait.ts';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/**
 * Cold: the toolchain's Go build, the stand-in's debootstrap, then `npm ci` and
 * apt-get in the build, which BuildKit's cache keeps. A bound against a hang only.
 */
const SETUP_MS = 60 * 60_000;
const RELEASE = 'img';
const REPO = 'teal';
/** Where a kubelet mounts a pod's ServiceAccount token, CA and namespace (its kube-api-access volume). */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

interface PodContainer {
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

interface PodSpec {
  serviceAccountName: string;
  securityContext?: { runAsUser?: number; runAsGroup?: number };
  containers: PodContainer[];
  volumes?: { name: string; emptyDir?: object }[];
}

let ns: string;
let apps: string;
const removers: (() => Promise<void>)[] = [];
let registry: Registry;
let root: string;
let image: PulledImage;
let digest: string;
let pod: PodSpec;

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools((line) => console.error(line));
  const operatorNs = await createNamespace('image');
  const appsNs = await createNamespace('image-apps');
  removers.push(operatorNs.remove, appsNs.remove);
  [ns, apps] = [operatorNs.name, appsNs.name];
  root = await mkdtemp(join(tmpdir(), 'teal-operator-image-test-'));
  registry = await startRegistry();
  const built = await buildOperatorImage({
    repoRoot,
    toolsDir,
    mirror: registry,
    output: { push: `${registry.address}/${REPO}:e2e` },
    log: (line) => console.error(line),
  });
  digest = built.digest;
  image = await pullImage(registry, REPO, digest, join(root, 'bundle'));
  // The chart's namespaced mode: the other test files' operators own their namespaces.
  const install = await helm(['install', RELEASE, CHART, '--namespace', ns, '--set', `watchNamespaces={${apps}}`]);
  expect(helmErrors(install.stderr)).toEqual([]);
  expect(install.code, install.stderr).toBe(0);
  const manifest = await helm(['get', 'manifest', RELEASE, '--namespace', ns]);
  pod = deploymentPod(parseManifests(manifest.stdout));
}, SETUP_MS);

afterAll(async () => {
  if (ns) await helm(['uninstall', RELEASE, '--namespace', ns]);
  await Promise.all(removers.map((remove) => remove()));
  await registry?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

function deploymentPod(objects: Manifest[]): PodSpec {
  const [deployment] = find(objects, 'Deployment') as (Manifest & { spec: { template: { spec: PodSpec } } })[];
  if (!deployment) throw new Error('the chart rendered no Deployment');
  return deployment.spec.template.spec;
}

function operatorContainer(): PodContainer {
  const [container] = pod.containers;
  if (!container) throw new Error('the Deployment has no container');
  return container;
}

/**
 * The chart's flags, but for its listen address: the container shares the host's
 * network here, so it serves on a free loopback port rather than 0.0.0.0:8081.
 */
function chartArgs(port: number): string[] {
  const args = operatorContainer().args ?? [];
  expect(args.filter((a) => a.startsWith('--http-addr='))).toHaveLength(1);
  return args.map((a) => (a.startsWith('--http-addr=') ? `--http-addr=127.0.0.1:${port}` : a));
}

/** The container's env as a kubelet resolves it: values, and the pod's namespace for its fieldRef. */
function chartEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of operatorContainer().env ?? []) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (field === 'metadata.namespace') env[e.name] = ns;
    else throw new Error(`env ${e.name}: no value this test can resolve`);
  }
  return env;
}

/** The pod's securityContext and volumes as runc options: emptyDirs are tmpfs, like a kubelet's medium: Memory. */
function chartContainerOptions(args: string[], extraMounts: ContainerOptions['mounts'] = []): ContainerOptions {
  const container = operatorContainer();
  const mounts: NonNullable<ContainerOptions['mounts']> = [...extraMounts];
  for (const m of container.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === m.name);
    if (!volume?.emptyDir) throw new Error(`volume ${m.name}: only emptyDir volumes are expected by default`);
    mounts.push({ destination: m.mountPath, tmpfs: true });
  }
  const { runAsUser, runAsGroup } = pod.securityContext ?? {};
  return {
    command: container.command,
    args,
    ...(runAsUser !== undefined ? { user: { uid: runAsUser, gid: runAsGroup ?? runAsUser } } : {}),
    readOnlyRootFilesystem: container.securityContext?.readOnlyRootFilesystem ?? false,
    dropAllCapabilities: container.securityContext?.capabilities?.drop?.includes('ALL') ?? false,
    mounts,
  };
}

/** The ServiceAccount's token (TokenRequest), the cluster's CA and the namespace, as files a kubelet projects. */
async function serviceAccountFiles(): Promise<string> {
  const dir = join(root, 'serviceaccount');
  await mkdir(dir);
  await chmod(dir, 0o755);
  const cluster = kubeConfig().getCurrentCluster();
  const ca = cluster?.caData ? Buffer.from(cluster.caData, 'base64') : await readFile(cluster?.caFile ?? '');
  const files = {
    token: await serviceAccountToken(ns, pod.serviceAccountName),
    'ca.crt': ca,
    namespace: ns,
  };
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content, { mode: 0o644 });
  return dir;
}

/** KUBERNETES_SERVICE_HOST and _PORT as a kubelet sets them, for the test cluster's API server. */
function kubernetesServiceEnv(): Record<string, string> {
  const server = new URL(kubeConfig().getCurrentCluster()?.server ?? '');
  return { KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port || '443' };
}

const exitOf = (container: RunningImage) =>
  new Promise<number | null>((resolve) => {
    if (container.process.exitCode !== null) resolve(container.process.exitCode);
    else container.process.once('close', (code) => resolve(code));
  });

/** The first process of the container, as the host sees it. */
async function containerPid(id: string): Promise<number> {
  return (JSON.parse((await run('runc', ['state', id])).stdout) as { pid: number }).pid;
}

describe('the operator image, run as the chart deploys it', () => {
  it("is the Dockerfile's: its non-root user 1000:1000, as the chart's pod runs it", () => {
    expect(image.config.User).toBe('1000:1000');
    expect(pod.securityContext).toMatchObject({ runAsUser: 1000, runAsGroup: 1000 });
  });

  it("answers --help with the chart's command and flags", async () => {
    const id = `teal-operator-image-help-${process.pid}`;
    const container = await runImage(
      image,
      id,
      chartEnv(),
      chartContainerOptions([...chartArgs(await freePort()), '--help']),
    );
    try {
      const code = await exitOf(container);
      expect(container.logs()).toContain(USAGE);
      expect(code, container.logs()).toBe(0);
    } finally {
      await container.stop();
    }
  });

  it('connects as its ServiceAccount with the token where a pod has it, reaches /readyz, and releases an App', async () => {
    const port = await freePort();
    const id = `teal-operator-image-${process.pid}`;
    const serviceAccount = { destination: SERVICE_ACCOUNT_DIR, source: await serviceAccountFiles(), readOnly: true };
    const container = await runImage(
      image,
      id,
      { ...chartEnv(), ...kubernetesServiceEnv() },
      chartContainerOptions(chartArgs(port), [serviceAccount]),
    );
    try {
      await waitFor('the operator image to answer /readyz', async () => {
        if (container.process.exitCode !== null) throw new StopWaiting(`it exited:\n${container.logs()}`);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        return res.ok ? true : undefined;
      });
      const pid = await containerPid(id);
      expect(await readFile(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\t1000\t1000\t/m);
      await reportSizeAndRss(pid);

      await releaseAndPromote(apps, 'web');
      expect(container.logs()).not.toMatch(/forbidden/i);
    } finally {
      await container.stop();
    }
  });
});

/** The image's size (its layers as the registry stores them, and unpacked) and its RSS ready with no App. */
async function reportSizeAndRss(pid: number): Promise<void> {
  const res = await fetch(`${registry.url}/v2/${REPO}/manifests/${digest}`, { headers: { Accept: MANIFEST_ACCEPT } });
  const manifest = (await res.json()) as { layers: { size: number }[] };
  const compressed = manifest.layers.reduce((sum, l) => sum + l.size, 0);
  const unpacked = Number((await run('du', ['-sb', join(image.bundle, 'rootfs')])).stdout.split('\t')[0]);
  const rss = /^VmRSS:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  console.error(
    `operator image ${digest}: ${manifest.layers.length} layers, ${mib(compressed)} MiB compressed, ` +
      `${mib(unpacked)} MiB unpacked; RSS ready with no App ${mib(Number(rss) * 1024)} MiB ` +
      `(load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
  );
}
