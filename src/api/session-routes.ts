// /api/v1/session: log in with a bearer token in the JSON body (never in a
// URL, where proxies and browser history would keep it) or with a login code
// (session-codes.ts), see who is logged in, log out; and
// /api/v1/session/codes, where a bearer caller trades its token for a code. Registered by apiPlugin, so its JSON parser, error handler,
// CSRF rule and log serializers apply here too.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { type ApiAuth, bearerToken, MAX_TOKEN_LENGTH, type UserInfo } from './auth.ts';
import { ApiError } from './errors.ts';
import { type ApiLogger, logSerializers } from './logger.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { OidcFailure } from './oidc.ts';
import type { Caller, Sessions } from './session.ts';
import { type LoginCodes, MAX_LOGIN_CODE_LENGTH } from './session-codes.ts';

/** How a login came: POST /api/v1/session with a token, or a login code of kubectl teal dashboard, or OIDC (oidc-routes.ts); a label of teal_dashboard_logins_total. */
export type LoginMethod = 'token' | 'code' | 'oidc';
/** How a login ended, the other label of teal_dashboard_logins_total. */
export type LoginResult = 'ok' | 'bad_token' | 'bad_code' | 'rate_limited' | 'review_failed' | OidcFailure;

const LoginBody = z.union([
  z.strictObject({ token: z.string().min(1).max(MAX_TOKEN_LENGTH) }),
  z.strictObject({ code: z.string().min(1).max(MAX_LOGIN_CODE_LENGTH) }),
]);

const BAD_CODE = 'the login code is unknown, already used or expired: run kubectl teal dashboard again';

export interface SessionRouteDeps {
  sessions: Sessions;
  throttle: LoginThrottle;
  codes: LoginCodes;
  /** Reviews the bearer token of a request for a login code. */
  auth: Pick<ApiAuth, 'authenticate'>;
  /** Who calls, by bearer header or session cookie (session.ts identify), for this request. */
  caller: (request: FastifyRequest, reply: FastifyReply) => Promise<Caller>;
  onLogin: (method: LoginMethod, result: LoginResult) => void;
  logger: (request: FastifyRequest) => ApiLogger;
}

/** The user as GET and POST /api/v1/session show it: what RBAC sees of them. */
const whoami = (user: UserInfo, via: Caller['via']) => ({
  user: { username: user.username, groups: user.groups, ...(user.extra ? { extra: user.extra } : {}) },
  via,
});

export function sessionRoutes(fastify: FastifyInstance, deps: SessionRouteDeps): void {
  const { sessions, throttle, codes, onLogin, logger } = deps;

  fastify.post(
    '/api/v1/session',
    {
      logSerializers,
      // Refused before the body is read: a locked-out address costs nothing.
      onRequest: async (request) => {
        const retryAfter = throttle.retryAfter(request.ip);
        if (retryAfter === 0) return;
        // The body is not read yet: counted as a token login.
        onLogin('token', 'rate_limited');
        // Debug only: a client hammering the route must not flood the log; the metric counts it.
        logger(request).debug({ remoteAddress: request.ip }, 'login refused: too many failed logins');
        throw new ApiError(429, `too many failed logins from ${request.ip}; try again in ${retryAfter} s`, {
          'retry-after': String(retryAfter),
        });
      },
    },
    async (request, reply) => {
      const body = LoginBody.safeParse(request.body);
      if (!body.success) {
        throw new ApiError(
          400,
          'the body must be {"token": "<a Kubernetes bearer token>"} or {"code": "<a login code of kubectl teal dashboard>"}',
        );
      }
      const method: LoginMethod = 'token' in body.data ? 'token' : 'code';
      const token = 'token' in body.data ? body.data.token : codes.spend(body.data.code);
      if (token === undefined) {
        throttle.failed(request.ip);
        onLogin(method, 'bad_code');
        logger(request).info({ remoteAddress: request.ip }, 'login refused: bad login code');
        throw new ApiError(401, BAD_CODE, { 'www-authenticate': 'Bearer' });
      }
      let login: Awaited<ReturnType<Sessions['login']>>;
      try {
        login = await sessions.login(token);
      } catch (err) {
        const rejected = err instanceof ApiError && err.status === 401;
        if (rejected) throttle.failed(request.ip);
        onLogin(method, rejected ? 'bad_token' : 'review_failed');
        logger(request).info({ remoteAddress: request.ip }, rejected ? 'login refused: bad token' : 'login failed');
        throw err;
      }
      onLogin(method, 'ok');
      logger(request).info({ user: login.user.username, remoteAddress: request.ip }, 'session started');
      return reply
        .header('set-cookie', login.setCookie)
        .header('cache-control', 'no-store')
        .send(whoami(login.user, 'session'));
    },
  );

  fastify.get('/api/v1/session', { logSerializers }, async (request, reply) => {
    const { user, via } = await deps.caller(request, reply);
    return reply.header('cache-control', 'no-store').send(whoami(user, via));
  });

  // Bearer callers only (kubectl teal dashboard): a browser with a session has no token to trade.
  // The token is reviewed as for any API call, so a rejected one costs the API server as little.
  fastify.post('/api/v1/session/codes', { logSerializers }, async (request, reply) => {
    const authorization = request.headers.authorization;
    const user = await deps.auth.authenticate(authorization);
    const token = bearerToken(authorization);
    if (token === undefined) throw new ApiError(500, 'the bearer token was accepted but cannot be read again');
    const issued = codes.issue(token);
    // The code is a credential until spent: this line names the user only.
    logger(request).info({ user: user.username, remoteAddress: request.ip }, 'login code issued');
    return reply.code(201).header('cache-control', 'no-store').send(issued);
  });

  // Needs no identity: forgetting a cookie harms no one; with the cookie, the CSRF rule guards it.
  fastify.delete('/api/v1/session', { logSerializers }, async (_request, reply) =>
    reply.code(204).header('set-cookie', sessions.logout()).send(),
  );
}
