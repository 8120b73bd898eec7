// The informer caches the App controller reads, each trimmed to what it uses.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { INTENT_PREFIX } from '../app/intents.ts';
import { GROUP, PLURAL, VERSION } from '../app/schema.ts';
import { LABEL_BUILD } from '../build/job.ts';
import { observeBuildPod, observeJob } from '../build/observed.ts';
import type { ObservedBuildPod, ObservedJob } from '../build/plan.ts';
import { Informer, type RawObject } from '../kube/informer.ts';
import { LABEL_APP } from '../rollout/labels.ts';
import {
  type ObservedReplicaSet,
  type ObservedService,
  observeReplicaSet,
  observeService,
} from '../rollout/observed.ts';

export interface Meta {
  name: string;
  namespace: string;
  resourceVersion: string;
}

/** An App as cached: everything but managedFields and annotations Teal does not read. */
export interface CachedApp {
  apiVersion?: string;
  kind?: string;
  metadata: Meta & {
    uid?: string;
    generation?: number;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  spec?: unknown;
  status?: unknown;
}

export interface Cached<T> {
  metadata: Meta;
  value: T;
}

function trimApp(raw: RawObject): CachedApp | undefined {
  const m = raw.metadata;
  if (!m?.name || !m.namespace) return undefined;
  const annotations = Object.fromEntries(
    Object.entries(m.annotations ?? {}).filter(([k]) => k.startsWith(INTENT_PREFIX)),
  );
  return {
    ...(raw.apiVersion ? { apiVersion: raw.apiVersion } : {}),
    ...(raw.kind ? { kind: raw.kind } : {}),
    metadata: {
      name: m.name,
      namespace: m.namespace,
      resourceVersion: m.resourceVersion ?? '',
      ...(m.uid ? { uid: m.uid } : {}),
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      ...(typeof m.deletionTimestamp === 'string' ? { deletionTimestamp: m.deletionTimestamp } : {}),
      ...(Array.isArray(m.finalizers) ? { finalizers: m.finalizers as string[] } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: raw.spec,
    status: raw.status,
  };
}

function wrap<T extends { name: string; namespace: string; resourceVersion: string }>(
  value: T | undefined,
): Cached<T> | undefined {
  return value
    ? { metadata: { name: value.name, namespace: value.namespace, resourceVersion: value.resourceVersion }, value }
    : undefined;
}

export const APPS_INDEX = 'app';
export const JOBS_INDEX = 'job';

export interface Caches {
  apps: Informer<CachedApp>;
  replicaSets: Informer<Cached<ObservedReplicaSet>>;
  services: Informer<Cached<ObservedService>>;
  jobs: Informer<Cached<ObservedJob>>;
  buildPods: Informer<Cached<ObservedBuildPod>>;
}

/** namespace: one namespace to watch, or undefined for all. */
export function makeCaches(kubeConfig: KubeConfig, namespace: string | undefined, logger: Logger): Caches {
  const scope = (prefix: string, resource: string) =>
    namespace ? `${prefix}/namespaces/${namespace}/${resource}` : `${prefix}/${resource}`;
  const apps = new Informer<CachedApp>({
    kubeConfig,
    path: scope(`/apis/${GROUP}/${VERSION}`, PLURAL),
    transform: trimApp,
    logger: logger.child({ informer: 'apps' }),
  });
  const replicaSets = new Informer<Cached<ObservedReplicaSet>>({
    kubeConfig,
    path: scope('/apis/apps/v1', 'replicasets'),
    labelSelector: LABEL_APP,
    transform: (raw) => wrap(observeReplicaSet(raw)),
    logger: logger.child({ informer: 'replicasets' }),
  });
  replicaSets.addIndex(APPS_INDEX, (rs) => [`${rs.value.namespace}/${rs.value.app}`]);
  const services = new Informer<Cached<ObservedService>>({
    kubeConfig,
    path: scope('/api/v1', 'services'),
    labelSelector: LABEL_APP,
    transform: (raw) => wrap(observeService(raw)),
    logger: logger.child({ informer: 'services' }),
  });
  const jobs = new Informer<Cached<ObservedJob>>({
    kubeConfig,
    path: scope('/apis/batch/v1', 'jobs'),
    labelSelector: `${LABEL_APP},${LABEL_BUILD}`,
    transform: (raw) => wrap(observeJob(raw)),
    logger: logger.child({ informer: 'jobs' }),
  });
  jobs.addIndex(APPS_INDEX, (j) => [`${j.value.namespace}/${j.value.app}`]);
  const buildPods = new Informer<Cached<ObservedBuildPod>>({
    kubeConfig,
    path: scope('/api/v1', 'pods'),
    labelSelector: `${LABEL_APP},${LABEL_BUILD}`,
    transform: (raw) => wrap(observeBuildPod(raw)),
    logger: logger.child({ informer: 'build-pods' }),
  });
  buildPods.addIndex(JOBS_INDEX, (p) => [`${p.value.namespace}/${p.value.job}`]);
  return { apps, replicaSets, services, jobs, buildPods };
}
