// The App reconciler: read the cache, ask the planner, carry out its
// actions, write status. All decisions live in src/rollout; this file only
// does I/O, in the order the plan gives.
import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ValueProblem } from '../app/cluster-values.ts';
import { parseDuration } from '../app/duration.ts';
import { readIntents, readRefreshRequest } from '../app/intents.ts';
import type { App, AppStatus } from '../app/schema.ts';
import { validateApp } from '../app/validate.ts';
import { type BuildImages, buildSpecHash } from '../build/job.ts';
import { type BuildAction, type BuildPlan, planBuild } from '../build/plan.ts';
import type { BuildDefaults } from '../build/registry.ts';
import {
  buildTransitionEvents,
  type ResolvedSource,
  type SourceFailure,
  withBuild,
  withSource,
} from '../build/status.ts';
import type { Writer } from '../kube/apply.ts';
import { isNotFound } from '../kube/errors.ts';
import type { EventRecorder } from '../kube/events.ts';
import { type KubeAction, type Plan, plan, planInvalid } from '../rollout/bluegreen.ts';
import { ANN_SCALE_DOWN_AT, FINALIZER } from '../rollout/labels.ts';
import { type Observed, type ObservedService, observeService } from '../rollout/observed.ts';
import { isAdopted, restoredServiceManifest, serviceName } from '../rollout/service.ts';
import { specProblems } from '../rollout/spec-problems.ts';
import { targetRevision } from '../rollout/target.ts';
import { APPS_INDEX, type CachedApp, type Caches, JOBS_INDEX } from './cache.ts';
import type { Metrics } from './metrics.ts';

export class NotLeaderError extends Error {
  constructor() {
    super('not the leader: writes are refused');
  }
}

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

export interface ReconcilerOptions {
  kubeConfig: KubeConfig;
  caches: Caches;
  sources: SourceView;
  buildImages: BuildImages;
  /** --default-registry and --default-push-secret, for Apps that leave them out. */
  buildDefaults?: BuildDefaults;
  /** Checks a git URL the schema accepted against the operator's policy (file:// only for local use). */
  checkGitUrl: (url: string) => string | undefined;
  metrics?: Metrics;
  writer: Writer;
  recorder: EventRecorder;
  logger: Logger;
  /** Checked before every write: only the Lease holder writes. */
  canWrite: () => boolean;
  now?: () => Date;
}

export interface Result {
  requeueAfterMs?: number;
}

export class Reconciler {
  private readonly o: ReconcilerOptions;
  private readonly core: CoreV1Api;
  /** Per App key, the ignored values already reported (see reportValueProblems). */
  private readonly reported = new Map<string, Set<string>>();

  constructor(options: ReconcilerOptions) {
    this.o = options;
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
  }

  private guard(): void {
    if (!this.o.canWrite()) throw new NotLeaderError();
  }

  async reconcile(key: string): Promise<Result> {
    const [namespace = '', name = ''] = key.split('/');
    const cached = this.o.caches.apps.get(namespace, name);
    if (!cached) {
      this.o.sources.forget(key);
      this.reported.delete(key);
      return {};
    }
    const now = this.o.now?.() ?? new Date();
    const log = this.o.logger.child({ app: key });

    if (cached.metadata.deletionTimestamp) {
      await this.finalize(cached, log);
      return {};
    }
    const validation = validateApp(cached);
    if (!validation.ok) {
      const generation = cached.metadata.generation ?? 0;
      const result = planInvalid(cached.status as App['status'], generation, validation.errors, now);
      await this.finish(cached, result, log);
      return {};
    }
    const app = validation.app;
    const generation = app.metadata.generation ?? 0;
    const urlProblem = app.spec.source ? this.o.checkGitUrl(app.spec.source.git.url) : undefined;
    // Before anything is followed or built: an App that cannot be planned touches nothing.
    const problems = [
      ...(urlProblem ? [`spec.source.git.url: ${urlProblem}`] : []),
      ...specProblems(app, this.o.buildDefaults),
    ];
    if (problems.length > 0) {
      this.o.sources.forget(key);
      await this.finish(cached, planInvalid(app.status, generation, problems, now), log);
      return {};
    }
    const observed = await this.observe(app);
    const { intents, problems: intentProblems } = readIntents(cached.metadata.annotations, `App ${name}`);
    await this.reportValueProblems(cached, observed, intentProblems, log);

    await this.ensureFinalizer(cached, app, observed);
    const { app: sourced, build, sourceFailure, buildEvents } = await this.sourceAndBuild(app, key, now, log);
    const result = plan({
      app: sourced,
      observed,
      now,
      target: targetRevision(sourced),
      intents,
      ...(this.o.buildDefaults ? { buildDefaults: this.o.buildDefaults } : {}),
      ...(build?.running ? { building: true } : {}),
      ...(build?.failure ? { buildFailure: build.failure } : {}),
      ...(sourceFailure ? { sourceFailure } : {}),
    });
    result.actions.unshift(...buildEvents);
    for (const action of result.actions) {
      if (action.kind !== 'event') await this.execute(sourced, action, log);
    }
    await this.finish(cached, result, log);
    return result.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : {};
  }

  /**
   * Follows the App's git source and plans its builds (creating or deleting
   * Jobs); the App comes back with its source and build status. An App that
   * names an image is not followed.
   */
  private async sourceAndBuild(
    app: App,
    key: string,
    now: Date,
    log: Logger,
  ): Promise<{ app: App; build?: BuildPlan; sourceFailure?: string; buildEvents: KubeAction[] }> {
    if (!app.spec.source || !app.spec.build) {
      this.o.sources.forget(key);
      return { app, buildEvents: [] };
    }
    const namespace = app.metadata.namespace ?? '';
    const generation = app.metadata.generation ?? 0;
    const git = app.spec.source.git;
    this.o.sources.follow(key, {
      namespace,
      url: git.url,
      ref: git.ref,
      pollIntervalMs: parseDuration(git.pollInterval),
      ...(git.secretRef ? { secretName: git.secretRef.name } : {}),
    });
    const state = this.o.sources.state(key);
    const before = app.status?.build;
    const status = withSource(app.status, state?.resolved, state?.failure, generation, now.toISOString());
    const build = await this.planBuilds({ ...app, status }, key);
    for (const action of build.actions) await this.executeBuild(namespace, action, log);
    const after = withBuild(status, build, generation, now.toISOString());
    return {
      app: { ...app, status: after },
      build,
      ...(state?.failure ? { sourceFailure: `source: ${state.failure.message}` } : {}),
      buildEvents: buildTransitionEvents(before, after.build).map((event) => ({ kind: 'event' as const, event })),
    };
  }

  /**
   * One Warning Event for each label or annotation value Teal ignores, on the
   * App's own annotations and the objects Teal reads for it: a value that stays
   * bad is reported once, not at every reconcile, and again if it comes back
   * after it was repaired.
   */
  private async reportValueProblems(
    cached: CachedApp,
    observed: Observed,
    appProblems: readonly ValueProblem[],
    log: Logger,
  ): Promise<void> {
    const { namespace, name, uid } = cached.metadata;
    const key = `${namespace}/${name}`;
    const { caches } = this.o;
    const jobs = caches.jobs.byIndex(APPS_INDEX, key).map((j) => j.value);
    const pods = jobs.flatMap((j) =>
      caches.buildPods.byIndex(JOBS_INDEX, `${namespace}/${j.name}`).map((p) => p.value),
    );
    const objects = [...observed.replicaSets, observed.activeService, observed.previewService, ...jobs, ...pods];
    const readRefresh = readRefreshRequest(cached.metadata.annotations, `App ${name}`);
    const problems = [...appProblems, ...readRefresh.problems, ...objects.flatMap((o) => o?.problems ?? [])];
    const current = new Map(problems.map((p) => [`${p.reason}: ${p.message}`, p]));
    const before = this.reported.get(key);
    const fresh = [...current].filter(([id]) => !before?.has(id));
    if (fresh.length > 0) this.guard();
    if (current.size > 0) this.reported.set(key, new Set(current.keys()));
    else this.reported.delete(key);
    for (const [, { reason, message }] of fresh) {
      log.warn({ reason, problem: message }, 'ignoring a value read from the cluster');
      await this.o.recorder.record({ namespace, name, ...(uid ? { uid } : {}) }, 'Warning', reason, message);
    }
  }

  private async planBuilds(app: App, key: string): Promise<BuildPlan> {
    const { caches } = this.o;
    const namespace = app.metadata.namespace ?? '';
    const jobs = caches.jobs.byIndex(APPS_INDEX, key).map((j) => j.value);
    const pods = jobs.flatMap((j) =>
      caches.buildPods.byIndex(JOBS_INDEX, `${namespace}/${j.name}`).map((p) => p.value),
    );
    const commit = app.status?.source?.commit;
    const secretName = app.spec.source?.git.secretRef?.name;
    const defaults = this.o.buildDefaults;
    const spec = buildSpecHash(app, defaults);
    // Which credentials the build mounts depends on the Secret's keys: read them only when a Job is to be made
    // (as planBuild decides: none for this commit and these build settings).
    const needKeys =
      commit !== undefined &&
      secretName !== undefined &&
      !jobs.some((j) => !j.deleting && j.commit === commit && j.buildSpec === spec);
    const gitSecretKeys = needKeys ? await this.secretKeys(namespace, secretName) : undefined;
    return planBuild({
      app,
      jobs,
      pods,
      images: this.o.buildImages,
      defaults,
      ...(gitSecretKeys ? { gitSecretKeys } : {}),
    });
  }

  private async secretKeys(namespace: string, name: string): Promise<string[]> {
    try {
      const secret = await this.core.readNamespacedSecret({ namespace, name });
      return Object.keys(secret.data ?? {});
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  private async executeBuild(namespace: string, action: BuildAction, log: Logger): Promise<void> {
    this.guard();
    if (action.kind === 'createJob') {
      log.info(
        { job: action.manifest.metadata.name, commit: action.manifest.metadata.labels['teal.dev/commit'] },
        'creating build Job',
      );
      await this.o.writer.apply(action.manifest);
    } else {
      log.info({ job: action.name, why: action.why }, 'deleting build Job');
      await this.o.writer.deleteJob(namespace, action.name);
    }
  }

  /** ReplicaSets from the cache; Services from the cache, or read once when not labelled yet. */
  private async observe(app: App): Promise<Observed> {
    const { caches } = this.o;
    const namespace = app.metadata.namespace ?? '';
    const replicaSets = caches.replicaSets.byIndex(APPS_INDEX, `${namespace}/${app.metadata.name}`).map((c) => c.value);
    const service = async (role: 'active' | 'preview'): Promise<ObservedService | undefined> => {
      const svcName = serviceName(app, role);
      const cachedSvc = caches.services.get(namespace, svcName)?.value;
      if (cachedSvc) return cachedSvc;
      // Not labelled by Teal: missing, or someone else's Service to adopt.
      try {
        return observeService(await this.core.readNamespacedService({ name: svcName, namespace }));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    };
    const [activeService, previewService] = await Promise.all([service('active'), service('preview')]);
    return {
      replicaSets,
      ...(activeService ? { activeService } : {}),
      ...(previewService ? { previewService } : {}),
    };
  }

  private async execute(app: App, action: Exclude<KubeAction, { kind: 'event' }>, log: Logger): Promise<void> {
    const namespace = app.metadata.namespace ?? '';
    this.guard();
    switch (action.kind) {
      case 'createReplicaSet':
        log.info(
          { replicaSet: action.manifest.metadata.name, replicas: action.manifest.spec.replicas },
          'creating ReplicaSet',
        );
        await this.o.writer.apply(action.manifest);
        return;
      case 'patchReplicaSet': {
        const patch: { spec?: { replicas: number }; metadata?: { annotations: Record<string, string | null> } } = {};
        if (action.replicas !== undefined) patch.spec = { replicas: action.replicas };
        if (action.scaleDownAt !== undefined)
          patch.metadata = { annotations: { [ANN_SCALE_DOWN_AT]: action.scaleDownAt } };
        log.info({ replicaSet: action.name, ...patch }, 'updating ReplicaSet');
        await this.o.writer.patchReplicaSet(namespace, action.name, patch);
        return;
      }
      case 'deleteReplicaSet':
        log.info({ replicaSet: action.name }, 'deleting old ReplicaSet');
        await this.o.writer.deleteReplicaSet(namespace, action.name);
        return;
      case 'applyService':
        log.info(
          { service: action.manifest.metadata.name, role: action.role, selector: action.manifest.spec.selector },
          'applying Service',
        );
        await this.o.writer.apply(action.manifest);
        return;
    }
  }

  /** Writes status when it changed, then records the plan's events. */
  private async finish(cached: CachedApp, result: Plan, log: Logger): Promise<void> {
    const { namespace, name, resourceVersion, uid } = cached.metadata;
    if (!isDeepStrictEqual(cached.status ?? {}, result.status)) {
      this.guard();
      await this.o.writer.writeStatus(namespace, name, resourceVersion, result.status);
      log.debug({ phase: result.status.phase }, 'status written');
      this.count(cached.status as AppStatus | undefined, result.status);
    }
    // After the status write: a conflict re-plans, and the events come with the plan that lands.
    for (const action of result.actions) {
      if (action.kind === 'event') {
        const { type, reason, message } = action.event;
        await this.o.recorder.record({ namespace, name, ...(uid ? { uid } : {}) }, type, reason, message);
      }
    }
  }

  /** Promotions and finished builds, counted once: only after the status that records them landed. */
  private count(before: AppStatus | undefined, after: AppStatus): void {
    const metrics = this.o.metrics;
    if (!metrics) return;
    const seen = before?.history?.at(-1)?.promotedAt;
    for (const entry of after.history ?? []) {
      if (seen !== undefined && (entry.promotedAt ?? '') <= seen) continue;
      metrics.promotions.inc({ via: entry.promotedVia ?? 'unknown' });
      const source = after.source;
      if (entry.commit && source?.commit === entry.commit && entry.promotedAt) {
        metrics.commitToActive.observe(
          Math.max(0, (Date.parse(entry.promotedAt) - Date.parse(source.resolvedAt)) / 1000),
        );
      }
    }
    const build = after.build;
    if (
      build &&
      (build.phase === 'Succeeded' || build.phase === 'Failed') &&
      (before?.build?.job !== build.job || before.build.phase !== build.phase)
    ) {
      const result = build.phase === 'Succeeded' ? 'success' : 'failure';
      metrics.builds.inc({ result });
      if (build.startedAt && build.finishedAt) {
        metrics.buildDuration.observe({ result }, (Date.parse(build.finishedAt) - Date.parse(build.startedAt)) / 1000);
      }
    }
  }

  /** A Service Teal adopted must get its selector back if the App goes: hold a finalizer meanwhile. */
  private async ensureFinalizer(cached: CachedApp, app: App, observed: Observed): Promise<void> {
    const adopted = [observed.activeService, observed.previewService].some((s) => s && isAdopted(app, s));
    const finalizers = cached.metadata.finalizers ?? [];
    if (!adopted || finalizers.includes(FINALIZER)) return;
    this.guard();
    await this.o.writer.patchAppMetadata(cached.metadata.namespace, cached.metadata.name, {
      resourceVersion: cached.metadata.resourceVersion,
      finalizers: [...finalizers, FINALIZER],
    });
  }

  private async finalize(cached: CachedApp, log: Logger): Promise<void> {
    const finalizers = cached.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return;
    const { namespace, name } = cached.metadata;
    for (const svc of this.o.caches.services.listByNamespace(namespace)) {
      const s = svc.value;
      if (s.app !== name || s.originalSelector === undefined || s.ownerUid === cached.metadata.uid) continue;
      this.guard();
      log.info({ service: s.name }, 'restoring the selector of an adopted Service');
      await this.o.writer.apply(restoredServiceManifest(s));
    }
    this.guard();
    try {
      await this.o.writer.patchAppMetadata(namespace, name, {
        resourceVersion: cached.metadata.resourceVersion,
        finalizers: finalizers.filter((f) => f !== FINALIZER),
      });
    } catch (err) {
      // Already gone: a stale cache asked twice.
      if (!isNotFound(err)) throw err;
    }
  }
}
