// The App reconciler, read top to bottom as Flux's reconcilers are: check the
// spec, then a list of sub-steps (observe, source, build, rollout), each with
// its own result, the lowest requeue winning; whatever happens, summarize()
// writes the status that is true. All decisions live in the planners
// (src/build, src/rollout); this file reads the cache, asks them, and hands
// their actions to the one executor.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { inFlight } from '../analysis/run.ts';
import { trafficInFlight } from '../analysis/traffic.ts';
import type { AnalysisTemplateSpec } from '../app/analysis-schema.ts';
import { APPS_INDEX, type CachedApp, JOBS_INDEX, PREVIEWED_REPOSITORY_INDEX, PREVIEWS_INDEX } from '../app/cached.ts';
import type { ValueProblem } from '../app/cluster-values.ts';
import { type ConditionInput, getCondition, removeCondition, setCondition } from '../app/conditions.ts';
import { parseDuration } from '../app/duration.ts';
import type { PlannerEvent } from '../app/event.ts';
import { type Intent, readIntents, readRefreshRequest } from '../app/intents.ts';
import { FINALIZER, LABEL_APP, LABEL_HASH } from '../app/labels.ts';
import { LABEL_PREVIEW_OF } from '../app/preview-labels.ts';
import type { PreviewsExposure, PreviewsStatus } from '../app/previews-schema.ts';
import { ANALYSIS_FIELD, type App, type AppStatus } from '../app/schema.ts';
import { validateApp } from '../app/validate.ts';
import type { BuildImages } from '../build/images.ts';
import { BUILD_CONTAINER, buildSpecHash } from '../build/job.ts';
import { type BuildNetwork, type CaSource, caSourceProblem } from '../build/network.ts';
import { type BuildPlan, type ObservedBuildPod, orphanedJobs, planBuild, stoppedAtUsage } from '../build/plan.ts';
import type { BuildDefaults } from '../build/registry.ts';
import {
  buildTransitionEvents,
  type ResolvedSource,
  type SourceFailure,
  withBuild,
  withSource,
} from '../build/status.ts';
import { errorMessage, isConflict } from '../kube/errors.ts';
import type { Notifier, Prepared } from '../notify/notifier.ts';
import type { ObservedExposure } from '../previews/exposure.ts';
import { isProviderAction, plan as planPreviews } from '../previews/plan.ts';
import { readPreviewsRequest } from '../previews/poll.ts';
import { readPullRef, throughPullRef } from '../previews/pull-ref.ts';
import { ListedReason } from '../previews/reasons.ts';
import { previewedElsewhere, previewedRepository } from '../previews/repository-owner.ts';
import { plan, planInvalid } from '../rollout/bluegreen.ts';
import type { MeasureRequest } from '../rollout/cluster-actions.ts';
import {
  ANN_LIVE_CONFIG,
  type ConfigKind,
  type ConfiguredTemplate,
  configureTemplate,
  copiesInUse,
  copySource,
  type MissingCopy,
  parseLiveConfig,
  recheckAfterMs,
  refKey,
  type SourceState,
  secretDigest,
  secretsDue,
  sourcesToRead,
} from '../rollout/config-refs.ts';
import type { Observed } from '../rollout/observed.ts';
import type { AnalysisObserved } from '../rollout/planner.ts';
import { isSwitchVerified } from '../rollout/predicates.ts';
import { type ObservedPod, observePod } from '../rollout/restart.ts';
import { isAdopted, serviceName } from '../rollout/service.ts';
import { specProblems } from '../rollout/spec-problems.ts';
import { configuredRevision, targetRevision } from '../rollout/target.ts';
import type { AnalysisRunner } from './analysis-runner.ts';
import type { AppMemory, SecretDigests } from './app-memory.ts';
import type { Caches } from './cache.ts';
import type { ClusterClient } from './cluster-client.ts';
import type { EventRecorder } from './events.ts';
import {
  ActionFailed,
  type ClusterAction,
  Executor,
  type ExecutorClient,
  NotLeaderError,
  type Target,
} from './executor.ts';
import type { Metrics } from './metrics.ts';
import type { PreviewsRunner } from './previews-runner.ts';
import { countTransitions } from './reconcile-metrics.ts';
import type { RouteCache } from './routes.ts';
import { failedSummary } from './summary.ts';

/** What the git poller knows of each App's source (see controller/sources.ts). */
export interface SourceView {
  follow(appKey: string, spec: FollowSpec): void;
  forget(appKey: string): void;
  state(appKey: string): { resolved?: ResolvedSource; failure?: SourceFailure } | undefined;
  /** Resolves the App's source now rather than at the next poll. */
  refresh(appKey: string): void;
}

export interface FollowSpec {
  namespace: string;
  url: string;
  ref: string;
  pollIntervalMs: number;
  secretName?: string;
}

/** The caches the reconciler reads, and only what it reads of them. */
export interface ReconcilerCaches {
  apps: Pick<Caches['apps'], 'get' | 'addHandler' | 'byIndex'>;
  replicaSets: Pick<Caches['replicaSets'], 'byIndex'>;
  services: Pick<Caches['services'], 'get' | 'listByNamespace'>;
  endpointSlices: Pick<Caches['endpointSlices'], 'byIndex'>;
  jobs: Pick<Caches['jobs'], 'byIndex'>;
  buildPods: Pick<Caches['buildPods'], 'byIndex'>;
  analysisJobs: Pick<Caches['analysisJobs'], 'byIndex'>;
  templates: Pick<Caches['templates'], 'listByNamespace'>;
  configMaps: Pick<Caches['configMaps'], 'get'>;
  configCopies: Pick<Caches['configCopies'], 'get'>;
}

/** The reconciler's calls of its client: the executor's writes, its status write and the reads the caches cannot serve. */
export type ReconcilerClient = ExecutorClient &
  Pick<
    ClusterClient,
    'writeStatus' | 'readConfigSource' | 'readSecretKeys' | 'listPods' | 'readLogHead' | 'listExposures'
  >;

export interface ReconcilerOptions {
  caches: ReconcilerCaches;
  sources: SourceView;
  buildImages: BuildImages;
  /** --default-registry and --default-push-secret, for Apps that leave them out. */
  buildDefaults?: BuildDefaults;
  /** --build-namespace: where build Jobs run, away from their Apps. */
  buildNamespace?: string;
  /** --build-ca-configmap and the build proxy flags. */
  buildNetwork?: BuildNetwork;
  /** Checks a git URL the schema accepted against the operator's policy (file:// only for local use). */
  checkGitUrl: (url: string) => string | undefined;
  metrics?: Metrics;
  /** Every read the cache cannot serve and every write go through this one client. */
  client: ReconcilerClient;
  /** Takes the measurements of the checks, once the status that starts them has landed. */
  analysis: Pick<AnalysisRunner, 'resultsFor' | 'dispatch'>;
  recorder: Pick<EventRecorder, 'record'>;
  logger: Logger;
  /** Checked before every write for the App: only the holder of its Lease (its shard's, if sharded) writes. */
  canWrite: (appKey: string) => boolean;
  /** The HTTPRoutes ping-pong Apps switch through (started when the first one asks). */
  routes?: Pick<RouteCache, 'lookup'>;
  /** Adds the notifications of each status write to it, and sends them once it has landed (src/notify). */
  notifier?: Pick<Notifier, 'prepare' | 'landed'>;
  /** Lists each parent App's pull requests and writes on them, in the background (previews-runner.ts). */
  previews?: Pick<PreviewsRunner, 'seen' | 'merged' | 'due' | 'send' | 'forget'>;
  /** What this replica keeps per App, the sources', analysis' and notifications' included: forgotten when the App goes. */
  memory: AppMemory;
  now?: () => Date;
}

export interface Result {
  requeueAfterMs?: number;
}

/** What one reconcile of one App carries from step to step. */
interface Reconciliation {
  key: string;
  cached: CachedApp;
  target: Target;
  now: Date;
  log: Logger;
  /** The status the finished steps found true: what summarize() writes. */
  status: AppStatus;
  /** Recorded once that status has landed. */
  events: PlannerEvent[];
  observed: Observed;
  /** Ping-pong: the route cache's first list is under way; the rollout waits for it. */
  routeSyncing?: boolean;
  intents: readonly Intent[];
  build?: BuildPlan;
  sourceFailure?: string;
  /** Handed to the analysis runner once the status has landed. */
  measurements?: MeasureRequest[];
  /** Why a step failed, if one did: summarize() says so in status. */
  failure?: unknown;
}

/** A sub-step: it may act, records what it found true in r.status, and may ask to run again after a while. */
type SubStep = (r: Reconciliation, app: App) => Promise<Result>;

/** The revision's template with its copies, and the copies in use that someone deleted. */
interface Configuration {
  configured: ConfiguredTemplate<App['spec']['template']>;
  missingCopies: MissingCopy[];
  requeueAfterMs?: number;
}

/** How often a reconcile looks again for the App its own status write made. */
const CATCH_UP_POLL_MS = 50;
/** How long it waits for the cache to show that App before planning anyway. */
const CATCH_UP_MAX_MS = 5_000;
/** How often a ping-pong App looks again while the route cache makes its first list. */
const ROUTE_SYNC_POLL_MS = 250;
/** The head of a failed build's log read for its error line, and how many are kept (withLogHead). */
const LOG_HEAD_BYTES = 2048;
const LOG_HEADS_KEPT = 256;

export class Reconciler {
  private readonly o: ReconcilerOptions;
  private readonly executor: Executor;
  /** What this replica keeps of each App between reconciles, with the one forget(). */
  private readonly memory: AppMemory;
  private readonly logHeads = new Map<string, string>();

  constructor(options: ReconcilerOptions) {
    this.o = options;
    this.executor = new Executor(options.client, options.canWrite);
    this.memory = options.memory;
    // Once the cache shows an App past this process's last status write, nothing is left to wait for.
    const caughtUp = (app: CachedApp) =>
      this.memory.seen(`${app.metadata.namespace}/${app.metadata.name}`, app.metadata.resourceVersion);
    options.caches.apps.addHandler({ onAdd: caughtUp, onUpdate: (_old, app) => caughtUp(app), onDelete: caughtUp });
  }

  async reconcile(key: string): Promise<Result> {
    const [namespace = '', name = ''] = key.split('/');
    const cached = this.o.caches.apps.get(namespace, name);
    if (!cached) {
      this.memory.forget(key);
      await this.deleteOrphanedBuilds(key, namespace, name);
      return {};
    }
    if (this.isBehindOwnWrite(key, cached)) return { requeueAfterMs: CATCH_UP_POLL_MS };
    const r = this.begin(key, cached);
    if (cached.metadata.deletionTimestamp) return this.finalize(r);
    try {
      const app = this.checkSpec(r);
      if (!app) return {};
      return await this.runSteps(r, app, [this.observe, this.source, this.build, this.rollout, this.previews]);
    } catch (err) {
      r.failure = err;
      throw err;
    } finally {
      await this.summarize(r);
    }
  }

  /** Runs the sub-steps in order; the first failure stops the rest. The earliest requeue wins. */
  private async runSteps(r: Reconciliation, app: App, steps: readonly SubStep[]): Promise<Result> {
    let requeueAfterMs: number | undefined;
    for (const step of steps) {
      const result = await step.call(this, r, app);
      if (result.requeueAfterMs !== undefined) {
        requeueAfterMs = Math.min(requeueAfterMs ?? Number.POSITIVE_INFINITY, result.requeueAfterMs);
      }
    }
    return requeueAfterMs !== undefined ? { requeueAfterMs } : {};
  }

  private begin(key: string, cached: CachedApp): Reconciliation {
    const { namespace, name, resourceVersion, finalizers } = cached.metadata;
    return {
      key,
      cached,
      target: { namespace, name, resourceVersion, finalizers: finalizers ?? [] },
      now: this.o.now?.() ?? new Date(),
      log: this.o.logger.child({ app: key }),
      status: structuredClone((cached.status ?? {}) as AppStatus),
      events: [],
      observed: { replicaSets: [] },
      intents: [],
    };
  }

  /**
   * Whether the cached App is still the one this process's last status write
   * replaced: planned from it, the reconcile would only meet a 409 (and an
   * Event or a Service write could go out first). The watch brings the
   * written App within moments; past CATCH_UP_MAX_MS the conflict guard is
   * left to sort it out rather than wait on a cache that may have missed it.
   */
  private isBehindOwnWrite(key: string, cached: CachedApp): boolean {
    return this.memory.awaitsOwnWrite(key, cached.metadata.resourceVersion, performance.now(), CATCH_UP_MAX_MS);
  }

  // ---- the sub-steps ----

  /** An App that cannot be planned says why and touches nothing: nothing is followed or built. */
  private checkSpec(r: Reconciliation): App | undefined {
    const generation = r.cached.metadata.generation ?? 0;
    const validation = validateApp(r.cached);
    const app = validation.ok ? validation.app : undefined;
    const urlProblem = app?.spec.source ? this.o.checkGitUrl(app.spec.source.git.url) : undefined;
    const problems = validation.ok
      ? [
          ...(urlProblem ? [`spec.source.git.url: ${urlProblem}`] : []),
          ...specProblems(validation.app, this.o.buildDefaults),
        ]
      : validation.errors;
    if (problems.length === 0) return app;
    if (app) this.o.sources.forget(r.key);
    const invalid = planInvalid(r.status, generation, problems, r.now);
    r.status = invalid.status;
    r.events.push(...invalid.events);
    return undefined;
  }

  /** What the cluster holds for the App, the intents on it, and the values Teal had to ignore. */
  private async observe(r: Reconciliation, app: App): Promise<Result> {
    r.observed = this.observed(app);
    const routing = this.routing(app);
    if (routing === 'syncing') r.routeSyncing = true;
    else if (routing) r.observed.routing = routing;
    const read = readIntents(r.cached.metadata.annotations, `App ${app.metadata.name}`);
    r.intents = read.intents;
    // A webhook's request for a listing that Teal ignores (not a time, or in the future): the planner's poll.ts rule.
    const request = app.spec.previews
      ? readPreviewsRequest(r.cached.metadata.annotations, `App ${app.metadata.name}`, r.now.getTime()).problems
      : [];
    await this.reportValueProblems(r, [...read.problems, ...request, ...readPullRef(app).problems]);
    // A Service Teal adopted must get its selector back if the App goes: hold a finalizer meanwhile.
    const adopted = [r.observed.activeService, r.observed.previewService].some((s) => s && isAdopted(app, s));
    if (adopted && !r.target.finalizers.includes(FINALIZER)) await this.act(r, [{ kind: 'addFinalizer' }]);
    return {};
  }

  /** Follows the App's git source; status.source says what it resolved. An App that names an image is not followed. */
  private async source(r: Reconciliation, app: App): Promise<Result> {
    const git = app.spec.source?.git;
    if (!git || !app.spec.build) {
      this.o.sources.forget(r.key);
      return {};
    }
    this.o.sources.follow(r.key, {
      namespace: r.target.namespace,
      url: git.url,
      ref: git.ref,
      pollIntervalMs: parseDuration(git.pollInterval),
      ...(git.secretRef ? { secretName: git.secretRef.name } : {}),
    });
    const state = this.o.sources.state(r.key);
    // A preview's pinned commit is named by its pull request's ref (previews/pull-ref.ts).
    const resolved = state?.resolved && throughPullRef(state.resolved, readPullRef(app).ref);
    r.status = withSource(r.status, resolved, state?.failure, this.generation(r), r.now.toISOString());
    if (state?.failure) r.sourceFailure = `source: ${state.failure.message}`;
    return {};
  }

  /** Creates the build Job of the resolved commit and clears old ones; status.build says how it went. */
  private async build(r: Reconciliation, app: App): Promise<Result> {
    if (!app.spec.source || !app.spec.build) return {};
    const build = await this.planBuilds({ ...app, status: r.status }, r);
    await this.act(r, build.actions);
    const before = r.status.build;
    r.status = withBuild(r.status, build, this.generation(r), r.now.toISOString());
    r.events.push(...buildTransitionEvents(before, r.status.build));
    r.build = build;
    return {};
  }

  /** Blue/green: the planner's ReplicaSet and Service writes, then its status. */
  private async rollout(r: Reconciliation, app: App): Promise<Result> {
    if (r.routeSyncing) return { requeueAfterMs: ROUTE_SYNC_POLL_MS };
    const sourced = { ...app, status: r.status };
    const config = await this.configuration(r, app);
    if (config.configured.problems.length > 0) {
      const invalid = planInvalid(r.status, this.generation(r), config.configured.problems, r.now);
      r.status = invalid.status;
      r.events.push(...invalid.events);
      return config.requeueAfterMs !== undefined ? { requeueAfterMs: config.requeueAfterMs } : {};
    }
    const planned = plan({
      app: sourced,
      observed: r.observed,
      now: r.now,
      target: configuredRevision(targetRevision(sourced), config.configured),
      intents: r.intents,
      ...(await this.podsToRead(r, app)),
      analysis: this.analysisObserved(r),
      ...(this.o.buildDefaults ? { buildDefaults: this.o.buildDefaults } : {}),
      ...(r.build?.running ? { building: true } : {}),
      ...(r.build?.failure ? { buildFailure: r.build.failure } : {}),
      ...(r.sourceFailure ? { sourceFailure: r.sourceFailure } : {}),
      ...(config.missingCopies.length > 0 ? { missingCopies: config.missingCopies } : {}),
    });
    // The plan's status describes the plan carried out: it is kept only once every action has been.
    await this.act(r, planned.actions);
    this.madeCopies(r.key, planned.actions);
    r.status = planned.status;
    r.events.push(...planned.events);
    r.measurements = planned.measurements;
    const requeue = Math.min(
      planned.requeueAfterMs ?? Number.POSITIVE_INFINITY,
      config.requeueAfterMs ?? Number.POSITIVE_INFINITY,
    );
    return Number.isFinite(requeue) ? { requeueAfterMs: requeue } : {};
  }

  /**
   * Previews (issue #28): the child Apps of the parent's open pull requests,
   * their Ingresses or HTTPRoutes, and what each pull request is told. Last,
   * so the parent's own release never waits on a provider; the planner
   * (previews/plan.ts) decides, the executor writes the cluster, the previews
   * runner lists and writes on the provider in the background.
   */
  private async previews(r: Reconciliation, app: App): Promise<Result> {
    const runner = this.o.previews;
    const children = this.previewChildren(r.key);
    const previews = app.spec.previews;
    if (!runner || (!previews && children.length === 0 && !hasPreviewsRecord(r.status))) {
      runner?.forget(r.key);
      return {};
    }
    // Another App previews this repository: nothing listed, written, made or deleted; the condition says which.
    const elsewhere = previews ? this.previewedElsewhere(r) : undefined;
    if (elsewhere) {
      runner.forget(r.key);
      r.status = withPreviews(r.status, r.status.previews, elsewhere, this.generation(r), r.now);
      return {};
    }
    const seen = runner.seen(r.key);
    if (previews && !seen) {
      runner.due(app, undefined);
      r.status = withPreviews(r.status, r.status.previews, LISTING, this.generation(r), r.now);
      return {};
    }
    if (!previews) runner.forget(r.key);
    const status = runner.merged(r.key, r.status.previews);
    const planned = planPreviews({
      app: { ...app, status: { ...r.status, ...(status ? { previews: status } : {}) } },
      listing: seen?.listing ?? { ok: true, pullRequests: [], approvals: [] },
      listedAt: seen?.listedAt ?? r.now,
      children,
      exposures: previews?.exposure ? await this.previewExposures(r, previews.exposure) : [],
      now: r.now,
      ...(this.o.buildDefaults ? { buildDefaults: this.o.buildDefaults } : {}),
    });
    const failed = await this.actPreviews(
      r,
      planned.actions.filter((a) => !isProviderAction(a)),
    );
    if (failed) {
      r.status = withPreviews(r.status, status, failed, this.generation(r), r.now);
      return { requeueAfterMs: PREVIEW_WRITE_RETRY_MS };
    }
    runner.send(r.key, planned.actions.filter(isProviderAction));
    r.status = withPreviews(r.status, planned.status, planned.condition, this.generation(r), r.now);
    if (previews) runner.due(app, planned.pollAt !== undefined ? Date.parse(planned.pollAt) : undefined);
    return planned.requeueAfterMs !== undefined ? { requeueAfterMs: planned.requeueAfterMs } : {};
  }

  /**
   * The preview's cluster writes; a refused one is said in PreviewsListed
   * rather than failing the parent's reconcile (its own release is done and
   * true). Losing the lease or a stale cache still stop everything.
   */
  private async actPreviews(r: Reconciliation, actions: readonly ClusterAction[]): Promise<ConditionInput | undefined> {
    try {
      await this.act(r, actions);
      return undefined;
    } catch (err) {
      if (err instanceof NotLeaderError || isConflict(err) || !(err instanceof ActionFailed)) throw err;
      r.log.warn({ doing: err.doing, err: errorMessage(err.cause) }, 'a preview write failed');
      return { type: 'PreviewsListed', status: 'False', reason: ListedReason.WriteFailed, message: err.message };
    }
  }

  /** PreviewsListed False naming the App that previews this App's repository, if another does (from the cache). */
  private previewedElsewhere(r: Reconciliation): ConditionInput | undefined {
    const repository = previewedRepository(r.cached.spec);
    if (repository === undefined) return undefined;
    const apps = this.o.caches.apps.byIndex(PREVIEWED_REPOSITORY_INDEX, repository).map(({ metadata: m }) => ({
      namespace: m.namespace,
      name: m.name,
      creationTimestamp: m.creationTimestamp,
      deleting: m.deletionTimestamp !== undefined,
    }));
    return previewedElsewhere(r.key, repository, apps);
  }

  /** The Apps labelled as the parent's previews, from the cache, validated (an invalid one is not the planner's). */
  private previewChildren(key: string): App[] {
    return this.o.caches.apps.byIndex(PREVIEWS_INDEX, key).flatMap((cached) => {
      const validation = validateApp(cached);
      return validation.ok ? [validation.app] : [];
    });
  }

  /** The parent's preview Ingresses or HTTPRoutes, listed by label (no cache holds every Ingress). */
  private async previewExposures(r: Reconciliation, exposure: PreviewsExposure): Promise<ObservedExposure[]> {
    const kind = exposure.ingress ? 'Ingress' : 'HTTPRoute';
    const selector = `${LABEL_PREVIEW_OF}=${r.target.name}`;
    return reading(
      `the ${kind}s of App ${r.key}'s previews`,
      this.o.client.listExposures(r.target.namespace, kind, selector),
    );
  }

  /**
   * The template as the revision runs it: the ConfigMaps and Secrets it
   * references pointed at their copies (rollout/config-refs.ts). ConfigMaps
   * from the cache, Secrets by GET at most every CONFIG_RECHECK_MS, the App
   * woken then to look again. Also the copies the App's pods use that someone
   * deleted, with what their sources hold now (the planner remakes or reports them).
   */
  private async configuration(r: Reconciliation, app: App): Promise<Configuration> {
    const { live, problems } = parseLiveConfig(r.cached.metadata.annotations?.[ANN_LIVE_CONFIG]);
    const toRead = sourcesToRead(app.spec.template.spec, live);
    const inUse = copiesInUse(r.observed.replicaSets);
    if (toRead.length === 0 && inUse.length === 0) {
      return { configured: { template: app.spec.template, copies: [], problems }, missingCopies: [] };
    }
    const uid = r.cached.metadata.uid ?? '';
    const secretCopies = inUse.filter((c) => c.kind === 'secret').map((c) => c.name);
    const secretSources = new Set([
      ...toRead.filter((s) => s.kind === 'secret').map((s) => s.name),
      ...secretCopies.flatMap((name) => copySource(name) ?? []),
    ]);
    const secrets = await this.readSecrets(r, uid, [...secretSources], secretCopies);
    const sourceState = (kind: ConfigKind, name: string): SourceState => {
      // A ConfigMap's digest comes from the cache; a Secret's state from its last read ('missing' included).
      if (kind === 'secret') return secrets.digests.get(name) ?? 'missing';
      const digest = this.o.caches.configMaps.get(r.target.namespace, name)?.value.digest;
      return digest !== undefined ? { digest } : 'missing';
    };
    const sources = new Map(toRead.map(({ kind, name }) => [refKey(kind, name), sourceState(kind, name)]));
    const configured = configureTemplate(app.spec.template, uid, sources, live);
    configured.problems.unshift(...problems);
    const missingCopies = await this.missingCopies(r, inUse, secrets, sourceState);
    return { configured, missingCopies, requeueAfterMs: recheckAfterMs(secrets.readAt, r.now.getTime()) };
  }

  /** The copies in use that do not exist, each with what its source (read back from its name) holds now. */
  private async missingCopies(
    r: Reconciliation,
    inUse: readonly { kind: ConfigKind; name: string }[],
    secrets: SecretDigests,
    sourceState: (kind: ConfigKind, name: string) => SourceState,
  ): Promise<MissingCopy[]> {
    const missing: MissingCopy[] = [];
    for (const copy of inUse) {
      if (await this.copyExists(r, copy, secrets)) continue;
      const source = copySource(copy.name);
      missing.push({
        ...copy,
        ...(source ? { source } : {}),
        state: source ? sourceState(copy.kind, source) : 'missing',
      });
    }
    return missing;
  }

  /**
   * Whether a copy in use exists. A Secret copy as last read (Teal may not
   * watch Secrets); a ConfigMap copy from its cache, which wakes the App when
   * one is deleted, and by GET when the cache lacks it (it may lag behind the
   * copy this process just made: remade twice, it would be told twice).
   */
  private async copyExists(r: Reconciliation, copy: { kind: ConfigKind; name: string }, secrets: SecretDigests) {
    if (copy.kind === 'secret') return secrets.copies.get(copy.name) !== false;
    const { namespace } = r.target;
    if (this.o.caches.configCopies.get(namespace, copy.name)) return true;
    const what = `ConfigMap ${namespace}/${copy.name}`;
    return (await reading(what, this.o.client.readConfigSource('configmap', namespace, copy.name))) !== undefined;
  }

  /**
   * The digests of the named Secrets, and whether the named Secret copies
   * exist: as read less than CONFIG_RECHECK_MS ago (config-refs.ts), else read now.
   */
  private async readSecrets(
    r: Reconciliation,
    appUid: string,
    names: readonly string[],
    copies: readonly string[],
  ): Promise<SecretDigests> {
    const now = r.now.getTime();
    const known = this.memory.secretDigests(r.key);
    const last = known
      ? { readAt: known.readAt, names: new Set([...known.digests.keys(), ...known.copies.keys()]) }
      : undefined;
    if (known && !secretsDue(last, [...names, ...copies], now)) return known;
    const { namespace } = r.target;
    const read = (name: string) =>
      reading(`Secret ${namespace}/${name}`, this.o.client.readConfigSource('secret', namespace, name));
    const digests = new Map<string, SourceState>();
    for (const name of names) {
      const source = await read(name);
      digests.set(
        name,
        source ? { digest: secretDigest(appUid, source.uid, source.type ?? 'Opaque', source.data) } : 'missing',
      );
    }
    const present = new Map<string, boolean>();
    for (const name of copies) present.set(name, (await read(name)) !== undefined);
    const fresh = { readAt: now, digests, copies: present };
    this.memory.readSecrets(r.key, fresh);
    return fresh;
  }

  /** The Secret copies the executor just made exist: not read again, nor remade, until the next recheck. */
  private madeCopies(key: string, actions: readonly ClusterAction[]): void {
    const known = this.memory.secretDigests(key);
    for (const action of actions) {
      if (known && action.kind === 'createConfigCopy' && action.copy.kind === 'secret') {
        known.copies.set(action.copy.name, true);
      }
    }
  }

  /**
   * Writes the status that is true, whatever happened: the finished steps'
   * findings, and why a step failed. Nothing is written by a replica that
   * lost the lease, nor after a conflict (the cache was behind: the retry
   * sees the newer App). The events come after the status write, with the
   * status that landed.
   */
  private async summarize(r: Reconciliation): Promise<void> {
    const { failure, log } = r;
    if (failure instanceof NotLeaderError || (failure !== undefined && isConflict(failure))) return;
    const summary =
      failure === undefined
        ? { status: r.status, events: r.events }
        : failedSummary(r.status, errorMessage(failure), this.generation(r), r.now.toISOString());
    try {
      const notified = await this.notifications(r, summary.status);
      await this.writeStatus(r, notified?.status ?? summary.status);
      await this.record(r, [...summary.events, ...(notified?.events ?? [])]);
      if (failure === undefined) this.measure(r);
      if (notified) this.notify(r, notified);
    } catch (err) {
      // The failure that brought us here is what the caller hears about.
      if (failure === undefined) throw err;
      log.debug({ err: errorMessage(err) }, 'could not write the failure to status');
    }
  }

  /**
   * Write-ahead (analysis/run.ts): the measurements start only now that the
   * status naming them as started has landed; whatever it no longer has in
   * flight is let go.
   */
  private measure(r: Reconciliation): void {
    const { namespace, name, uid } = r.cached.metadata;
    const keys = new Set(
      Object.values(ANALYSIS_FIELD).flatMap((field) => {
        const run = r.status[field];
        return run ? inFlight(run).map((m) => m.key) : [];
      }),
    );
    const traffic = trafficInFlight(r.status.trafficCheck);
    if (traffic !== undefined) keys.add(traffic);
    this.o.analysis.dispatch({ key: r.key, namespace, name, uid: uid ?? '' }, r.measurements ?? [], keys);
  }

  /**
   * Write-ahead, as measure(): the notifications of this write's transitions
   * join the status that records them (the outbox), with what the sender
   * reported applied; they are sent only once that status has landed.
   */
  private async notifications(r: Reconciliation, status: AppStatus): Promise<Prepared | undefined> {
    if (!this.o.notifier) return undefined;
    const { namespace, name, uid } = r.cached.metadata;
    return this.o.notifier.prepare({
      app: { key: r.key, namespace, name, uid: uid ?? '' },
      spec: r.cached.spec,
      before: r.cached.status as AppStatus | undefined,
      after: status,
      generation: this.generation(r),
      now: r.now.toISOString(),
    });
  }

  private notify(r: Reconciliation, prepared: Prepared): void {
    const { namespace, name } = r.cached.metadata;
    this.o.notifier?.landed({ key: r.key, namespace, name }, prepared.status, prepared);
  }

  /**
   * The App's pods, read only while a restart is asked for or under way (rollout/restart.ts), or
   * while a drain-verified switch waits for its verification (rollout/switch.ts): a pod cache
   * would hold every pod of every App, and see every pod change, for rare moments. A switch's
   * pods change what it waits for (Ready, readiness gates) along with the EndpointSlices, which
   * are watched and wake the App.
   */
  private async podsToRead(r: Reconciliation, app: App): Promise<{ pods?: ObservedPod[] }> {
    if (!isRestarting(r) && !isVerifyingSwitch(app, r.cached.status as AppStatus | undefined)) return {};
    const { namespace, name } = r.target;
    const listed = await reading(
      `the pods of App ${namespace}/${name}`,
      this.o.client.listPods(namespace, `${LABEL_APP}=${name},${LABEL_HASH}`),
    );
    return { pods: listed.flatMap((pod) => observePod(pod) ?? []) };
  }

  /** The templates of the App's namespace, and the results in for its measurements. */
  private analysisObserved(r: Reconciliation): AnalysisObserved {
    const templates = new Map<string, AnalysisTemplateSpec>();
    const invalidTemplates = new Map<string, string>();
    for (const { value } of this.o.caches.templates.listByNamespace(r.target.namespace)) {
      if (value.spec) templates.set(value.name, value.spec);
      else invalidTemplates.set(value.name, value.problem ?? 'invalid');
    }
    const results = new Map(this.o.analysis.resultsFor(r.key));
    for (const job of r.observed.analysisJobs ?? []) {
      if (job.result && job.key !== '' && !job.deleting) results.set(job.key, job.result);
    }
    return { templates, invalidTemplates, results };
  }

  // ---- I/O helpers ----

  private async act(r: Reconciliation, actions: readonly ClusterAction[]): Promise<void> {
    await this.executor.run(r.target, actions, r.log);
  }

  private async writeStatus(r: Reconciliation, status: AppStatus): Promise<void> {
    const before = r.cached.status as AppStatus | undefined;
    if (isDeepStrictEqual(before ?? {}, status)) return;
    const { namespace, name, resourceVersion } = r.target;
    this.executor.guard(r.key);
    await this.o.client.writeStatus(namespace, name, resourceVersion, status);
    this.memory.wrote(r.key, resourceVersion, performance.now());
    r.log.debug({ phase: status.phase }, 'status written');
    if (this.o.metrics) countTransitions(this.o.metrics, before, status);
  }

  private async record(r: Reconciliation, events: readonly PlannerEvent[]): Promise<void> {
    const { namespace, name, uid } = r.cached.metadata;
    for (const { type, reason, message } of events) {
      await this.o.recorder.record({ namespace, name, ...(uid ? { uid } : {}) }, type, reason, message);
    }
  }

  private generation(r: Reconciliation): number {
    return r.cached.metadata.generation ?? 0;
  }

  /**
   * One Warning Event for each label or annotation value Teal ignores, on the
   * App's own annotations and the objects Teal reads for it: a value that stays
   * bad is reported once, not at every reconcile, and again if it comes back
   * after it was repaired.
   */
  private async reportValueProblems(r: Reconciliation, appProblems: readonly ValueProblem[]): Promise<void> {
    const { key, cached, observed } = r;
    const { jobs, pods } = this.buildObjects(key);
    const slots = Object.values(observed.slotServices ?? {});
    const objects = [
      ...observed.replicaSets,
      observed.activeService,
      observed.previewService,
      ...slots,
      ...jobs,
      ...pods,
    ];
    const readRefresh = readRefreshRequest(cached.metadata.annotations, `App ${cached.metadata.name}`);
    const problems = [...appProblems, ...readRefresh.problems, ...objects.flatMap((o) => o?.problems ?? [])];
    const current = new Map(problems.map((p) => [`${p.reason}: ${p.message}`, p]));
    const fresh = this.memory.untold(key, current.keys()).map((id) => [id, current.get(id) as ValueProblem] as const);
    if (fresh.length > 0) this.executor.guard(key);
    this.memory.tell(key, current.keys());
    for (const [, { reason, message }] of fresh) {
      r.log.warn({ reason, problem: message }, 'ignoring a value read from the cluster');
    }
    await this.record(
      r,
      fresh.map(([, { reason, message }]) => ({ type: 'Warning' as const, reason, message })),
    );
  }

  /**
   * The build Jobs of an App that is gone, in the build namespace: no ownerReference reaches
   * there, so the garbage collector cannot; the Jobs' events bring the App's key here, and so
   * does every start (AppController.enqueueWhere), so one deleted while no replica ran goes too.
   */
  private async deleteOrphanedBuilds(key: string, namespace: string, name: string): Promise<void> {
    if (this.o.buildNamespace === undefined) return;
    const actions = orphanedJobs(this.buildObjects(key).jobs, undefined);
    if (actions.length === 0) return;
    const target = { namespace, name, resourceVersion: '', finalizers: [] };
    await this.executor.run(target, actions, this.o.logger.child({ app: key }));
  }

  /** The App's build Jobs and their pods, from the cache. */
  private buildObjects(key: string) {
    const { caches } = this.o;
    const jobs = caches.jobs.byIndex(APPS_INDEX, key).map((j) => j.value);
    const pods = jobs.flatMap((j) =>
      caches.buildPods.byIndex(JOBS_INDEX, `${j.namespace}/${j.name}`).map((p) => p.value),
    );
    return { jobs, pods };
  }

  private async planBuilds(app: App, r: Reconciliation): Promise<BuildPlan> {
    const namespace = r.target.namespace;
    const { jobs, pods: cached } = this.buildObjects(r.key);
    const pods = await Promise.all(cached.map((pod) => this.withLogHead(pod)));
    const commit = app.status?.source?.commit;
    const secretName = app.spec.source?.git.secretRef?.name;
    const defaults = this.o.buildDefaults;
    const spec = buildSpecHash(app, defaults);
    // Which credentials the build mounts depends on the Secret's keys, and its CAs must be certificates: read
    // them only when a Job is to be made (as planBuild decides: none for this commit and these build settings).
    const needJob =
      commit !== undefined && !jobs.some((j) => !j.deleting && j.commit === commit && j.buildSpec === spec);
    const needKeys = needJob && secretName !== undefined;
    const caProblem = needJob ? await this.caProblem(app) : undefined;
    const gitSecretKeys = needKeys
      ? ((await reading(`Secret ${namespace}/${secretName}`, this.o.client.readSecretKeys(namespace, secretName))) ??
        [])
      : undefined;
    return planBuild({
      app,
      jobs,
      pods,
      images: this.o.buildImages,
      defaults,
      ...(gitSecretKeys ? { gitSecretKeys } : {}),
      ...(this.o.buildNamespace !== undefined ? { buildNamespace: this.o.buildNamespace } : {}),
      ...(this.o.buildNetwork ? { network: this.o.buildNetwork } : {}),
      ...(caProblem ? { caProblem } : {}),
    });
  }

  /**
   * A build pod that stopped at its usage (stoppedAtUsage) with the head of its log, where its
   * error is, before its termination message; read once per pod, as a finished pod's log stays.
   */
  private async withLogHead(pod: ObservedBuildPod): Promise<ObservedBuildPod> {
    if (pod.message === undefined || !stoppedAtUsage(pod.message)) return pod;
    const key = `${pod.namespace}/${pod.name}`;
    let head = this.logHeads.get(key);
    if (head === undefined) {
      head = (await this.o.client.readLogHead(pod.namespace, pod.name, BUILD_CONTAINER, LOG_HEAD_BYTES)) ?? '';
      this.logHeads.set(key, head);
      // A few failed pods at a time: the oldest goes first.
      if (this.logHeads.size > LOG_HEADS_KEPT) this.logHeads.delete(this.logHeads.keys().next().value ?? '');
    }
    return head === '' ? pod : { ...pod, message: `${head.trimEnd()}\n${pod.message}` };
  }

  /**
   * Why a CA the App's build is to trust cannot be: its Secret (spec.build.caSecretRef) in the App's
   * namespace, the operator's ConfigMap (--build-ca-configmap) where the build runs. Read, checked and
   * dropped: no content is kept or said.
   */
  private async caProblem(app: App): Promise<string | undefined> {
    const namespace = app.metadata.namespace ?? '';
    const secret = app.spec.build?.caSecretRef;
    const configMap = this.o.buildNetwork?.caConfigMap;
    const sources: CaSource[] = [];
    if (secret) {
      const found = await reading(
        `Secret ${namespace}/${secret.name}`,
        this.o.client.readConfigSource('secret', namespace, secret.name),
      );
      const data =
        found &&
        Object.fromEntries(Object.entries(found.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      sources.push({ field: 'spec.build.caSecretRef', kind: 'Secret', namespace, ref: secret, data });
    }
    if (configMap) {
      const where = this.o.buildNamespace ?? namespace;
      const found = await reading(
        `ConfigMap ${where}/${configMap.name}`,
        this.o.client.readConfigSource('configmap', where, configMap.name),
      );
      sources.push({
        field: '--build-ca-configmap',
        kind: 'ConfigMap',
        namespace: where,
        ref: configMap,
        data: found?.data,
      });
    }
    return sources.map(caSourceProblem).find((p) => p !== undefined);
  }

  /** ReplicaSets, Jobs, Services and EndpointSlices, all from the cache: Teal's own Services and any it may adopt. */
  private observed(app: App): Observed {
    const { caches } = this.o;
    const namespace = app.metadata.namespace ?? '';
    const key = `${namespace}/${app.metadata.name}`;
    const service = (role: 'active' | 'preview') => caches.services.get(namespace, serviceName(app, role))?.value;
    const [activeService, previewService] = [service('active'), service('preview')];
    const pingPong = app.spec.strategy.blueGreen.pingPong;
    const slot = (name: string) => caches.services.get(namespace, name)?.value;
    const [ping, pong] = pingPong ? [slot(pingPong.pingService), slot(pingPong.pongService)] : [];
    const activeName = serviceName(app, 'active');
    // Read only by a drain-verified switch (rollout/switch.ts).
    const activeEndpointSlices = app.spec.strategy.blueGreen.switch
      ? caches.endpointSlices
          .byIndex(APPS_INDEX, key)
          .map((c) => c.value)
          .filter((slice) => slice.service === activeName)
      : undefined;
    return {
      ...(activeEndpointSlices ? { activeEndpointSlices } : {}),
      replicaSets: caches.replicaSets.byIndex(APPS_INDEX, key).map((c) => c.value),
      analysisJobs: caches.analysisJobs.byIndex(APPS_INDEX, key).map((c) => c.value),
      ...(activeService ? { activeService } : {}),
      ...(previewService ? { previewService } : {}),
      ...(pingPong ? { slotServices: { ...(ping ? { ping } : {}), ...(pong ? { pong } : {}) } } : {}),
    };
  }

  /** Ping-pong: the route the App names, from the route cache (started by the first App that asks). */
  private routing(app: App): Observed['routing'] | 'syncing' | undefined {
    const gatewayAPI = app.spec.strategy.blueGreen.trafficRouting?.gatewayAPI;
    if (!gatewayAPI || !app.spec.strategy.blueGreen.pingPong) return undefined;
    if (!this.o.routes) return { unavailable: 'this operator does not read HTTPRoutes' };
    return this.o.routes.lookup(app.metadata.namespace ?? '', gatewayAPI.httpRoute);
  }

  /** A deleted App: give adopted Services their selectors back, then let it go. */
  private async finalize(r: Reconciliation): Promise<Result> {
    if (!r.target.finalizers.includes(FINALIZER)) return {};
    const { namespace, name, uid } = r.cached.metadata;
    const adopted = this.o.caches.services
      .listByNamespace(namespace)
      .map((s) => s.value)
      .filter((s) => s.app === name && s.originalSelector !== undefined && s.ownerUid !== uid);
    await this.act(r, [
      ...adopted.map((service) => ({ kind: 'restoreService' as const, service })),
      { kind: 'removeFinalizer' },
    ]);
    return {};
  }
}

function isRestarting(r: Reconciliation): boolean {
  const restart = (r.cached.status as AppStatus | undefined)?.restart;
  const running = restart !== undefined && restart.finishedAt === undefined;
  return running || r.intents.some((i) => i.action === 'restart');
}

/** The active revision's switch is not verified yet: its pods are read (their readiness gates). */
function isVerifyingSwitch(app: App, status: AppStatus | undefined): boolean {
  const active = status?.active?.podTemplateHash;
  return (
    app.spec.strategy.blueGreen.switch !== undefined && active !== undefined && !isSwitchVerified(status ?? {}, active)
  );
}

/** The PreviewsListed condition while the first listing is under way. */
const LISTING: ConditionInput = {
  type: 'PreviewsListed',
  status: 'Unknown',
  reason: ListedReason.Listing,
  message: 'listing the pull requests',
};

/** A preview write refused is tried again after this long (the workqueue's own backoff is for the parent's failures). */
const PREVIEW_WRITE_RETRY_MS = 10_000;

const hasPreviewsRecord = (status: AppStatus) =>
  status.previews !== undefined || getCondition(status.conditions, 'PreviewsListed') !== undefined;

/** The status with its previews record and PreviewsListed condition (either undefined: removed). */
function withPreviews(
  status: AppStatus,
  previews: PreviewsStatus | undefined,
  condition: ConditionInput | undefined,
  generation: number,
  now: Date,
): AppStatus {
  const { previews: _old, ...rest } = status;
  const conditions = condition
    ? setCondition(status.conditions, condition, generation, now.toISOString())
    : removeCondition(status.conditions, 'PreviewsListed');
  return { ...rest, ...(previews ? { previews } : {}), conditions };
}

/** A read that failed, named for the status message. */
async function reading<T>(what: string, request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (err) {
    throw new Error(`reading ${what}: ${errorMessage(err)}`, { cause: err });
  }
}
