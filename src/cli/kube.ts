// The CLI's view of the cluster: the user's kubeconfig (so the API server
// enforces their RBAC), the objects of one App, and watches used as change
// signals. Every request goes through `call`, which turns failures into one
// readable line.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  AuthenticationV1Api,
  AuthorizationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
  type V1Pod,
  type V1ReplicaSet,
  Watch,
} from '@kubernetes/client-node';
import { LABEL_APP } from '../app/labels.ts';
import { isPreviewChild } from '../app/previews-view.ts';
import { APP_API, APP_RESOURCE } from '../app/schema.ts';
import { apiStatusOf } from '../kube/errors.ts';
import { applyTokenFiles, kubeconfigPaths } from '../kube/token-file.ts';
import {
  type AppObject,
  awayBuildQuery,
  buildJobsQuery,
  type ConnectOptions,
  ownedBy,
  previewSelector,
  readApp,
} from './app-object.ts';
import { CliError } from './errors.ts';
import { explain, type Operation } from './explain.ts';

export { type AppObject, type ConnectOptions, readApp, since } from './app-object.ts';

export class Session {
  readonly kc: KubeConfig;
  /** The namespace of -n, else the context's, else "default". */
  readonly namespace: string;
  readonly server: string;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly batch: BatchV1Api;
  readonly custom: CustomObjectsApi;
  readonly authn: AuthenticationV1Api;
  readonly authz: AuthorizationV1Api;

  constructor(options: ConnectOptions) {
    const kc = new KubeConfig();
    if (options.kubeconfig) {
      if (!existsSync(options.kubeconfig)) throw new CliError(`kubeconfig ${options.kubeconfig} does not exist`);
      kc.loadFromFile(options.kubeconfig);
    } else if (process.env.KUBECONFIG || existsSync(join(homedir(), '.kube', 'config'))) {
      kc.loadFromDefault();
    } else if (process.env.KUBERNETES_SERVICE_HOST) {
      kc.loadFromCluster();
    } else {
      // client-node would silently fall back to http://localhost:8080.
      throw new CliError('no kubeconfig: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config');
    }
    if (options.context) {
      if (!kc.getContextObject(options.context)) {
        throw new CliError(`context "${options.context}" is not in the kubeconfig`);
      }
      kc.setCurrentContext(options.context);
    }
    if (!kc.getCurrentUser()?.token) applyTokenFiles(kc, kubeconfigPaths(options.kubeconfig));
    const server = kc.getCurrentCluster()?.server;
    if (!server || server === 'http://localhost:8080') {
      throw new CliError(`the kubeconfig has no usable cluster (current context: "${kc.getCurrentContext()}")`);
    }
    this.kc = kc;
    this.server = server;
    this.namespace = options.namespace || kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
    this.core = kc.makeApiClient(CoreV1Api);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.batch = kc.makeApiClient(BatchV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.authn = kc.makeApiClient(AuthenticationV1Api);
    this.authz = kc.makeApiClient(AuthorizationV1Api);
  }

  /** The kubeconfig's user entry name: a fallback identity when the server will not say. */
  get kubeconfigUser(): string {
    return this.kc.getCurrentUser()?.name ?? 'unknown';
  }

  /** Runs one request; a failure becomes a CliError that says what was refused and why. */
  async call<T>(op: Operation, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw explain(err, { user: this.kubeconfigUser, ...op }, this.server);
    }
  }

  /**
   * Who the API server says we are (SelfSubjectReview), to record in an
   * intent; the kubeconfig user name when the review is not allowed.
   */
  async whoami(): Promise<string> {
    try {
      const review = await this.authn.createSelfSubjectReview({ body: {} });
      const name = review.status?.userInfo?.username;
      if (name) return name;
    } catch {
      // Forbidden or an old server: fall back below.
    }
    return this.kubeconfigUser;
  }

  /**
   * Whether RBAC grants us verb on the App (SelfSubjectAccessReview), so an
   * action verb such as "promote" means the same to the CLI as to the HTTP
   * API; undefined when the review itself cannot be made.
   */
  async canI(verb: string, name: string): Promise<boolean | undefined> {
    try {
      const review = await this.authz.createSelfSubjectAccessReview({
        body: {
          spec: {
            resourceAttributes: {
              group: APP_API.group,
              resource: APP_API.plural,
              verb,
              name,
              namespace: this.namespace,
            },
          },
        },
      });
      return review.status?.allowed === true;
    } catch {
      return undefined;
    }
  }

  async getApp(name: string, verb = 'get'): Promise<AppObject> {
    return readApp(
      await this.call({ verb, rbacVerb: 'get', resource: APP_RESOURCE, name, namespace: this.namespace }, () =>
        this.custom.getNamespacedCustomObject({ ...APP_API, namespace: this.namespace, name }),
      ),
    );
  }

  async listApps(allNamespaces: boolean): Promise<AppObject[]> {
    const op = {
      verb: 'list',
      resource: APP_RESOURCE,
      ...(allNamespaces ? {} : { namespace: this.namespace }),
    };
    const list = (await this.call(op, () =>
      allNamespaces
        ? this.custom.listClusterCustomObject(APP_API)
        : this.custom.listNamespacedCustomObject({ ...APP_API, namespace: this.namespace }),
    )) as { items?: unknown[] };
    return (list.items ?? []).map(readApp);
  }

  /** The child Apps of the parent's previews, by label, keeping those it owns. */
  async previewApps(parent: AppObject): Promise<AppObject[]> {
    const op = { verb: 'list', resource: APP_RESOURCE, namespace: this.namespace };
    const labelSelector = previewSelector(parent.metadata.name);
    const list = (await this.call(op, () =>
      this.custom.listNamespacedCustomObject({ ...APP_API, namespace: this.namespace, labelSelector }),
    )) as { items?: unknown[] };
    return (list.items ?? []).map(readApp).filter((app) => isPreviewChild(app, parent));
  }

  /**
   * A JSON merge patch of the App. It carries the uid read before, so an App
   * deleted and created again since is not changed on stale checks (the API
   * server refuses a uid change). `verb` and `hint` word a refusal.
   */
  async patchApp(
    app: AppObject,
    patch: { metadata?: { annotations?: Record<string, string> }; spec?: object },
    verb: string,
    hint?: string,
  ): Promise<AppObject> {
    const { name } = app.metadata;
    const body = { ...patch, metadata: { ...patch.metadata, ...(app.metadata.uid ? { uid: app.metadata.uid } : {}) } };
    const op = {
      verb,
      rbacVerb: 'patch',
      resource: APP_RESOURCE,
      name,
      namespace: this.namespace,
      ...(hint ? { hint } : {}),
    };
    return readApp(
      await this.call(op, async () => {
        try {
          return await this.custom.patchNamespacedCustomObject(
            { ...APP_API, namespace: this.namespace, name, body, fieldManager: 'kubectl-teal' },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          );
        } catch (err) {
          const status = apiStatusOf(err);
          if (status?.code === 422 && status.message.includes('metadata.uid')) {
            throw new CliError(`App "${name}" was deleted and created again meanwhile: run the command again`);
          }
          throw err;
        }
      }),
    );
  }

  /** ReplicaSets of the App, by label, keeping only those it owns when the uid is known. */
  async replicaSets(app: AppObject): Promise<V1ReplicaSet[]> {
    const list = await this.call({ verb: 'list', resource: 'replicasets.apps', namespace: this.namespace }, () =>
      this.apps.listNamespacedReplicaSet({
        namespace: this.namespace,
        labelSelector: `${LABEL_APP}=${app.metadata.name}`,
      }),
    );
    return list.items.filter((rs) => ownedBy(rs, app));
  }

  /** Pods of the App: its revisions' and its builds' (both carry the app label). */
  async pods(app: AppObject): Promise<V1Pod[]> {
    const list = await this.call({ verb: 'list', resource: 'pods', namespace: this.namespace }, () =>
      this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `${LABEL_APP}=${app.metadata.name}` }),
    );
    return list.items;
  }

  async buildPods(app: AppObject): Promise<V1Pod[]> {
    const away = awayBuildQuery(app, this.namespace);
    if (!away) return [];
    const { namespace, labelSelector, isOwn } = away;
    const list = await this.call({ verb: 'list', resource: 'pods', namespace }, () =>
      this.core.listNamespacedPod({ namespace, labelSelector }),
    );
    return list.items.filter(isOwn);
  }

  /** The App's build Jobs (buildJobsQuery says where and which). */
  async jobs(app: AppObject): Promise<V1Job[]> {
    const { namespace, labelSelector, isOwn } = buildJobsQuery(app, this.namespace);
    const list = await this.call({ verb: 'list', resource: 'jobs.batch', namespace }, () =>
      this.batch.listNamespacedJob({ namespace, labelSelector }),
    );
    return list.items.filter(isOwn);
  }

  /**
   * Calls onChange whenever something at path changes, watching again after
   * the server or client-node closes the watch. A refusal (403) or other
   * lasting error goes to onError.
   */
  watch(
    path: string,
    query: Record<string, string>,
    onChange: () => void,
    onError: (err: CliError) => void,
    op: Operation,
  ): () => void {
    const watcher = new Watch(this.kc);
    let controller: AbortController | undefined;
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let failures = 0;
    const again = (err: unknown) => {
      if (stopped) return;
      const code = apiStatusOf(err)?.code;
      if (code !== undefined && code >= 400 && code < 500) {
        onError(explain(err, { user: this.kubeconfigUser, ...op }, this.server));
        return;
      }
      // At once after a normal close (client-node ends quiet watches after 30 s); back off while the server is away.
      failures += 1;
      const delay = err && failures > 1 ? Math.min(5_000, 100 * 2 ** failures) : 0;
      timer = setTimeout(() => void start(), delay);
    };
    const start = async (): Promise<void> => {
      if (stopped) return;
      try {
        controller = await watcher.watch(
          path,
          query,
          () => {
            failures = 0;
            onChange();
          },
          again,
        );
      } catch (err) {
        again(err);
      }
    };
    void start();
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller?.abort();
    };
  }

  /** watch() on the App named, in the session's namespace. */
  watchApp(name: string, onChange: () => void, onError: (err: CliError) => void): () => void {
    const ns = this.namespace;
    return this.watch(paths.apps(ns), { fieldSelector: `metadata.name=${name}` }, onChange, onError, {
      verb: 'watch',
      resource: APP_RESOURCE,
      name,
      namespace: ns,
    });
  }
}

/**
 * Runs `run` when called, one run at a time: calls during a run ask for one
 * more run after it, so a burst of change signals costs at most two reads and
 * the last one sees the latest state. `run` handles its own errors.
 */
export function oneAtATime(run: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  const call = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await run();
    } finally {
      running = false;
      if (again) {
        again = false;
        void call();
      }
    }
  };
  return () => void call();
}

/** Paths for watches, by resource. */
export const paths = {
  apps: (ns: string) => `/apis/${APP_API.group}/${APP_API.version}/namespaces/${ns}/${APP_API.plural}`,
  replicaSets: (ns: string) => `/apis/apps/v1/namespaces/${ns}/replicasets`,
  pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
  jobs: (ns: string) => `/apis/batch/v1/namespaces/${ns}/jobs`,
};
