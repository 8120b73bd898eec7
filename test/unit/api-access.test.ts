// The HTTP API's steps before a handler, without fastify (src/api/access.ts,
// src/api/errors.ts): how a thrown error is answered, and what each route asks
// of RBAC, in which order. Fastify's errors are its own classes (errorCodes),
// built here without a server.
import { errorCodes } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ApiGuard, actionAccess, getAccess, listAccess } from '../../src/api/access.ts';
import { type AccessRequest, type ApiAuth, cachedReview, type UserInfo } from '../../src/api/auth.ts';
import { ApiError, errorAnswer, unauthorized } from '../../src/api/errors.ts';

const LIMIT = 16 * 1024;

describe('errorAnswer', () => {
  it('answers a body over the limit with a 413 that names the limit', () => {
    for (const error of [new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), { message: 'too big', statusCode: 413 }]) {
      const { error: answer, unexpected } = errorAnswer(error, LIMIT);
      expect(answer.status).toBe(413);
      expect(answer.body).toEqual({ error: 'RequestEntityTooLarge', message: 'the request body exceeds 16384 bytes' });
      expect(unexpected).toBe(false);
    }
  });

  it('answers a media type other than JSON with a 400, not fastify’s 415', () => {
    const { error, unexpected } = errorAnswer(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE('text/plain'), LIMIT);
    expect(error.status).toBe(400);
    expect(error.body).toEqual({ error: 'BadRequest', message: 'the body must be application/json' });
    expect(unexpected).toBe(false);
  });

  it('answers fastify’s other refusals of the request with a 400 and its message', () => {
    const thrown = new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH();
    const { error, unexpected } = errorAnswer(thrown, LIMIT);
    expect(error.status).toBe(400);
    expect(error.body).toEqual({ error: 'BadRequest', message: thrown.message });
    expect(unexpected).toBe(false);
  });

  it('passes an ApiError through as thrown, headers and all', () => {
    const thrown = unauthorized('no token');
    const { error, unexpected } = errorAnswer(thrown, LIMIT);
    expect(error).toBe(thrown);
    expect(error.headers).toEqual({ 'www-authenticate': 'Bearer' });
    expect(unexpected).toBe(false);
  });

  it('answers anything else with a 500 that tells nothing of it, marked to be logged', () => {
    for (const thrown of [
      new Error('connect ECONNREFUSED 10.0.0.1:443 token=s3cret'),
      Object.assign(new Error('s3cret upstream failure'), { statusCode: 502 }),
    ]) {
      const { error, unexpected } = errorAnswer(thrown, LIMIT);
      expect(error.status).toBe(500);
      expect(error.body).toEqual({ error: 'InternalError', message: 'internal error' });
      expect(JSON.stringify(error.body)).not.toContain('s3cret');
      expect(error.headers).toEqual({});
      expect(unexpected).toBe(true);
    }
  });
});

describe('the routes’ access rules', () => {
  it('lists in the namespace asked for, or cluster-wide, and refuses a namespace given twice', () => {
    expect(listAccess({})).toEqual({ verb: 'list' });
    expect(listAccess({ namespace: '' })).toEqual({ verb: 'list' });
    expect(listAccess({ namespace: 'team' })).toEqual({ verb: 'list', namespace: 'team' });
    expect(() => listAccess({ namespace: ['a', 'b'] })).toThrow(
      expect.objectContaining({ status: 400, message: 'namespace must be given at most once' }),
    );
  });

  it('gets the one App', () => {
    expect(getAccess({ ns: 'team', name: 'web' })).toEqual({ verb: 'get', namespace: 'team', name: 'web' });
  });

  it('asks for the action as the verb, and answers an unknown action 404 naming the actions', () => {
    expect(actionAccess({ ns: 'team', name: 'web', action: 'promote' })).toEqual({
      verb: 'promote',
      namespace: 'team',
      name: 'web',
    });
    expect(() => actionAccess({ ns: 'team', name: 'web', action: 'delete' })).toThrow(
      expect.objectContaining({
        status: 404,
        message: 'unknown action "delete": one of promote, abort, retry, undo, pause, resume, restart',
      }),
    );
  });
});

describe('ApiGuard', () => {
  const ann: UserInfo = { username: 'ann', groups: [] };

  /** An ApiAuth that knows one token, for ann, and allows what `allowed` says; it records the calls in order. */
  function guard(allowed: (request: AccessRequest) => boolean) {
    const calls: string[] = [];
    const logged: object[] = [];
    const auth: ApiAuth = {
      authenticate: async (authorization) => {
        calls.push('authenticate');
        if (authorization !== 'Bearer ann-token') throw unauthorized('invalid token');
        return ann;
      },
      reviewToken: (token) => auth.authenticate(`Bearer ${token}`),
      authorize: async (user, request) => {
        calls.push(`authorize ${user.username} ${JSON.stringify(request)}`);
        if (!allowed(request)) throw new ApiError(403, 'forbidden');
      },
    };
    const log = { debug: () => {}, info: (obj: object) => logged.push(obj), warn: () => {}, error: () => {} };
    // The caller as the plugin finds a bearer one (session.ts identify).
    const as = (authorization: string | undefined) => () => auth.authenticate(authorization);
    return { guard: new ApiGuard(auth), calls, logged, log, as };
  }

  it('lets ann act, naming the action she may do', async () => {
    const g = guard(() => true);
    const admitted = await g.guard.act(g.as('Bearer ann-token'), { ns: 'team', name: 'web', action: 'undo' }, g.log);
    expect(admitted).toEqual({ user: ann, action: 'undo' });
    expect(g.calls).toEqual(['authenticate', 'authorize ann {"verb":"undo","namespace":"team","name":"web"}']);
  });

  it('answers an unknown action 404 before any review, even to a stranger', async () => {
    const g = guard(() => true);
    await expect(
      g.guard.act(g.as(undefined), { ns: 'team', name: 'web', action: 'delete' }, g.log),
    ).rejects.toMatchObject({
      status: 404,
    });
    expect(g.calls).toEqual([]);
  });

  it('authenticates before reading the list query: a stranger gets 401, ann 400 for a namespace given twice', async () => {
    const g = guard(() => true);
    const twice = { namespace: ['a', 'b'] };
    const none = () => [];
    await expect(g.guard.list(g.as('Bearer other'), twice, none, g.log)).rejects.toMatchObject({ status: 401 });
    await expect(g.guard.list(g.as('Bearer ann-token'), twice, none, g.log)).rejects.toMatchObject({ status: 400 });
    expect(g.calls).toEqual(['authenticate', 'authenticate']);
    await expect(g.guard.list(g.as('Bearer ann-token'), { namespace: 'team' }, none, g.log)).resolves.toEqual({
      user: ann,
      namespaces: ['team'],
    });
    expect(g.calls.at(-1)).toBe('authorize ann {"verb":"list","namespace":"team"}');
  });

  it('lists without a namespace: all for a cluster-wide right, else only the namespaces ann may list', async () => {
    const everywhere = guard(() => true);
    const candidates = () => ['team', 'other', 'shop'];
    await expect(
      everywhere.guard.list(everywhere.as('Bearer ann-token'), {}, candidates, everywhere.log),
    ).resolves.toEqual({ user: ann, namespaces: 'all' });
    expect(everywhere.calls).toEqual(['authenticate', 'authorize ann {"verb":"list"}']);

    const some = guard((request) => request.namespace === 'team' || request.namespace === 'shop');
    await expect(some.guard.list(some.as('Bearer ann-token'), {}, candidates, some.log)).resolves.toEqual({
      user: ann,
      namespaces: ['team', 'shop'],
    });
    expect(some.calls.slice(2).sort()).toEqual(
      ['other', 'shop', 'team'].map((ns) => `authorize ann {"verb":"list","namespace":"${ns}"}`),
    );
    const nowhere = guard(() => false);
    await expect(nowhere.guard.list(nowhere.as('Bearer ann-token'), {}, candidates, nowhere.log)).resolves.toEqual({
      user: ann,
      namespaces: [],
    });
  });

  it('fails a list whose access review fails (503), rather than leaving namespaces out', async () => {
    const g = guard((request) => {
      if (request.namespace === 'other') throw new ApiError(503, 'the access review failed: timeout');
      return false;
    });
    await expect(g.guard.list(g.as('Bearer ann-token'), {}, () => ['team', 'other'], g.log)).rejects.toMatchObject({
      status: 503,
    });
  });

  it('logs a 403 with the user and what was asked, never the token', async () => {
    const g = guard((request) => request.verb !== 'get');
    await expect(g.guard.get(g.as('Bearer ann-token'), { ns: 'team', name: 'web' }, g.log)).rejects.toMatchObject({
      status: 403,
    });
    expect(g.logged).toEqual([{ user: 'ann', verb: 'get', namespace: 'team', name: 'web' }]);
    expect(JSON.stringify(g.logged)).not.toContain('ann-token');
  });

  it('logs nothing for a 401', async () => {
    const g = guard(() => true);
    await expect(g.guard.get(g.as('Bearer other'), { ns: 'team', name: 'web' }, g.log)).rejects.toMatchObject({
      status: 401,
    });
    expect(g.logged).toEqual([]);
  });

  it('says where ann may promote: every namespace listed for a cluster-wide right, else those RBAC allows', async () => {
    const listed = ['shop', 'team', 'other'];
    const everywhere = guard(() => true);
    expect(await everywhere.guard.allowedIn(ann, 'promote', listed)).toEqual(listed);
    expect(everywhere.calls).toEqual(['authorize ann {"verb":"promote"}']);
    const some = guard((request) => request.verb === 'promote' && request.namespace === 'team');
    expect(await some.guard.allowedIn(ann, 'promote', listed)).toEqual(['team']);
    expect(some.calls.slice(1).sort()).toEqual(
      ['other', 'shop', 'team'].map((ns) => `authorize ann {"verb":"promote","namespace":"${ns}"}`),
    );
    // A review that fails is no permission, and not named: the filter shows less, never more.
    const failing = guard((request) => {
      if (request.namespace === 'shop') throw new ApiError(503, 'the access review failed');
      return request.namespace === 'team';
    });
    expect(await failing.guard.allowedIn(ann, 'promote', listed)).toEqual(['team']);
  });
});

describe('which access reviews are cached', () => {
  it('those naming no App (a list, what may be done in a namespace); never one naming an App, as each action does', () => {
    expect(cachedReview({ verb: 'list' })).toBe(true);
    expect(cachedReview({ verb: 'list', namespace: 'team' })).toBe(true);
    expect(cachedReview({ verb: 'promote', namespace: 'team' })).toBe(true);
    expect(cachedReview({ verb: 'get', namespace: 'team', name: 'web' })).toBe(false);
    expect(cachedReview({ verb: 'promote', namespace: 'team', name: 'web' })).toBe(false);
  });
});
