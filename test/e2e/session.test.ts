// Sessions on the real control plane (issue #25 item 2, token login): two
// operator processes share --session-key-file, as two replicas of the chart
// share its Secret; logins are real TokenReviews of ServiceAccount tokens from
// the TokenRequest API, and the reviews are counted by a recording proxy in
// front of the API server. Authorization of a session's user is the API's own
// SubjectAccessReview (test/e2e/api.test.ts has its rules).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOGIN_FAILURES } from '../../src/api/login-throttle.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount, userOf } from '../support/users.ts';

const TOKEN_REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';

let ns: string;
let removeNs: () => Promise<void>;
let root: string;
let recorder: ApiRecorder;
const operators: Operator[] = [];
let a: string;
let b: string;
const tokens: Record<string, string> = {};
/** Every session cookie value the tests saw: none may reach a log or a metric. */
const cookies: string[] = [];

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
  /** The session cookie a Set-Cookie gave, as a Cookie header. */
  cookie: string | undefined;
}

async function call(
  base: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  options: { body?: unknown; cookie?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  const setCookie = response.headers.get('set-cookie') ?? undefined;
  const cookie = setCookie?.split(';')[0];
  const value = cookie?.slice(cookie.indexOf('=') + 1);
  if (value) cookies.push(value);
  return {
    status: response.status,
    headers: response.headers,
    body: response.headers.get('content-type')?.startsWith('application/json')
      ? (JSON.parse(text) as Record<string, unknown>)
      : undefined,
    cookie,
  };
}

const login = (base: string, token: string) => call(base, 'POST', '/api/v1/session', { body: { token } });
/** What the operator's own page sends with a state-changing request. */
const sameOrigin = (base: string) => ({ origin: base });

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('session'));
  root = await mkdtemp(join(tmpdir(), 'teal-session-'));
  recorder = await startApiRecorder(root);
  // As a chart's Secret holds it: `openssl rand -base64 32`, with its newline.
  const keyFile = join(root, 'session-key');
  await writeFile(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const replica = () =>
    startOperator({
      namespace: ns,
      kubeconfig: recorder.kubeconfig,
      // A short review interval, so the test of a deleted ServiceAccount needs no five-minute wait.
      extraArgs: ['--session-key-file', keyFile, '--session-review-interval', '1s'],
    });
  operators.push(...(await Promise.all([replica(), replica()])));
  [a, b] = operators.map((o) => `http://127.0.0.1:${o.healthPort}`) as [string, string];
  Object.assign(tokens, { reader: await serviceAccount(ns, 'reader', ['get', 'list', 'promote']) });
});

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop()));
  await recorder?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('login', () => {
  it('with a real ServiceAccount token: a sealed HttpOnly SameSite=Strict cookie, whose user reads as RBAC allows', async () => {
    const res = await login(a, tokens.reader ?? '');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      user: { username: userOf(ns, 'reader'), groups: expect.arrayContaining(['system:serviceaccounts']) },
      via: 'session',
    });
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^teal_session=[\w-]+; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain(tokens.reader);

    const who = await call(a, 'GET', '/api/v1/session', { cookie: res.cookie ?? '' });
    expect(who).toMatchObject({ status: 200, body: { user: { username: userOf(ns, 'reader') }, via: 'session' } });
    const apps = await call(a, 'GET', `/api/v1/apps?namespace=${ns}`, { cookie: res.cookie ?? '' });
    expect(apps).toMatchObject({ status: 200, body: { items: [] } });
    // The session's user, not the operator: its Role allows nothing cluster-wide, so a list of
    // every namespace answers those it may list (ns, with no App yet).
    const everywhere = await call(a, 'GET', '/api/v1/apps', { cookie: res.cookie ?? '' });
    expect(everywhere).toMatchObject({ status: 200, body: { items: [] } });
  });

  it('with a garbage token: 401 and no cookie; without a token or cookie, the API answers 401', async () => {
    const res = await login(a, `garbage-${randomBytes(8).toString('hex')}`);
    expect(res).toMatchObject({ status: 401, body: { error: 'Unauthorized' }, cookie: undefined });
    expect(await call(a, 'GET', '/api/v1/session')).toMatchObject({ status: 401 });
    expect(await call(a, 'GET', `/api/v1/apps?namespace=${ns}`)).toMatchObject({ status: 401 });
  });

  it('holds on the other replica, which shares the key', async () => {
    const { cookie } = await login(a, tokens.reader ?? '');
    const who = await call(b, 'GET', '/api/v1/session', { cookie: cookie ?? '' });
    expect(who).toMatchObject({ status: 200, body: { user: { username: userOf(ns, 'reader') }, via: 'session' } });
    const promote = await call(b, 'POST', `/api/v1/namespaces/${ns}/apps/none/promote`, {
      cookie: cookie ?? '',
      body: {},
      headers: sameOrigin(b),
    });
    // Past the CSRF rule, the session and RBAC: only the App is missing.
    expect(promote).toMatchObject({ status: 404, body: { message: `App ${ns}/none not found` } });
  });

  it('logout clears the cookie', async () => {
    const { cookie } = await login(a, tokens.reader ?? '');
    const out = await call(a, 'DELETE', '/api/v1/session', {
      cookie: cookie ?? '',
      headers: { 'content-type': 'application/json', ...sameOrigin(a) },
    });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toBe('teal_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict');
    // What the browser sends once it has dropped the cookie.
    expect(await call(a, 'GET', '/api/v1/session', { cookie: out.cookie ?? '' })).toMatchObject({ status: 401 });
  });

  it("a deleted ServiceAccount's session ends at its token's next review: 401, and the cookie cleared", async () => {
    const token = await serviceAccount(ns, 'ephemeral', ['list']);
    tokens.ephemeral = token;
    const { cookie } = await login(a, token);
    expect(await call(a, 'GET', '/api/v1/session', { cookie: cookie ?? '' })).toMatchObject({ status: 200 });
    await clients().core.deleteNamespacedServiceAccount({ namespace: ns, name: 'ephemeral' });
    const ended = await waitFor('the session to end', async () => {
      const res = await call(b, 'GET', `/api/v1/apps?namespace=${ns}`, { cookie: cookie ?? '' });
      return res.status === 401 ? res : undefined;
    });
    expect(ended.body).toMatchObject({ message: "the session's token is no longer valid: log in again" });
    expect(ended.headers.get('set-cookie')).toBe('teal_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict');
  });
});

describe('CSRF', () => {
  it('refuses a state-changing request with the session cookie, 403 naming what is missing; bearer calls work as before', async () => {
    const { cookie } = await login(a, tokens.reader ?? '');
    const promote = `/api/v1/namespaces/${ns}/apps/none/promote`;
    const withCookie = { cookie: cookie ?? '' };

    const noJson = await call(a, 'POST', promote, { ...withCookie, headers: sameOrigin(a) });
    expect(noJson).toMatchObject({
      status: 403,
      body: { error: 'Forbidden', message: expect.stringContaining('needs Content-Type: application/json (got none)') },
    });
    const noOrigin = await call(a, 'POST', promote, { ...withCookie, body: {} });
    expect(noOrigin).toMatchObject({ status: 403 });
    expect(noOrigin.body?.message).toBe(
      `a POST with a session cookie needs an Origin of this host (${a.slice('http://'.length)}) or Sec-Fetch-Site: same-origin (got no Origin, no Sec-Fetch-Site)`,
    );
    const forged = await call(a, 'POST', promote, {
      ...withCookie,
      body: {},
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(forged).toMatchObject({ status: 403, body: { message: expect.stringContaining('"https://evil.example"') } });
    const logout = await call(a, 'DELETE', '/api/v1/session', { ...withCookie, headers: sameOrigin(a) });
    expect(logout).toMatchObject({ status: 403, cookie: undefined });

    // The operator's own page: either header will do; then the App is missing.
    for (const headers of [sameOrigin(a), { 'sec-fetch-site': 'same-origin' }]) {
      expect(await call(a, 'POST', promote, { ...withCookie, body: {}, headers })).toMatchObject({ status: 404 });
    }
    // curl and kubectl teal: a bearer token, no cookie, no content type, no Origin.
    expect(await call(a, 'POST', promote, { token: tokens.reader ?? '' })).toMatchObject({ status: 404 });
  });
});

describe('headers', () => {
  it('a strict Content-Security-Policy, frame-ancestors none, nosniff and no-referrer on every answer', async () => {
    const answers = [
      await call(a, 'GET', '/healthz'),
      await call(a, 'GET', '/metrics'),
      await call(a, 'GET', '/api/v1/apps'),
      await login(a, 'garbage'),
      await call(a, 'GET', '/api/v1/nowhere'),
      await call(a, 'GET', '/nowhere'),
    ];
    for (const { headers } of answers) {
      const csp = (headers.get('content-security-policy') ?? '').split(';');
      expect(csp).toEqual(
        expect.arrayContaining([
          "default-src 'self'",
          "script-src 'self'",
          "style-src 'self'",
          "frame-ancestors 'none'",
          "object-src 'none'",
          "base-uri 'none'",
        ]),
      );
      expect(csp.join(';')).not.toMatch(/unsafe-inline|unsafe-eval|https:/);
      expect(headers.get('x-frame-options')).toBe('DENY');
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});

describe('cost', () => {
  it('a garbage bearer token sent 50 times costs one TokenReview', async () => {
    const garbage = `garbage-${randomBytes(8).toString('hex')}`;
    const before = recorder.count('POST', TOKEN_REVIEWS);
    for (let i = 0; i < 50; i++) {
      expect(await call(a, 'GET', `/api/v1/apps?namespace=${ns}`, { token: garbage })).toMatchObject({ status: 401 });
    }
    expect(recorder.count('POST', TOKEN_REVIEWS) - before).toBe(1);
  });

  it(`50 bad logins from one address cost at most ${LOGIN_FAILURES.max} TokenReviews; the rest wait, 429 with Retry-After`, async () => {
    const before = recorder.count('POST', TOKEN_REVIEWS);
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await login(b, `garbage-${i}-${randomBytes(8).toString('hex')}`);
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    const reviews = recorder.count('POST', TOKEN_REVIEWS) - before;
    console.log(`50 bad logins: ${reviews} TokenReviews, answers ${statuses.join(',')}`);
    expect(reviews).toBeLessThanOrEqual(LOGIN_FAILURES.max);
    expect(statuses.filter((s) => s === 401)).toHaveLength(LOGIN_FAILURES.max);
    expect(statuses.filter((s) => s === 429)).toHaveLength(50 - LOGIN_FAILURES.max);
    // Locked out: a good token waits too, so guessing cannot go on between good logins.
    expect(await login(b, tokens.reader ?? '')).toMatchObject({ status: 429, cookie: undefined });

    const metrics = await (await fetch(`${b}/metrics`)).text();
    expect(metrics).toContain(`teal_dashboard_logins_total{method="token",result="bad_token"} ${LOGIN_FAILURES.max}`);
    expect(metrics).toContain(
      `teal_dashboard_logins_total{method="token",result="rate_limited"} ${51 - LOGIN_FAILURES.max}`,
    );
  });
});

describe('the key', () => {
  it('an operator given a key file under 32 bytes refuses to start, naming the flag and how to make one', async () => {
    const short = join(root, 'short-key');
    await writeFile(short, 'too-short\n');
    const main = new URL('../../src/main.ts', import.meta.url).pathname;
    const args = ['--kubeconfig', inject('kubeconfig'), '--namespace', ns, '--leader-elect=false'];
    const failed = await promisify(execFile)(process.execPath, [
      main,
      ...args,
      '--http-addr',
      '127.0.0.1:0',
      '--session-key-file',
      short,
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code?: number; stderr?: string }) => ({ code: err.code, stderr: err.stderr ?? '' }),
    );
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain(
      `--session-key-file ${short}: the session key must hold at least 32 bytes (it holds 9); make one with \`openssl rand -base64 32\``,
    );
  });

  it('each replica says in its log that the key of --session-key-file seals the sessions', () => {
    for (const o of operators) expect(o.logs()).toContain('sessions: sealed with the key of --session-key-file');
  });
});

describe('secrets', () => {
  it('no token and no session cookie reaches a log or a metric', async () => {
    expect(cookies.length).toBeGreaterThan(0);
    const metrics = await (await fetch(`${a}/metrics`)).text();
    expect(metrics).toMatch(/teal_dashboard_logins_total\{method="token",result="ok"\} [1-9]/);
    for (const text of [...operators.map((o) => o.logs()), metrics]) {
      for (const token of Object.values(tokens)) expect(text).not.toContain(token);
      for (const cookie of cookies) expect(text).not.toContain(cookie);
    }
  });
});
