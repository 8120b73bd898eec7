// The local control plane from the command line.
//   cluster.ts build   build or reuse the cached binaries
//   cluster.ts up      start a cluster with the CRDs and the operator, the
//                      weather-app demo as a local git repository and its App;
//                      print what to try, and stop everything on Ctrl-C
//     --real-builds    the weather app built for real (real-dev.ts); builds
//                      are simulated by KWOK otherwise
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { type Delivery, startReceiver } from '../support/notify-receiver.ts';
import { waitFor } from '../support/wait.ts';
import { type Cluster, ensureBinaries, kubectlApply, startCluster, stopCluster, stopClusterSync } from './cluster.ts';
import { type Demo, prepareDemo } from './demo.ts';
import {
  prepareRealBuildHost,
  REAL_NAMESPACE,
  type RealBuildHost,
  realBuildApp,
  realBuildsRefusal,
  type Stop,
  serveDemoRepository,
  startRealBuilds,
} from './real-dev.ts';
import { MANIFEST_ACCEPT, type Registry } from './registry.ts';

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

async function up(real: boolean): Promise<void> {
  const started = Date.now();
  // Fixed folders keep the kubeconfig path stable between runs. The cluster's is
  // removed on stop; the demo's (the user's clone) is kept.
  const cache = process.env.TEAL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'teal');
  const workdir = join(cache, 'dev');
  const stops: Stop[] = [];
  const onStop = (s: Stop) => stops.push(s);
  let cluster: Cluster | undefined;
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    log('\nstopping the local control plane');
    void runStops(stops).finally(() => {
      if (cluster) stopClusterSync(cluster);
      process.exit(code);
    });
  };
  // Set before the real mode's registry starts, so that it goes too on Ctrl-C.
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  // A closed terminal: the components run detached and would outlive us.
  process.on('SIGHUP', () => stop(0));
  if (!real) log(SIMULATED);
  const host = real ? await prepareRealHost(stops) : undefined;
  const binDir = await ensureBinaries(log);
  await stopCluster({ name: 'teal-dev', workdir, binDir });
  cluster = await startCluster({ name: 'teal-dev', workdir, log });
  try {
    await setUp(cluster, cache, started, host, onStop);
  } catch (err) {
    log(`make dev failed: ${message(err)}`);
    stop(1);
  }
  // kwokctl runs the components detached; this process stays to stop them.
  setInterval(() => {}, 1 << 30);
}

/** The real mode's toolchain, registry and base image; or why not, and exit: asked for real builds, none faked. */
async function prepareRealHost(stops: Stop[]): Promise<RealBuildHost> {
  log('builds: real (BuildKit, rootless): preparing the toolchain, a registry and the base image');
  const refusal = realBuildsRefusal();
  if (refusal) {
    log(`make dev REAL_BUILDS=1: ${refusal}`);
    process.exit(2);
  }
  try {
    return await prepareRealBuildHost(log, (s) => stops.push(s));
  } catch (err) {
    log(`make dev REAL_BUILDS=1: real builds are not possible here: ${message(err)}`);
    await runStops(stops);
    process.exit(1);
  }
}

const SIMULATED = 'builds: simulated (KWOK): each build Job "succeeds" after a second with a made-up digest';
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Last started, first stopped; a stop that hangs does not keep the cluster up. */
async function runStops(stops: Stop[]): Promise<void> {
  for (const s of stops.reverse()) {
    await Promise.race([
      s().catch((err) => log(`while stopping: ${message(err)}`)),
      sleep(10_000, undefined, { ref: false }),
    ]);
  }
}

/** CRD and roles, the demo repository, the operator, the App; then what to try. */
async function setUp(
  cluster: Cluster,
  cache: string,
  started: number,
  host: RealBuildHost | undefined,
  onStop: (s: Stop) => void,
): Promise<void> {
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
  const demoDir = join(cache, 'demo');
  const site = host ? await serveDemoRepository(demoDir, onStop) : undefined;
  const demo = await prepareDemo(demoDir, `http://${HTTP_ADDR}/webhooks/generic`, {
    repositoryUrl: site?.repositoryUrl,
  });
  const runnerLog = join(demoDir, 'build-runner.log');
  if (host && site) await startRealBuilds(cluster, host, site, runnerLog, onStop);
  const logPath = join(demoDir, 'operator.log');
  await startOperator(cluster, demo, logPath, host === undefined);
  const notificationsLog = join(demoDir, 'notifications.log');
  await startNotificationReceiver(cluster, host ? REAL_NAMESPACE : 'default', notificationsLog, onStop);
  await kubectlApply(cluster, host ? realBuildApp(demo.manifest, host.registry) : demo.manifest);
  const appNamespace = host ? REAL_NAMESPACE : 'default';
  await kubectlApply(cluster, dashboardUser(appNamespace));
  printWhatToTry({
    cluster,
    demo,
    logPath,
    notificationsLog,
    started,
    appNamespace,
    real: host && site && { registry: host.registry, runnerLog, repositoryUrl: site.repositoryUrl },
  });
}

/**
 * The weather App's notifications (examples/weather-app/app.yaml) go to a
 * receiver on 127.0.0.1: the Secret weather-notify holds its URL and a fresh
 * signing key, and each delivery is one line of its log.
 */
async function startNotificationReceiver(
  cluster: Cluster,
  namespace: string,
  logPath: string,
  onStop: (s: Stop) => void,
): Promise<void> {
  const signingKey = randomBytes(32).toString('hex');
  writeFileSync(logPath, '');
  const receiver = await startReceiver({
    signingKey,
    onDelivery: (d) => appendFileSync(logPath, `${deliveryLine(d)}\n`),
  });
  onStop(receiver.close);
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'weather-notify', namespace },
    stringData: { url: receiver.url, 'signing-key': signingKey },
  };
  await kubectlApply(cluster, JSON.stringify(secret));
}

/** trigger, app, revision, delivery id, signature verified. */
function deliveryLine(d: Delivery): string {
  const app = d.body.app as { namespace?: string; name?: string } | undefined;
  const revision = d.body.revision ?? '-';
  const by = d.body.by ? ` by ${String(d.body.by)} (${String(d.body.via)})` : '';
  return `${new Date().toISOString()} ${d.trigger.padEnd(13)} ${app?.namespace}/${app?.name} revision ${revision}${by} delivery ${d.id} signature verified: ${d.verified ? 'yes' : 'no'}`;
}

/** The ServiceAccount whose token logs in to the dashboard: teal-promoter (config/rbac/roles.yaml) in the App's namespace. */
const DASHBOARD_USER = 'developer';

function dashboardUser(namespace: string): string {
  const account = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DASHBOARD_USER, namespace } };
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${DASHBOARD_USER}-teal-promoter`, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'teal-promoter' },
    subjects: [{ kind: 'ServiceAccount', name: DASHBOARD_USER, namespace }],
  };
  return [account, binding].map((o) => JSON.stringify(o)).join('\n---\n');
}

/** The operator from source, its logs to a file so that what to try stays on screen; resolves once ready. */
async function startOperator(cluster: Cluster, demo: Demo, logPath: string, fileGit: boolean): Promise<void> {
  const logFile = openSync(logPath, 'w');
  const operator = spawn(
    process.execPath,
    [
      join(root, 'src/main.ts'),
      `--kubeconfig=${cluster.kubeconfig}`,
      '--leader-elect=false',
      // The simulated mode follows the bare repository by its file:// URL.
      ...(fileGit ? ['--allow-file-git'] : []),
      `--http-addr=${HTTP_ADDR}`,
      `--webhook-secret-file=${demo.secretFile}`,
      // The notification receiver and any check server of the demo listen on 127.0.0.1,
      // which the operator refuses by default (docs/analysis.md, "Where checks may connect").
      '--egress-allow=127.0.0.1',
    ],
    { stdio: ['ignore', logFile, logFile] },
  );
  operator.once('exit', (code) => {
    if (code !== null && code !== 0) log(`the operator exited with code ${code}; see ${logPath}`);
  });
  process.once('exit', () => operator.kill('SIGTERM'));
  await waitForOperator(operator);
}

interface WhatToTry {
  cluster: Cluster;
  demo: Demo;
  logPath: string;
  notificationsLog: string;
  started: number;
  appNamespace: string;
  real: { registry: Registry; runnerLog: string; repositoryUrl: string } | undefined;
}

function printWhatToTry({ cluster, demo, logPath, notificationsLog, started, appNamespace, real }: WhatToTry): void {
  const change = demo.reused
    ? `echo "# $(date)" >> app.py && git commit -qam "Another change"`
    : `sed -i 's/clear sky/light rain/' sample_data.json && git commit -qam "Seoul: light rain"`;
  const builds = real
    ? `builds: real (BuildKit, rootless) pushing to ${real.registry.address}: the build runner runs each
build pod of namespace ${REAL_NAMESPACE} (kubectl's namespace here) on this machine; its log: ${real.runnerLog}`
    : SIMULATED;
  console.log(`
Teal is up in ${((Date.now() - started) / 1000).toFixed(1)}s: a real kube-apiserver, etcd, controller-manager and
scheduler on 127.0.0.1 with pods simulated by KWOK, the CRDs, and the operator with its
HTTP API on http://${HTTP_ADDR}; its logs: tail -f ${logPath}
${builds}

The weather app (examples/weather-app) is ${demo.reused ? 'the clone from your last run' : 'a fresh git repository'}, and its App is applied:
  working clone  ${demo.clone}
  remote         ${demo.remote}${real ? `, served as ${real.repositoryUrl}` : ''}
                 (its post-receive hook sends Teal a signed webhook)
  notifications  a receiver on 127.0.0.1 gets the App's (docs/notifications.md): tail -f ${notificationsLog}

In another shell:
  export KUBECONFIG=${cluster.kubeconfig}
  export PATH=${join(root, 'bin')}:${cluster.binDir}:$PATH     # kubectl v1.36 and kubectl teal
  kubectl teal get weather --watch          # the build Job, then revision 1 goes live${real ? realBuildHints(real.registry, demo.clone) : ''}

  cd ${demo.clone}
  ${change} && git push
  kubectl teal get weather                  # revision 2 built and in preview, its smoke check passes; the App waits (Paused)
  kubectl teal promote weather              # the weather Service switches to revision 2 (refused until the check passed)
  kubectl teal undo weather                 # and back to revision 1, its ReplicaSet reused
  kubectl teal status weather

The dashboard (docs/dashboard.md): open http://${HTTP_ADDR}/ and log in with the token this prints
(the ServiceAccount ${DASHBOARD_USER}, teal-promoter in ${appNamespace}; the token is valid for an hour):
  kubectl create token ${DASHBOARD_USER} -n ${appNamespace}
or let kubectl teal dashboard log you in, with a kubeconfig user that holds such a token:
  kubectl config set-credentials ${DASHBOARD_USER} --token="$(kubectl create token ${DASHBOARD_USER} -n ${appNamespace})"
  kubectl config set-context ${DASHBOARD_USER} --cluster=${clusterName(cluster)} --user=${DASHBOARD_USER}
  kubectl teal dashboard --context ${DASHBOARD_USER} --address http://${HTTP_ADDR}

examples/weather-app/README.md walks through abort, retry and the rest; docs/analysis.md explains the checks.
Ctrl-C stops the operator${real ? ', the build runner, the registry' : ''} and the cluster, and removes them (the clone stays, for next time).`);
}

/** The name of the cluster in the kubeconfig make dev writes, for a context of another user. */
function clusterName(cluster: Cluster): string {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  return kc.getCurrentCluster()?.name ?? 'kwok-teal-dev';
}

/** Each image is pushed as team/weather:<commit>; the App deploys the digest the registry gives for it. */
function realBuildHints(registry: Registry, clone: string): string {
  return `
  kubectl teal logs weather -f              # BuildKit's own log of the build
  kubectl get app weather -o jsonpath='{.status.active.image}'   # the image it deployed, by digest
  # Every manifest kind in Accept: else the registry converts the manifest, digest and all.
  curl -sI -H 'Accept: ${MANIFEST_ACCEPT}' \\
    ${registry.url}/v2/team/weather/manifests/$(git -C ${clone} rev-parse HEAD) | grep -i docker-content-digest`;
}

const command = process.argv[2];
if (command === 'build') {
  console.log(await ensureBinaries(log));
} else if (command === 'up') {
  // make dev REAL_BUILDS=1 passes --real-builds.
  await up(process.argv.includes('--real-builds') || process.env.TEAL_REAL_BUILDS === '1');
} else {
  console.error('usage: cluster.ts build|up [--real-builds]');
  process.exit(2);
}
