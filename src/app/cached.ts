// The App as the informer caches hold it, and the index that finds what an App
// owns: filled by the controller (controller/cache.ts) and read by the API, so
// they live below both rather than in either.

/** An App as cached: everything but managedFields and annotations Teal does not read. */
export interface CachedApp {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    uid?: string;
    generation?: number;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    /** A preview's child App only (controller/cache.ts): what the previews planner reads of it. */
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
    /** A preview's child App, and an App with spec.previews (the oldest owns its repository). */
    creationTimestamp?: string;
  };
  spec?: unknown;
  status?: unknown;
}

/** The index of the caches of what an App owns (ReplicaSets, Jobs), by the App's namespace/name. */
export const APPS_INDEX = 'app';

/**
 * An Event about an App, as cached for the dashboard's App page: what `kubectl describe`
 * shows of it. Only the Events whose involvedObject is an App are cached (controller/cache.ts).
 */
export interface CachedAppEvent {
  name: string;
  namespace: string;
  resourceVersion: string;
  /** The App's name, and its uid when the Event names it (an App made again under the same name has another). */
  app: string;
  appUid?: string;
  type: string;
  reason: string;
  message: string;
  count: number;
  /** The latest occurrence: lastTimestamp, else eventTime, else firstTimestamp, else creation. */
  at: string;
}

/** The index of the App cache that finds a parent's preview Apps (teal.dev/preview-of), by namespace/parent. */
export const PREVIEWS_INDEX = 'preview-of';

/**
 * The index of the App cache that finds the Apps whose spec.previews names a
 * repository, by provider, API URL and repository (previews/repository-owner.ts).
 */
export const PREVIEWED_REPOSITORY_INDEX = 'previewed-repository';

/** The index of the build pods' cache, by their Job's namespace/name. */
export const JOBS_INDEX = 'job';
