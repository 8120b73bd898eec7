// Teal's operator process, top to bottom: the command line, the logger, the
// runnables in the order the manager starts them, then start. A SIGTERM stops
// them gracefully; a lost lease ends the process at once (src/manager.ts).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ApiOptions } from './api/actions.ts';
import type { DashboardFiles } from './api/dashboard.ts';
import type { OidcSettings } from './api/oidc.ts';
import type { WebhookOptions } from './api/webhooks.ts';
import type { BuildNetwork } from './build/network.ts';
import { type Config, readCommandLine } from './config.ts';
import { type LeadershipCallbacks, Manager, type Runnable } from './manager.ts';
import { watchStop } from './stop-watchdog.ts';

// The flags first, with light modules only (config.ts, manager.ts): --help and
// a flag error answer before the modules below load, which takes seconds on a
// busy machine.
const commandLine = readCommandLine(process.argv.slice(2), process.env);
if ('exit' in commandLine) {
  const { exit } = commandLine;
  if (exit.code === 0) process.stdout.write(`${exit.stdout}\n`);
  else process.stderr.write(`${exit.stderr}\n`);
  process.exit(exit.code);
}

const { pino } = await import('pino');
const { BoundedLogOutput } = await import('./log-output.ts');
const { REDACT_PATHS } = await import('./api/auth.ts');
const { AppController } = await import('./controller/app-controller.ts');
const { Metrics } = await import('./controller/metrics.ts');
const { Sources } = await import('./controller/sources.ts');
const { checkGitUrl } = await import('./git/url.ts');
const { loadKubeConfig } = await import('./kube/client.ts');
const { EventRecorder } = await import('./controller/events.ts');
const { parseEgressAllow } = await import('./kube/egress.ts');
const { egressFetch, egressPolicy } = await import('./kube/egress-fetch.ts');
const { defaultIdentity, LeaderElector } = await import('./kube/leader-election.ts');
const { ShardElection } = await import('./kube/shard-election.ts');
type ShardElectionOptions = import('./kube/shard-election.ts').ShardElectionOptions;
const { shardOf } = await import('./kube/shards.ts');
const { Gauge } = await import('prom-client');
// Instance types of the classes loaded above, for the steps below.
type AppController = InstanceType<typeof AppController>;
type ShardElection = InstanceType<typeof ShardElection>;
type Metrics = InstanceType<typeof Metrics>;

/** What the wiring steps share. */
interface Wiring {
  config: Config;
  log: Logger;
  identity: string;
  kubeConfig: KubeConfig;
  metrics: Metrics;
}

await main(commandLine.run);

async function main(config: Config): Promise<void> {
  const log = operatorLogger(config);
  const identity = defaultIdentity();
  // Aborted when this replica must not write any more: every API request in flight ends with it.
  const fence = new AbortController();
  const kubeConfig = loadKubeConfig(config.kubeconfig, { timeoutMs: config.requestTimeoutMs, fence: fence.signal });
  const p: Wiring = { config, log, identity, kubeConfig, metrics: new Metrics() };
  // Sharded: what /readyz says of the shards (built with the election, when the manager starts).
  let shards: ShardElection | undefined;
  const manager = new Manager({
    logger: log.child({ identity }),
    gracefulShutdownTimeoutMs: config.gracefulShutdownTimeoutMs,
    fence: (reason) => fence.abort(reason),
    exit: (code) => process.exit(code),
    ...(config.leaderElect
      ? {
          election: (callbacks: LeadershipCallbacks) => {
            if (config.shards <= 1) return elector(p, callbacks);
            shards = shardElection(p, callbacks, apps);
            return shards;
          },
        }
      : {}),
  });

  const canWrite = (appKey: string) => manager.canWrite(appKey);
  const { apps, sources } = makeController(p, canWrite, config.shards > 1 ? canWrite : undefined);
  // Caches first: what every replica serves (the API's reads, readiness) comes from them. Until they
  // have synced nothing listens, which the liveness probe's three 20 s periods leave room for.
  // Their lists go out now, while the HTTP server's modules load and its plugins register.
  manager.add(cachesRunnable(p, apps));
  manager.add(await httpServer(p, apps, manager, () => (shards ? shardsDetail(shards) : {})));
  // The poller resolves only what reconciles follow: it stops after the controller has drained.
  manager.add({ name: 'git sources', start: () => {}, stop: () => sources.stop() }, { leaderOnly: true });
  manager.add(
    { name: 'app controller', start: () => apps.startWorkers(), stop: () => apps.stopWorkers() },
    { leaderOnly: true },
  );
  stopOnSignals(p, manager);
  await manager.start();
}

/**
 * The process's logger. Bearer tokens in request headers never reach the logs. A stdout read
 * slowly or not at all costs neither unbounded memory nor an exit that never ends (log-output.ts).
 */
function operatorLogger(config: Config): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { component: 'teal' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    new BoundedLogOutput(process.stdout),
  );
}

/** SIGTERM or SIGINT stops the runnables gracefully (manager.ts), within --graceful-shutdown-timeout. */
function stopOnSignals({ config, log }: Wiring, manager: Manager): void {
  const stop = () => {
    // First: a deadline kept off the main thread, which no stuck event loop can miss (stop-watchdog.ts).
    watchStop(config.gracefulShutdownTimeoutMs, (err) => log.error({ err }, 'the stop watchdog did not start'));
    void manager.stop();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/**
 * The git poller and the App controller. Only the leader reconciles, so only it follows sources;
 * sharded, each replica reconciles and follows the Apps it owns.
 */
function makeController(p: Wiring, canWrite: (appKey: string) => boolean, owns?: (appKey: string) => boolean) {
  const { config, log, kubeConfig, metrics } = p;
  let apps: AppController | undefined;
  const sources = new Sources({
    kubeConfig,
    logger: log,
    allowFile: config.allowFileGit,
    changed: (keys) => apps?.enqueue(keys),
    onPoll: (info) => {
      metrics.gitResolve.observe(info.durationMs / 1000);
      if (info.error) metrics.gitErrors.inc({ reason: info.error.reason });
    },
  });
  apps = new AppController({
    kubeConfig,
    namespaces: config.namespaces,
    concurrency: config.concurrency,
    recorder: new EventRecorder(kubeConfig, p.identity, log),
    logger: log,
    canWrite,
    ...(owns ? { owns } : {}),
    sources,
    buildImages: { buildkit: config.buildkitImage, kaniko: config.kanikoImage },
    buildDefaults: {
      ...(config.defaultRegistry ? { registry: config.defaultRegistry } : {}),
      ...(config.defaultPushSecret ? { pushSecret: config.defaultPushSecret } : {}),
    },
    ...(config.buildNamespace !== undefined ? { buildNamespace: config.buildNamespace } : {}),
    buildNetwork: buildNetwork(config),
    checkGitUrl: (url) => checkGitUrl(url, { allowFile: config.allowFileGit }),
    fetch: checkedFetch(p),
    metrics,
  });
  return { apps, sources };
}

/** What every build pod gets of the network from the operator's flags. */
function buildNetwork(config: Config): BuildNetwork {
  const proxy = {
    ...(config.buildHttpProxy !== undefined ? { http: config.buildHttpProxy } : {}),
    ...(config.buildHttpsProxy !== undefined ? { https: config.buildHttpsProxy } : {}),
    ...(config.buildNoProxy !== undefined ? { noProxy: config.buildNoProxy } : {}),
  };
  return {
    ...(config.buildCaConfigmap ? { caConfigMap: config.buildCaConfigmap } : {}),
    ...(Object.keys(proxy).length > 0 ? { proxy } : {}),
  };
}

/** The fetch of checks and notifications: --egress-allow judges every connection they make. */
function checkedFetch({ config, log }: Wiring): typeof fetch {
  const policy = egressPolicy(parseEgressAllow(config.egressAllow));
  const allow = policy.allow.map((p) => p.text);
  log.info({ allow, own: [...policy.own] }, allow.length > 0 ? 'egress: only to the allowed' : 'egress: guarded');
  return egressFetch(policy);
}

/** The HTTP server every replica runs: health and metrics, the API and webhooks; it listens once started. */
async function httpServer(
  p: Wiring,
  apps: AppController,
  manager: Manager,
  readyDetails: () => Record<string, unknown>,
): Promise<Runnable> {
  const { config, log, metrics } = p;
  // Loaded here, after the caches' lists went out: their evaluation overlaps the API server's work.
  const { default: Fastify } = await import('fastify');
  const { apiPlugin } = await import('./api/actions.ts');
  const { healthPlugin } = await import('./api/health.ts');
  const { webhooksPlugin } = await import('./api/webhooks.ts');
  const { default: helmet } = await import('@fastify/helmet');
  const { securityHeaderOptions } = await import('./api/headers.ts');
  const { tls, https } = tlsSettings(config);
  // Request logs are noise for probes; warnings and errors still show.
  const server = Fastify({ loggerInstance: log.child({ component: 'http' }, { level: 'warn' }), ...https });
  const isReady = () => manager.isReady();
  await server.register(helmet, securityHeaderOptions(tls));
  await server.register(healthPlugin, {
    isReady,
    isLeader: () => manager.isLeader(),
    details: readyDetails,
    metrics: metrics.registry,
    beforeScrape: () => apps.refreshGauges(),
  });
  await server.register(apiPlugin, await apiOptions(p, apps, isReady, tls));
  await server.register(webhooksPlugin, await webhookOptions(p, apps));
  // Plugins booted now, while the caches list; start() then only binds the port, so readiness
  // follows the caches' sync at once.
  await server.ready();
  const [host, port] = config.httpAddr.split(':');
  return {
    name: 'http server',
    start: async () => void (await server.listen({ host, port: Number(port) })),
    stop: () => server.close(),
  };
}

/** HTTPS when both --tls-cert-file and --tls-key-file are set, their files read now; plain HTTP otherwise. */
function tlsSettings(config: Config): { tls: boolean; https: { https?: { cert: Buffer; key: Buffer } } } {
  const { tlsCertFile, tlsKeyFile } = config;
  if (!tlsCertFile || !tlsKeyFile) return { tls: false, https: {} };
  return { tls: true, https: { https: { cert: readFileSync(tlsCertFile), key: readFileSync(tlsKeyFile) } } };
}

/**
 * The API's and the dashboard's options: reads from the controller's caches, sessions, logins and
 * streams. The session key, the OIDC settings and the dashboard's files are read now, in that order,
 * so that a bad flag stops the start naming it.
 */
async function apiOptions(p: Wiring, apps: AppController, isReady: () => boolean, tls: boolean): Promise<ApiOptions> {
  const { config, log, kubeConfig, metrics } = p;
  if (config.dashboardAnonymous === 'read') {
    log.info('api: --dashboard-anonymous=read, pages and reads without credentials act as system:anonymous');
  }
  return {
    kubeConfig,
    apps: () => apps.caches.apps,
    replicaSets: () => apps.caches.replicaSets,
    appKubeEvents: () => apps.caches.appKubeEvents,
    builds: () => ({
      jobs: apps.caches.jobs,
      pods: apps.caches.buildPods,
      ...(config.buildNamespace !== undefined ? { namespace: config.buildNamespace } : {}),
    }),
    isReady,
    logger: log.child({ component: 'api' }),
    sessionKey: await sessionKey(p),
    tls,
    sessionReviewIntervalMs: config.sessionReviewIntervalMs,
    onLogin: (method, result) => metrics.logins.inc({ method, result }),
    oidc: oidcSettings(p),
    dashboard: await dashboardFiles(p),
    appEvents: () => apps.caches.apps,
    appDetails: () => [apps.caches.replicaSets, apps.caches.appKubeEvents],
    streamLimits: {
      maxStreams: config.dashboardMaxStreams,
      maxStreamsPerSession: config.dashboardMaxStreamsPerSession,
    },
    streamObserver: {
      open: (count) => metrics.streams.set(count),
      sent: (type) => metrics.streamEvents.inc({ type }),
      reset: () => metrics.streamResets.inc(),
      refused: (limit) => metrics.streamsRefused.inc({ limit }),
    },
    anonymousRead: config.dashboardAnonymous === 'read',
  };
}

/**
 * The webhooks' options: a push they match marks the Apps it concerns for a refresh;
 * a pull request, the Apps whose previews follow it for a listing, at most once per App per few seconds.
 */
async function webhookOptions(p: Wiring, apps: AppController): Promise<WebhookOptions> {
  const { config, kubeConfig, metrics, log } = p;
  const { webhookCandidateFinder } = await import('./api/webhook-apps.ts');
  const { spacedHints } = await import('./api/webhook-spacing.ts');
  const { readWebhookSecretFile } = await import('./api/webhooks.ts');
  const { ANN_REFRESH } = await import('./app/intents.ts');
  const { ANN_PREVIEWS_REQUESTED } = await import('./app/preview-labels.ts');
  const { Writer } = await import('./controller/apply.ts');
  const writer = new Writer(kubeConfig);
  return {
    candidates: webhookCandidateFinder(kubeConfig, () => apps.caches.apps.list()),
    // Recorded on each App rather than polled here: a standby replica may get the delivery.
    onPush: async (matched) => {
      const annotations = { [ANN_REFRESH]: new Date().toISOString() };
      await Promise.all(matched.map((m) => writer.patchAppMetadata(m.namespace, m.name, { annotations })));
    },
    onPullRequest: spacedHints(
      (namespace, name) =>
        writer.patchAppMetadata(namespace, name, {
          annotations: { [ANN_PREVIEWS_REQUESTED]: new Date().toISOString() },
        }),
      (err, app) => log.warn({ err, app }, 'webhooks: writing a pull-request hint failed'),
    ),
    ...(config.webhookSecretFile ? { globalSecret: readWebhookSecretFile(config.webhookSecretFile) } : {}),
    onResult: (provider, result) => metrics.webhooks.inc({ provider, result }),
  };
}

/**
 * The dashboard's files under /: --dashboard-dir's, or ui/ beside the bundle (dist/ui, which
 * npm run bundle makes; from source, the repository's dist/ui). Without them the operator
 * runs as before, and says so.
 */
async function dashboardFiles({ config, log }: Wiring): Promise<DashboardFiles | undefined> {
  const { readDashboardFiles } = await import('./api/dashboard.ts');
  const fromSource = import.meta.url.endsWith('.ts');
  const dir = config.dashboardDir ?? fileURLToPath(new URL(fromSource ? '../dist/ui/' : './ui/', import.meta.url));
  try {
    const files = readDashboardFiles(dir);
    log.info({ dir }, 'dashboard: served under /');
    return files;
  } catch (err) {
    if (config.dashboardDir !== undefined) throw new Error(`--dashboard-dir: ${(err as Error).message}`);
    log.info({ dir }, 'dashboard: not built (npm run bundle:ui makes it), / is not served');
    return undefined;
  }
}

/**
 * The OIDC login's settings, when --oidc-issuer-url is set: the secret and CA read from their
 * files now, so a missing one stops the start naming its flag. The secret is never logged.
 */
function oidcSettings({ config, log }: Wiring): OidcSettings | undefined {
  const issuer = config.oidcIssuerUrl;
  if (issuer === undefined || config.oidcClientId === undefined || config.oidcUsernamePrefix === undefined) {
    return undefined;
  }
  const read = (flag: string, path: string | undefined) => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`--${flag}: ${(err as Error).message}`);
    }
  };
  const secret = read('oidc-client-secret-file', config.oidcClientSecretFile)
    ?.toString('utf8')
    .replace(/[\r\n]+$/, '');
  if (secret === '') throw new Error(`--oidc-client-secret-file ${config.oidcClientSecretFile}: the file is empty`);
  const settings: OidcSettings = {
    issuer,
    clientId: config.oidcClientId,
    clientSecret: secret,
    ca: read('oidc-ca-file', config.oidcCaFile),
    mapping: {
      usernameClaim: config.oidcUsernameClaim,
      usernamePrefix: config.oidcUsernamePrefix,
      groupsClaim: config.oidcGroupsClaim,
      groupsPrefix: config.oidcGroupsPrefix ?? '',
    },
    extraScopes: config.oidcExtraScopes,
    redirectUrls: config.oidcRedirectUrl,
    providerName: config.oidcProviderName ?? issuer.host,
  };
  log.info(
    {
      issuer: issuer.href,
      clientId: settings.clientId,
      confidential: secret !== undefined,
      mapping: settings.mapping,
      redirectUrls: settings.redirectUrls.map((u) => u.href),
    },
    'dashboard: login by OIDC',
  );
  return settings;
}

/** The key that seals session cookies: --session-key-file's, shared by the replicas, or one of this process. */
async function sessionKey({ config, log }: Wiring) {
  const { randomSessionKey, sessionKeyOf } = await import('./api/session-cookie.ts');
  if (config.sessionKeyFile === undefined) {
    log.info(
      'sessions: no --session-key-file, a random key of this process seals them: a session holds on this replica only, until it restarts',
    );
    return randomSessionKey();
  }
  let secret: Buffer;
  try {
    secret = readFileSync(config.sessionKeyFile);
  } catch (err) {
    throw new Error(`--session-key-file: ${(err as Error).message}`);
  }
  try {
    const key = sessionKeyOf(secret);
    log.info({ file: config.sessionKeyFile }, 'sessions: sealed with the key of --session-key-file');
    return key;
  } catch (err) {
    throw new Error(`--session-key-file ${config.sessionKeyFile}: ${(err as Error).message}`);
  }
}

/**
 * The caches' lists are sent at once, not when the manager starts the runnable: a cold start
 * waits for the slowest list (at 1,000 Apps, two pages of Apps), and the HTTP server is built
 * meanwhile. start() waits for them to sync; no handler queues anything before the controller
 * runs, so starting early changes no order that matters.
 */
function cachesRunnable(p: Wiring, apps: AppController): Runnable {
  const { config, log, identity } = p;
  const namespaces = config.namespaces.length > 0 ? config.namespaces : '(all)';
  log.info({ identity, namespaces }, 'starting caches');
  const synced = apps.startCaches();
  // A stop before start() rejects it; start() is where that is reported, if it is called at all.
  synced.catch(() => {});
  return {
    name: 'caches',
    start: async () => {
      await synced;
      log.info('caches synced');
    },
    stop: () => apps.stopCaches(),
  };
}

/** The Lease election; the manager starts the leader-only runnables on winning it and exits on losing it. */
function elector(p: Wiring, callbacks: LeadershipCallbacks) {
  const { config, log, identity, metrics } = p;
  const leading = (on: boolean) => metrics.leader.set({ name: config.leaderElectionId }, on ? 1 : 0);
  leading(false);
  return new LeaderElector({
    kubeConfig: p.kubeConfig,
    namespace: config.leaderElectionNamespace,
    name: config.leaderElectionId,
    identity,
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    logger: log.child({ component: 'leader-election' }),
    onLeadershipChange: leading,
    ...callbacks,
  });
}

/**
 * --shards N: one Lease per shard. The controller runs at once and reconciles
 * the Apps of the shards held; a shard won queues its Apps, a shard handed
 * back is drained first; a shard lost any other way ends the process.
 */
function shardElection(p: Wiring, callbacks: LeadershipCallbacks, apps: AppController) {
  const { config, log, identity, metrics } = p;
  const owned = new Gauge({
    name: 'teal_shards_owned',
    help: 'Shards whose Lease this replica holds (--shards); it reconciles their Apps.',
    registers: [metrics.registry],
  });
  const inShard = (shard: number) => (appKey: string) => shardOf(appKey, config.shards) === shard;
  return new ShardElection({
    kubeConfig: p.kubeConfig,
    namespace: config.leaderElectionNamespace,
    electionId: config.leaderElectionId,
    identity,
    shards: config.shards,
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    logger: log.child({ component: 'leader-election' }),
    ...callbacks,
    onAcquired: (shard) => apps.enqueueWhere(inShard(shard)),
    drain: (shard) => apps.drain(inShard(shard)),
    onShardLeadership: (lease, leading) => metrics.leader.set({ name: lease }, leading ? 1 : 0),
    onOwnedChange: (n) => owned.set(n),
    onStranded: strandedReporter(p),
  });
}

/**
 * A shard held by no live member: the gauge teal_shard_stranded per shard
 * and holder, and a Warning Event on its Lease, where `kubectl describe
 * lease` and the namespace's events show it (docs/sharding.md).
 */
function strandedReporter(p: Wiring): NonNullable<ShardElectionOptions['onStranded']> {
  const { config, metrics, identity, kubeConfig, log } = p;
  const gauge = new Gauge({
    name: 'teal_shard_stranded',
    help: 'Shards whose Lease is held by no live member of the election (1 per shard and holder): their Apps are not reconciled.',
    labelNames: ['shard', 'holder'],
    registers: [metrics.registry],
  });
  const recorder = new EventRecorder(kubeConfig, identity, log);
  return (stranded, fresh) => {
    gauge.reset();
    for (const s of stranded) gauge.set({ shard: String(s.shard), holder: s.holder }, 1);
    for (const s of fresh) {
      const target = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        namespace: config.leaderElectionNamespace,
        name: s.lease,
        ...(s.uid ? { uid: s.uid } : {}),
      };
      const message = `shard ${s.shard} is held by ${s.holder}, which is no live member of the election: its Apps are not reconciled until this Lease expires or is deleted`;
      void recorder.record(target, 'Warning', 'ShardStranded', message);
    }
  };
}

/** /readyz's word on the shards: those held, and those held by no live member. */
function shardsDetail(shards: ShardElection): Record<string, unknown> {
  return { shards: { owned: shards.owned().sort((a, b) => a - b), stranded: shards.stranded() } };
}
