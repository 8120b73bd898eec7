// The local control plane from the command line.
//   cluster.ts build   build or reuse the cached binaries
//   cluster.ts up      start a cluster with the CRDs and the operator, the
//                      weather-app demo as a local git repository and its App;
//                      print what to try, and stop everything on Ctrl-C
//     --real-builds    the weather app built for real (real-dev.ts); builds
//                      are simulated by KWOK otherwise
//     --previews       pull-request previews from a local Gitea (dev-gitea.ts),
//                      built first if it is not (about 20 minutes cold); by
//                      default only when Gitea is built; --no-previews: never
//   cluster.ts pr      a pull request on the Gitea of the running `up`, and
//                      what to watch as its preview comes up
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { appPageUrl } from '../../src/app/dashboard-pages.ts';
import { type Delivery, startReceiver } from '../support/notify-receiver.ts';
import { waitFor } from '../support/wait.ts';
import {
  type Cluster,
  ensureBinaries,
  kubeconfigOf,
  kubectlApply,
  startCluster,
  stopCluster,
  stopClusterSync,
} from './cluster.ts';
import { type Demo, prepareDemo } from './demo.ts';
import {
  DEV_GITEA_ADDR,
  DEV_USER,
  type DevForge,
  FORGE_FILE,
  openDevPullRequest,
  portOf,
  prepareDevPreviews,
  readForgeFile,
  TOKEN_SECRET,
} from './dev-gitea.ts';
import { cachedGitea, ensureGitea, type Gitea, startGitea } from './gitea.ts';
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

// Fixed folders keep the kubeconfig path stable between runs. The cluster's is
// removed on stop; the demo's (the user's clone) is kept.
const cache = process.env.TEAL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'teal');
const workdir = join(cache, 'dev');
const demoDir = join(cache, 'demo');

/** Pull-request previews: with Gitea when it is built (auto), building it first (on), or not (off). */
type PreviewsMode = 'auto' | 'on' | 'off';

async function up(real: boolean, previewsMode: PreviewsMode): Promise<void> {
  const started = Date.now();
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
  const gitea = await startPreviewsGitea(previewsMode, real, onStop);
  const binDir = await ensureBinaries(log);
  await stopCluster({ name: 'teal-dev', workdir, binDir });
  cluster = await startCluster({ name: 'teal-dev', workdir, log });
  try {
    await setUp(cluster, started, host, gitea, onStop);
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

/**
 * dev's Gitea on DEV_GITEA_ADDR, or undefined with one line saying why not and
 * how to get it: a cold build is some 20 minutes, which plain `make dev` does not wait for.
 */
async function startPreviewsGitea(
  mode: PreviewsMode,
  real: boolean,
  onStop: (s: Stop) => void,
): Promise<Gitea | undefined> {
  if (real) {
    // Asked for both: say why there are no previews; otherwise real mode stays as it was.
    if (mode === 'on')
      log('previews: not with REAL_BUILDS=1 (the App follows the demo over HTTPS there): run plain make dev');
    return undefined;
  }
  if (mode === 'off') return undefined;
  if (mode === 'auto' && !(await cachedGitea())) {
    log(
      'previews: off, Gitea is not built: `make gitea` once (about 20 minutes) and make dev runs it, or `make dev PREVIEWS=1`',
    );
    return undefined;
  }
  try {
    if (mode === 'on') await ensureGitea(log);
    const gitea = await startGitea({ port: portOf(DEV_GITEA_ADDR), log });
    onStop(async () => {
      rmSync(join(demoDir, FORGE_FILE), { force: true });
      await gitea.stop();
    });
    log(`previews: Gitea ${gitea.version} on ${gitea.url}`);
    return gitea;
  } catch (err) {
    // The first line says why; Gitea's log after it is long.
    const why = `${message(err).split('\n')[0]} (TEAL_DEV_GITEA_ADDR=127.0.0.1:PORT moves dev's Gitea)`;
    if (mode === 'on') {
      log(`make dev PREVIEWS=1: ${why}`);
      process.exit(1);
    }
    log(`previews: off, ${why}`);
    return undefined;
  }
}

/** Previews run in the simulated mode only, whose App is in default. */
const PREVIEWS_NAMESPACE = 'default';

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

/** CRD and roles, the demo repository (on dev's Gitea too, when it runs), the operator, the App; then what to try. */
async function setUp(
  cluster: Cluster,
  started: number,
  host: RealBuildHost | undefined,
  gitea: Gitea | undefined,
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
  const site = host ? await serveDemoRepository(demoDir, onStop) : undefined;
  const previews = gitea
    ? await prepareDevPreviews(gitea, demoDir, { operatorUrl: `http://${HTTP_ADDR}`, namespace: PREVIEWS_NAMESPACE })
    : undefined;
  const demo =
    previews?.demo ??
    (await prepareDemo(demoDir, `http://${HTTP_ADDR}/webhooks/generic`, { repositoryUrl: site?.repositoryUrl }));
  const runnerLog = join(demoDir, 'build-runner.log');
  if (host && site) await startRealBuilds(cluster, host, site, runnerLog, onStop);
  const logPath = join(demoDir, 'operator.log');
  await startOperator(cluster, demo, logPath, host === undefined);
  const notificationsLog = join(demoDir, 'notifications.log');
  await startNotificationReceiver(cluster, host ? REAL_NAMESPACE : 'default', notificationsLog, onStop);
  for (const secret of previews?.secrets ?? []) await kubectlApply(cluster, secret);
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
    forge: previews?.forge,
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
  forge: DevForge | undefined;
}

function printWhatToTry({
  cluster,
  demo,
  logPath,
  notificationsLog,
  started,
  appNamespace,
  real,
  forge,
}: WhatToTry): void {
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
                 (its post-receive hook ${forge ? 'pushes on to Gitea, then sends' : 'sends'} Teal a signed webhook)${forge ? giteaLines(forge) : ''}
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

${forge ? previewsHints(forge) : ''}examples/weather-app/README.md walks through abort, retry and the rest; docs/analysis.md explains the checks.
Ctrl-C stops the operator${real ? ', the build runner, the registry' : ''}${forge ? ', Gitea' : ''} and the cluster, and removes them (the clone stays, for next time${forge ? "; Gitea's repository and pull requests do not" : ''}).`);
}

/** Where the weather app is on dev's Gitea, and how to log in there. */
function giteaLines(forge: DevForge): string {
  const repo = `${forge.url}/${forge.repo.owner}/${forge.repo.name}`;
  return `
  Gitea          ${repo} (log in as ${forge.user.username}, password ${forge.user.password})
                 the App follows it and previews its pull requests (spec.previews; token: the Secret ${TOKEN_SECRET})`;
}

function previewsHints(forge: DevForge): string {
  return `Pull request previews (docs/previews.md), with the exports above:
  make dev-pr                               # a branch with a small change, and a pull request of it on Gitea
  kubectl teal previews weather --watch     # its preview: the child App weather-pr-<number>, building, then deploying
  http://${HTTP_ADDR}${appPageUrl(PREVIEWS_NAMESPACE, 'weather')}     # the dashboard's weather page, its Previews tab
  ${forge.url}/${forge.repo.owner}/${forge.repo.name}/pulls   # the pull request, its teal/preview commit status and Teal's comment

`;
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

/** `make dev-pr`: a pull request on the running dev's Gitea, and where to watch its preview. */
async function pr(): Promise<void> {
  const forge = await readForgeFile(demoDir);
  const { pr, branch, head } = await openDevPullRequest(forge);
  console.log(`Pull request #${pr.number} "${pr.title}": ${pr.html_url}
  branch ${branch} at ${head}, into main of ${forge.repo.owner}/${forge.repo.name} (Gitea login: ${DEV_USER})
Gitea tells Teal by a signed webhook; Teal lists the pull requests, makes the child App weather-pr-${pr.number}
from that commit, and writes the commit status teal/preview and one comment on the pull request:
  export KUBECONFIG=${kubeconfigOf(workdir)}
  export PATH=${join(root, 'bin')}:$PATH
  kubectl teal previews weather --watch
  kubectl teal get weather-pr-${pr.number} --watch
  the dashboard: http://${HTTP_ADDR}${appPageUrl(PREVIEWS_NAMESPACE, 'weather')} (its Previews tab), and the child's page`);
}

const command = process.argv[2];
const flags = process.argv.slice(3);
if (command === 'build') {
  console.log(await ensureBinaries(log));
} else if (command === 'up') {
  // make dev REAL_BUILDS=1 passes --real-builds; PREVIEWS=1 --previews, PREVIEWS=0 --no-previews.
  const previews: PreviewsMode = flags.includes('--no-previews') ? 'off' : flags.includes('--previews') ? 'on' : 'auto';
  await up(flags.includes('--real-builds') || process.env.TEAL_REAL_BUILDS === '1', previews);
} else if (command === 'pr') {
  try {
    await pr();
  } catch (err) {
    console.error(`make dev-pr: ${message(err)}`);
    process.exit(1);
  }
} else {
  console.error('usage: cluster.ts build|up [--real-builds] [--previews|--no-previews]|pr');
  process.exit(2);
}
