// The HTTP API (DESIGN §3.3): Apps as the informer cache sees them, and the
// actions of §3.2. An action is recorded as an intent annotation on the App,
// written with the operator's identity on behalf of the caller, whom a
// TokenReview names and a SubjectAccessReview with the action as verb allows.
// The reconciler carries the intent out and checks it again: the 409s here
// only spare callers an intent that would be refused anyway.
//
// A fastify plugin, kept encapsulated (no fastify-plugin) so its JSON parser,
// error handler, CSRF rule and log serializers stay on its own routes. It only
// wires steps testable without fastify: csrfProblem (csrf.ts) refuses forged
// requests, identify (session.ts) finds the caller by bearer token or session
// cookie, ApiGuard (access.ts) lets the caller in, ApiHandlers below answer,
// and errorAnswer (errors.ts) maps what they throw.
import { createHash, randomUUID } from 'node:crypto';
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { curlCommand, kubectlCommand } from '../app/action-commands.ts';
import { APPS_INDEX, type CachedApp, type CachedAppEvent } from '../app/cached.ts';
import {
  ACTIONS,
  type Action,
  type ActionArgs,
  ARGS_SCHEMAS,
  type ArgKind,
  type ArgName,
  argsOf,
  encodeIntent,
  flagOf,
  type IntentVia,
  intentAnnotation,
  readIntents,
} from '../app/intents.ts';
import { DNS1123_LABEL } from '../app/patterns.ts';
import { APP_API } from '../app/schema.ts';
import { readAppStatus } from '../app/status-reader.ts';
import { errorMessage } from '../kube/errors.ts';
import type { Cached, Informer } from '../kube/informer.ts';
import type { SharedInformer } from '../kube/multi-namespace-informer.ts';
import { actionVerdict, UNKNOWN, type Unknown, viewOfApp } from '../rollout/action-rules.ts';
import type { ObservedReplicaSet } from '../rollout/observed.ts';
import {
  type ActionParams,
  type Admitted,
  ApiGuard,
  type AppParams,
  type Identify,
  type ListScope,
  type Permission,
} from './access.ts';
import {
  type AppEventView,
  type AppPreviewsView,
  appEvents,
  appPreviews,
  type RevisionPods,
  revisionPods,
} from './app-page.ts';
import { ANONYMOUS_USER, type ApiAuth, KubeAuth, type UserInfo } from './auth.ts';
import { type BuildCaches, type BuildLogRequest, BuildLogs, lastLineOf } from './build-log.ts';
import { csrfProblem } from './csrf.ts';
import { type DashboardFiles, dashboardRoutes } from './dashboard.ts';
import { ApiError, errorAnswer } from './errors.ts';
import { type ApiLogger, logSerializers } from './logger.ts';
import { LoginThrottle } from './login-throttle.ts';
import { OidcLogin, type OidcSettings } from './oidc.ts';
import { oidcRoutes } from './oidc-routes.ts';
import { type Caller, identify, Sessions } from './session.ts';
import { LoginCodes } from './session-codes.ts';
import { randomSessionKey, type SessionKey } from './session-cookie.ts';
import { type LoginMethod, type LoginResult, sessionRoutes } from './session-routes.ts';
import {
  type AppDetailEvents,
  type AppEvents,
  resumeOf,
  type Scope,
  StreamHub,
  type StreamLimits,
  type StreamObserver,
} from './stream.ts';

/** The part of the App informer the API reads. */
export type AppCache = Pick<Informer<CachedApp>, 'get' | 'list' | 'listByNamespace'>;

/** The part of the ReplicaSet informer the API reads: an App's ReplicaSets, by the index the reconciler uses. */
export type ReplicaSetCache = Pick<SharedInformer<Cached<ObservedReplicaSet>>, 'byIndex'>;

/** The part of the cache of Events about Apps the API reads: an App's, by the same index. */
export type AppEventCache = Pick<SharedInformer<Cached<CachedAppEvent>>, 'byIndex'>;

export interface ApiOptions {
  /** The operator's own identity: reviews tokens and access, and writes the intents. */
  kubeConfig: KubeConfig;
  /** The App cache; a getter, as the caches may be built after the routes. */
  apps: () => AppCache;
  /**
   * The ReplicaSet cache, so an undo to a revision without a ReplicaSet is a 409 here as in the
   * operator; without it, the operator alone refuses those.
   */
  replicaSets?: () => ReplicaSetCache;
  /** The Kubernetes Events about Apps, for the App page; without it the page shows none. */
  appKubeEvents?: () => AppEventCache;
  /** False until the App cache has synced: every route answers 503 meanwhile. */
  isReady: () => boolean;
  /** Audit lines and failures; defaults to the request's logger. */
  logger?: ApiLogger;
  /** How long a positive TokenReview is trusted; default 10 s. */
  tokenCacheTtlMs?: number;
  /** Largest action body, in bytes; default 16 KiB. */
  bodyLimit?: number;
  /** Replaces the TokenReview and SubjectAccessReview checks (tests). */
  auth?: ApiAuth;
  /** Seals the session cookies; replicas that share it share sessions. Default: a random key of this plugin. */
  sessionKey?: SessionKey;
  /** Served over TLS: the session cookie is Secure and __Host- prefixed. */
  tls?: boolean;
  /** How often a session's token is reviewed again; at most (and by default) 5 minutes. */
  sessionReviewIntervalMs?: number;
  /** Each login's result, for the metrics. */
  onLogin?: (method: LoginMethod, result: LoginResult) => void;
  /** Login by OIDC (oidc.ts), besides the token login; none: token login only. */
  oidc?: OidcSettings | undefined;
  /** The dashboard's built files, served under / to callers with a session (dashboard.ts); none: no page. */
  dashboard?: DashboardFiles | undefined;
  /** The App informer's events, which GET /api/v1/stream follows (stream.ts); none: no such route. */
  appEvents?: () => AppEvents;
  /** The informers of what the App page shows beside an App (ReplicaSets, Events): their changes reach open pages. */
  appDetails?: () => readonly AppDetailEvents[];
  /** The stream's limits (--dashboard-max-streams, --dashboard-max-streams-per-session). */
  streamLimits?: Partial<StreamLimits>;
  /** Open streams, events sent, resets and refusals, for the metrics. */
  streamObserver?: StreamObserver;
  /**
   * --dashboard-anonymous=read: pages and the read routes (GET) answer a caller without
   * credentials as ANONYMOUS_USER, every read still authorized by a SubjectAccessReview for that
   * user; an action never (401 without a session or a token).
   */
  anonymousRead?: boolean;
  /** The build Jobs and pods caches, for build logs (build-log.ts); without them, build logs answer 404. */
  builds?: () => BuildCaches;
}

export const DEFAULT_API_BODY_LIMIT = 16 * 1024;

// ---- request bodies ----

/**
 * Validates an action body, the action's arguments as app/intents.ts declares
 * them, as Kubernetes does with strict field validation: an unknown field or a
 * body that is not an object is a 400, a wrong value a 422.
 */
export function parseActionBody(action: Action, body: unknown): ActionArgs {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new ApiError(400, 'the body must be a JSON object');
  const result = ARGS_SCHEMAS[action].safeParse(body);
  if (result.success) return result.data;
  const unknown = result.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : []));
  if (unknown.length > 0) {
    const fields = unknown.map((k) => `"${k}"`).join(', ');
    throw new ApiError(400, `unknown field${unknown.length > 1 ? 's' : ''} ${fields} in the ${action} body`);
  }
  throw new ApiError(
    422,
    result.error.issues.map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; '),
  );
}

// ---- the App as the API shows it ----

export interface PendingIntent {
  action: Action;
  id: string;
  by: string;
  via: string;
  at: string;
}

export interface AppView {
  metadata: {
    namespace: string;
    name: string;
    uid?: string;
    generation?: number;
    resourceVersion: string;
    deletionTimestamp?: string;
  };
  /** The status as the operator wrote it, without the revisions, the runs of checks and its intent bookkeeping. */
  status: Record<string, unknown>;
  revisions: {
    active?: Record<string, unknown>;
    preview?: Record<string, unknown>;
    stable?: Record<string, unknown>;
    history: Record<string, unknown>[];
  };
  /** The latest run of each kind of checks (status.prePromotionAnalysis, postPromotionAnalysis). */
  analysis: {
    prePromotion?: Record<string, unknown>;
    postPromotion?: Record<string, unknown>;
  };
  /** Actions recorded but not carried out yet, oldest first. */
  pendingIntents: PendingIntent[];
}

/** One App as GET /api/v1/namespaces/:ns/apps/:name shows it: its view, and what the App page adds. */
export interface AppDetailView extends AppView {
  /** Its ReplicaSets' pods, newest revision first (empty without the ReplicaSet cache). */
  replicaSets: RevisionPods[];
  /** Its Events, newest first. */
  events: AppEventView[];
}

/** The App page's answer: the App's detail, and its previews or the parent it previews (app-page.ts). */
export type AppPageView = AppDetailView & AppPreviewsView;

export function appView(app: CachedApp): AppView {
  // A field the API cannot read is left out rather than failing the request. A run of
  // checks is shown as the operator wrote it: by design it holds no secret.
  const {
    active,
    preview,
    stable,
    history,
    handledIntents,
    prePromotionAnalysis: prePromotion,
    postPromotionAnalysis: postPromotion,
    ...rest
  } = readAppStatus(app.status);
  const m = app.metadata;
  const pendingIntents = readIntents(m.annotations).intents.flatMap((i) =>
    handledIntents?.[i.action] === i.id ? [] : [{ action: i.action, id: i.id, by: i.by, via: i.via, at: i.at }],
  );
  return {
    metadata: {
      namespace: m.namespace,
      name: m.name,
      ...(m.uid !== undefined ? { uid: m.uid } : {}),
      ...(m.generation !== undefined ? { generation: m.generation } : {}),
      resourceVersion: m.resourceVersion,
      ...(m.deletionTimestamp !== undefined ? { deletionTimestamp: m.deletionTimestamp } : {}),
    },
    status: rest,
    revisions: {
      ...(active ? { active } : {}),
      ...(preview ? { preview } : {}),
      ...(stable ? { stable } : {}),
      history: history ?? [],
    },
    analysis: {
      ...(prePromotion ? { prePromotion } : {}),
      ...(postPromotion ? { postPromotion } : {}),
    },
    pendingIntents,
  };
}

/**
 * Why an action cannot apply to the App as cached, or undefined when it can:
 * the refusals of actionVerdict, the same rules the operator applies. Without
 * the App's ReplicaSets, what depends on them is left to the operator.
 */
export function conflictOf(
  app: CachedApp,
  action: Action,
  args: ActionArgs,
  replicaSets: readonly ObservedReplicaSet[] | Unknown = UNKNOWN,
): string | undefined {
  const verdict = actionVerdict(action, args, viewOfApp(app, replicaSets));
  if (verdict.allowed) return undefined;
  return `App ${app.metadata.namespace}/${app.metadata.name}: ${verdict.reason}`;
}

// ---- the actions, explained ----

export interface ActionEntry {
  action: Action;
  /** Both the rules and RBAC allow it, with the default arguments; an unknown RBAC answer does not. */
  allowed: boolean;
  /** The rules, with the default arguments: when refused, the reason is the message of the 409 a POST would get. */
  rules: { allowed: true } | { allowed: false; reason: string };
  /** Whether RBAC lets this caller use the action's verb on the App. */
  rbac: Permission;
  /** The arguments the action takes, as declared (app/intents.ts), with the CLI's flag of each. */
  args: { name: ArgName; kind: ArgKind; help: string; flag: string }[];
  /** The equivalent command line and API call, with the default arguments. */
  kubectl: string;
  curl: string;
}

export interface ActionList {
  namespace: string;
  name: string;
  actions: ActionEntry[];
}

/**
 * Every action of the App as cached, each with what the rules say (conflictOf,
 * the very function whose text the 409 carries) and what RBAC says for the caller.
 */
export function actionList(
  app: CachedApp,
  permissions: Record<Action, Permission>,
  replicaSets: readonly ObservedReplicaSet[] | Unknown = UNKNOWN,
): ActionList {
  const { namespace, name } = app.metadata;
  const actions = ACTIONS.map((action): ActionEntry => {
    const conflict = conflictOf(app, action, {}, replicaSets);
    const rbac = permissions[action];
    return {
      action,
      allowed: conflict === undefined && rbac.allowed === true,
      rules: conflict === undefined ? { allowed: true } : { allowed: false, reason: conflict },
      rbac,
      args: argsOf(action).map(([arg, { kind, help }]) => ({ name: arg, kind, help, flag: `--${flagOf(arg)}` })),
      kubectl: kubectlCommand(action, namespace, name),
      curl: curlCommand(action, namespace, name),
    };
  });
  return { namespace, name, actions };
}

// ---- the plugin ----

const NOT_READY = 'the App cache is not synced yet; try again shortly';

// Names that cannot exist are answered like Apps that do not.
const validName = (ns: string, name: string) => DNS1123_LABEL.test(ns) && DNS1123_LABEL.test(name);

/** Records an intent on the App as an annotation, bound to the App's uid when known. */
export type IntentWriter = (
  ns: string,
  name: string,
  uid: string | undefined,
  action: Action,
  intent: string,
) => Promise<void>;

/** Writes the intent with the operator's identity, as a merge patch. */
function kubeIntentWriter(kubeConfig: KubeConfig): IntentWriter {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  return async (ns, name, uid, action, intent) => {
    await custom.patchNamespacedCustomObject(
      {
        ...APP_API,
        namespace: ns,
        name,
        fieldManager: 'teal-api',
        // The uid makes the write fail if the App was replaced since the checks above.
        body: {
          metadata: { ...(uid !== undefined ? { uid } : {}), annotations: { [intentAnnotation(action)]: intent } },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
}

/**
 * The API's three routes as named handlers, without fastify: each takes what
 * the request says (the user already authenticated and authorized) and
 * answers a body, or throws an ApiError.
 */
/**
 * How an intent says it was recorded: "dashboard" for a caller with a session cookie, which only
 * the login route sets, HttpOnly and SameSite=Strict, so only the dashboard's pages send it;
 * "api" for a bearer token (curl, scripts).
 */
export const intentVia = (caller: Caller['via']): IntentVia => (caller === 'session' ? 'dashboard' : 'api');

export class ApiHandlers {
  private readonly opts: Pick<ApiOptions, 'apps' | 'replicaSets' | 'appKubeEvents' | 'isReady'>;
  private readonly writeIntent: IntentWriter;
  private readonly buildLogs: BuildLogs | undefined;

  constructor(
    opts: Pick<ApiOptions, 'apps' | 'replicaSets' | 'appKubeEvents' | 'isReady'>,
    writeIntent: IntentWriter,
    buildLogs?: BuildLogs,
  ) {
    this.opts = opts;
    this.writeIntent = writeIntent;
    this.buildLogs = buildLogs;
  }

  /** GET /api/v1/apps: the Apps of the scope the guard allowed (all, or some namespaces), in order. */
  list(namespaces: ListScope['namespaces']): { items: AppView[] } {
    this.ready();
    const cache = this.opts.apps();
    const apps = namespaces === 'all' ? cache.list() : namespaces.flatMap((ns) => cache.listByNamespace(ns));
    const items = apps
      .map(appView)
      .sort(
        (a, b) =>
          a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name),
      );
    return { items };
  }

  /** The namespaces holding Apps, as cached: those a caller without a cluster-wide right is reviewed for. */
  namespaces(): string[] {
    this.ready();
    return [
      ...new Set(
        this.opts
          .apps()
          .list()
          .map((app) => app.metadata.namespace),
      ),
    ];
  }

  /** GET /api/v1/namespaces/:ns/apps/:name: the App's view, its ReplicaSets' pods and its Events, all as cached. */
  get(ns: string, name: string): AppPageView {
    this.ready();
    const app = this.lookup(ns, name);
    const events = this.opts
      .appKubeEvents?.()
      .byIndex(APPS_INDEX, `${ns}/${name}`)
      .map((c) => c.value);
    return {
      ...appView(app),
      replicaSets: revisionPods(this.replicaSetsOf(ns, name) ?? []),
      events: appEvents(events ?? [], app.metadata.uid),
      ...appPreviews(
        app,
        () => readAppStatus(app.status),
        () => this.opts.apps().listByNamespace(ns),
      ),
    };
  }

  /**
   * GET /api/v1/namespaces/:ns/apps/:name/actions: each action explained. The caller's
   * permissions are asked only once the App is found, so an unknown App costs no reviews.
   */
  async actions(ns: string, name: string, permissions: () => Promise<Record<Action, Permission>>): Promise<ActionList> {
    this.ready();
    const app = this.lookup(ns, name);
    return actionList(app, await permissions(), this.replicaSetsOf(ns, name));
  }

  /** POST /api/v1/namespaces/:ns/apps/:name/:action: the intent recorded, unless the App as cached refuses it (409). */
  async act(
    request: { ns: string; name: string; action: Action; body: unknown; user: UserInfo; via: IntentVia },
    log: ApiLogger,
  ): Promise<{ accepted: true; action: Action; id: string }> {
    const { ns, name, action, user, via } = request;
    this.ready();
    const body = parseActionBody(action, request.body);
    const app = this.lookup(ns, name);
    const conflict = conflictOf(app, action, body, this.replicaSetsOf(ns, name));
    if (conflict !== undefined) {
      log.info({ user: user.username, action, namespace: ns, name, conflict }, 'action refused');
      throw new ApiError(409, conflict);
    }
    const intent = encodeIntent(action, {
      id: randomUUID(),
      by: user.username,
      via,
      at: new Date().toISOString(),
      ...body,
    });
    if (!intent.ok) throw new ApiError(422, intent.problem);
    const id = intent.intent.id;
    try {
      await this.writeIntent(ns, name, app.metadata.uid, action, intent.value);
    } catch (err) {
      throw patchError(err, ns, name, `/api/v1/namespaces/${ns}/apps/${name}/${action}`, log);
    }
    log.info({ user: user.username, action, namespace: ns, name, id, ...body }, `${action} recorded for ${ns}/${name}`);
    return { accepted: true, action, id };
  }

  /** GET .../apps/:name/build/log, .../builds/:commit/log: the build's log as SSE (build-log.ts). */
  buildLog(
    request: { ns: string; name: string } & Omit<BuildLogRequest, 'app'>,
    log: ApiLogger,
  ): NodeJS.ReadableStream {
    this.ready();
    const app = this.lookup(request.ns, request.name);
    if (!this.buildLogs) throw new ApiError(404, 'this operator serves no build logs');
    const { user, commit, after, recheck } = request;
    return this.buildLogs.stream({ user, app, commit, after, recheck }, log);
  }

  private ready(): void {
    if (!this.opts.isReady()) throw new ApiError(503, NOT_READY, { 'retry-after': '1' });
  }

  /** The App's ReplicaSets as cached; undefined (left to the operator) without that cache. */
  private replicaSetsOf(ns: string, name: string): ObservedReplicaSet[] | undefined {
    return this.opts
      .replicaSets?.()
      .byIndex(APPS_INDEX, `${ns}/${name}`)
      .map((c) => c.value);
  }

  private lookup(ns: string, name: string): CachedApp {
    const app = validName(ns, name) ? this.opts.apps().get(ns, name) : undefined;
    if (!app) throw new ApiError(404, `App ${ns}/${name} not found`);
    return app;
  }
}

export const apiPlugin: FastifyPluginAsync<ApiOptions> = async (fastify, opts) => {
  const bodyLimit = opts.bodyLimit ?? DEFAULT_API_BODY_LIMIT;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit <= 0) throw new Error('api: bodyLimit must be a positive integer');
  const logger = (request: FastifyRequest): ApiLogger => opts.logger ?? request.log;
  const who = callersOf(opts);
  refuseBadRequests(fastify, who.sessions, bodyLimit, logger);
  loginRoutes(fastify, opts, who, logger);
  const guard = new ApiGuard(who.auth);
  const buildLogs = opts.builds ? new BuildLogs({ kubeConfig: opts.kubeConfig, caches: opts.builds }) : undefined;
  // Before the server closes: it waits for open connections, and a build log stays open while the build runs.
  if (buildLogs) fastify.addHook('preClose', async () => buildLogs.stop());
  const handlers = new ApiHandlers(opts, kubeIntentWriter(opts.kubeConfig), buildLogs);
  if (opts.appEvents) {
    const hub = new StreamHub({
      events: opts.appEvents,
      ...(opts.appDetails ? { details: opts.appDetails } : {}),
      ...(opts.streamLimits ? { limits: opts.streamLimits } : {}),
      ...(opts.streamObserver ? { observer: opts.streamObserver } : {}),
    });
    // Before the server closes: it waits for open connections, and a stream stays open.
    fastify.addHook('preClose', async () => hub.stop());
    const { auth, sessions, reader: caller, anonymous } = who;
    streamRoute(fastify, { hub, guard, handlers, auth, sessions, caller, anonymous, logger });
  }
  // How each request's caller came (bearer or session), found when the guard identifies it.
  const callers = new WeakMap<FastifyRequest, Caller['via']>();
  apiRoutes(fastify, {
    guard,
    handlers,
    identifyOf: (request, reply) => async () => {
      const found = await who.caller(request, reply);
      callers.set(request, found.via);
      return found.user;
    },
    viaOf: (request) => intentVia(callers.get(request) ?? 'bearer'),
    readerOf: (request, reply) => async () => (await who.reader(request, reply)).user,
    bodyLimit,
    logger,
  });
};

type IdentifyCaller = (request: FastifyRequest, reply: FastifyReply) => ReturnType<typeof identify>;

/** How the API knows who calls: credentials reviewed by auth, or a session cookie sealed with key. */
interface Callers {
  auth: ApiAuth;
  key: SessionKey;
  tls: boolean;
  sessions: Sessions;
  /** The caller of an action: never anonymous. */
  caller: IdentifyCaller;
  /** The caller of a read: anonymous when --dashboard-anonymous=read and no credentials came. */
  reader: IdentifyCaller;
  anonymous: UserInfo | undefined;
}

function callersOf(opts: ApiOptions): Callers {
  const auth =
    opts.auth ??
    new KubeAuth({
      kubeConfig: opts.kubeConfig,
      ...(opts.tokenCacheTtlMs !== undefined ? { tokenCacheTtlMs: opts.tokenCacheTtlMs } : {}),
    });
  const key = opts.sessionKey ?? randomSessionKey();
  const tls = opts.tls ?? false;
  const sessions = new Sessions({
    key,
    auth,
    tls,
    ...(opts.sessionReviewIntervalMs !== undefined ? { reviewIntervalMs: opts.sessionReviewIntervalMs } : {}),
  });
  const identifyWith =
    (anonymous: UserInfo | undefined): IdentifyCaller =>
    (request, reply) =>
      identify(
        { authorization: request.headers.authorization, cookie: request.headers.cookie },
        auth,
        sessions,
        (setCookie) => void reply.header('set-cookie', setCookie),
        anonymous,
      );
  const anonymous = opts.anonymousRead ? ANONYMOUS_USER : undefined;
  return { auth, key, tls, sessions, caller: identifyWith(undefined), reader: identifyWith(anonymous), anonymous };
}

/** Bodies only as JSON within the limit, errors as the API's answers, and forged requests refused (CSRF). */
function refuseBadRequests(
  fastify: FastifyInstance,
  sessions: Sessions,
  bodyLimit: number,
  logger: (request: FastifyRequest) => ApiLogger,
): void {
  acceptJson(fastify, bodyLimit);
  fastify.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const answer = errorAnswer(error, bodyLimit);
    if (answer.unexpected) logger(request).error({ err: error, url: request.url }, 'API request failed');
    return reply.code(answer.error.status).headers(answer.error.headers).send(answer.error.body);
  });
  // Before every route's own hooks: a forged request is refused before anyone is reviewed.
  fastify.addHook('onRequest', async (request) => {
    const problem = csrfProblem({
      method: request.method,
      hasSessionCookie: sessions.cookieOf(request.headers.cookie) !== undefined,
      contentType: request.headers['content-type'],
      origin: request.headers.origin,
      secFetchSite: header(request.headers['sec-fetch-site']),
      host: request.headers.host,
    });
    if (problem !== undefined) {
      logger(request).info({ method: request.method, url: request.url, problem }, 'request refused: CSRF rule');
      throw new ApiError(403, problem);
    }
  });
}

/** The session routes (login by token or code), the OIDC login if configured, and the dashboard's files. */
function loginRoutes(
  fastify: FastifyInstance,
  opts: ApiOptions,
  who: Callers,
  logger: (request: FastifyRequest) => ApiLogger,
): void {
  const { sessions, auth, reader, key, tls } = who;
  const onLogin = opts.onLogin ?? (() => {});
  sessionRoutes(fastify, {
    sessions,
    throttle: new LoginThrottle(),
    codes: new LoginCodes(),
    auth,
    caller: reader,
    onLogin,
    logger,
  });
  const oidc = opts.oidc ? new OidcLogin(opts.oidc, { key, tls }) : undefined;
  if (oidc) oidcRoutes(fastify, { oidc, sessions, onLogin, logger });
  if (opts.dashboard) {
    dashboardRoutes(fastify, {
      files: opts.dashboard,
      caller: reader,
      ...(oidc ? { oidcProvider: oidc.providerName } : {}),
    });
  }
}

interface StreamDeps {
  hub: StreamHub;
  guard: ApiGuard;
  handlers: ApiHandlers;
  auth: ApiAuth;
  sessions: Sessions;
  /** Who calls: a read, so anonymous when --dashboard-anonymous=read and no credentials came. */
  caller: IdentifyCaller;
  /** The anonymous user the caller may be, for the reviews again; undefined: never anonymous. */
  anonymous: UserInfo | undefined;
  logger: (request: FastifyRequest) => ApiLogger;
}

/**
 * GET /api/v1/stream: admitted as GET /api/v1/apps is (the caller identified, its namespaces
 * reviewed), then served by the hub on the raw reply, which also reviews the caller again
 * with the credentials it came with (a renewed session cookie replacing the old).
 */
function streamRoute(fastify: FastifyInstance, deps: StreamDeps): void {
  const { hub, guard, handlers, auth, sessions, caller, anonymous, logger } = deps;
  const admitted = new WeakMap<FastifyRequest, { scope: Scope; session: string }>();
  fastify.get(
    '/api/v1/stream',
    {
      logSerializers,
      onRequest: async (request, reply) => {
        const user = (await caller(request, reply)).user;
        const scope = await guard.list(
          async () => user,
          {},
          () => handlers.namespaces(),
          logger(request),
        );
        const session = sessionOf(request.headers.authorization, sessions.cookieOf(request.headers.cookie), request.ip);
        hub.admit(session);
        admitted.set(request, { scope: scope.namespaces, session });
      },
    },
    async (request, reply) => {
      const admission = admitted.get(request);
      if (!admission) throw new ApiError(500, 'the stream was not admitted');
      let credentials = { authorization: request.headers.authorization, cookie: request.headers.cookie };
      const log = logger(request);
      const review = async (): Promise<Scope> => {
        const renew = (setCookie: string) => {
          credentials = { ...credentials, cookie: setCookie.split(';')[0] };
        };
        const { user } = await identify(credentials, auth, sessions, renew, anonymous);
        return (
          await guard.list(
            async () => user,
            {},
            () => handlers.namespaces(),
            log,
          )
        ).namespaces;
      };
      // The headers fastify and its hooks set (helmet's, a renewed session cookie) go with the stream's.
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value);
      }
      // Admitted again, as other streams may have opened since onRequest; nothing is sent before.
      hub.admit(admission.session);
      reply.hijack();
      hub.open({ ...admission, review }, reply.raw, resumeOf(request.headers['last-event-id'], request.query));
    },
  );
}

/**
 * What counts a caller's streams together: its bearer token, or its session cookie, hashed; an
 * anonymous reader's, by its address, so anonymous viewers do not share one allowance.
 */
const sessionOf = (authorization: string | undefined, cookie: string | undefined, address: string): string =>
  createHash('sha256')
    .update(authorization ?? cookie ?? `anonymous ${address}`)
    .digest('hex');

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** JSON only, and an empty body is an empty object: `curl -X POST` with no -d must work. */
function acceptJson(fastify: FastifyInstance, bodyLimit: number): void {
  const json = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, {});
    return json(request, text, done);
  });
}

interface RouteDeps {
  guard: ApiGuard;
  handlers: ApiHandlers;
  /** The request's caller, found when the guard asks. */
  identifyOf: (request: FastifyRequest, reply: FastifyReply) => Identify;
  /** The same for a read route: anonymous when --dashboard-anonymous=read and no credentials came. */
  readerOf: (request: FastifyRequest, reply: FastifyReply) => Identify;
  /** How an action of this request is recorded: from the way its caller was identified. */
  viaOf: (request: FastifyRequest) => IntentVia;
  bodyLimit: number;
  logger: (request: FastifyRequest) => ApiLogger;
}

/** The routes: each guarded on request, before its body is read, then answered by its handler. */
function apiRoutes(fastify: FastifyInstance, deps: RouteDeps): void {
  listRoutes(fastify, deps);
  appRoutes(fastify, deps);
  actionRoute(fastify, deps);
  buildLogRoutes(fastify, deps);
  // Any other path under /api/v1 gets a JSON 404, not fastify's.
  fastify.all('/api/v1/*', { logSerializers }, async (request) => {
    throw new ApiError(404, `no route ${request.method} ${request.url.split('?')[0]}`);
  });
}

/** A JSON answer no cache may keep: it says what one caller may see. */
const noStore = (reply: FastifyReply, body: object) => reply.header('cache-control', 'no-store').send(body);

/** GET /api/v1/apps and /api/v1/permissions: admitted for the namespaces the caller may list. */
function listRoutes(fastify: FastifyInstance, { guard, handlers, readerOf, logger }: RouteDeps): void {
  const scopes = new WeakMap<FastifyRequest, ListScope>();
  fastify.get<{ Querystring: { namespace?: string | string[] } }>(
    '/api/v1/apps',
    {
      logSerializers,
      onRequest: async (request, reply) => {
        const query = request.query as { namespace?: unknown };
        scopes.set(
          request,
          await guard.list(readerOf(request, reply), query, () => handlers.namespaces(), logger(request)),
        );
      },
    },
    async (request, reply) => {
      const scope = scopes.get(request);
      if (!scope) throw new ApiError(500, 'the list was not admitted');
      return noStore(reply, handlers.list(scope.namespaces));
    },
  );

  // GET /api/v1/permissions: of the namespaces the caller may list, those where it may promote
  // (the dashboard's "waiting for me", app/dashboard-row.ts waitingFor). Admitted as the list is.
  fastify.get(
    '/api/v1/permissions',
    {
      logSerializers,
      onRequest: async (request, reply) => {
        scopes.set(
          request,
          await guard.list(readerOf(request, reply), {}, () => handlers.namespaces(), logger(request)),
        );
      },
    },
    async (request, reply) => {
      const scope = scopes.get(request);
      if (!scope) throw new ApiError(500, 'the request was not admitted');
      const listed = scope.namespaces === 'all' ? handlers.namespaces() : scope.namespaces;
      const promote = await guard.allowedIn(scope.user, 'promote', listed);
      return noStore(reply, { promote: promote.sort() });
    },
  );
}

/** GET of one App, and of the actions its caller may take on it. */
function appRoutes(fastify: FastifyInstance, { guard, handlers, readerOf, logger }: RouteDeps): void {
  fastify.get<{ Params: AppParams }>(
    '/api/v1/namespaces/:ns/apps/:name',
    {
      logSerializers,
      onRequest: async (request, reply) => {
        await guard.get(readerOf(request, reply), request.params as AppParams, logger(request));
      },
    },
    async (request, reply) => noStore(reply, handlers.get(request.params.ns, request.params.name)),
  );

  const readers = new WeakMap<FastifyRequest, UserInfo>();
  fastify.get<{ Params: AppParams }>(
    '/api/v1/namespaces/:ns/apps/:name/actions',
    {
      logSerializers,
      onRequest: async (request, reply) => {
        readers.set(request, await guard.get(readerOf(request, reply), request.params as AppParams, logger(request)));
      },
    },
    async (request, reply) => {
      const user = readers.get(request);
      if (!user) throw new ApiError(500, 'request not authorized');
      const { ns, name } = request.params;
      return noStore(reply, await handlers.actions(ns, name, () => guard.permissions(user, { ns, name })));
    },
  );
}

/** POST of an action: the caller admitted before the body is read, then the intent written. */
function actionRoute(
  fastify: FastifyInstance,
  { guard, handlers, identifyOf, viaOf, bodyLimit, logger }: RouteDeps,
): void {
  const admitted = new WeakMap<FastifyRequest, Admitted>();
  fastify.post<{ Params: ActionParams }>(
    '/api/v1/namespaces/:ns/apps/:name/:action',
    {
      bodyLimit,
      logSerializers,
      onRequest: async (request, reply) => {
        const params = request.params as ActionParams;
        admitted.set(request, await guard.act(identifyOf(request, reply), params, logger(request)));
      },
    },
    async (request, reply) => {
      const { ns, name } = request.params;
      // onRequest has let the caller through; this only finds who it was.
      const caller = admitted.get(request);
      if (!caller) throw new ApiError(500, 'request not authorized');
      const { user, action } = caller;
      const accepted = await handlers.act(
        { ns, name, action, body: request.body, user, via: viaOf(request) },
        logger(request),
      );
      return reply.code(202).send(accepted);
    },
  );
}

/** The build log of the current build or of a commit, as an event stream. */
function buildLogRoutes(fastify: FastifyInstance, { guard, handlers, identifyOf, logger }: RouteDeps): void {
  const logReaders = new WeakMap<FastifyRequest, UserInfo>();
  for (const path of [
    '/api/v1/namespaces/:ns/apps/:name/build/log',
    '/api/v1/namespaces/:ns/apps/:name/builds/:commit/log',
  ]) {
    fastify.get<{ Params: AppParams & { commit?: string } }>(
      path,
      {
        logSerializers,
        onRequest: async (request, reply) => {
          const params = request.params as AppParams;
          logReaders.set(request, await guard.buildLog(identifyOf(request, reply), params, logger(request)));
        },
      },
      async (request, reply) => {
        const user = logReaders.get(request);
        if (!user) throw new ApiError(500, 'request not authorized');
        const { ns, name, commit } = request.params;
        const after = lastLineOf(request.headers['last-event-id']);
        const recheck = () => guard.stillReadsBuildLog(user, { ns, name });
        const stream = handlers.buildLog({ ns, name, commit, user, after, recheck }, logger(request));
        return reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-accel-buffering', 'no')
          .send(stream);
      },
    );
  }
}

function patchError(err: unknown, ns: string, name: string, url: string, log: ApiLogger): ApiError {
  const code = (err as { code?: unknown }).code;
  if (code === 404) return new ApiError(404, `App ${ns}/${name} not found`);
  // A uid that no longer matches (the App was deleted and created again) is a 422 "field is immutable".
  const replaced = code === 409 || (code === 422 && String((err as { body?: unknown }).body).includes('metadata.uid'));
  if (replaced) return new ApiError(409, `App ${ns}/${name} was replaced meanwhile; try again`);
  if (code === 422) return new ApiError(422, errorMessage(err));
  log.error({ namespace: ns, name, url, error: errorMessage(err) }, 'recording an intent failed');
  return new ApiError(503, 'the action could not be recorded; try again');
}
