// The real-build mode of `make dev` (make dev REAL_BUILDS=1): the weather app is
// built for real by the build Job's own BuildKit container (rootless), which the
// build runner runs on this machine as the kubelet of build pods, and pushed to
// a registry on 127.0.0.1. The App follows the demo repository over HTTPS
// (git http-backend with a throwaway CA), in the namespace real-build-dev: the
// KWOK stages leave build pods Running only in real-build-* namespaces.
// Free of vitest, like the rest of test/cluster.
import { openSync, writeSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { startGitHttpsServer } from '../support/git-server.ts';
import { pushPythonBase } from './base-images.ts';
import { type BuildRunner, REAL_BUILD_NAMESPACE_PREFIX, startBuildRunner } from './build-runner.ts';
import { ensureBuildTools } from './build-tools.ts';
import { type Cluster, kubectlApply, kubectlOutput } from './cluster.ts';
import { type Registry, startRegistry } from './registry.ts';

export const REAL_NAMESPACE = `${REAL_BUILD_NAMESPACE_PREFIX}-dev`;
const GIT_SECRET = 'weather-git';
/** The demo's bare repository, as prepareDemo names it; served as <url>/weather-app.git. */
const REMOTE_NAME = 'weather-app.git';

export type Stop = () => Promise<void>;

/** Why this machine cannot run the real mode, or undefined when it can. */
export function realBuildsRefusal(): string | undefined {
  // The build runner creates a build user with subuid/subgid ranges and enters
  // private mount namespaces; debootstrap makes the python base in a chroot.
  if (process.getuid?.() !== 0) {
    return 'real builds need root on this machine: the build runner adds a build user with subuid/subgid ranges and runs BuildKit rootless under it, and the python base image is made with debootstrap. Run it as root, or run plain `make dev` for simulated builds.';
  }
  return undefined;
}

export interface RealBuildHost {
  toolsDir: string;
  registry: Registry;
}

/**
 * What does not need the cluster: the Debian packages and the toolchain, a
 * registry, and the python:3.12-slim stand-in pushed as library/python. Cold,
 * minutes (toolchain compile, debootstrap); warm, seconds.
 */
export async function prepareRealBuildHost(log: (line: string) => void, onStop: (stop: Stop) => void) {
  const { bin: toolsDir } = await ensureBuildTools(log);
  const registry = await startRegistry();
  onStop(() => registry.stop());
  const base = await pushPythonBase(registry, 'library/python', '3.12-slim', log);
  log(`builds: real (BuildKit, rootless) pushing to ${registry.address}; ${base.ref} from debootstrap as docker.io's`);
  return { toolsDir, registry } satisfies RealBuildHost;
}

export interface RealBuildSite {
  /** The https URL the App follows and the post-receive hook announces. */
  repositoryUrl: string;
  caPem: string;
}

/** The demo's bare repository over HTTPS, from demoDir (where prepareDemo puts weather-app.git). */
export async function serveDemoRepository(demoDir: string, onStop: (stop: Stop) => void): Promise<RealBuildSite> {
  const server = await startGitHttpsServer({ root: demoDir });
  onStop(() => server.stop());
  return { repositoryUrl: server.url(REMOTE_NAME), caPem: server.caPem };
}

/**
 * The namespace, the Secret whose ca.crt the operator's git trusts, and the
 * build runner (which adds the same CA to the build container's bundle, as a
 * company's build image would have it). kubectl's context is pointed at the
 * namespace, so the demo's commands need no -n.
 */
export async function startRealBuilds(
  cluster: Cluster,
  host: RealBuildHost,
  site: RealBuildSite,
  runnerLog: string,
  onStop: (stop: Stop) => void,
): Promise<BuildRunner> {
  await kubectlApply(cluster, namespaceAndSecret(site.caPem));
  await kubectlOutput(cluster, ['config', 'set-context', '--current', `--namespace=${REAL_NAMESPACE}`]);
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const fd = openSync(runnerLog, 'w');
  const runner = startBuildRunner({
    kc,
    namespace: REAL_NAMESPACE,
    toolsDir: host.toolsDir,
    extraCaPem: site.caPem,
    dockerHubMirror: host.registry.address,
    log: (line) => writeSync(fd, `${new Date().toISOString()} ${line}\n`),
  });
  onStop(() => runner.stop());
  return runner;
}

function namespaceAndSecret(caPem: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: REAL_NAMESPACE } },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: GIT_SECRET, namespace: REAL_NAMESPACE },
        stringData: { 'ca.crt': caPem },
      },
    ],
  });
}

/** The demo's App for real builds: its namespace, the git Secret with the CA, and the image on the local registry. */
export function realBuildApp(manifest: string, registry: Pick<Registry, 'address'>): string {
  const doc = parseDocument(manifest);
  doc.setIn(['metadata', 'namespace'], REAL_NAMESPACE);
  doc.setIn(['spec', 'source', 'git', 'secretRef'], doc.createNode({ name: GIT_SECRET }));
  doc.setIn(['spec', 'build', 'image'], `${registry.address}/team/weather`);
  return doc.toString();
}
