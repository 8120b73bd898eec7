// The HTTPRoutes that ping-pong Apps name (rollout/route.ts), cached apart
// from the other caches: started only when the first App asks for a route, so
// an operator whose Apps use no Gateway API lists and watches none, and a
// cluster without the Gateway API CRDs costs one failing list, retried with
// the informer's backoff, and a clear condition on the Apps that need it
// (never a cache that blocks the operator's start).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { apiStatusOf } from '../kube/errors.ts';
import { type Cached, Informer } from '../kube/informer.ts';
import { MultiNamespaceInformer, type SharedInformer } from '../kube/multi-namespace-informer.ts';
import type { Observed } from '../rollout/observed.ts';
import { type ObservedRoute, observeRoute, ROUTE_GROUP, ROUTE_PLURAL, ROUTE_VERSION } from '../rollout/route.ts';

export interface RouteCacheOptions {
  kubeConfig: KubeConfig;
  /** Watched namespaces; all when empty. */
  namespaces: readonly string[];
  logger: Logger;
  /** A route was added, changed or deleted: the Apps naming it look again. */
  changed: (namespace: string, name: string) => void;
  /** Where HTTPRoutes are served; the Gateway API's v1 unless a test asks for a group no server serves. */
  api?: { group: string; version: string };
}

/** Said on the Apps that need a route where the API server serves none. */
export const NOT_SERVED = `the Gateway API is not installed in the cluster (the API server serves no ${ROUTE_GROUP}/${ROUTE_VERSION} ${ROUTE_PLURAL})`;

export class RouteCache {
  private readonly o: RouteCacheOptions;
  private informer: SharedInformer<Cached<ObservedRoute>> | undefined;
  /** The last list was answered 404: the resource is not served (the CRDs are absent). */
  private notServed = false;

  constructor(options: RouteCacheOptions) {
    this.o = options;
  }

  /**
   * The route as the planner reads it, or why it cannot be read; 'syncing'
   * while the first list is under way (the App looks again shortly). The
   * first call starts the cache.
   */
  lookup(namespace: string, name: string): Observed['routing'] | 'syncing' {
    const informer = this.start();
    if (!informer.hasSynced()) return this.notServed ? { unavailable: NOT_SERVED } : 'syncing';
    const route = informer.get(namespace, name)?.value;
    return route ? { route } : {};
  }

  stop(): void {
    this.informer?.stop();
  }

  private start(): SharedInformer<Cached<ObservedRoute>> {
    if (this.informer) return this.informer;
    const { kubeConfig, namespaces, logger } = this.o;
    const api = this.o.api ?? { group: ROUTE_GROUP, version: ROUTE_VERSION };
    const group = `/apis/${api.group}/${api.version}`;
    const options = {
      kubeConfig,
      transform: (raw: unknown) => {
        const route = observeRoute(raw);
        return route ? { metadata: route, value: route } : undefined;
      },
      logger: logger.child({ informer: 'httproutes' }),
      onListError: (err: unknown) => {
        this.notServed = apiStatusOf(err)?.code === 404;
      },
    };
    const informer: SharedInformer<Cached<ObservedRoute>> =
      namespaces.length === 0
        ? new Informer({ ...options, path: `${group}/${ROUTE_PLURAL}` })
        : new MultiNamespaceInformer(
            namespaces,
            (ns) => new Informer({ ...options, path: `${group}/namespaces/${ns}/${ROUTE_PLURAL}` }),
          );
    const changed = (r: Cached<ObservedRoute>) => this.o.changed(r.value.namespace, r.value.name);
    informer.addHandler({ onAdd: changed, onUpdate: (_old, r) => changed(r), onDelete: changed });
    informer.start();
    this.informer = informer;
    return informer;
  }
}
