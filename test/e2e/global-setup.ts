import { readFileSync, rmSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import {
  BOOT_STEP_MS,
  type Cluster,
  kubectlApply,
  printComponentLogs,
  startCluster,
  stopCluster,
  stopClusterSync,
  waitForOutput,
} from '../cluster/cluster.ts';
import { installPlugin } from '../support/plugin.ts';
import { waitFor } from '../support/wait.ts';

const CRDS = [
  { name: 'apps.teal.dev', file: new URL('../../config/crd/teal.dev_apps.yaml', import.meta.url) },
  {
    name: 'analysistemplates.teal.dev',
    file: new URL('../../config/crd/teal.dev_analysistemplates.yaml', import.meta.url),
  },
];

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    binDir: string;
    /** The plugin bundled and installed without the repository (support/plugin.ts). */
    pluginRoot: string;
  }
}

let cluster: Cluster | undefined;
let pluginRoot: string | undefined;

// Also on Ctrl-C or a killed runner: the control plane must not outlive the run.
function stopOnSignal(signal: NodeJS.Signals): void {
  if (cluster) stopClusterSync(cluster);
  cluster = undefined;
  process.kill(process.pid, signal);
}

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  cluster = await startCluster({ log: (line) => console.error(line) });
  console.error(`test cluster up in ${Date.now() - started} ms (${cluster.workdir})`);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, stopOnSignal);
  process.once('exit', () => cluster && process.env.TEAL_KEEP_CLUSTER !== '1' && stopClusterSync(cluster));
  // Every e2e file works with Apps (and the operator watches AnalysisTemplates): install the CRDs once.
  await installCrds(cluster);
  project.provide('kubeconfig', cluster.kubeconfig);
  project.provide('binDir', cluster.binDir);
  pluginRoot = await installPlugin();
  project.provide('pluginRoot', pluginRoot);
}

/** Teal's CRDs, applied and established: on the shared cluster, or on a test's own (dashboard-oidc.test.ts). */
export async function installCrds(c: Cluster): Promise<void> {
  for (const crd of CRDS) await installCrd(c, crd);
}

async function installCrd(c: Cluster, { name, file }: (typeof CRDS)[number]): Promise<void> {
  try {
    const crd = readFileSync(file, 'utf8');
    await waitFor(`the ${name} CRD to be applied`, () => kubectlApply(c, crd).then(() => true), {
      timeoutMs: BOOT_STEP_MS,
      intervalMs: 1_000,
    });
    await waitForOutput(
      c,
      `the ${name} CRD to be established`,
      ['get', 'crd', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'],
      'True',
    );
  } catch (err) {
    printComponentLogs(c);
    throw err;
  }
}

export async function teardown(): Promise<void> {
  if (pluginRoot) rmSync(pluginRoot, { recursive: true, force: true });
  if (cluster && process.env.TEAL_KEEP_CLUSTER === '1') {
    console.error(`keeping the test cluster: KUBECONFIG=${cluster.kubeconfig}`);
  } else if (cluster) {
    await stopCluster(cluster);
  }
  cluster = undefined;
}
