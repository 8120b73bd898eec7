// The dashboard's calls to the operator's own API, same origin: the session
// cookie (HttpOnly, SameSite=Strict) goes with them by itself and no script
// ever holds it. A state-changing call sends JSON, which the CSRF rule
// (src/api/csrf.ts) asks of a request carrying the cookie; the browser adds
// Origin and Sec-Fetch-Site.
import type { ActionEntryLike, AppDetailLike } from './app-view.ts';

export interface User {
  username: string;
  groups?: string[];
  /** Viewing without a session (--dashboard-anonymous=read): read-only, as system:anonymous. */
  anonymous?: boolean;
}

/** An answer that was not the one hoped for: its status and the API's message. */
export class ApiFailure extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const message = (parsed as { message?: unknown } | undefined)?.message;
    throw new ApiFailure(
      response.status,
      typeof message === 'string' ? message : `${response.status} ${response.statusText}`,
    );
  }
  return parsed;
}

const userOf = (body: unknown): User => {
  const { user, via } = body as { user: User; via?: string };
  return via === 'anonymous' ? { ...user, anonymous: true } : user;
};

/** Who is logged in, or undefined without a session. */
export async function currentUser(): Promise<User | undefined> {
  try {
    return userOf(await call('GET', '/api/v1/session'));
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 401) return undefined;
    throw err;
  }
}

/** The namespaces, of those whose Apps the user may list, where RBAC lets the user promote. */
export async function promoteNamespaces(): Promise<string[]> {
  return ((await call('GET', '/api/v1/permissions')) as { promote: string[] }).promote;
}

/** Logs in with a bearer token: the token goes in the body, never in a URL. */
export async function login(token: string): Promise<User> {
  return userOf(await call('POST', '/api/v1/session', { token }));
}

/** Logs in with a single-use login code of kubectl teal dashboard, also in the body. */
export async function loginWithCode(code: string): Promise<User> {
  return userOf(await call('POST', '/api/v1/session', { code }));
}

export async function logout(): Promise<void> {
  await call('DELETE', '/api/v1/session', {});
}

const appPath = (namespace: string, name: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/apps/${encodeURIComponent(name)}`;

/** One App's full view: status, revisions, checks, its ReplicaSets' pods and its Events, from the operator's caches. */
export async function getApp(namespace: string, name: string): Promise<AppDetailLike> {
  return (await call('GET', appPath(namespace, name))) as AppDetailLike;
}

/** Every action of the App, each with what the rules and RBAC say of it for this user. */
export async function listActions(namespace: string, name: string): Promise<ActionEntryLike[]> {
  return ((await call('GET', `${appPath(namespace, name)}/actions`)) as { actions: ActionEntryLike[] }).actions;
}

/**
 * Takes an action: the operator records it as an intent with this user and via "dashboard"
 * (the session cookie says where it comes from). A refusal is an ApiFailure: 409 with the rules' reason.
 */
export async function takeAction(
  namespace: string,
  name: string,
  action: string,
  body: Record<string, number | boolean>,
): Promise<{ id: string }> {
  return (await call('POST', `${appPath(namespace, name)}/${encodeURIComponent(action)}`, body)) as { id: string };
}
