// Who may call which route of the HTTP API (DESIGN §3.3): each route's access
// rule names the RBAC request it asks for, and ApiGuard identifies the
// caller (a bearer token or a session, session.ts), then authorizes that request. Without fastify: the plugin runs the
// guard before the body is read, so strangers cost no parsing.
import { ACTIONS, type Action } from '../app/intents.ts';
import { errorMessage } from '../kube/errors.ts';
import { type AccessRequest, type ApiAuth, podLogAccess, type UserInfo } from './auth.ts';
import { ApiError } from './errors.ts';
import type { ApiLogger } from './logger.ts';

/** The path parameters of an App's routes. */
export type AppParams = { ns: string; name: string };
export type ActionParams = AppParams & { action: string };

export const isAction = (s: string): s is Action => (ACTIONS as readonly string[]).includes(s);

/**
 * GET /api/v1/apps: list in the namespace asked for, or cluster-wide (a caller without that
 * right gets the namespaces it may list instead: ApiGuard.list); a namespace given twice is a 400.
 */
export function listAccess(query: { namespace?: unknown }): AccessRequest {
  const namespace = query.namespace;
  if (namespace !== undefined && typeof namespace !== 'string') {
    throw new ApiError(400, 'namespace must be given at most once');
  }
  return namespace ? { verb: 'list', namespace } : { verb: 'list' };
}

/** GET /api/v1/namespaces/:ns/apps/:name: get on that App. */
export function getAccess({ ns, name }: AppParams): AccessRequest {
  return { verb: 'get', namespace: ns, name };
}

/** The RBAC verb an action needs on apps.teal.dev: its own name (`verbs: ["promote"]`). */
export const actionVerb = (action: Action): Action => action;

/** POST /api/v1/namespaces/:ns/apps/:name/:action: the action as the verb; an unknown action is a 404. */
export function actionAccess({ ns, name, action }: ActionParams): AccessRequest & { verb: Action } {
  if (!isAction(action)) throw new ApiError(404, `unknown action "${action}": one of ${ACTIONS.join(', ')}`);
  return { verb: actionVerb(action), namespace: ns, name };
}

/**
 * GET .../apps/:name/build/log and .../builds/:commit/log: get pods/log in the App's namespace,
 * the right kubectl logs asks, since the operator then reads the build pod's log with its own.
 */
export function buildLogAccess({ ns }: AppParams): AccessRequest {
  return podLogAccess(ns);
}

/**
 * Which Apps a list may answer: all of them (list allowed cluster-wide), or those of these
 * namespaces, each one the caller may list. A namespace not in it is never named to the caller.
 */
export type ListScope = { user: UserInfo; namespaces: 'all' | string[] };

/**
 * Whether RBAC lets the caller take an action: 'unknown', with why, when the
 * access review itself failed, so one failed review does not fail the others.
 */
export type Permission = { allowed: true } | { allowed: false | 'unknown'; reason: string };

/** Finds who calls, or throws 401; called only once the route's rule lets the request be reviewed. */
export type Identify = () => Promise<UserInfo>;

/** A caller let through to an action, and the action. */
export interface Admitted {
  user: UserInfo;
  action: Action;
}

/**
 * The routes' gate: identifies the caller, then authorizes what the
 * route's access rule asks; a 403 is logged, with the user but never the token.
 */
export class ApiGuard {
  private readonly auth: Pick<ApiAuth, 'authorize'>;

  constructor(auth: Pick<ApiAuth, 'authorize'>) {
    this.auth = auth;
  }

  /**
   * The list route: the caller is identified before its query is read. Without a namespace, a
   * caller who may not list cluster-wide gets the namespaces among candidates (those holding
   * Apps) that it may list, one access review each: the dashboard's one table of every App the
   * user may see (issue #25), with no namespace it may not list, not even its name.
   */
  async list(
    identify: Identify,
    query: { namespace?: unknown },
    candidates: () => readonly string[],
    log: ApiLogger,
  ): Promise<ListScope> {
    const user = await identify();
    const wanted = listAccess(query);
    if (wanted.namespace !== undefined) {
      await this.authorized(user, wanted, log);
      return { user, namespaces: [wanted.namespace] };
    }
    try {
      await this.auth.authorize(user, wanted);
      return { user, namespaces: 'all' };
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 403)) throw err;
    }
    const allowed = await Promise.all(
      candidates().map(async (namespace) => {
        try {
          await this.auth.authorize(user, { verb: 'list', namespace });
          return [namespace];
        } catch (err) {
          if (err instanceof ApiError && err.status === 403) return [];
          throw err;
        }
      }),
    );
    return { user, namespaces: allowed.flat() };
  }

  /**
   * Of these namespaces (ones the caller may list), those where RBAC lets it take the action on
   * its Apps: all of them when it may cluster-wide, else one review per namespace. These name
   * no App, so they are cached (auth.ts cachedReview); a review that fails counts as no.
   */
  async allowedIn(user: UserInfo, action: Action, namespaces: readonly string[]): Promise<string[]> {
    const verb = actionVerb(action);
    if ((await this.permission(user, { verb })).allowed === true) return [...namespaces];
    const answers = await Promise.all(
      namespaces.map(async (namespace) =>
        (await this.permission(user, { verb, namespace })).allowed === true ? [namespace] : [],
      ),
    );
    return answers.flat();
  }

  get(identify: Identify, params: AppParams, log: ApiLogger): Promise<UserInfo> {
    return this.admit(identify, () => getAccess(params), log);
  }

  /** A build log route: asked before anything of the App is looked at, so a 403 tells nothing of it. */
  buildLog(identify: Identify, params: AppParams, log: ApiLogger): Promise<UserInfo> {
    return this.admit(identify, () => buildLogAccess(params), log);
  }

  /**
   * An open build log's right asked again (build-log.ts): cached like the first (it names
   * no App), and a refusal is the stream's end, not a request's 403, so it is not logged as one.
   */
  stillReadsBuildLog(user: UserInfo, params: AppParams): Promise<void> {
    return this.auth.authorize(user, buildLogAccess(params));
  }

  /** An action route: an unknown action is no verb worth a review, so its 404 comes before authentication. */
  async act(identify: Identify, params: ActionParams, log: ApiLogger): Promise<Admitted> {
    const wanted = actionAccess(params);
    const user = await this.admit(identify, () => wanted, log);
    return { user, action: wanted.verb };
  }

  /**
   * What RBAC lets a caller already admitted do to the App: one access review
   * per action, its verb, in parallel. A refusal here is no 403 (nothing was
   * asked of the App), so it is not logged as one.
   */
  async permissions(user: UserInfo, { ns, name }: AppParams): Promise<Record<Action, Permission>> {
    const answers = await Promise.all(
      ACTIONS.map(async (action) => [action, await this.permission(user, actionAccess({ ns, name, action }))] as const),
    );
    return Object.fromEntries(answers) as Record<Action, Permission>;
  }

  private async permission(user: UserInfo, wanted: AccessRequest): Promise<Permission> {
    try {
      await this.auth.authorize(user, wanted);
      return { allowed: true };
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) return { allowed: false, reason: err.message };
      return { allowed: 'unknown', reason: errorMessage(err) };
    }
  }

  private async admit(identify: Identify, access: () => AccessRequest, log: ApiLogger): Promise<UserInfo> {
    const user = await identify();
    await this.authorized(user, access(), log);
    return user;
  }

  private async authorized(user: UserInfo, wanted: AccessRequest, log: ApiLogger): Promise<void> {
    try {
      await this.auth.authorize(user, wanted);
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) {
        log.info({ user: user.username, ...wanted }, 'API request forbidden');
      }
      throw err;
    }
  }
}
