import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { type Cluster, kubectlApply, startCluster, stopCluster, stopClusterSync } from '../cluster/cluster.ts';

const CRD = new URL('../../config/crd/teal.dev_apps.yaml', import.meta.url);

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    binDir: string;
  }
}

let cluster: Cluster | undefined;

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
  // Every e2e file works with Apps: install the CRD once.
  await kubectlApply(cluster, readFileSync(CRD, 'utf8'));
  await promisify(execFile)(
    join(cluster.binDir, 'kubectl'),
    ['wait', '--for=condition=Established', 'crd/apps.teal.dev', '--timeout=300s'],
    { env: cluster.env },
  );
  project.provide('kubeconfig', cluster.kubeconfig);
  project.provide('binDir', cluster.binDir);
}

export async function teardown(): Promise<void> {
  if (cluster && process.env.TEAL_KEEP_CLUSTER === '1') {
    console.error(`keeping the test cluster: KUBECONFIG=${cluster.kubeconfig}`);
  } else if (cluster) {
    await stopCluster(cluster);
  }
  cluster = undefined;
}
