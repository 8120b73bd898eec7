// Teal's operator process: config, logger, caches, leader election, workers,
// the health endpoints, and a graceful stop.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type Config, readCommandLine } from './config.ts';

// The flags first, with light modules only (config.ts): --help and a flag
// error answer before the modules below load, which takes seconds on a busy
// machine.
const commandLine = readCommandLine(process.argv.slice(2), process.env);
if ('exit' in commandLine) {
  const { exit } = commandLine;
  if (exit.code === 0) process.stdout.write(`${exit.stdout}\n`);
  else process.stderr.write(`${exit.stderr}\n`);
  process.exit(exit.code);
}

const { pino } = await import('pino');
const { default: Fastify } = await import('fastify');
const { apiPlugin } = await import('./api/actions.ts');
const { REDACT_PATHS } = await import('./api/auth.ts');
const { webhookCandidateFinder } = await import('./api/webhook-apps.ts');
const { readWebhookSecretFile, webhooksPlugin } = await import('./api/webhooks.ts');
const { ANN_REFRESH } = await import('./app/intents.ts');
const { AppController } = await import('./controller/app-controller.ts');
const { Metrics } = await import('./controller/metrics.ts');
const { Sources } = await import('./controller/sources.ts');
const { checkGitUrl } = await import('./git/url.ts');
const { Writer } = await import('./kube/apply.ts');
const { loadKubeConfig } = await import('./kube/client.ts');
const { EventRecorder } = await import('./kube/events.ts');
const { defaultIdentity, LeaderElector } = await import('./kube/leader-election.ts');
// Instance types of the classes loaded above, for the steps below.
type AppController = InstanceType<typeof AppController>;
type Metrics = InstanceType<typeof Metrics>;
type Sources = InstanceType<typeof Sources>;
type LeaderElector = InstanceType<typeof LeaderElector>;

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

async function main(config: Config): Promise<void> {
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

await main(commandLine.run);
