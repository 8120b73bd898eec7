// Sessions without a server (src/api/session*.ts, csrf.ts, login-throttle.ts):
// the sealed cookie, the CSRF rule, the failed-login throttle, and when a
// session's token is reviewed again. The real TokenReviews, cookies over HTTP
// and two replicas sharing a key: test/e2e/session.test.ts.
import { describe, expect, it } from 'vitest';
import { ANONYMOUS_USER, type UserInfo } from '../../src/api/auth.ts';
import { csrfProblem } from '../../src/api/csrf.ts';
import { unauthorized } from '../../src/api/errors.ts';
import { LoginThrottle } from '../../src/api/login-throttle.ts';
import { identify, REVIEW_INTERVAL_MS, SESSION_LIFETIME_MS, Sessions } from '../../src/api/session.ts';
import {
  cookieName,
  randomSessionKey,
  readCookie,
  type Session,
  seal,
  sessionKeyOf,
  unseal,
} from '../../src/api/session-cookie.ts';

const ann: UserInfo = { username: 'ann', groups: ['team'], extra: { scopes: ['a'] } };
const session: Session = { v: 1, kind: 'token', user: ann, token: 'ann-token', reviewedAt: 0, expiresAt: 1 };

describe('the sealed cookie', () => {
  it('opens with the key that sealed it, and with no other', () => {
    const key = randomSessionKey();
    const value = seal(key, session);
    expect(unseal(key, value)).toEqual(session);
    expect(unseal(randomSessionKey(), value)).toBeUndefined();
    // The token is not readable in the cookie.
    expect(Buffer.from(value, 'base64url').toString('latin1')).not.toContain('ann-token');
  });

  it('refuses a cookie changed by one bit, cut short, or not a cookie at all', () => {
    const key = randomSessionKey();
    const raw = Buffer.from(seal(key, session), 'base64url');
    for (const i of [0, 12, 20, raw.length - 1]) {
      const changed = Buffer.from(raw);
      changed[i] = (changed[i] ?? 0) ^ 1;
      expect(unseal(key, changed.toString('base64url'))).toBeUndefined();
    }
    expect(unseal(key, raw.subarray(0, 20).toString('base64url'))).toBeUndefined();
    expect(unseal(key, 'not a cookie')).toBeUndefined();
  });

  it('takes a shared secret of at least 32 bytes, a trailing newline aside', () => {
    const secret = Buffer.from('x'.repeat(32));
    const value = seal(sessionKeyOf(secret), session);
    expect(unseal(sessionKeyOf(Buffer.concat([secret, Buffer.from('\n')])), value)).toEqual(session);
    expect(() => sessionKeyOf(Buffer.from(`${'x'.repeat(31)}\n`))).toThrow(
      'the session key must hold at least 32 bytes (it holds 31); make one with `openssl rand -base64 32`',
    );
  });

  it('is found by its name in a Cookie header: __Host- prefixed over TLS', () => {
    expect(cookieName(true)).toBe('__Host-teal_session');
    expect(readCookie('a=1; teal_session=abc; b=2', false)).toBe('abc');
    expect(readCookie('teal_session=abc', true)).toBeUndefined();
    expect(readCookie('__Host-teal_session=xyz', true)).toBe('xyz');
    expect(readCookie('teal_session=', false)).toBeUndefined();
    expect(readCookie(undefined, false)).toBeUndefined();
  });
});

describe('the CSRF rule', () => {
  const post = { method: 'POST', hasSessionCookie: true, host: 'teal.example.com' };
  const json = { ...post, contentType: 'application/json; charset=utf-8' };

  it('lets through reads, and requests without the session cookie', () => {
    expect(csrfProblem({ ...post, method: 'GET' })).toBeUndefined();
    expect(csrfProblem({ ...post, hasSessionCookie: false })).toBeUndefined();
  });

  it('needs JSON, naming the Content-Type it got', () => {
    expect(csrfProblem({ ...post, contentType: 'text/plain', secFetchSite: 'same-origin' })).toBe(
      'a POST with a session cookie needs Content-Type: application/json (got "text/plain")',
    );
    expect(csrfProblem(post)).toBe('a POST with a session cookie needs Content-Type: application/json (got none)');
  });

  it('needs Sec-Fetch-Site: same-origin or an Origin of this host, naming what it got', () => {
    expect(csrfProblem({ ...json, secFetchSite: 'same-origin' })).toBeUndefined();
    expect(csrfProblem({ ...json, origin: 'https://teal.example.com' })).toBeUndefined();
    expect(csrfProblem({ ...json, origin: 'https://TEAL.example.com:443' })).toBeUndefined();
    expect(csrfProblem({ ...json, method: 'DELETE' })).toBe(
      'a DELETE with a session cookie needs an Origin of this host (teal.example.com) or Sec-Fetch-Site: same-origin (got no Origin, no Sec-Fetch-Site)',
    );
    expect(csrfProblem({ ...json, origin: 'https://evil.example', secFetchSite: 'cross-site' })).toBe(
      'a POST with a session cookie needs an Origin of this host (teal.example.com) or Sec-Fetch-Site: same-origin (got Origin "https://evil.example", Sec-Fetch-Site "cross-site")',
    );
    expect(csrfProblem({ ...json, origin: 'null', secFetchSite: 'same-site' })).toBeDefined();
  });
});

describe('the failed-login throttle', () => {
  it('locks an address out after 10 failures until its window ends, and no other', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle({}, () => now);
    for (let i = 0; i < 9; i++) throttle.failed('10.0.0.1');
    expect(throttle.retryAfter('10.0.0.1')).toBe(0);
    throttle.failed('10.0.0.1');
    expect(throttle.retryAfter('10.0.0.1')).toBe(60);
    expect(throttle.retryAfter('10.0.0.2')).toBe(0);
    now += 59_500;
    expect(throttle.retryAfter('10.0.0.1')).toBe(1);
    now += 500;
    expect(throttle.retryAfter('10.0.0.1')).toBe(0);
  });

  it('remembers at most maxAddresses, forgetting the oldest', () => {
    const throttle = new LoginThrottle({ max: 1, maxAddresses: 2 }, () => 0);
    for (const a of ['a', 'b', 'c']) throttle.failed(a);
    expect(['a', 'b', 'c'].map((a) => throttle.retryAfter(a) > 0)).toEqual([false, true, true]);
  });
});

describe('Sessions', () => {
  /** Sessions over a fake TokenReview that knows the tokens in `valid`; it counts the reviews. */
  function sessions(valid: Map<string, UserInfo>) {
    let now = 1_000_000;
    const reviews: string[] = [];
    const auth = {
      reviewToken: async (token: string) => {
        reviews.push(token);
        const user = valid.get(token);
        if (!user) throw unauthorized('the token is invalid or expired');
        return user;
      },
      authenticate: async (header: string | undefined) => auth.reviewToken(header?.replace(/^Bearer /, '') ?? ''),
    };
    const s = new Sessions({ key: randomSessionKey(), auth, tls: false, now: () => now });
    const cookieValue = (setCookie: string) => readCookie(setCookie.split(';')[0], false) ?? '';
    return {
      s,
      auth,
      reviews,
      cookieValue,
      tick: (ms: number) => {
        now += ms;
      },
    };
  }

  it('logs in with a valid token into an HttpOnly SameSite=Strict cookie, and refuses a bad one', async () => {
    const t = sessions(new Map([['ann-token', ann]]));
    const login = await t.s.login('ann-token');
    expect(login.user).toEqual(ann);
    expect(login.setCookie).toMatch(/^teal_session=[\w-]+; Path=\/; HttpOnly; SameSite=Strict$/);
    await expect(t.s.login('garbage')).rejects.toMatchObject({ status: 401 });
  });

  it('reviews the token again once the interval has passed, renewing the cookie, not before', async () => {
    const valid = new Map([['ann-token', ann]]);
    const t = sessions(valid);
    const value = t.cookieValue((await t.s.login('ann-token')).setCookie);
    t.tick(REVIEW_INTERVAL_MS - 1);
    expect(await t.s.resume(value)).toEqual({ user: ann });
    expect(t.reviews).toEqual(['ann-token']);
    t.tick(1);
    const renewed = await t.s.resume(value);
    expect(t.reviews).toEqual(['ann-token', 'ann-token']);
    expect(renewed.setCookie).toBeDefined();
    // The renewed cookie counts from this review.
    t.tick(REVIEW_INTERVAL_MS - 1);
    await t.s.resume(t.cookieValue(renewed.setCookie ?? ''));
    expect(t.reviews).toHaveLength(2);
  });

  it('ends a session whose token is rejected, expired, or sealed elsewhere: 401 clearing the cookie', async () => {
    const valid = new Map([['ann-token', ann]]);
    const t = sessions(valid);
    const value = t.cookieValue((await t.s.login('ann-token')).setCookie);
    const cleared = { 'set-cookie': 'teal_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict' };
    valid.delete('ann-token');
    t.tick(REVIEW_INTERVAL_MS);
    await expect(t.s.resume(value)).rejects.toMatchObject({
      status: 401,
      message: "the session's token is no longer valid: log in again",
      headers: cleared,
    });
    valid.set('ann-token', ann);
    t.tick(SESSION_LIFETIME_MS);
    await expect(t.s.resume(value)).rejects.toMatchObject({
      status: 401,
      message: 'the session has expired: log in again',
    });
    const other = sessions(valid);
    await expect(other.s.resume(value)).rejects.toMatchObject({ status: 401, headers: cleared });
  });

  it('identifies by the bearer header first, then the cookie, and neither is a 401', async () => {
    const bob: UserInfo = { username: 'bob', groups: [] };
    const t = sessions(
      new Map([
        ['ann-token', ann],
        ['bob-token', bob],
      ]),
    );
    const cookie = (await t.s.login('ann-token')).setCookie.split(';')[0];
    const renew = () => {};
    expect(await identify({ authorization: 'Bearer bob-token', cookie }, t.auth, t.s, renew)).toEqual({
      user: bob,
      via: 'bearer',
    });
    expect(await identify({ cookie }, t.auth, t.s, renew)).toEqual({ user: ann, via: 'session' });
    await expect(identify({ cookie: 'other=1' }, t.auth, t.s, renew)).rejects.toMatchObject({
      status: 401,
      message: 'log in (POST /api/v1/session) or send an Authorization: Bearer <token> header',
    });
  });

  it('with anonymous reads allowed, a request without credentials is the anonymous user; failing credentials stay a 401', async () => {
    const t = sessions(new Map([['ann-token', ann]]));
    const renew = () => {};
    expect(await identify({}, t.auth, t.s, renew, ANONYMOUS_USER)).toEqual({ user: ANONYMOUS_USER, via: 'anonymous' });
    expect(await identify({ cookie: 'other=1' }, t.auth, t.s, renew, ANONYMOUS_USER)).toMatchObject({
      via: 'anonymous',
    });
    const cookie = (await t.s.login('ann-token')).setCookie.split(';')[0];
    expect(await identify({ cookie }, t.auth, t.s, renew, ANONYMOUS_USER)).toEqual({ user: ann, via: 'session' });
    // A bad token or a cookie that does not open is no anonymous read: the caller is told to log in again.
    await expect(identify({ authorization: 'Bearer nope' }, t.auth, t.s, renew, ANONYMOUS_USER)).rejects.toMatchObject({
      status: 401,
    });
    await expect(
      identify({ cookie: `${cookie?.split('=')[0]}=forged` }, t.auth, t.s, renew, ANONYMOUS_USER),
    ).rejects.toMatchObject({ status: 401 });
    expect(ANONYMOUS_USER).toEqual({ username: 'system:anonymous', groups: ['system:unauthenticated'] });
  });
});
