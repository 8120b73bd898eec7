// GET /api/v1/session/oidc/start and /callback: the two legs of an OIDC
// login (oidc.ts). Both are top-level browser navigations, so they answer with
// a redirect or a small page, never JSON. Registered by apiPlugin when
// --oidc-issuer-url is set. Neither logs a code, a state or a token: the
// handlers catch every failure, so no error line carries the callback's URL.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { type ApiLogger, logSerializers } from './logger.ts';
import { OIDC_PATHS, type OidcLogin, OidcLoginFailed } from './oidc.ts';
import type { Sessions } from './session.ts';
import type { LoginMethod, LoginResult } from './session-routes.ts';

export interface OidcRouteDeps {
  oidc: OidcLogin;
  sessions: Sessions;
  onLogin: (method: LoginMethod, result: LoginResult) => void;
  logger: (request: FastifyRequest) => ApiLogger;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A page of plain HTML, no script and no style (the CSP allows neither inline). After a
 * login it moves on with a meta refresh rather than a redirect: the refresh is a navigation
 * this origin's own page starts, so the browser sends the SameSite=Strict session cookie
 * with it, which it may hold back on a redirect chain that began at the provider's site.
 */
export function oidcPage(
  title: string,
  message: string,
  link: { href: string; text: string },
  refresh = false,
): string {
  const href = escapeHtml(link.href);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Teal: ${escapeHtml(title)}</title>${refresh ? `\n    <meta http-equiv="refresh" content="0;url=${href}" />` : ''}
  </head>
  <body>
    <main>
      <h1>${escapeHtml(title)}</h1>
      <p role="${refresh ? 'status' : 'alert'}">${escapeHtml(message)}</p>
      <p><a href="${href}">${escapeHtml(link.text)}</a></p>
    </main>
  </body>
</html>
`;
}

/** A failed login's result, status and message; undefined for an unexpected failure (ours: logged, not told). */
function asFailure(err: unknown): Pick<OidcLoginFailed, 'result' | 'status' | 'message'> | undefined {
  if (err instanceof OidcLoginFailed) return err;
  // The session cookie could not hold this user (too many groups): the user's to hear.
  if (err instanceof ApiError && err.status === 400) return { result: 'bad_token', status: 400, message: err.message };
  return undefined;
}

const queryOf = (request: FastifyRequest): string => {
  const at = request.url.indexOf('?');
  return at < 0 ? '' : request.url.slice(at + 1);
};

export function oidcRoutes(fastify: FastifyInstance, deps: OidcRouteDeps): void {
  const { oidc, sessions, onLogin, logger } = deps;

  const failed = (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    const failure = asFailure(err);
    if (failure === undefined) logger(request).error({ err: String(err) }, 'oidc login failed');
    const { result, status, message } = failure ?? {
      result: 'provider_error',
      status: 503,
      message: 'the login failed',
    };
    onLogin('oidc', result);
    logger(request).info({ result, reason: message, remoteAddress: request.ip }, 'oidc login refused');
    const page = oidcPage('Login failed', message, { href: '/login', text: 'Log in again' });
    return reply
      .code(status)
      .header('cache-control', 'no-store')
      .header('set-cookie', oidc.clearFlow())
      .type('text/html; charset=utf-8')
      .send(page);
  };

  fastify.get(OIDC_PATHS.start, { logSerializers }, async (request, reply) => {
    const { next } = request.query as { next?: unknown };
    try {
      const { location, setCookie } = await oidc.start(
        request.headers.host,
        typeof next === 'string' ? next : undefined,
      );
      return reply.code(302).header('cache-control', 'no-store').header('set-cookie', setCookie).redirect(location);
    } catch (err) {
      return failed(request, reply, err);
    }
  });

  fastify.get(OIDC_PATHS.callback, { logSerializers: { req: () => ({}) } }, async (request, reply) => {
    let login: Awaited<ReturnType<OidcLogin['finish']>>;
    let setCookie: string;
    try {
      login = await oidc.finish(queryOf(request), request.headers.cookie);
      setCookie = sessions.oidcLogin(login.user, login.idTokenExpiresAt);
    } catch (err) {
      return failed(request, reply, err);
    }
    onLogin('oidc', 'ok');
    logger(request).info({ user: login.user.username, remoteAddress: request.ip }, 'session started (oidc)');
    const message = `Logged in as ${login.user.username}.`;
    return reply
      .header('cache-control', 'no-store')
      .header('set-cookie', [oidc.clearFlow(), setCookie])
      .type('text/html; charset=utf-8')
      .send(oidcPage('Logged in', message, { href: login.next, text: 'Continue' }, true));
  });
}
