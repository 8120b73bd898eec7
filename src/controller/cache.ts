// The informer caches the App controller reads, each trimmed to what it uses.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type AnalysisJobRef, LABEL_ANALYSIS, observeAnalysisJob } from '../analysis/job.ts';
import { validateTemplate } from '../analysis/validate.ts';
import { type AnalysisTemplateSpec, TEMPLATE_PLURAL } from '../app/analysis-schema.ts';
import {
  APPS_INDEX,
  type CachedApp,
  type CachedAppEvent,
  JOBS_INDEX,
  PREVIEWED_REPOSITORY_INDEX,
  PREVIEWS_INDEX,
} from '../app/cached.ts';
import { ANN_REFRESH, INTENT_PREFIX } from '../app/intents.ts';
import { LABEL_APP } from '../app/labels.ts';
import {
  ANN_ACTIVE_AT,
  ANN_PR_HEAD,
  ANN_PR_REF,
  ANN_PR_URL,
  ANN_PREVIEW_SPEC,
  ANN_PREVIEWS_REQUESTED,
  ANN_WAKE,
  LABEL_PREVIEW_OF,
  LABEL_PULL_REQUEST,
} from '../app/preview-labels.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../app/schema.ts';
import { LABEL_BUILD } from '../build/job.ts';
import { observeBuildPod, observeJob } from '../build/observed.ts';
import type { ObservedBuildPod, ObservedJob } from '../build/plan.ts';
import {
  type Cached,
  Informer,
  type InformerOptions,
  type KubeObjectLike,
  type Meta,
  type RawObject,
} from '../kube/informer.ts';
import { StringPool } from '../kube/intern.ts';
import { MultiNamespaceInformer, type SharedInformer } from '../kube/multi-namespace-informer.ts';
import { previewedRepository } from '../previews/repository-owner.ts';
import { ANN_LIVE_CONFIG, configMapDigest, findConfigRefs, LABEL_CONFIG_COPY } from '../rollout/config-refs.ts';
import {
  LABEL_SERVICE_NAME,
  type ObservedEndpointSlice,
  type ObservedReplicaSet,
  type ObservedService,
  observeEndpointSlice,
  observeReplicaSet,
  observeService,
} from '../rollout/observed.ts';

/** The annotations every App keeps in the cache: those the reconciler reads. */
const keptAnnotation = (k: string) =>
  k.startsWith(INTENT_PREFIX) || k === ANN_REFRESH || k === ANN_LIVE_CONFIG || k === ANN_PREVIEWS_REQUESTED;
/** A preview's child App keeps what the previews planner reads of it again (app/preview-labels.ts). */
const CHILD_ANNOTATIONS: ReadonlySet<string> = new Set([
  ANN_PR_HEAD,
  ANN_PR_REF,
  ANN_PR_URL,
  ANN_ACTIVE_AT,
  ANN_WAKE,
  ANN_PREVIEW_SPEC,
]);

/** A child App's labels, owners and age, as the previews planner reads them; nothing for any other App. */
function childMetadata(m: NonNullable<RawObject['metadata']>, pool: StringPool): Partial<CachedApp['metadata']> {
  const parent = m.labels?.[LABEL_PREVIEW_OF];
  if (parent === undefined) return {};
  const number = m.labels?.[LABEL_PULL_REQUEST];
  const refs = Array.isArray(m.ownerReferences) ? (m.ownerReferences as Record<string, unknown>[]) : [];
  const owners = refs.flatMap((o) =>
    o?.kind === KIND && typeof o.uid === 'string' && typeof o.name === 'string'
      ? [{ apiVersion: String(o.apiVersion ?? API_VERSION), kind: KIND, name: o.name, uid: o.uid }]
      : [],
  );
  return {
    labels: {
      [LABEL_PREVIEW_OF]: pool.string(parent),
      ...(number !== undefined ? { [LABEL_PULL_REQUEST]: number } : {}),
    },
    ...(owners.length > 0
      ? {
          ownerReferences: owners.map((o) => ({
            apiVersion: o.apiVersion,
            kind: o.kind,
            name: pool.string(o.name),
            uid: pool.string(o.uid),
          })),
        }
      : {}),
    ...(typeof m.creationTimestamp === 'string' ? { creationTimestamp: m.creationTimestamp } : {}),
  };
}

const isPreviewing = (spec: unknown) =>
  typeof spec === 'object' && spec !== null && (spec as { previews?: unknown }).previews !== undefined;

function trimApp(raw: RawObject, pool: StringPool): CachedApp | undefined {
  const m = raw.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const child = m.labels?.[LABEL_PREVIEW_OF] !== undefined;
  const annotations = Object.fromEntries(
    Object.entries(m.annotations ?? {}).filter(([k]) => keptAnnotation(k) || (child && CHILD_ANNOTATIONS.has(k))),
  );
  return {
    ...(raw.apiVersion ? { apiVersion: pool.string(raw.apiVersion) } : {}),
    ...(raw.kind ? { kind: pool.string(raw.kind) } : {}),
    metadata: {
      // Pooled: the App's ReplicaSets and Services name it and its uid again.
      name: pool.string(m.name),
      namespace: pool.string(m.namespace),
      resourceVersion: m.resourceVersion ?? '',
      ...(m.uid ? { uid: pool.string(m.uid) } : {}),
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      ...(typeof m.deletionTimestamp === 'string' ? { deletionTimestamp: m.deletionTimestamp } : {}),
      ...(Array.isArray(m.finalizers) ? { finalizers: pool.intern(m.finalizers as string[]) } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...childMetadata(m, pool),
      // Of two Apps previewing one repository the oldest owns it (previews/repository-owner.ts).
      ...(isPreviewing(raw.spec) && typeof m.creationTimestamp === 'string'
        ? { creationTimestamp: m.creationTimestamp }
        : {}),
    },
    spec: pool.intern(raw.spec),
    status: pool.intern(raw.status),
  };
}

/**
 * A trimmed object in the cache. Its metadata is the value itself, which
 * holds the three fields: one object less per cached object than a copy of
 * them (three per converged App: a ReplicaSet and two Services).
 */
class CachedValue<T extends Meta> implements Cached<T> {
  readonly value: T;

  constructor(value: T) {
    this.value = value;
  }

  get metadata(): Meta {
    return this.value;
  }
}

function wrap<T extends Meta>(value: T | undefined): Cached<T> | undefined {
  return value ? new CachedValue(value) : undefined;
}

// Of a ReplicaSet's or a Service's strings, only those it shares with its App or with
// others are pooled. Its own name and resourceVersion, met once, would fill the bounded
// pool and empty it (intern.ts) before the App's uid came round again from its Services.

function shareReplicaSet(rs: ObservedReplicaSet | undefined, pool: StringPool): ObservedReplicaSet | undefined {
  if (!rs) return undefined;
  rs.namespace = pool.string(rs.namespace);
  rs.app = pool.string(rs.app);
  rs.hash = pool.string(rs.hash);
  rs.image = pool.string(rs.image);
  rs.createdAt = pool.string(rs.createdAt);
  if (rs.commit !== undefined) rs.commit = pool.string(rs.commit);
  if (rs.ownerUid !== undefined) rs.ownerUid = pool.string(rs.ownerUid);
  if (rs.copies !== undefined) pool.intern(rs.copies);
  return rs;
}

function shareService(svc: ObservedService | undefined, pool: StringPool): ObservedService | undefined {
  if (!svc) return undefined;
  // An App's active Service bears the App's name.
  svc.name = pool.string(svc.name);
  svc.namespace = pool.string(svc.namespace);
  if (svc.app !== undefined) svc.app = pool.string(svc.app);
  if (svc.ownerUid !== undefined) svc.ownerUid = pool.string(svc.ownerUid);
  if (svc.appliedHash !== undefined) svc.appliedHash = pool.string(svc.appliedHash);
  pool.intern(svc.selector);
  return svc;
}

/** An AnalysisTemplate as cached: its spec once validated, or why it is not valid. */
export interface CachedTemplate {
  name: string;
  namespace: string;
  resourceVersion: string;
  spec?: AnalysisTemplateSpec;
  problem?: string;
}

const MAX_TEMPLATE_PROBLEM = 512;

function observeTemplate(raw: RawObject): CachedTemplate | undefined {
  const m = raw.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const base = { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion ?? '' };
  const validation = validateTemplate(raw);
  if (validation.ok) return { ...base, spec: validation.template.spec };
  const problem = validation.errors.join('; ');
  return {
    ...base,
    problem: problem.length > MAX_TEMPLATE_PROBLEM ? `${problem.slice(0, MAX_TEMPLATE_PROBLEM - 1)}…` : problem,
  };
}

/** A ConfigMap as cached: a digest of its content, never the data (read by GET when a copy is made). */
export interface CachedConfigMap {
  name: string;
  namespace: string;
  resourceVersion: string;
  digest: string;
}

function observeConfigMap(raw: RawObject, pool: StringPool): CachedConfigMap | undefined {
  const m = raw.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const { data, binaryData } = raw as { data?: Record<string, string>; binaryData?: Record<string, string> };
  return {
    name: m.name,
    namespace: pool.string(m.namespace),
    resourceVersion: m.resourceVersion ?? '',
    digest: configMapDigest(data, binaryData),
  };
}

/** A copy Teal made of a ConfigMap (config-refs.ts), as cached: that it exists, and for which App. */
export interface CachedConfigCopy {
  name: string;
  namespace: string;
  resourceVersion: string;
  app?: string;
}

function observeConfigCopy(raw: RawObject, pool: StringPool): CachedConfigCopy | undefined {
  const m = raw.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const app = m.labels?.[LABEL_APP];
  return {
    name: m.name,
    namespace: pool.string(m.namespace),
    resourceVersion: m.resourceVersion ?? '',
    ...(app ? { app: pool.string(app) } : {}),
  };
}
/** Longest Event message kept: the EventRecorder writes at most 1,024 characters, others may write more. */
const MAX_EVENT_MESSAGE = 1024;

/**
 * Most Events about Apps the cache holds (about 380 bytes of heap each, docs/memory.md): the API
 * server's event TTL (1 h by default) bounds them in time, this in memory, whatever
 * writes Events about Apps how often. Past it a new Event is left out until others expire;
 * one already held is still updated.
 */
export const MAX_APP_EVENTS = 20_000;

/** Whether the cache takes an Event: one it holds, always; a new one while it holds fewer than the most. */
export const takesAppEvent = (held: number, known: boolean, max = MAX_APP_EVENTS): boolean => known || held < max;

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

function observeAppEvent(raw: RawObject, pool: StringPool): Cached<CachedAppEvent> | undefined {
  const m = raw.metadata;
  const e = raw as {
    involvedObject?: { name?: unknown; uid?: unknown };
    type?: unknown;
    reason?: unknown;
    message?: unknown;
    count?: unknown;
    lastTimestamp?: unknown;
    eventTime?: unknown;
    firstTimestamp?: unknown;
  };
  const app = text(e.involvedObject?.name);
  if (!m?.name || !m.namespace || app === '') return undefined;
  const message = text(e.message);
  return wrap({
    name: m.name,
    namespace: pool.string(m.namespace),
    resourceVersion: m.resourceVersion ?? '',
    app: pool.string(app),
    ...(text(e.involvedObject?.uid) !== '' ? { appUid: pool.string(text(e.involvedObject?.uid)) } : {}),
    type: pool.string(text(e.type) || 'Normal'),
    reason: pool.string(text(e.reason)),
    message: message.length > MAX_EVENT_MESSAGE ? `${message.slice(0, MAX_EVENT_MESSAGE - 1)}…` : message,
    count: typeof e.count === 'number' ? e.count : 1,
    at: text(e.lastTimestamp) || text(e.eventTime) || text(e.firstTimestamp) || text(m.creationTimestamp),
  });
}

export interface Caches {
  apps: SharedInformer<CachedApp>;
  replicaSets: SharedInformer<Cached<ObservedReplicaSet>>;
  services: SharedInformer<Cached<ObservedService>>;
  /** The EndpointSlices of Teal's Services, for a drain-verified switch (rollout/switch.ts). */
  endpointSlices: SharedInformer<Cached<ObservedEndpointSlice>>;
  jobs: SharedInformer<Cached<ObservedJob>>;
  buildPods: SharedInformer<Cached<ObservedBuildPod>>;
  /** The pods of the Apps' revisions, for a restart (rollout/restart.ts). */
  analysisJobs: SharedInformer<Cached<AnalysisJobRef>>;
  templates: SharedInformer<Cached<CachedTemplate>>;
  /** Every ConfigMap but Teal's copies, as a digest: a pod template's references are part of its revision. */
  configMaps: SharedInformer<Cached<CachedConfigMap>>;
  /** Teal's ConfigMap copies, their names only: one deleted by hand wakes its App (rollout/config-copies.ts). */
  configCopies: SharedInformer<Cached<CachedConfigCopy>>;
  /**
   * The Events about Apps, for the dashboard's App page (api/actions.ts). The one cache the
   * controller does not read: held operator-wide so that an open page costs the API server no
   * list and no watch of Events (issue #25); the field selector keeps other kinds' Events out,
   * the transform keeps ten short fields of each, and MAX_APP_EVENTS bounds how many.
   */
  appKubeEvents: SharedInformer<Cached<CachedAppEvent>>;
}

/** An informer's options but its client and path, which the namespaces it watches decide (informersIn). */
type InformerSettings<T extends KubeObjectLike> = Omit<InformerOptions<T>, 'kubeConfig' | 'path'>;

/** Makes the informer of one resource, in namespaces chosen once for all it makes. */
type MakeInformer = <T extends KubeObjectLike>(
  group: string,
  resource: string,
  settings: InformerSettings<T>,
) => SharedInformer<T>;

/**
 * namespaces: the namespaces to watch, or empty for all. Watching a list takes
 * one list+watch per namespace and resource, and only namespaced RBAC.
 */
export function makeCaches(
  kubeConfig: KubeConfig,
  namespaces: readonly string[],
  logger: Logger,
  buildNamespace?: string,
): Caches {
  const informer = informersIn(kubeConfig, namespaces);
  // Build Jobs and their pods are where they run: the build namespace (--build-namespace), else the Apps'.
  const buildInformer = buildNamespace !== undefined ? informersIn(kubeConfig, [buildNamespace]) : informer;
  // One pool for all: the same strings (namespaces, App names and uids) come back from cache to cache.
  const pool = new StringPool();
  // In this order: the controller starts them in the order of their keys (Object.values).
  return {
    ...rolloutCaches(informer, logger, pool),
    ...buildCaches(buildInformer, namespaces, logger),
    ...analysisCaches(informer, logger),
    ...configCaches(informer, logger, pool),
    appKubeEvents: appEventsCache(informer, logger, pool),
  };
}

/** Informers of every namespace (one cluster-wide list+watch) when watched is empty, else one per namespace. */
function informersIn(kubeConfig: KubeConfig, watched: readonly string[]): MakeInformer {
  return <T extends KubeObjectLike>(group: string, resource: string, settings: InformerSettings<T>) => {
    if (watched.length === 0) return new Informer<T>({ ...settings, kubeConfig, path: `${group}/${resource}` });
    return new MultiNamespaceInformer(
      watched,
      (ns) => new Informer<T>({ ...settings, kubeConfig, path: `${group}/namespaces/${ns}/${resource}` }),
    );
  };
}

/** The Apps and what a release is made of: their ReplicaSets, Services and the Services' EndpointSlices. */
function rolloutCaches(
  informer: MakeInformer,
  logger: Logger,
  pool: StringPool,
): Pick<Caches, 'apps' | 'replicaSets' | 'services' | 'endpointSlices'> {
  const apps = informer<CachedApp>(`/apis/${GROUP}/${VERSION}`, PLURAL, {
    transform: (raw) => trimApp(raw, pool),
    logger: logger.child({ informer: 'apps' }),
  });
  apps.addIndex(PREVIEWS_INDEX, (app) => {
    const parent = app.metadata.labels?.[LABEL_PREVIEW_OF];
    return parent !== undefined ? [`${app.metadata.namespace}/${parent}`] : [];
  });
  apps.addIndex(PREVIEWED_REPOSITORY_INDEX, (app) => {
    const repository = previewedRepository(app.spec);
    return repository !== undefined ? [repository] : [];
  });
  const replicaSets = informer<Cached<ObservedReplicaSet>>('/apis/apps/v1', 'replicasets', {
    labelSelector: LABEL_APP,
    transform: (raw) => wrap(shareReplicaSet(observeReplicaSet(raw), pool)),
    logger: logger.child({ informer: 'replicasets' }),
  });
  replicaSets.addIndex(APPS_INDEX, (rs) => [`${rs.value.namespace}/${rs.value.app}`]);
  // Every Service, not only Teal's: an App may adopt a Service someone made before it, and a
  // new App's Services are looked up before they exist. Reading those from the cache costs a
  // trimmed selector each and saves two GETs per App at every reconcile until its switch.
  const services = informer<Cached<ObservedService>>('/api/v1', 'services', {
    transform: (raw) => wrap(shareService(observeService(raw), pool)),
    logger: logger.child({ informer: 'services' }),
  });
  // The EndpointSlice controller copies a Service's labels onto its slices: Teal's carry teal.dev/app.
  const endpointSlices = informer<Cached<ObservedEndpointSlice>>('/apis/discovery.k8s.io/v1', 'endpointslices', {
    labelSelector: `${LABEL_APP},${LABEL_SERVICE_NAME}`,
    transform: (raw) => wrap(observeEndpointSlice(raw)),
    logger: logger.child({ informer: 'endpointslices' }),
  });
  endpointSlices.addIndex(APPS_INDEX, (s) => [`${s.value.namespace}/${s.value.app ?? ''}`]);
  return { apps, replicaSets, services, endpointSlices };
}

/** The build Jobs and their pods, from the informers of the namespace builds run in. */
function buildCaches(
  buildInformer: MakeInformer,
  namespaces: readonly string[],
  logger: Logger,
): Pick<Caches, 'jobs' | 'buildPods'> {
  // Another operator's Apps may build in the same namespace: only the Jobs of watched namespaces are this one's.
  const watchedApp = (job: ObservedJob | undefined) =>
    job !== undefined && (namespaces.length === 0 || namespaces.includes(job.appNamespace)) ? job : undefined;
  const jobs = buildInformer<Cached<ObservedJob>>('/apis/batch/v1', 'jobs', {
    labelSelector: `${LABEL_APP},${LABEL_BUILD}`,
    transform: (raw) => wrap(watchedApp(observeJob(raw))),
    logger: logger.child({ informer: 'jobs' }),
  });
  jobs.addIndex(APPS_INDEX, (j) => [`${j.value.appNamespace}/${j.value.app}`]);
  const buildPods = buildInformer<Cached<ObservedBuildPod>>('/api/v1', 'pods', {
    labelSelector: `${LABEL_APP},${LABEL_BUILD}`,
    transform: (raw) => wrap(observeBuildPod(raw)),
    logger: logger.child({ informer: 'build-pods' }),
  });
  buildPods.addIndex(JOBS_INDEX, (p) => [`${p.value.namespace}/${p.value.job}`]);
  return { jobs, buildPods };
}

/** The analysis Jobs of the Apps' checks, and the AnalysisTemplates they are made from. */
function analysisCaches(informer: MakeInformer, logger: Logger): Pick<Caches, 'analysisJobs' | 'templates'> {
  const analysisJobs = informer<Cached<AnalysisJobRef>>('/apis/batch/v1', 'jobs', {
    labelSelector: `${LABEL_APP},${LABEL_ANALYSIS}`,
    transform: (raw) => wrap(observeAnalysisJob(raw)),
    logger: logger.child({ informer: 'analysis-jobs' }),
  });
  analysisJobs.addIndex(APPS_INDEX, (j) => [`${j.value.namespace}/${j.value.app}`]);
  const templates = informer<Cached<CachedTemplate>>(`/apis/${GROUP}/${VERSION}`, TEMPLATE_PLURAL, {
    transform: (raw) => wrap(observeTemplate(raw)),
    logger: logger.child({ informer: 'analysis-templates' }),
  });
  return { analysisJobs, templates };
}

/** The ConfigMaps, apart: everyone else's as digests, Teal's copies by name (the label tells them apart). */
function configCaches(
  informer: MakeInformer,
  logger: Logger,
  pool: StringPool,
): Pick<Caches, 'configMaps' | 'configCopies'> {
  const configMaps = informer<Cached<CachedConfigMap>>('/api/v1', 'configmaps', {
    labelSelector: `!${LABEL_CONFIG_COPY}`,
    transform: (raw) => wrap(observeConfigMap(raw, pool)),
    logger: logger.child({ informer: 'configmaps' }),
  });
  const configCopies = informer<Cached<CachedConfigCopy>>('/api/v1', 'configmaps', {
    labelSelector: LABEL_CONFIG_COPY,
    transform: (raw) => wrap(observeConfigCopy(raw, pool)),
    logger: logger.child({ informer: 'config-copies' }),
  });
  return { configMaps, configCopies };
}

/** The Events about Apps, at most MAX_APP_EVENTS of them (Caches.appKubeEvents says why). */
function appEventsCache(informer: MakeInformer, logger: Logger, pool: StringPool): Caches['appKubeEvents'] {
  const eventsLogger = logger.child({ informer: 'app-events' });
  let eventsFull = false;
  const appKubeEvents: SharedInformer<Cached<CachedAppEvent>> = informer<Cached<CachedAppEvent>>('/api/v1', 'events', {
    fieldSelector: `involvedObject.apiVersion=${API_VERSION},involvedObject.kind=${KIND}`,
    transform: (raw) => {
      const name = raw.metadata?.name;
      const known = name !== undefined && appKubeEvents.get(raw.metadata?.namespace, name) !== undefined;
      const takes = takesAppEvent(appKubeEvents.size, known);
      // Said once each time it fills, not at every Event left out.
      if (appKubeEvents.size < MAX_APP_EVENTS) eventsFull = false;
      else if (!takes && !eventsFull) {
        eventsFull = true;
        eventsLogger.warn({ max: MAX_APP_EVENTS }, 'the cache of Events about Apps is full: new ones are left out');
      }
      return takes ? observeAppEvent(raw, pool) : undefined;
    },
    logger: eventsLogger,
  });
  appKubeEvents.addIndex(APPS_INDEX, (e) => [`${e.value.namespace}/${e.value.app}`]);
  return appKubeEvents;
}

/**
 * Wakes the Apps whose pod template references a ConfigMap whose content
 * changed, appeared or went: only those, and not for a write that left the
 * data as it was (a new resourceVersion alone).
 */
export function watchConfigMaps(caches: Caches, enqueue: (key: string) => void): void {
  const wake = (cm: Cached<CachedConfigMap>) => {
    for (const app of caches.apps.listByNamespace(cm.value.namespace)) {
      const spec = app.spec as { template?: { spec?: unknown } } | undefined;
      const refs = findConfigRefs(spec?.template?.spec);
      if (refs.some((r) => r.kind === 'configmap' && r.name === cm.value.name)) {
        enqueue(`${app.metadata.namespace}/${app.metadata.name}`);
      }
    }
  };
  caches.configMaps.addHandler({
    onAdd: wake,
    onUpdate: (old, cm) => {
      if (old.value.digest !== cm.value.digest) wake(cm);
    },
    onDelete: wake,
  });
}
