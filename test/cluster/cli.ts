// The local control plane from the command line.
//   cluster.ts build   build or reuse the cached binaries
//   cluster.ts up      start a cluster with the CRDs and the operator, the
//                      weather-app demo as a local git repository and its App;
//                      print what to try, and stop everything on Ctrl-C
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../support/wait.ts';
import { type Cluster, ensureBinaries, kubectlApply, startCluster, stopCluster, stopClusterSync } from './cluster.ts';
import { prepareDemo } from './demo.ts';

const log = (line: string) => console.error(line);
const root = fileURLToPath(new URL('../..', import.meta.url));
const HTTP_ADDR = process.env.TEAL_DEV_HTTP_ADDR ?? '127.0.0.1:8081';

/** Resolves once the operator answers /readyz; fails if it exits first. */
async function waitForOperator(operator: ChildProcess): Promise<void> {
  await waitFor(
    `the operator to be ready on ${HTTP_ADDR}`,
    async () => {
      if (operator.exitCode !== null) throw new Error(`the operator exited with code ${operator.exitCode}`);
      const ready = await fetch(`http://${HTTP_ADDR}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      return ready ? true : undefined;
    },
    { intervalMs: 200 },
  );
}

async function up(): Promise<void> {
  const started = Date.now();
  // Fixed folders keep the kubeconfig path stable between runs. The cluster's is
  // removed on stop; the demo's (the user's clone) is kept.
  const cache = process.env.TEAL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'teal');
  const workdir = join(cache, 'dev');
  const binDir = await ensureBinaries(log);
  await stopCluster({ name: 'teal-dev', workdir, binDir });
  const cluster = await startCluster({ name: 'teal-dev', workdir, log });
  const stop = () => {
    log('\nstopping the local control plane');
    stopClusterSync(cluster);
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // A closed terminal: the components run detached and would outlive us.
  process.on('SIGHUP', stop);
  try {
    await setUp(cluster, cache, started);
  } catch (err) {
    log(`make dev failed: ${err instanceof Error ? err.message : String(err)}`);
    stop();
  }
  // kwokctl runs the components detached; this process stays to stop them.
  setInterval(() => {}, 1 << 30);
}

/** CRD and roles, the demo repository, the operator, the App; then what to try. */
async function setUp(cluster: Cluster, cache: string, started: number): Promise<void> {
  // The CRD, the user roles and the intents policy, as `make deploy` installs them.
  const files = [
    'crd/teal.dev_apps.yaml',
    'crd/teal.dev_analysistemplates.yaml',
    'rbac/roles.yaml',
    'policy/intents.yaml',
  ];
  for (const file of files) {
    await kubectlApply(cluster, readFileSync(join(root, 'config', file), 'utf8'));
  }
  const demo = await prepareDemo(join(cache, 'demo'), `http://${HTTP_ADDR}/webhooks/generic`);
  const logPath = join(cache, 'demo', 'operator.log');
  const logFile = openSync(logPath, 'w');
  const operator = spawn(
    process.execPath,
    [
      join(root, 'src/main.ts'),
      `--kubeconfig=${cluster.kubeconfig}`,
      '--leader-elect=false',
      '--allow-file-git',
      `--http-addr=${HTTP_ADDR}`,
      `--webhook-secret-file=${demo.secretFile}`,
    ],
    // To a file, so that what to try stays on screen.
    { stdio: ['ignore', logFile, logFile] },
  );
  operator.once('exit', (code) => {
    if (code !== null && code !== 0) log(`the operator exited with code ${code}; see ${logPath}`);
  });
  process.once('exit', () => operator.kill('SIGTERM'));
  await waitForOperator(operator);
  await kubectlApply(cluster, demo.manifest);
  const change = demo.reused
    ? `echo "# $(date)" >> app.py && git commit -qam "Another change"`
    : `sed -i 's/clear sky/light rain/' sample_data.json && git commit -qam "Seoul: light rain"`;
  console.log(`
Teal is up in ${((Date.now() - started) / 1000).toFixed(1)}s: a real kube-apiserver, etcd, controller-manager and
scheduler on 127.0.0.1 with pods simulated by KWOK, the CRDs, and the operator with its
HTTP API on http://${HTTP_ADDR}; its logs: tail -f ${logPath}

The weather app (examples/weather-app) is ${demo.reused ? 'the clone from your last run' : 'a fresh git repository'}, and its App is applied:
  working clone  ${demo.clone}
  remote         ${demo.remote}   (its post-receive hook sends Teal a signed webhook)

In another shell:
  export KUBECONFIG=${cluster.kubeconfig}
  export PATH=${join(root, 'bin')}:${cluster.binDir}:$PATH     # kubectl v1.36 and kubectl teal
  kubectl teal get weather --watch          # the build Job, then revision 1 goes live

  cd ${demo.clone}
  ${change} && git push
  kubectl teal get weather                  # revision 2 built and in preview, its smoke check passes; the App waits (Paused)
  kubectl teal promote weather              # the weather Service switches to revision 2 (refused until the check passed)
  kubectl teal undo weather                 # and back to revision 1, its ReplicaSet reused
  kubectl teal status weather

examples/weather-app/README.md walks through abort, retry and the rest; docs/analysis.md explains the checks.
Ctrl-C stops the operator and the cluster, and removes them (the clone stays, for next time).`);
}

const command = process.argv[2];
if (command === 'build') {
  console.log(await ensureBinaries(log));
} else if (command === 'up') {
  await up();
} else {
  console.error('usage: cluster.ts build|up');
  process.exit(2);
}
