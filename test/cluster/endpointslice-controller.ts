// The EndpointSlice controller on its own: a second kube-controller-manager
// of a test's own cluster running only endpointslice-controller (the
// cluster's own runs every other controller: startCluster with
// controllerManagerArgs ['controllers=*,-endpointslice-controller']). A test
// pauses it (SIGSTOP) to hold a Service's EndpointSlices back, as a busy
// controller-manager does, while ReplicaSets, pods and everything else go on;
// resume (SIGCONT) lets it catch up. Free of vitest, like the rest of test/cluster.
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster } from './cluster.ts';

/** What the cluster's own controller-manager is told, so the two never both write slices. */
export const WITHOUT_ENDPOINTSLICE_CONTROLLER = 'controllers=*,-endpointslice-controller';

export interface EndpointSliceController {
  /** SIGSTOP: the slices stay as they are until resume. */
  pause: () => void;
  /** SIGCONT. */
  resume: () => void;
  stop: () => Promise<void>;
  log: string;
}

/**
 * Starts it; its pid joins the cluster's own (kwokctl's pids folder), so a run
 * that dies without stopping it leaves it to reapStaleClusters.
 */
export function startEndpointSliceController(
  cluster: Pick<Cluster, 'name' | 'binDir' | 'kubeconfig' | 'workdir'>,
): EndpointSliceController {
  const log = join(cluster.workdir, 'endpointslice-controller.log');
  const out = openSync(log, 'a');
  const child: ChildProcess = spawn(
    join(cluster.binDir, 'kube-controller-manager'),
    [
      `--kubeconfig=${cluster.kubeconfig}`,
      '--controllers=endpointslice-controller',
      '--leader-elect=false',
      // No serving port: nothing to ask it, and no port to pick.
      '--secure-port=0',
      '--kube-api-qps=5000',
      '--kube-api-burst=10000',
    ],
    { stdio: ['ignore', out, out] },
  );
  writeFileSync(
    join(cluster.workdir, 'clusters', cluster.name, 'pids', 'endpointslice-controller.pid'),
    String(child.pid),
  );
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);
  const signal = (name: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the EndpointSlice controller exited; see ${log}`);
    child.kill(name);
  };
  const controller: EndpointSliceController = {
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    stop: async () => {
      process.off('exit', onExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
    log,
  };
  return controller;
}
