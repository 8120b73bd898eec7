// The App reconciler: read the cache, ask the planner, carry out its
// actions, write status. All decisions live in src/rollout; this file only
// does I/O, in the order the plan gives.
import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { readIntents } from '../app/intents.ts';
import type { App } from '../app/schema.ts';
import { validateApp } from '../app/validate.ts';
import { isNotFound, type Writer } from '../kube/apply.ts';
import type { EventRecorder } from '../kube/events.ts';
import { type KubeAction, type Plan, plan, planInvalid } from '../rollout/bluegreen.ts';
import { ANN_SCALE_DOWN_AT, FINALIZER } from '../rollout/labels.ts';
import { type Observed, type ObservedService, observeService } from '../rollout/observed.ts';
import { isAdopted, restoredServiceManifest, serviceName } from '../rollout/service.ts';
import { targetRevision } from '../rollout/target.ts';
import { APPS_INDEX, type CachedApp, type Caches } from './cache.ts';

export class NotLeaderError extends Error {
  constructor() {
    super('not the leader: writes are refused');
  }
}

export interface ReconcilerOptions {
  kubeConfig: KubeConfig;
  caches: Caches;
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
    if (!cached) return {};
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
    const observed = await this.observe(app);
    const { intents, errors } = readIntents(cached.metadata.annotations);
    for (const error of errors) log.warn({ error }, 'ignoring an unreadable intent');

    await this.ensureFinalizer(cached, app, observed);
    const result = plan({ app, observed, now, target: targetRevision(app), intents });
    for (const action of result.actions) {
      if (action.kind !== 'event') await this.execute(app, action, log);
    }
    await this.finish(cached, result, log);
    return result.requeueAfterMs !== undefined ? { requeueAfterMs: result.requeueAfterMs } : {};
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
    }
    // After the status write: a conflict re-plans, and the events come with the plan that lands.
    for (const action of result.actions) {
      if (action.kind === 'event') {
        const { type, reason, message } = action.event;
        await this.o.recorder.record({ namespace, name, ...(uid ? { uid } : {}) }, type, reason, message);
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
