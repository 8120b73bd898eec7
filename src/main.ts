// Teal's operator process: config, logger, caches, leader election, workers,
// the health endpoints, and a graceful stop.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import Fastify from 'fastify';
import { type Logger, pino } from 'pino';
import { z } from 'zod';
import { apiPlugin } from './api/actions.ts';
import { REDACT_PATHS } from './api/auth.ts';
import { webhookCandidateFinder } from './api/webhook-apps.ts';
import { readWebhookSecretFile, webhooksPlugin } from './api/webhooks.ts';
import { ANN_REFRESH } from './app/intents.ts';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from './app/patterns.ts';
import { DEFAULT_BUILD_IMAGES } from './build/job.ts';
import { registryProblem } from './build/registry.ts';
import { AppController } from './controller/app-controller.ts';
import { Metrics } from './controller/metrics.ts';
import { Sources } from './controller/sources.ts';
import { checkGitUrl } from './git/url.ts';
import { Writer } from './kube/apply.ts';
import { loadKubeConfig } from './kube/client.ts';
import { EventRecorder } from './kube/events.ts';
import { defaultIdentity, LeaderElector } from './kube/leader-election.ts';

const ConfigSchema = z.strictObject({
  kubeconfig: z.string().optional(),
  namespaces: z
    .array(z.string().regex(DNS1123_LABEL, 'each namespace must be a DNS label'))
    .describe('The namespaces to watch; all when empty.'),
  leaderElect: z.boolean(),
  leaderElectionNamespace: z.string().min(1),
  leaderElectionId: z.string().min(1),
  leaseDurationMs: z.int().min(1000, 'must be at least 1s'),
  renewDeadlineMs: z.int().min(500, 'must be at least 0.5s'),
  retryPeriodMs: z.int().min(100, 'must be at least 0.1s'),
  requestTimeoutMs: z.int().min(100, 'must be at least 0.1s'),
  gracefulShutdownTimeoutMs: z.int().min(100, 'must be at least 0.1s'),
  concurrency: z.int().min(1).max(64),
  httpAddr: z.string().regex(/^[^:]+:\d+$/, 'must be host:port'),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error']),
  allowFileGit: z.boolean(),
  webhookSecretFile: z.string().optional(),
  tlsCertFile: z.string().optional(),
  tlsKeyFile: z.string().optional(),
  buildkitImage: z.string().min(1),
  kanikoImage: z.string().min(1),
  defaultRegistry: z
    .string()
    .check((ctx) => {
      const problem = registryProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    })
    .optional()
    .describe('Apps without build.image push to <registry>/<namespace>/<name>.'),
  defaultPushSecret: z
    .string()
    .max(253)
    .regex(DNS1123_SUBDOMAIN, 'must be a Secret name: lowercase letters, digits, "-" and "."')
    .optional()
    .describe('The push Secret, in the App namespace, of Apps without build.pushSecretRef.'),
});
type Config = z.output<typeof ConfigSchema>;

const USAGE = `teal: the Teal operator

  --kubeconfig PATH                 kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --namespace NS[,NS...]            watch these namespaces only (default: all); needs only namespaced RBAC
  --leader-elect=false              run without leader election (one replica only)
  --leader-election-namespace NS    namespace of the Lease (default: $POD_NAMESPACE or default)
  --leader-election-id NAME         name of the Lease (default: teal-controller)
  --lease-duration 15s --renew-deadline 10s --retry-period 2s
  --request-timeout SECONDS         each API request but a watch is aborted after this long; shorter than
                                    --renew-deadline (default: half of it)
  --graceful-shutdown-timeout 20s   after SIGTERM, exit even if reconciles have not finished by then
  --concurrency N                   concurrent reconciles (default: 4)
  --http-addr HOST:PORT             the HTTP server: /api/v1, /webhooks, /healthz, /readyz, /metrics (default: 127.0.0.1:8081)
  --webhook-secret-file PATH        a global webhook secret, besides each App's webhookSecretRef
  --tls-cert-file PATH --tls-key-file PATH   serve HTTPS instead of HTTP
  --log-level LEVEL                 trace|debug|info|warn|error (default: info)
  --allow-file-git                  accept file:// git URLs (local development only)
  --buildkit-image IMAGE            build image for engine buildkit (default: ${DEFAULT_BUILD_IMAGES.buildkit})
  --kaniko-image IMAGE              build image for engine kaniko (default: ${DEFAULT_BUILD_IMAGES.kaniko})
  --default-registry HOST[/PATH]    Apps without spec.build.image push to HOST[/PATH]/<namespace>/<name>
                                    (e.g. harbor.example.com/apps; default: none, build.image is required)
  --default-push-secret NAME        the push Secret, in the App's namespace, of Apps without spec.build.pushSecretRef`;

/** The command-line flag a config key comes from: leaseDurationMs → lease-duration. */
const flagOf = (key: string): string =>
  key === 'namespaces' ? 'namespace' : key.replace(/Ms$/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const seconds = (v: string | undefined, fallback: number) =>
  v === undefined ? fallback : Math.round(Number.parseFloat(v) * 1000);

export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect': { type: 'string', default: 'true' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string', default: 'teal-controller' },
      'lease-duration': { type: 'string' },
      'renew-deadline': { type: 'string' },
      'retry-period': { type: 'string' },
      'request-timeout': { type: 'string' },
      'graceful-shutdown-timeout': { type: 'string' },
      concurrency: { type: 'string', default: '4' },
      'http-addr': { type: 'string', default: '127.0.0.1:8081' },
      'log-level': { type: 'string', default: env.LOG_LEVEL ?? 'info' },
      'allow-file-git': { type: 'boolean', default: false },
      'webhook-secret-file': { type: 'string' },
      'tls-cert-file': { type: 'string' },
      'tls-key-file': { type: 'string' },
      'buildkit-image': { type: 'string', default: DEFAULT_BUILD_IMAGES.buildkit },
      'kaniko-image': { type: 'string', default: DEFAULT_BUILD_IMAGES.kaniko },
      'default-registry': { type: 'string' },
      'default-push-secret': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const renewDeadlineMs = seconds(values['renew-deadline'], 10_000);
  const result = ConfigSchema.safeParse({
    kubeconfig: values.kubeconfig,
    namespaces: [
      ...new Set(
        (values.namespace ?? '')
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean),
      ),
    ],
    leaderElect: values['leader-elect'] !== 'false',
    leaderElectionNamespace: values['leader-election-namespace'] ?? env.POD_NAMESPACE ?? 'default',
    leaderElectionId: values['leader-election-id'],
    leaseDurationMs: seconds(values['lease-duration'], 15_000),
    renewDeadlineMs,
    retryPeriodMs: seconds(values['retry-period'], 2_000),
    requestTimeoutMs: seconds(values['request-timeout'], Math.round(renewDeadlineMs / 2)),
    gracefulShutdownTimeoutMs: seconds(values['graceful-shutdown-timeout'], 20_000),
    concurrency: Number(values.concurrency),
    httpAddr: values['http-addr'],
    logLevel: values['log-level'],
    allowFileGit: values['allow-file-git'],
    webhookSecretFile: values['webhook-secret-file'],
    tlsCertFile: values['tls-cert-file'],
    tlsKeyFile: values['tls-key-file'],
    buildkitImage: values['buildkit-image'],
    kanikoImage: values['kaniko-image'],
    defaultRegistry: values['default-registry'],
    defaultPushSecret: values['default-push-secret'],
  });
  if (!result.success) {
    throw new Error(result.error.issues.map((i) => `--${flagOf(String(i.path[0]))}: ${i.message}`).join('\n'));
  }
  if ((result.data.tlsCertFile === undefined) !== (result.data.tlsKeyFile === undefined)) {
    throw new Error('--tls-cert-file and --tls-key-file go together');
  }
  const timing = timingProblem(result.data);
  if (timing) throw new Error(timing);
  return result.data;
}

/**
 * How the lease and request timings must relate. A leader stops at the renew
 * deadline, before a standby may see the lease expire; a request must end
 * before that deadline too, or a write sent in one term could land in the next.
 */
function timingProblem(c: Config): string | undefined {
  if (c.renewDeadlineMs >= c.leaseDurationMs) return '--renew-deadline: must be shorter than --lease-duration';
  if (c.requestTimeoutMs >= c.renewDeadlineMs) {
    return `--request-timeout: must be shorter than --renew-deadline (${c.renewDeadlineMs / 1000}s)`;
  }
  return undefined;
}

/** What the steps of the process share: whether it is stopping, and its elector once started. */
interface ProcessState {
  config: Config;
  log: Logger;
  identity: string;
  /** Aborted when this replica must not write any more: every API request in flight ends with it. */
  fence: AbortController;
  shuttingDown: boolean;
  /** Set once the lease is being handed over on purpose, so that is not taken for losing it. */
  releasing: boolean;
  elector?: LeaderElector;
}

async function main(): Promise<void> {
  const config = readConfigOrExit();
  // Bearer tokens in request headers never reach the logs.
  const log = pino({
    level: config.logLevel,
    base: { component: 'teal' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  });
  const state: ProcessState = {
    config,
    log,
    identity: defaultIdentity(),
    fence: new AbortController(),
    shuttingDown: false,
    releasing: false,
  };
  const kubeConfig = loadKubeConfig(config.kubeconfig, {
    timeoutMs: config.requestTimeoutMs,
    fence: state.fence.signal,
  });
  const metrics = new Metrics();
  const { apps, sources } = makeController(state, kubeConfig, metrics);
  const server = await serveHttp(state, kubeConfig, metrics, apps);
  const stop = stopper(state, apps, sources, server);
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());

  log.info(
    { identity: state.identity, namespaces: config.namespaces.length > 0 ? config.namespaces : '(all)' },
    'starting caches',
  );
  await apps.startCaches();
  log.info('caches synced');
  if (config.leaderElect) await lead(state, kubeConfig, metrics, apps);
  else apps.startWorkers();
}

function readConfigOrExit(): Config {
  try {
    return parseConfig(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`teal: ${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    process.exit(2);
  }
}

/** The git poller and the App controller; only the leader's controller writes. */
function makeController(state: ProcessState, kubeConfig: KubeConfig, metrics: Metrics) {
  const { config, log } = state;
  let controller: AppController | undefined;
  const sources = new Sources({
    kubeConfig,
    logger: log,
    allowFile: config.allowFileGit,
    changed: (keys) => controller?.enqueue(keys),
    onPoll: (info) => {
      metrics.gitResolve.observe(info.durationMs / 1000);
      if (info.error) metrics.gitErrors.inc({ reason: info.error.reason });
    },
  });
  controller = new AppController({
    kubeConfig,
    namespaces: config.namespaces,
    concurrency: config.concurrency,
    recorder: new EventRecorder(kubeConfig, state.identity, log),
    logger: log,
    canWrite: () => !state.shuttingDown && (state.elector ? state.elector.isLeader() : true),
    sources,
    buildImages: { buildkit: config.buildkitImage, kaniko: config.kanikoImage },
    buildDefaults: {
      ...(config.defaultRegistry ? { registry: config.defaultRegistry } : {}),
      ...(config.defaultPushSecret ? { pushSecret: config.defaultPushSecret } : {}),
    },
    checkGitUrl: (url) => checkGitUrl(url, { allowFile: config.allowFileGit }),
    metrics,
  });
  return { apps: controller, sources };
}

/** The HTTP server every replica runs: health, metrics, the API and webhooks. */
async function serveHttp(
  state: ProcessState,
  kubeConfig: KubeConfig,
  metrics: Metrics,
  apps: AppController,
): Promise<{ close: () => Promise<void> }> {
  const { config, log } = state;
  const writer = new Writer(kubeConfig);
  const ready = () => !state.shuttingDown && apps.hasSynced();
  // Request logs are noise for probes; warnings and errors still show.
  const https =
    config.tlsCertFile && config.tlsKeyFile
      ? { https: { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) } }
      : {};
  const server = Fastify({ loggerInstance: log.child({ component: 'http' }, { level: 'warn' }), ...https });
  server.get('/healthz', async () => ({ status: 'ok' }));
  server.get('/metrics', async (_req, reply) => {
    apps.refreshGauges();
    return reply.header('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  await server.register(apiPlugin, {
    kubeConfig,
    apps: () => apps.caches.apps,
    replicaSets: () => apps.caches.replicaSets,
    isReady: ready,
    logger: log.child({ component: 'api' }),
  });
  await server.register(webhooksPlugin, {
    candidates: webhookCandidateFinder(kubeConfig, () => apps.caches.apps.list()),
    // Recorded on each App rather than polled here: a standby replica may get the delivery.
    onPush: async (matched) => {
      const annotations = { [ANN_REFRESH]: new Date().toISOString() };
      await Promise.all(matched.map((m) => writer.patchAppMetadata(m.namespace, m.name, { annotations })));
    },
    ...(config.webhookSecretFile ? { globalSecret: readWebhookSecretFile(config.webhookSecretFile) } : {}),
    onResult: (provider, result) => metrics.webhooks.inc({ provider, result }),
  });
  server.get('/readyz', async (_req, reply) => {
    const ok = ready();
    return reply
      .code(ok ? 200 : 503)
      .send({ status: ok ? 'ready' : 'not ready', leader: state.elector?.isLeader() ?? true });
  });
  const [host, port] = config.httpAddr.split(':');
  await server.listen({ host, port: Number(port) });
  return { close: async () => server.close() };
}

/**
 * No draining, as controller-runtime on a lost lease: what is in flight is
 * aborted, so a request held up in the network cannot land once another
 * replica leads, and the process exits before anything else runs.
 */
function exitNow(state: ProcessState, why: string): never {
  state.fence.abort(new Error(why));
  state.log.error({ identity: state.identity }, `${why}: aborted the API requests in flight, exiting without draining`);
  process.exit(1);
}

/** SIGTERM: readiness off, drain, release the lease; past --graceful-shutdown-timeout, exit anyway. */
function stopper(state: ProcessState, apps: AppController, sources: Sources, server: { close: () => Promise<void> }) {
  return async (): Promise<void> => {
    if (state.shuttingDown) return;
    state.shuttingDown = true;
    const grace = state.config.gracefulShutdownTimeoutMs;
    setTimeout(() => exitNow(state, `still stopping after ${grace / 1000}s (--graceful-shutdown-timeout)`), grace);
    state.log.info('stopping: readiness off, draining reconciles, releasing the lease');
    await apps.stopWorkers();
    state.releasing = true;
    await state.elector?.stop({ release: true });
    apps.stopCaches();
    sources.stop();
    await server.close();
    process.exit(0);
  };
}

/** Leader election: workers run while this replica holds the Lease; losing it ends the process. */
async function lead(state: ProcessState, kubeConfig: KubeConfig, metrics: Metrics, apps: AppController) {
  const { config, log, identity } = state;
  metrics.leader.set({ name: config.leaderElectionId }, 0);
  state.elector = new LeaderElector({
    kubeConfig,
    namespace: config.leaderElectionNamespace,
    name: config.leaderElectionId,
    identity,
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    logger: log.child({ component: 'leader-election' }),
    onLeadershipChange: (leading) => metrics.leader.set({ name: config.leaderElectionId }, leading ? 1 : 0),
    onStartedLeading: () => {
      log.info({ identity }, 'became leader: reconciling');
      apps.startWorkers();
    },
    onStoppedLeading: () => {
      // Also while draining after SIGTERM: the writes of a drain must not outlive the lease either.
      if (!state.releasing) exitNow(state, 'lost the lease');
    },
  });
  await state.elector.start();
}

await main();
