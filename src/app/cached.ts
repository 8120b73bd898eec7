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
  };
  spec?: unknown;
  status?: unknown;
}

/** The index of the caches of what an App owns (ReplicaSets, Jobs), by the App's namespace/name. */
export const APPS_INDEX = 'app';
