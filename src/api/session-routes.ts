// /api/v1/session: log in with a bearer token in the JSON body (never in a
// URL, where proxies and browser history would keep it), see who is logged
// in, log out. Registered by apiPlugin, so its JSON parser, error handler,
// CSRF rule and log serializers apply here too.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { MAX_TOKEN_LENGTH, type UserInfo } from './auth.ts';
import { ApiError } from './errors.ts';
import { type ApiLogger, logSerializers } from './logger.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { Caller, Sessions } from './session.ts';

/** How a login ended, the label of teal_dashboard_logins_total. */
export type LoginResult = 'ok' | 'bad_token' | 'rate_limited' | 'review_failed';

const LoginBody = z.strictObject({ token: z.string().min(1).max(MAX_TOKEN_LENGTH) });

export interface SessionRouteDeps {
  sessions: Sessions;
  throttle: LoginThrottle;
  /** Who calls, by bearer header or session cookie (session.ts identify), for this request. */
  caller: (request: FastifyRequest, reply: FastifyReply) => Promise<Caller>;
  onLogin: (result: LoginResult) => void;
  logger: (request: FastifyRequest) => ApiLogger;
}

/** The user as GET and POST /api/v1/session show it: what RBAC sees of them. */
const whoami = (user: UserInfo, via: Caller['via']) => ({
  user: { username: user.username, groups: user.groups, ...(user.extra ? { extra: user.extra } : {}) },
  via,
});

export function sessionRoutes(fastify: FastifyInstance, deps: SessionRouteDeps): void {
  const { sessions, throttle, onLogin, logger } = deps;

  fastify.post(
    '/api/v1/session',
    {
      logSerializers,
      // Refused before the body is read: a locked-out address costs nothing.
      onRequest: async (request) => {
        const retryAfter = throttle.retryAfter(request.ip);
        if (retryAfter === 0) return;
        onLogin('rate_limited');
        // Debug only: a client hammering the route must not flood the log; the metric counts it.
        logger(request).debug({ remoteAddress: request.ip }, 'login refused: too many failed logins');
        throw new ApiError(429, `too many failed logins from ${request.ip}; try again in ${retryAfter} s`, {
          'retry-after': String(retryAfter),
        });
      },
    },
    async (request, reply) => {
      const body = LoginBody.safeParse(request.body);
      if (!body.success) throw new ApiError(400, 'the body must be {"token": "<a Kubernetes bearer token>"}');
      let login: Awaited<ReturnType<Sessions['login']>>;
      try {
        login = await sessions.login(body.data.token);
      } catch (err) {
        const rejected = err instanceof ApiError && err.status === 401;
        if (rejected) throttle.failed(request.ip);
        onLogin(rejected ? 'bad_token' : 'review_failed');
        logger(request).info({ remoteAddress: request.ip }, rejected ? 'login refused: bad token' : 'login failed');
        throw err;
      }
      onLogin('ok');
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

  // Needs no identity: forgetting a cookie harms no one; with the cookie, the CSRF rule guards it.
  fastify.delete('/api/v1/session', { logSerializers }, async (_request, reply) =>
    reply.code(204).header('set-cookie', sessions.logout()).send(),
  );
}
