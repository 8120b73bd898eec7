// The App controller: watch events feed one queue, workers reconcile. Caches
// run on every replica (they serve reads); workers run only on the leader.
// Sharded, workers run on every replica and reconcile only the Apps whose
// shard it holds (owns); a shard handed back is drained first.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type CachedApp, PREVIEWED_REPOSITORY_INDEX } from '../app/cached.ts';
import { ANN_REFRESH, readRefreshRequest } from '../app/intents.ts';
import { LABEL_PREVIEW_OF } from '../app/preview-labels.ts';
import type { BuildImages } from '../build/images.ts';
import type { BuildNetwork } from '../build/network.ts';
import type { BuildDefaults } from '../build/registry.ts';
import { errorMessage, isConflict } from '../kube/errors.ts';
import { WorkQueue } from '../kube/workqueue.ts';
import { Notifier } from '../notify/notifier.ts';
import { Sender } from '../notify/sender.ts';
import { previewedRepository } from '../previews/repository-owner.ts';
import { AnalysisRunner } from './analysis-runner.ts';
import { AppMemory } from './app-memory.ts';
import { type Caches, makeCaches, watchConfigMaps } from './cache.ts';
import { ClusterClient } from './cluster-client.ts';
import { Controller, type Decision } from './controller.ts';
import type { EventRecorder } from './events.ts';
import { ActionFailed, NotLeaderError } from './executor.ts';
import type { Metrics } from './metrics.ts';
import { PreviewsRunner } from './previews-runner.ts';
import { Reconciler, type SourceView } from './reconciler.ts';
import { RouteCache } from './routes.ts';

export interface AppControllerOptions {
  kubeConfig: KubeConfig;
  /** Watched namespaces; all when empty. */
  namespaces: readonly string[];
  concurrency: number;
  recorder: EventRecorder;
  logger: Logger;
  /** Whether this replica may write for the App now: checked before every write. */
  canWrite: (appKey: string) => boolean;
  /**
   * Sharded: whether the App's shard is this replica's. Apps of other shards
   * are neither queued nor reconciled, and their sources not followed.
   */
  owns?: (appKey: string) => boolean;
  sources: SourceView;
  buildImages: BuildImages;
  /** --default-registry and --default-push-secret. */
  buildDefaults?: BuildDefaults;
  /** --build-namespace: where build Jobs run, away from their Apps. */
  buildNamespace?: string;
  /** --build-ca-configmap and the build proxy flags. */
  buildNetwork?: BuildNetwork;
  checkGitUrl: (url: string) => string | undefined;
  /** What web and Prometheus checks and notifications connect with (main.ts: --egress-allow judges it). */
  fetch?: typeof fetch;
  metrics?: Metrics;
}

/** Changes to an App that matter to the reconciler: not its own status writes. */
function appChanged(old: CachedApp, next: CachedApp): boolean {
  return (
    old.metadata.generation !== next.metadata.generation ||
    old.metadata.deletionTimestamp !== next.metadata.deletionTimestamp ||
    JSON.stringify(old.metadata.annotations) !== JSON.stringify(next.metadata.annotations) ||
    JSON.stringify(old.metadata.finalizers) !== JSON.stringify(next.metadata.finalizers)
  );
}

/**
 * The parent of a preview's child App (label teal.dev/preview-of, owned by the
 * App of that name in its namespace): its comment and commit status follow
 * the child's build and release.
 */
function parentOf(app: CachedApp): string | undefined {
  const parent = app.metadata.labels?.[LABEL_PREVIEW_OF];
  const owned = app.metadata.ownerReferences?.some((o) => o.kind === 'App' && o.name === parent);
  return parent !== undefined && owned ? `${app.metadata.namespace}/${parent}` : undefined;
}

/** Whether a cached App switches through this HTTPRoute (its spec as cached: not validated yet). */
function namesRoute(app: CachedApp, route: string): boolean {
  const spec = app.spec as { strategy?: { blueGreen?: { trafficRouting?: { gatewayAPI?: { httpRoute?: unknown } } } } };
  return spec?.strategy?.blueGreen?.trafficRouting?.gatewayAPI?.httpRoute === route;
}

/** The previews of every parent App by state, as their status.previews records them. */
function previewStates(apps: readonly CachedApp[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const app of apps) {
    const records = (app.status as { previews?: { pullRequests?: { state?: unknown }[] } } | undefined)?.previews;
    for (const record of records?.pullRequests ?? []) {
      const state = typeof record.state === 'string' ? record.state : 'Unknown';
      counts.set(state, (counts.get(state) ?? 0) + 1);
    }
  }
  return counts;
}

/** A conflict means the cache was behind a write: the retry sees the new state, so it is no news. */
function logFailure(log: Logger, key: string, err: unknown, decision: Decision): void {
  if (err instanceof NotLeaderError) return;
  const level = isConflict(err) ? 'debug' : 'warn';
  const retry = decision.next === 'terminalBackoff' ? 'will retry slowly: it needs a person' : 'will retry';
  // The API server's answer on its own, and what was being done apart from it.
  const fields =
    err instanceof ActionFailed ? { doing: err.doing, err: errorMessage(err.cause) } : { err: errorMessage(err) };
  log[level]({ app: key, ...fields }, `reconcile failed; ${retry}`);
}

/** The notification sender: its deliveries report back through the queue, as the analysis runner's results do. */
function makeSender(client: ClusterClient, enqueue: (key: string) => void, options: AppControllerOptions): Sender {
  const { metrics } = options;
  return new Sender({
    readSecretValue: (namespace, name, key) => client.readSecretValue(namespace, name, key),
    enqueue,
    canWrite: options.canWrite,
    logger: options.logger.child({ runner: 'notifications' }),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(metrics
      ? {
          metrics: {
            attempt: (type, trigger, result, seconds) => {
              metrics.notifications.inc({ type, trigger, result });
              metrics.notificationDuration.observe({ type }, seconds);
            },
          },
        }
      : {}),
  });
}

export class AppController {
  readonly caches: Caches;
  /** The HTTPRoutes of ping-pong Apps: apart from caches, started by the first App that names one. */
  private readonly routes: RouteCache;
  private readonly options: AppControllerOptions;
  private readonly reconciler: Reconciler;
  private readonly runner: AnalysisRunner;
  private readonly sender: Sender;
  private readonly previews: PreviewsRunner;
  /** What this replica keeps per App; forgotten when the App goes or its shard is handed back. */
  private readonly memory: AppMemory;
  private queue: WorkQueue | undefined;
  private workers: Promise<void> | undefined;
  /** The reconciles under way, by App key (the queue runs one per key at a time): drain() waits for them. */
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly owns: (appKey: string) => boolean;

  constructor(options: AppControllerOptions) {
    this.options = options;
    this.owns = options.owns ?? (() => true);
    this.caches = makeCaches(options.kubeConfig, options.namespaces, options.logger, options.buildNamespace);
    const client = new ClusterClient(options.kubeConfig);
    const enqueue = (key: string) => {
      if (this.owns(key)) this.queue?.add(key);
    };
    this.runner = new AnalysisRunner({
      client,
      existingJob: (namespace, name) => this.caches.analysisJobs.get(namespace, name)?.value,
      enqueue,
      enqueueAfter: (key, delayMs) => {
        if (this.owns(key)) this.queue?.addAfter(key, delayMs);
      },
      canWrite: options.canWrite,
      logger: options.logger.child({ runner: 'analysis' }),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.sender = makeSender(client, enqueue, options);
    const notifier = new Notifier({
      sender: this.sender,
      // The ConfigMap cache knows whether a namespace has a default at all: most have none, and
      // asking the API server for it at each transition of each App was a GET per new App.
      readConfigMap: async (namespace, name, key) =>
        this.caches.configMaps.get(namespace, name)
          ? (await client.readConfigSource('configmap', namespace, name))?.data[key]
          : undefined,
      onDropped: (n) => options.metrics?.notifications.inc({ type: 'any', trigger: 'any', result: 'dropped' }, n),
    });
    this.previews = new PreviewsRunner({
      readSecretValue: (namespace, name, key) => client.readSecretValue(namespace, name, key),
      enqueue,
      canWrite: options.canWrite,
      logger: options.logger.child({ runner: 'previews' }),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.metrics ? { metrics: options.metrics.previewProviders() } : {}),
    });
    this.memory = new AppMemory([options.sources, this.runner, this.sender, this.previews]);
    this.routes = new RouteCache({
      kubeConfig: options.kubeConfig,
      namespaces: options.namespaces,
      logger: options.logger,
      changed: (namespace, name) => {
        for (const app of this.caches.apps.listByNamespace(namespace)) {
          if (namesRoute(app, name)) enqueue(`${namespace}/${app.metadata.name}`);
        }
      },
    });
    this.reconciler = new Reconciler({
      routes: this.routes,
      notifier,
      memory: this.memory,
      caches: this.caches,
      client,
      analysis: this.runner,
      previews: this.previews,
      recorder: options.recorder,
      logger: options.logger,
      canWrite: options.canWrite,
      sources: options.sources,
      buildImages: options.buildImages,
      checkGitUrl: options.checkGitUrl,
      ...(options.buildDefaults ? { buildDefaults: options.buildDefaults } : {}),
      ...(options.buildNamespace !== undefined ? { buildNamespace: options.buildNamespace } : {}),
      ...(options.buildNetwork ? { buildNetwork: options.buildNetwork } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
    this.watch(enqueue);
  }

  /** What queues an App: its own changes, its objects' events, and those of what it references. */
  private watch(enqueue: (key: string) => void): void {
    const { options } = this;
    // A preview's build and release are what its parent tells the pull request.
    const parent = (a: CachedApp) => {
      const key = parentOf(a);
      if (key !== undefined) enqueue(key);
    };
    // Which App previews a repository depends on the others naming it: one coming, going or changing wakes them.
    const rivals = (...apps: CachedApp[]) => {
      const repositories = new Set(apps.map((a) => previewedRepository(a.spec)));
      for (const repository of repositories) {
        if (repository === undefined) continue;
        for (const other of this.caches.apps.byIndex(PREVIEWED_REPOSITORY_INDEX, repository)) {
          enqueue(`${other.metadata.namespace}/${other.metadata.name}`);
        }
      }
    };
    this.caches.apps.addHandler({
      onAdd: (a) => {
        enqueue(`${a.metadata.namespace}/${a.metadata.name}`);
        parent(a);
        rivals(a);
      },
      onUpdate: (old, a) => {
        const key = `${a.metadata.namespace}/${a.metadata.name}`;
        if (appChanged(old, a)) enqueue(key);
        if (appChanged(old, a)) rivals(old, a);
        if (appChanged(old, a) || JSON.stringify(old.status) !== JSON.stringify(a.status)) parent(a);
        // Only the leader follows sources (it reconciles); a standby's request waits in the annotation.
        const requested = a.metadata.annotations?.[ANN_REFRESH];
        // A request that is not a time is ignored; the reconcile reports it.
        const valid = readRefreshRequest(a.metadata.annotations).at !== undefined;
        if (this.queue && valid && requested !== old.metadata.annotations?.[ANN_REFRESH] && this.owns(key)) {
          options.sources.refresh(key);
        }
      },
      onDelete: (a) => {
        enqueue(`${a.metadata.namespace}/${a.metadata.name}`);
        parent(a);
        rivals(a);
      },
    });
    const owner = (o: { value: { namespace: string; app?: string } }) => {
      if (o.value.app) enqueue(`${o.value.namespace}/${o.value.app}`);
    };
    for (const informer of [
      this.caches.replicaSets,
      this.caches.services,
      this.caches.endpointSlices,
      this.caches.analysisJobs,
    ]) {
      informer.addHandler({ onAdd: owner, onUpdate: (_old, o) => owner(o), onDelete: owner });
    }
    // A build Job's App: in the build namespace, the one its labels name.
    const jobOwner = (j: { value: { appNamespace: string; app: string } }) =>
      enqueue(`${j.value.appNamespace}/${j.value.app}`);
    this.caches.jobs.addHandler({ onAdd: jobOwner, onUpdate: (_old, j) => jobOwner(j), onDelete: jobOwner });
    // A template serves any App of its namespace: each looks again (a new one may now be valid, or invalid).
    const namespaceApps = (t: { value: { namespace: string } }) => {
      for (const app of this.caches.apps.listByNamespace(t.value.namespace)) {
        enqueue(`${app.metadata.namespace}/${app.metadata.name}`);
      }
    };
    this.caches.templates.addHandler({
      onAdd: namespaceApps,
      onUpdate: (_old, t) => namespaceApps(t),
      onDelete: namespaceApps,
    });
    // A referenced ConfigMap's content is part of the revision: its Apps look again when it changes.
    watchConfigMaps(this.caches, enqueue);
    // A copy deleted by hand: its App remakes or reports it. Teal's own creations need no second look.
    this.caches.configCopies.addHandler({ onDelete: owner });
    // A build pod's termination message carries the digest: its App must look again.
    const byJob = (p: { value: { namespace: string; job: string } }) => {
      const job = this.caches.jobs.get(p.value.namespace, p.value.job);
      if (job) jobOwner(job);
    };
    this.caches.buildPods.addHandler({ onAdd: byJob, onUpdate: (_old, p) => byJob(p), onDelete: byJob });
  }

  /** Starts the caches; resolves once they have synced. */
  async startCaches(): Promise<void> {
    for (const informer of Object.values(this.caches)) informer.start();
    await Promise.all(Object.values(this.caches).map((i) => i.waitForSync()));
  }

  hasSynced(): boolean {
    return Object.values(this.caches).every((i) => i.hasSynced());
  }

  /** Queues Apps again, e.g. after the poller resolved a new commit. */
  enqueue(keys: readonly string[]): void {
    for (const key of keys) if (this.owns(key)) this.queue?.add(key);
  }

  /**
   * Queues every cached App that belongs (sharded: to a shard just acquired), and the
   * Apps the build Jobs name: one deleted while no replica ran has its Jobs deleted then.
   */
  enqueueWhere(belongs: (appKey: string) => boolean): void {
    const keys = new Set(this.caches.apps.list().map((app) => `${app.metadata.namespace}/${app.metadata.name}`));
    for (const job of this.caches.jobs.list()) keys.add(`${job.value.appNamespace}/${job.value.app}`);
    for (const key of keys) if (belongs(key)) this.enqueue([key]);
  }

  /**
   * Sharded, before a shard is handed back (owns() is already false for its
   * Apps, so none starts): waits for their reconciles and Job creations under
   * way, then stops following their sources and measurements.
   */
  async drain(belongs: (appKey: string) => boolean): Promise<void> {
    for (;;) {
      const pending = [...this.running].filter(([key]) => belongs(key)).map(([, done]) => done);
      if (pending.length === 0) break;
      await Promise.allSettled(pending);
    }
    await this.runner.settled(belongs);
    await this.sender.handBack(belongs);
    await this.previews.handBack(belongs);
    for (const app of this.caches.apps.list()) {
      const key = `${app.metadata.namespace}/${app.metadata.name}`;
      if (belongs(key)) this.letGo(key);
    }
  }

  /** What this replica keeps for an App it does not reconcile: nothing. */
  private letGo(key: string): void {
    this.memory.forget(key);
  }

  /** Starts reconciling: on becoming leader. Every App (sharded: of a shard held) is queued once. */
  startWorkers(): void {
    if (this.queue) return;
    const { metrics, concurrency, logger: log } = this.options;
    const queue = new WorkQueue(metrics ? { metrics: metrics.workqueue() } : {});
    this.queue = queue;
    this.enqueueWhere(() => true);
    const controller = new Controller({
      queue,
      concurrency,
      reconcile: (key) =>
        this.tracked(key, async () => {
          // Queued before its shard was handed back (or never ours): not this replica's to reconcile.
          if (!this.owns(key)) return this.letGo(key);
          const started = performance.now();
          const result = await this.reconciler.reconcile(key);
          log.debug({ app: key, ms: Math.round(performance.now() - started) }, 'reconciled');
          return result;
        }),
      ...(metrics ? { metrics } : {}),
      onError: (key, err, decision) => logFailure(log, key, err, decision),
    });
    this.workers = controller.start();
  }

  private async tracked<T>(key: string, reconcile: () => Promise<T>): Promise<T> {
    const done = reconcile();
    this.running.set(key, done);
    try {
      return await done;
    } finally {
      if (this.running.get(key) === done) this.running.delete(key);
    }
  }

  /** Gauges read at scrape time: Apps by phase, and the queue's in-progress work. */
  refreshGauges(): void {
    const metrics = this.options.metrics;
    if (!metrics) return;
    const counts = new Map<string, number>();
    for (const app of this.caches.apps.list()) {
      const phase = (app.status as { phase?: string } | undefined)?.phase ?? 'Unknown';
      counts.set(phase, (counts.get(phase) ?? 0) + 1);
    }
    metrics.apps.reset();
    for (const [phase, n] of counts) metrics.apps.set({ phase }, n);
    metrics.previews.reset();
    for (const [state, n] of previewStates(this.caches.apps.list())) metrics.previews.set({ state }, n);
    const labels = { name: 'app', controller: 'app' };
    metrics.wqUnfinished.set(labels, this.queue?.unfinishedWorkSeconds() ?? 0);
    metrics.wqLongest.set(labels, this.queue?.longestRunningProcessorSeconds() ?? 0);
  }

  /** Stops reconciling; in-flight reconciles finish (drain). */
  async stopWorkers(): Promise<void> {
    const queue = this.queue;
    this.queue = undefined;
    this.runner.stop();
    this.sender.stop();
    this.previews.stop();
    if (!queue) return;
    await queue.shutDownWithDrain();
    await this.workers;
  }

  stopCaches(): void {
    for (const informer of Object.values(this.caches)) informer.stop();
    this.routes.stop();
  }
}
