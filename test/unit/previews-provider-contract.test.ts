// Contract tests of the GitHub, GitLab and Bitbucket Cloud clients against a
// loopback stand-in (test/support/provider-fake.ts) that answers with the
// shapes the providers document and records every request: method, path,
// query, auth scheme, If-None-Match. Not real servers: they show that Teal asks
// as the docs say and reads what the docs show (Gitea runs against a real
// server in test/e2e/previews-gitea-client.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { type HostDeps, type HostSpec, previewHost } from '../../src/previews/providers/index.ts';
import { pollListing } from '../../src/previews/providers/listing.ts';
import { previewCommentMarker } from '../../src/previews/pull-request.ts';
import { type FakeHost, fakeHost, on, type Route, recordingMetrics } from '../support/provider-fake.ts';
import { bitbucketPull, githubPull, gitlabMr, SHA1, SHA2 } from '../support/provider-payloads.ts';

const TOKEN = 'ghp_s3cretTOKENvalue';
let hosts: FakeHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  hosts = [];
});

async function serve(...routes: Route[]) {
  const host = await fakeHost(routes);
  hosts.push(host);
  return host;
}

function client(host: FakeHost, spec: Partial<HostSpec> & Pick<HostSpec, 'provider'>, deps: HostDeps = {}) {
  const made = previewHost(
    { apiUrl: host.base, repository: 'acme/shop', token: TOKEN, appKey: 'team/web', ...spec },
    { timeoutMs: 10_000, ...deps },
  );
  if (!made.ok) throw new Error(made.message);
  return made.value;
}

/** Pages of items behind a Link header, as GitHub, GitLab and Gitea page. */
function linkPaged(path: string, pages: unknown[][]): Route {
  return on('GET', path, (req, base) => {
    const page = Number(req.query.get('page') ?? '1');
    const link: Record<string, string> =
      page < pages.length ? { link: `<${base}${path}?page=${page + 1}>; rel="next"` } : {};
    return { body: pages[page - 1] ?? [], headers: { 'x-ratelimit-remaining': '4990', ...link } };
  });
}

describe('GitHub (contract)', () => {
  it('lists every page with a Bearer token and GitHub headers; the second poll is all 304s and gives the same list', async () => {
    const pulls = Array.from({ length: 3 }, (_, i) => githubPull({ number: i + 1 }));
    const host = await serve(linkPaged('/repos/acme/shop/pulls', [pulls.slice(0, 2), pulls.slice(2)]));
    const rec = recordingMetrics();
    const github = client(host, { provider: 'github' }, { metrics: rec.metrics });
    const first = await github.listOpen();
    expect(first.ok && first.value.map((p) => [p.number, p.headRef])).toEqual([
      [1, 'refs/pull/1/head'],
      [2, 'refs/pull/2/head'],
      [3, 'refs/pull/3/head'],
    ]);
    const [req] = host.requests;
    expect(req?.query.get('state')).toBe('open');
    expect(req?.query.get('per_page')).toBe('100');
    expect(req?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req?.headers.accept).toBe('application/vnd.github+json');
    expect(req?.headers['x-github-api-version']).toBe('2022-11-28');
    expect(req?.headers['if-none-match']).toBeUndefined();

    const second = await github.listOpen();
    expect(second).toEqual(first);
    expect(host.requests.slice(2).map((r) => r.headers['if-none-match'])).toEqual([
      expect.any(String),
      expect.any(String),
    ]);
    expect(host.notModified).toBe(2);
    expect(rec.codes).toEqual(['github 200', 'github 200', 'github 304', 'github 304']);
    expect(rec.remaining).toContain(4990);
  });

  it('a primary rate limit (403, remaining 0): RateLimited until the reset, and nothing is sent before it', async () => {
    const reset = Math.floor(Date.now() / 1000) + 900;
    const limited = { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) };
    const host = await serve(
      on('GET', '/repos/acme/shop/pulls', () => ({
        status: 403,
        headers: limited,
        body: { message: 'API rate limit exceeded' },
      })),
    );
    const github = client(host, { provider: 'github' });
    const first = await github.listOpen();
    expect(first).toEqual({
      ok: false,
      failure: {
        reason: 'RateLimited',
        status: 403,
        message: `github: listing pull requests: HTTP 403, rate limited until ${new Date(reset * 1000).toISOString()}`,
        retryAt: new Date(reset * 1000).toISOString(),
      },
    });
    const again = await github.setStatus(SHA1, { state: 'pending', description: 'building' });
    expect(again.ok || again.failure.reason).toBe('RateLimited');
    expect(host.requests).toHaveLength(1);
    expect(github.notBefore()).toBe(reset * 1000);
  });

  it('a secondary rate limit told only in the body: RateLimited for at least a minute', async () => {
    const body = {
      message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
    };
    const host = await serve(on('POST', `/repos/acme/shop/statuses/${SHA1}`, () => ({ status: 403, body })));
    const github = client(host, { provider: 'github' });
    const before = Date.now();
    const result = await github.setStatus(SHA1, { state: 'pending', description: 'building' });
    expect(result.ok || result.failure.reason).toBe('RateLimited');
    expect(github.notBefore()).toBeGreaterThanOrEqual(before + 60_000);
  });

  it('sets the teal/preview status with the description cut to 140 characters', async () => {
    const host = await serve(on('POST', `/repos/acme/shop/statuses/${SHA1}`, () => ({ status: 201, body: { id: 1 } })));
    const github = client(host, { provider: 'github' });
    const status = { state: 'success' as const, description: 'd'.repeat(200), targetUrl: 'https://pr-1.example.com/' };
    expect(await github.setStatus(SHA1, status)).toEqual({ ok: true, value: undefined });
    const body = host.requests[0]?.body as Record<string, string>;
    expect(body).toEqual({
      state: 'success',
      description: `${'d'.repeat(139)}…`,
      context: 'teal/preview',
      target_url: 'https://pr-1.example.com/',
    });
  });

  it('removes a label by name (encoded); one not on the pull request (404) is done', async () => {
    const host = await serve(on('DELETE', '/repos/acme/shop/issues/7/labels/ok%20to%20preview', () => ({ body: [] })));
    const github = client(host, { provider: 'github' });
    expect(await github.removeLabel(7, 'ok to preview')).toEqual({ ok: true, value: undefined });
    expect(await github.removeLabel(8, 'ok to preview')).toEqual({ ok: true, value: undefined });
    expect(host.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'DELETE /repos/acme/shop/issues/7/labels/ok%20to%20preview',
      'DELETE /repos/acme/shop/issues/8/labels/ok%20to%20preview',
    ]);
  });

  it('one comment: created once, edited in place, left alone when unchanged, found again after a restart', async () => {
    const marker = previewCommentMarker('github', 'team/web');
    const comments: { id: number; body: string; user: { login: string } }[] = [
      { id: 10, body: `${marker}\nforged`, user: { login: 'mallory' } },
    ];
    const host = await serve(
      on('GET', '/user', () => ({ body: { login: 'teal-bot', id: 5 } })),
      on('GET', '/repos/acme/shop/issues/7/comments', () => ({ body: comments })),
      on('POST', '/repos/acme/shop/issues/7/comments', (req) => {
        const c = { id: 100 + comments.length, body: (req.body as { body: string }).body, user: { login: 'teal-bot' } };
        comments.push(c);
        return { status: 201, body: c };
      }),
      (req) => {
        const match = /^\/repos\/acme\/shop\/issues\/comments\/(\d+)$/.exec(req.path);
        const c = comments.find((x) => String(x.id) === match?.[1]);
        if (req.method !== 'PATCH' || !c) return undefined;
        c.body = (req.body as { body: string }).body;
        return { body: c };
      },
    );
    const github = client(host, { provider: 'github' });
    expect(await Promise.all([github.upsertComment(7, 'building'), github.upsertComment(7, 'building')])).toEqual([
      { ok: true, value: 'created' },
      { ok: true, value: 'unchanged' },
    ]);
    expect(await github.upsertComment(7, 'ready')).toEqual({ ok: true, value: 'edited' });
    const restarted = client(host, { provider: 'github' });
    expect(await restarted.upsertComment(7, 'ready again')).toEqual({ ok: true, value: 'edited' });
    expect(comments.map((c) => [c.id, c.user.login, c.body])).toEqual([
      [10, 'mallory', `${marker}\nforged`],
      [101, 'teal-bot', `${marker}\nready again`],
    ]);
    expect(host.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('permission: the collaborator permission; a user GitHub does not know has none', async () => {
    const host = await serve(
      on('GET', '/repos/acme/shop/collaborators/alice/permission', () => ({
        body: { permission: 'write', role_name: 'maintain', user: { login: 'alice' } },
      })),
    );
    const github = client(host, { provider: 'github' });
    expect(await github.permission('alice')).toEqual({ ok: true, value: 'write' });
    expect(await github.permission('nobody')).toEqual({ ok: true, value: 'none' });
  });

  it('who added a label last, over every page of the issue events', async () => {
    const at = (h: number) => `2026-11-21T${String(h).padStart(2, '0')}:00:00Z`;
    const ev = (event: string, login: string, h: number) => ({
      id: h,
      event,
      actor: { login },
      label: { name: 'preview', color: 'fff' },
      created_at: at(h),
    });
    const host = await serve(
      linkPaged('/repos/acme/shop/issues/7/events', [
        [ev('labeled', 'mallory', 1), ev('unlabeled', 'alice', 2)],
        [ev('labeled', 'alice', 3)],
      ]),
    );
    const github = client(host, { provider: 'github' });
    expect(await github.labelAddedBy(7, 'preview')).toEqual({ ok: true, value: { by: 'alice', at: at(3) } });
  });

  it('a redirect to another host is not followed: the token never reaches it', async () => {
    const elsewhere = await serve(() => ({ body: [] }));
    const host = await serve(() => ({ status: 301, headers: { location: `${elsewhere.base}/repos/acme/shop/pulls` } }));
    const github = client(host, { provider: 'github' });
    const result = await github.listOpen();
    expect(result).toEqual({
      ok: false,
      failure: { reason: 'NotFound', message: 'github: listing pull requests: HTTP 301 to another host, not followed' },
    });
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('a redirect on the same host (a renamed repository) is followed', async () => {
    const host = await serve(
      on('GET', '/repos/acme/shop/pulls', (_req, base) => ({
        status: 301,
        headers: { location: `${base}/repositories/9/pulls` },
      })),
      on('GET', '/repositories/9/pulls', () => ({ body: [githubPull()] })),
    );
    const result = await client(host, { provider: 'github' }).listOpen();
    expect(result.ok && result.value.length).toBe(1);
    expect(host.requests[1]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('a failure names the operation and status only: no token, no body', async () => {
    const host = await serve(() => ({ status: 500, body: { message: `internal error near ${TOKEN}` } }));
    const result = await client(host, { provider: 'github' }).listOpen();
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(result.ok || result.failure).toMatchObject({
      reason: 'Unavailable',
      message: 'github: listing pull requests: HTTP 500',
    });
  });
});

describe('GitLab (contract)', () => {
  const project = '/projects/group%2Fsub%2Fshop';
  const spec = { provider: 'gitlab' as const, repository: 'group/sub/shop' };

  it('lists merge requests of a nested project, the path one encoded segment, with a Bearer token', async () => {
    const host = await serve(linkPaged(`${project}/merge_requests`, [[gitlabMr()]]));
    const gitlab = client(host, spec);
    const result = await gitlab.listOpen();
    expect(result.ok && result.value.map((p) => [p.number, p.headRef])).toEqual([
      [133, 'refs/merge-requests/133/head'],
    ]);
    expect(host.requests[0]?.query.get('state')).toBe('opened');
    expect(host.requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    await gitlab.listOpen();
    expect(host.notModified).toBe(1);
  });

  it('sets a status named teal/preview; pending is running; the same state twice (GitLab 400) is done', async () => {
    let posted = 0;
    const host = await serve(
      on('POST', `${project}/statuses/${SHA2}`, () =>
        posted++ === 0
          ? { status: 201, body: { id: 1, status: 'running' } }
          : { status: 400, body: { message: 'Cannot transition status via :run from :running' } },
      ),
    );
    const gitlab = client(host, spec);
    const status = { state: 'pending' as const, description: 'building' };
    expect(await gitlab.setStatus(SHA2, status)).toEqual({ ok: true, value: undefined });
    expect(await gitlab.setStatus(SHA2, status)).toEqual({ ok: true, value: undefined });
    expect(host.requests[0]?.body).toEqual({ state: 'running', description: 'building', name: 'teal/preview' });
  });

  it('permission: the user by name, then the member with inherited access; not a member is none', async () => {
    const host = await serve(
      on('GET', '/users', (req) => ({
        body: req.query.get('username') === 'dev' ? [{ id: 31, username: 'dev' }] : [],
      })),
      on('GET', `${project}/members/all/31`, () => ({ body: { id: 31, username: 'dev', access_level: 30 } })),
    );
    const gitlab = client(host, spec);
    expect(await gitlab.permission('dev')).toEqual({ ok: true, value: 'write' });
    expect(await gitlab.permission('stranger')).toEqual({ ok: true, value: 'none' });
  });

  it("RateLimit-* on a 429: RateLimited until GitLab's reset", async () => {
    const reset = Math.floor(Date.now() / 1000) + 60;
    const headers = { 'ratelimit-remaining': '0', 'ratelimit-reset': String(reset) };
    const host = await serve(() => ({ status: 429, headers, body: { message: 'Retry later' } }));
    const gitlab = client(host, spec);
    const result = await gitlab.listOpen();
    expect(result.ok || [result.failure.reason, result.failure.retryAt]).toEqual([
      'RateLimited',
      new Date(reset * 1000).toISOString(),
    ]);
  });

  it('removes a label with remove_labels on the merge request', async () => {
    const host = await serve(on('PUT', `${project}/merge_requests/133`, () => ({ body: { iid: 133 } })));
    const gitlab = client(host, spec);
    expect(await gitlab.removeLabel(133, 'preview')).toEqual({ ok: true, value: undefined });
    expect(host.requests[0]?.body).toEqual({ remove_labels: 'preview' });
  });

  it('label author from resource label events; notes edited with PUT', async () => {
    const notes = [
      { id: 5, body: `${previewCommentMarker('gitlab', 'team/web')}\nold`, system: false, author: { username: 'bot' } },
    ];
    const host = await serve(
      on('GET', `${project}/merge_requests/133/resource_label_events`, () => ({
        body: [
          { id: 1, action: 'add', label: { id: 2, name: 'preview' }, user: { username: 'lead' }, created_at: 't' },
        ],
      })),
      on('GET', '/user', () => ({ body: { id: 1, username: 'bot' } })),
      on('GET', `${project}/merge_requests/133/notes`, () => ({ body: notes })),
      on('PUT', `${project}/merge_requests/133/notes/5`, () => ({ body: notes[0] })),
    );
    const gitlab = client(host, spec);
    expect(await gitlab.labelAddedBy(133, 'preview')).toEqual({ ok: true, value: { by: 'lead', at: 't' } });
    expect(await gitlab.upsertComment(133, 'new')).toEqual({ ok: true, value: 'edited' });
    expect(host.requests.at(-1)?.body).toEqual({ body: `${previewCommentMarker('gitlab', 'team/web')}\nnew` });
  });
});

describe('Bitbucket Cloud (contract)', () => {
  const repo = '/repositories/acme/shop';

  it("follows the body's next link, resolves each short hash once, and sends user:secret as Basic", async () => {
    const pr = (id: number) => bitbucketPull({ id });
    const host = await serve(
      on('GET', `${repo}/pullrequests`, (req, base) =>
        req.query.get('page') === '2'
          ? { body: { pagelen: 1, page: 2, values: [pr(2)] } }
          : { body: { pagelen: 1, page: 1, values: [pr(1)], next: `${base}${repo}/pullrequests?page=2` } },
      ),
      on('GET', `/repositories/alice/shop/commit/${SHA1.slice(0, 12)}`, () => ({
        body: { hash: SHA1, type: 'commit' },
      })),
    );
    const bitbucket = client(host, { provider: 'bitbucket', token: 'teal-bot:app-password' });
    const result = await bitbucket.listOpen();
    expect(result.ok && result.value.map((p) => [p.number, p.headSha, p.headRef, p.fromFork])).toEqual([
      [1, SHA1, 'refs/heads/feature/checkout', true],
      [2, SHA1, 'refs/heads/feature/checkout', true],
    ]);
    expect(host.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('teal-bot:app-password').toString('base64')}`,
    );
    expect(host.requests.filter((r) => r.path.includes('/commit/'))).toHaveLength(1);
  });

  it('a next link to another host fails the list and is never asked', async () => {
    const elsewhere = await serve(() => ({ body: { values: [] } }));
    const host = await serve(
      on('GET', `${repo}/pullrequests`, () => ({
        body: { values: [], next: `${elsewhere.base}${repo}/pullrequests?page=2` },
      })),
    );
    const result = await client(host, { provider: 'bitbucket' }).listOpen();
    expect(result.ok || result.failure).toEqual({
      reason: 'NotFound',
      message: 'bitbucket: listing pull requests: a link to another host',
    });
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('sets a build status keyed teal-preview with a Bearer access token; labels are unsupported, nothing asked', async () => {
    const host = await serve(
      on('POST', `${repo}/commit/${SHA1}/statuses/build`, () => ({ status: 201, body: { key: 'teal-preview' } })),
    );
    const bitbucket = client(host, { provider: 'bitbucket' });
    expect(await bitbucket.setStatus(SHA1, { state: 'pending', description: 'building' })).toEqual({
      ok: true,
      value: undefined,
    });
    expect(host.requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(host.requests[0]?.body).toEqual({
      key: 'teal-preview',
      name: 'teal/preview',
      state: 'INPROGRESS',
      description: 'building',
      url: `${host.base}/acme/shop`,
    });
    expect((await bitbucket.labelAddedBy(42, 'preview')).ok).toBe(false);
    expect(host.requests).toHaveLength(1);
  });

  it('the comment carries the link-reference marker and is found again by the account id', async () => {
    const marker = previewCommentMarker('bitbucket', 'team/web');
    const values = [{ id: 3, content: { raw: `${marker}\nold` }, user: { account_id: '557058:bot' }, deleted: false }];
    const host = await serve(
      on('GET', '/user', () => ({ body: { account_id: '557058:bot', nickname: 'bot' } })),
      on('GET', `${repo}/pullrequests/42/comments`, () => ({ body: { values } })),
      on('PUT', `${repo}/pullrequests/42/comments/3`, () => ({ body: values[0] })),
    );
    const bitbucket = client(host, { provider: 'bitbucket' });
    expect(await bitbucket.upsertComment(42, 'new')).toEqual({ ok: true, value: 'edited' });
    expect(host.requests.at(-1)?.body).toEqual({ content: { raw: `${marker}\nnew` } });
  });
});

describe('previewHost', () => {
  it('refuses an API URL with userinfo or plain http off loopback, naming the field', () => {
    const spec = { provider: 'github' as const, repository: 'acme/shop', token: TOKEN, appKey: 'team/web' };
    expect(previewHost({ ...spec, apiUrl: 'https://u:p@api.github.com' })).toEqual({
      ok: false,
      message: 'spec.previews.apiURL: must not carry a user or password (the token is a Secret)',
    });
    expect(previewHost({ ...spec, apiUrl: 'http://api.github.com' }).ok).toBe(false);
    expect(previewHost({ ...spec, repository: '../x' }).ok).toBe(false);
    expect(previewHost({ ...spec, token: ' ' }).ok).toBe(false);
  });
});

describe('metrics', () => {
  it("the operator's registry counts provider requests by provider and code and keeps the budget left", async () => {
    const { Metrics } = await import('../../src/controller/metrics.ts');
    const m = new Metrics();
    const host = await serve(linkPaged('/repos/acme/shop/pulls', [[githubPull()]]));
    const github = client(host, { provider: 'github' }, { metrics: m.previewProviders() });
    await github.listOpen();
    await github.listOpen();
    const text = await m.registry.metrics();
    expect(text).toContain('teal_preview_provider_requests_total{provider="github",code="200"} 1');
    expect(text).toContain('teal_preview_provider_requests_total{provider="github",code="304"} 1');
    expect(text).toContain('teal_preview_provider_rate_limit_remaining{provider="github"} 4990');
    expect(text).not.toContain(TOKEN);
  });
});

describe('pollListing (contract)', () => {
  it("GitLab: a fork's approval is pinned to the head pushed before the label, from the merge request versions", async () => {
    const project = '/projects/group%2Fshop';
    const fork = gitlabMr({ iid: 5, source_project_id: 99, labels: ['Preview-OK'], sha: SHA2 });
    const own = gitlabMr({ iid: 6, labels: ['preview-ok'] });
    const host = await serve(
      on('GET', `${project}/merge_requests`, () => ({ body: [fork, own] })),
      on('GET', `${project}/merge_requests/5/resource_label_events`, () => ({
        body: [
          {
            action: 'add',
            label: { name: 'preview-ok' },
            user: { username: 'lead' },
            created_at: '2026-11-21T10:00:00.000Z',
          },
        ],
      })),
      on('GET', '/users', () => ({ body: [{ id: 7, username: 'lead' }] })),
      on('GET', `${project}/members/all/7`, () => ({ body: { access_level: 40 } })),
      // Newest first, as GitLab lists them: the push after the label is not what was approved.
      on('GET', `${project}/merge_requests/5/versions`, () => ({
        body: [
          { id: 3, head_commit_sha: SHA2, created_at: '2026-11-21T10:05:00.000Z' },
          { id: 2, head_commit_sha: SHA1, created_at: '2026-11-21T09:00:00.000Z' },
          { id: 1, head_commit_sha: 'a'.repeat(40), created_at: '2026-11-21T08:00:00.000Z' },
        ],
      })),
    );
    const gitlab = client(host, { provider: 'gitlab', repository: 'group/shop' });
    const listing = await pollListing(gitlab, 'preview-ok');
    expect(listing.ok && listing.approvals).toEqual([
      { number: 5, label: 'preview-ok', by: 'lead', at: '2026-11-21T10:00:00.000Z', permission: 'admin', sha: SHA1 },
    ]);
    expect(listing.ok && listing.pullRequests.map((p) => p.number)).toEqual([5, 6]);
    // Not a fork: no approval asked for.
    expect(host.requests.some((r) => r.path.includes('/merge_requests/6/'))).toBe(false);
  });

  it("GitHub: the approval carries the head seen at this poll; a label taken off gives none; an error is the listing's", async () => {
    const fork = (n: number) => githubPull({ number: n, labels: [{ name: 'ok-to-preview' }] });
    const host = await serve(
      on('GET', '/repos/acme/shop/pulls', () => ({ body: [fork(1), fork(2)] })),
      on('GET', '/repos/acme/shop/issues/1/events', () => ({
        body: [{ event: 'labeled', actor: { login: 'eve' }, label: { name: 'ok-to-preview' }, created_at: 't1' }],
      })),
      on('GET', '/repos/acme/shop/issues/2/events', () => ({
        body: [
          { event: 'labeled', actor: { login: 'lead' }, label: { name: 'ok-to-preview' }, created_at: 't1' },
          { event: 'unlabeled', actor: { login: 'lead' }, label: { name: 'ok-to-preview' }, created_at: 't2' },
        ],
      })),
      on('GET', '/repos/acme/shop/collaborators/eve/permission', () => ({ body: { permission: 'read' } })),
    );
    const listing = await pollListing(client(host, { provider: 'github' }), 'ok-to-preview');
    expect(listing.ok && listing.approvals).toEqual([
      { number: 1, label: 'ok-to-preview', by: 'eve', at: 't1', permission: 'read', sha: SHA1 },
    ]);
    await host.close();
    hosts = hosts.filter((h) => h !== host);
    const down = await pollListing(client(host, { provider: 'github' }), 'ok-to-preview');
    expect(down.ok || down.error.reason).toBe('Unavailable');
  });
});

describe('backoff (contract)', () => {
  it('after a 502, a request within the backoff fails at once as Unavailable, unsent; after it, it goes', async () => {
    let now = Date.parse('2026-11-27T06:00:00Z');
    let answers = 0;
    const host = await serve(() => (answers++ === 0 ? { status: 502, body: 'bad gateway' } : { body: [] }));
    const github = client(host, { provider: 'github' }, { now: () => now, random: () => 0 });
    expect((await github.listOpen()).ok).toBe(false);
    const waiting = await github.listOpen();
    expect(waiting).toEqual({
      ok: false,
      failure: {
        reason: 'Unavailable',
        message: 'github: listing pull requests: backing off after errors until 2026-11-27T06:00:01.000Z',
        retryAt: '2026-11-27T06:00:01.000Z',
      },
    });
    expect(host.requests).toHaveLength(1);
    now += 1000;
    expect(await github.listOpen()).toEqual({ ok: true, value: [] });
  });
});
