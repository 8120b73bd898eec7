import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { errorCodes, type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { isFullRef, type Provider, parseDelivery, verifySignature } from '../../src/api/webhook-providers.ts';
import {
  type Candidate,
  Deliveries,
  failedDelivery,
  RawBody,
  RecentIds,
  readWebhookSecretFile,
  redactUrl,
  secretFromFile,
  type WebhookHint,
  type WebhookOptions,
  type WebhookResult,
  webhookSettings,
  webhooksPlugin,
} from '../../src/api/webhooks.ts';
import { safeEqual, signSha256 } from '../../src/app/signature.ts';

// --- payloads ---------------------------------------------------------------

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/webhooks/${name}`, import.meta.url));

const githubDefinitions = z.array(z.object({ name: z.string(), examples: z.array(z.record(z.string(), z.unknown())) }));
const githubExamples = githubDefinitions.parse(
  JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@octokit/webhooks-examples'), 'utf8')),
);

function githubExample(event: string, pick: (example: Record<string, unknown>) => boolean): Record<string, unknown> {
  const example = githubExamples.find((d) => d.name === event)?.examples.find(pick);
  if (example === undefined) throw new Error(`no GitHub ${event} example`);
  return example;
}

const githubPush = githubExample('push', (e) => e.ref === 'refs/heads/master' && e.deleted === false);
const githubPushBody = Buffer.from(JSON.stringify(githubPush));
const githubRepoPing = Buffer.from(JSON.stringify(githubExample('ping', (e) => 'repository' in e)));
const githubOrgPing = Buffer.from(JSON.stringify(githubExample('ping', (e) => !('repository' in e))));
const githubIssues = Buffer.from(JSON.stringify(githubExample('issues', (e) => 'repository' in e)));

// --- a fake App registry, matching as the operator will -----------------------

const SECRET = Buffer.from('s3cret-app-key');
const OTHER_SECRET = Buffer.from('another-apps-key');
const GLOBAL = Buffer.from('global-hook-key');

interface FakeApp {
  namespace: string;
  name: string;
  repo: string;
  ref: string;
  secret?: Buffer;
}

// Stands in for normalizeRepoUrl from src/git/url.ts: host and path, lowercased, no .git.
function normalize(url: string): string {
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(url);
  const key = scp ? `${scp[1]}/${scp[2]}` : `${new URL(url).hostname}${new URL(url).pathname}`;
  return key
    .toLowerCase()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

interface LogLine {
  level: string;
  obj: object;
  msg: string | undefined;
}

const servers: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function harness(apps: FakeApp[], extra: Partial<WebhookOptions> = {}) {
  const onPush = vi.fn(async (_matched: Candidate[], _hint: WebhookHint) => {});
  const candidates = vi.fn(async (hint: WebhookHint): Promise<Candidate[]> => {
    const urls = new Set(hint.repoUrls.map(normalize));
    return apps
      .filter((a) => urls.has(normalize(a.repo)) && (hint.refs.length === 0 || hint.refs.includes(a.ref)))
      .map((a) => ({ namespace: a.namespace, name: a.name, secret: a.secret }));
  });
  const results: [Provider, WebhookResult][] = [];
  const logs: LogLine[] = [];
  const line = (level: string) => (obj: object, msg?: string) => {
    logs.push({ level, obj, msg });
  };
  const server = Fastify();
  servers.push(server);
  server.register(webhooksPlugin, {
    candidates,
    onPush,
    onResult: (provider, result) => results.push([provider, result]),
    logger: { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') },
    ...extra,
  });
  const post = (provider: string, body: Buffer | string, headers: Record<string, string>) =>
    server.inject({
      method: 'POST',
      url: `/webhooks/${provider}`,
      payload: body,
      headers: { 'content-type': 'application/json', ...headers },
    });
  return { server, onPush, candidates, results, logs, post };
}

function githubHeaders(body: Buffer | string, secret: Buffer, event = 'push', delivery = crypto.randomUUID()) {
  return { 'x-github-event': event, 'x-github-delivery': delivery, 'x-hub-signature-256': signSha256(body, secret) };
}

const helloWorld: FakeApp = {
  namespace: 'shop',
  name: 'web',
  repo: 'git@github.com:Codertocat/Hello-World.git',
  ref: 'refs/heads/master',
  secret: SECRET,
};

// --- signatures ---------------------------------------------------------------

describe('signature verification', () => {
  const vectorSecret = "It's a Secret to Everybody";
  const vectorBody = Buffer.from('Hello, World!');
  const vectorSignature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

  it("accepts GitHub's documented test vector", () => {
    expect(signSha256(vectorBody, vectorSecret)).toBe(vectorSignature);
    expect(verifySignature('github', { 'x-hub-signature-256': vectorSignature }, vectorBody, vectorSecret)).toBe(true);
    expect(
      verifySignature('github', { 'x-hub-signature-256': vectorSignature.toUpperCase() }, vectorBody, vectorSecret),
    ).toBe(false);
  });

  it('rejects another body, another secret, a truncated or SHA-1 signature', () => {
    const headers = { 'x-hub-signature-256': vectorSignature };
    expect(verifySignature('github', headers, Buffer.from('Hello, World?'), vectorSecret)).toBe(false);
    expect(verifySignature('github', headers, vectorBody, 'another secret')).toBe(false);
    expect(
      verifySignature('github', { 'x-hub-signature-256': vectorSignature.slice(0, -2) }, vectorBody, vectorSecret),
    ).toBe(false);
    const sha1 = 'sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59';
    expect(verifySignature('github', { 'x-hub-signature': sha1 }, vectorBody, vectorSecret)).toBe(false);
    expect(verifySignature('github', headers, vectorBody, '')).toBe(false);
  });

  it('uses each provider’s header', () => {
    const hex = signSha256(vectorBody, vectorSecret).slice('sha256='.length);
    expect(verifySignature('gitea', { 'x-gitea-signature': hex }, vectorBody, vectorSecret)).toBe(true);
    expect(verifySignature('gitea', { 'x-gitea-signature': `sha256=${hex}` }, vectorBody, vectorSecret)).toBe(false);
    expect(verifySignature('bitbucket', { 'x-hub-signature': vectorSignature }, vectorBody, vectorSecret)).toBe(true);
    expect(verifySignature('generic', { 'x-signature': vectorSignature }, vectorBody, vectorSecret)).toBe(true);
    expect(verifySignature('generic', { 'x-hub-signature-256': vectorSignature }, vectorBody, vectorSecret)).toBe(
      false,
    );
    expect(verifySignature('gitlab', { 'x-gitlab-token': vectorSecret }, vectorBody, vectorSecret)).toBe(true);
    expect(verifySignature('gitlab', { 'x-gitlab-token': `${vectorSecret}!` }, vectorBody, vectorSecret)).toBe(false);
    expect(verifySignature('gitlab', {}, vectorBody, vectorSecret)).toBe(false);
  });

  it('compares buffers of different lengths without throwing', () => {
    expect(safeEqual(Buffer.from('abc'), Buffer.from('abcd'))).toBe(false);
    expect(safeEqual(Buffer.from('abc'), Buffer.from('abc'))).toBe(true);
  });
});

describe('parsing', () => {
  it('accepts full refs with slashes and rejects what git would not', () => {
    for (const ref of ['refs/heads/main', 'refs/heads/feature/a/b', 'refs/tags/v1.2.3', 'refs/heads/release/2024.06']) {
      expect(isFullRef(ref), ref).toBe(true);
    }
    for (const ref of [
      'main',
      'heads/main',
      '--upload-pack=touch /tmp/x',
      'refs/heads/a..b',
      'refs/heads/a b',
      'refs/heads/x.lock',
      'refs/heads/.hidden',
      'refs/heads//double',
      'refs/heads/trailing/',
      'refs/heads/a@{1}',
      'refs/heads/a\nb',
    ]) {
      expect(isFullRef(ref), ref).toBe(false);
    }
  });

  it('gives every repository URL in the GitLab payload and never a SHA', () => {
    const hint = parseDelivery('gitlab', { 'x-gitlab-event': 'Push Hook' }, fixture('gitlab-push.json'), 'json');
    expect(hint.kind).toBe('push');
    expect(hint.refs).toEqual(['refs/heads/release/2024.06']);
    expect(hint.repoUrls).toEqual(
      expect.arrayContaining([
        'http://example.com/mike/diaspora.git',
        'git@example.com:mike/diaspora.git',
        'http://example.com/mike/diaspora',
      ]),
    );
    expect(JSON.stringify(hint)).not.toContain('da1560886d4f094c3e6c9ef40349f7d38b5d27d7');
  });

  it('reads every ref a Bitbucket Server push changed', () => {
    const hint = parseDelivery(
      'bitbucket',
      { 'x-event-key': 'repo:refs_changed', 'x-request-id': 'r-1' },
      fixture('bitbucket-server-refs-changed.json'),
      'json',
    );
    expect(hint).toEqual({
      kind: 'push',
      event: 'repo:refs_changed',
      deliveryId: 'r-1',
      repoUrls: [
        'ssh://git@bitbucket.example.com:7999/myproject/test-repo.git',
        'https://bitbucket.example.com/scm/myproject/test-repo.git',
      ],
      refs: ['refs/heads/feature/PROJ-42-login-form', 'refs/tags/v1.4.0'],
    });
  });

  it('remembers IDs up to a bound, least recently seen first out', () => {
    const ids = new RecentIds(2);
    expect(ids.checkAndAdd('a')).toBe(false);
    expect(ids.checkAndAdd('b')).toBe(false);
    expect(ids.checkAndAdd('a')).toBe(true);
    expect(ids.checkAndAdd('c')).toBe(false);
    expect(ids.size).toBe(2);
    expect(ids.checkAndAdd('a')).toBe(true);
    expect(ids.checkAndAdd('b')).toBe(false);
  });

  it('keeps credentials out of logged URLs', () => {
    expect(redactUrl('https://user:tok3n@git.example.com/team/shop.git?private_token=x')).toBe(
      'https://git.example.com/team/shop.git',
    );
    expect(redactUrl('git@github.com:a/b.git')).toBe('git@github.com:a/b.git');
  });
});

// --- providers end to end -------------------------------------------------------

describe('GitHub', () => {
  it('accepts a real push example signed with the App secret', async () => {
    const other: FakeApp = { ...helloWorld, namespace: 'shop', name: 'admin', secret: OTHER_SECRET };
    const otherBranch: FakeApp = { ...helloWorld, name: 'staging', ref: 'refs/heads/staging' };
    const h = harness([helloWorld, other, otherBranch]);
    const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['shop/web'] });
    expect(h.onPush).toHaveBeenCalledTimes(1);
    const [matched, hint] = h.onPush.mock.calls[0] ?? [];
    expect(matched?.map((c) => c.name)).toEqual(['web']);
    expect(hint).toMatchObject({ provider: 'github', kind: 'push', event: 'push', refs: ['refs/heads/master'] });
    expect(hint?.repoUrls).toEqual(
      expect.arrayContaining([
        'https://github.com/Codertocat/Hello-World.git',
        'git@github.com:Codertocat/Hello-World.git',
        'https://github.com/Codertocat/Hello-World',
      ]),
    );
    expect(JSON.stringify(hint)).not.toContain(String(githubPush.after));
    expect(h.results).toEqual([['github', 'accepted']]);
  });

  it('answers a ping that verifies with an App secret of that repository', async () => {
    const app: FakeApp = { ...helloWorld, repo: 'https://github.com/Octocoders/Hello-World' };
    const h = harness([app]);
    const ok = await h.post('github', githubRepoPing, githubHeaders(githubRepoPing, SECRET, 'ping'));
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ ping: true });
    const bad = await h.post('github', githubRepoPing, githubHeaders(githubRepoPing, OTHER_SECRET, 'ping'));
    expect(bad.statusCode).toBe(401);
    expect(h.onPush).not.toHaveBeenCalled();
  });

  it('answers an organisation ping only with the global secret', async () => {
    const withGlobal = harness([helloWorld], { globalSecret: GLOBAL });
    const ok = await withGlobal.post('github', githubOrgPing, githubHeaders(githubOrgPing, GLOBAL, 'ping'));
    expect(ok.statusCode).toBe(200);
    expect(withGlobal.candidates).not.toHaveBeenCalled();
    const without = harness([helloWorld]);
    const no = await without.post('github', githubOrgPing, githubHeaders(githubOrgPing, SECRET, 'ping'));
    expect(no.statusCode).toBe(401);
  });

  it('ignores other events that verify', async () => {
    const app: FakeApp = { ...helloWorld, repo: 'https://github.com/Codertocat/Hello-World' };
    const h = harness([app]);
    const res = await h.post('github', githubIssues, githubHeaders(githubIssues, SECRET, 'issues'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ignored: 'issues' });
    expect(h.onPush).not.toHaveBeenCalled();
    expect(h.results).toEqual([['github', 'ignored']]);
  });

  it('verifies a form-encoded payload over the raw form bytes', async () => {
    const form = Buffer.from(`payload=${encodeURIComponent(githubPushBody.toString())}`);
    const h = harness([helloWorld]);
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const ok = await h.post('github', form, { ...githubHeaders(form, SECRET), ...headers });
    expect(ok.statusCode).toBe(202);
    expect(ok.json()).toEqual({ matched: ['shop/web'] });
    // A signature over the JSON inside the form is not one over what was received.
    const bad = await h.post('github', form, { ...githubHeaders(githubPushBody, SECRET), ...headers });
    expect(bad.statusCode).toBe(401);
    expect(h.onPush).toHaveBeenCalledTimes(1);
  });

  it('verifies the bytes received, not a re-serialisation of them', async () => {
    const h = harness([helloWorld]);
    const pretty = Buffer.from(JSON.stringify(githubPush, null, 2));
    const res = await h.post('github', pretty, githubHeaders(githubPushBody, SECRET));
    expect(res.statusCode).toBe(401);
    expect(h.onPush).not.toHaveBeenCalled();
  });
});

describe('GitLab', () => {
  const app: FakeApp = {
    namespace: 'mike',
    name: 'diaspora',
    repo: 'https://EXAMPLE.com/mike/diaspora',
    ref: 'refs/heads/release/2024.06',
    secret: SECRET,
  };
  const body = fixture('gitlab-push.json');

  it('accepts a push with the App token, on a branch with slashes', async () => {
    const h = harness([app, { ...app, name: 'release', ref: 'refs/heads/release' }]);
    const res = await h.post('gitlab', body, {
      'x-gitlab-event': 'Push Hook',
      'x-gitlab-event-uuid': 'a3b1c2d4-0000-4000-8000-000000000001',
      'x-gitlab-token': SECRET.toString(),
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['mike/diaspora'] });
  });

  it('treats a system hook push as a push', async () => {
    const h = harness([app]);
    const res = await h.post('gitlab', body, { 'x-gitlab-event': 'System Hook', 'x-gitlab-token': SECRET.toString() });
    expect(res.statusCode).toBe(202);
  });

  it('rejects a wrong token', async () => {
    const h = harness([app]);
    const res = await h.post('gitlab', body, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'guess' });
    expect(res.statusCode).toBe(401);
    expect(h.onPush).not.toHaveBeenCalled();
  });
});

describe('Gitea', () => {
  const body = fixture('gitea-push.json');
  const app: FakeApp = {
    namespace: 'gitea',
    name: 'webhooks',
    repo: 'ssh://gitea@localhost:2222/gitea/webhooks.git',
    ref: 'refs/heads/feature/new-ui',
    secret: SECRET,
  };
  const headers = (secret: Buffer) => ({
    'x-gitea-event': 'push',
    'x-gitea-delivery': 'f6266f16-1bf3-46a5-9ea4-602e06ead473',
    'x-gitea-signature': signSha256(body, secret).slice('sha256='.length),
  });

  it('accepts a push signed with X-Gitea-Signature', async () => {
    const h = harness([app]);
    const res = await h.post('gitea', body, headers(SECRET));
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['gitea/webhooks'] });
  });

  it('rejects a bad signature', async () => {
    const h = harness([app]);
    const res = await h.post('gitea', body, headers(OTHER_SECRET));
    expect(res.statusCode).toBe(401);
    expect(h.onPush).not.toHaveBeenCalled();
  });

  it('only takes JSON', async () => {
    const h = harness([app]);
    const form = Buffer.from(`payload=${encodeURIComponent(body.toString())}`);
    const res = await h.post('gitea', form, {
      ...headers(SECRET),
      'x-gitea-signature': signSha256(form, SECRET).slice(7),
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(res.statusCode).toBe(400);
  });
});

describe('Bitbucket Server', () => {
  const body = fixture('bitbucket-server-refs-changed.json');
  const app: FakeApp = {
    namespace: 'proj',
    name: 'login',
    repo: 'https://bitbucket.example.com/scm/myproject/test-repo.git',
    ref: 'refs/heads/feature/PROJ-42-login-form',
    secret: SECRET,
  };

  it('accepts repo:refs_changed and matches the branch with slashes exactly', async () => {
    const h = harness([app, { ...app, name: 'feature', ref: 'refs/heads/feature' }]);
    const res = await h.post('bitbucket', body, {
      'x-event-key': 'repo:refs_changed',
      'x-request-id': '0d4d9b41-63b0-4a7e-a1b8-3b3f2d4c5e6f',
      'x-hub-signature': signSha256(body, SECRET),
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['proj/login'] });
  });

  it('answers diagnostics:ping signed with the global secret', async () => {
    const ping = fixture('bitbucket-server-ping.json');
    const h = harness([app], { globalSecret: GLOBAL });
    const res = await h.post('bitbucket', ping, {
      'x-event-key': 'diagnostics:ping',
      'x-hub-signature': signSha256(ping, GLOBAL),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ping: true });
  });
});

describe('generic', () => {
  const body = fixture('generic-push.json');
  const app: FakeApp = {
    namespace: 'team',
    name: 'shop',
    repo: 'git@git.example.com:team/shop.git',
    ref: 'refs/heads/feature/cart/v2',
    secret: SECRET,
  };

  it('is handled without fastify: Deliveries answers and counts each delivery', async () => {
    const pushed: string[][] = [];
    const deliveries = new Deliveries(
      {
        candidates: async () => [{ namespace: app.namespace, name: app.name, secret: app.secret }],
        onPush: async (matched) => void pushed.push(matched.map((c) => `${c.namespace}/${c.name}`)),
      },
      undefined,
      10,
    );
    const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    const deliver = (provider: string, signedWith: Buffer, id: string) =>
      deliveries.handle(
        {
          provider,
          headers: {
            'content-type': 'application/json',
            'x-signature': signSha256(body, signedWith),
            'x-delivery-id': id,
          },
          body: new RawBody(body, 'json'),
        },
        silent,
      );
    expect(await deliver('svn', SECRET, 'd-0')).toEqual({
      status: 404,
      body: { error: 'not_found', message: 'unknown webhook provider' },
    });
    expect(await deliver('generic', Buffer.from('wrong'), 'd-1')).toMatchObject({
      status: 401,
      result: 'unauthorized',
    });
    expect(await deliver('generic', SECRET, 'd-1')).toEqual({
      status: 202,
      body: { matched: ['team/shop'] },
      result: 'accepted',
    });
    expect(await deliver('generic', SECRET, 'd-1')).toEqual({
      status: 200,
      body: { duplicate: true },
      result: 'duplicate',
    });
    expect(pushed).toEqual([['team/shop']]);
  });

  it('accepts { repository, ref } signed with X-Signature', async () => {
    const h = harness([app]);
    const res = await h.post('generic', body, { 'x-signature': signSha256(body, SECRET), 'x-delivery-id': 'g-1' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['team/shop'] });
    expect(h.onPush.mock.calls[0]?.[1]).toMatchObject({ refs: ['refs/heads/feature/cart/v2'], deliveryId: 'g-1' });
  });

  it('names what a payload is missing', async () => {
    const h = harness([app]);
    for (const [payload, missing] of [
      [{ repository: 'https://git.example.com/team/shop.git' }, 'ref'],
      [{ ref: 'refs/heads/main' }, 'repository'],
    ] as const) {
      const raw = JSON.stringify(payload);
      const res = await h.post('generic', raw, { 'x-signature': signSha256(raw, SECRET) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'bad_request', message: expect.stringContaining(missing) });
    }
    const short = JSON.stringify({ repository: 'https://git.example.com/team/shop.git', ref: 'main' });
    const res = await h.post('generic', short, { 'x-signature': signSha256(short, SECRET) });
    expect(res.statusCode).toBe(400);
    expect(h.onPush).not.toHaveBeenCalled();
  });
});

// --- the flow ---------------------------------------------------------------------

describe('flow', () => {
  it('rejects a missing signature without looking up Apps', async () => {
    const h = harness([helloWorld]);
    const res = await h.post('github', githubPushBody, { 'x-github-event': 'push' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect(h.candidates).not.toHaveBeenCalled();
    expect(h.onPush).not.toHaveBeenCalled();
  });

  it('gives an unknown repository the same 401 as a bad signature', async () => {
    const h = harness([{ ...helloWorld, repo: 'https://github.com/someone/else' }]);
    const unknown = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    const h2 = harness([helloWorld]);
    const badSig = await h2.post('github', githubPushBody, githubHeaders(githubPushBody, OTHER_SECRET));
    expect(unknown.statusCode).toBe(401);
    expect(badSig.statusCode).toBe(401);
    expect(unknown.body).toBe(badSig.body);
    expect(h.onPush).not.toHaveBeenCalled();
    expect(h2.onPush).not.toHaveBeenCalled();
  });

  it('touches no App on another branch', async () => {
    const h = harness([{ ...helloWorld, ref: 'refs/heads/main' }]);
    const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(res.statusCode).toBe(401);
    expect(h.onPush).not.toHaveBeenCalled();
  });

  it('with a global secret, answers 200 and nothing matched for an unknown repository', async () => {
    const h = harness([{ ...helloWorld, repo: 'https://github.com/someone/else' }], { globalSecret: GLOBAL });
    const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, GLOBAL));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ matched: [] });
    expect(h.onPush).not.toHaveBeenCalled();
    const unsigned = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(unsigned.statusCode).toBe(401);
  });

  it('with a global secret, matches Apps with or without their own secret', async () => {
    const noSecret: FakeApp = { ...helloWorld, name: 'api', secret: undefined };
    const h = harness([helloWorld, noSecret], { globalSecret: GLOBAL });
    const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, GLOBAL));
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ matched: ['shop/web', 'shop/api'] });
    // An App secret selects only its App, and an App without one is never matched by it.
    const own = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(own.json()).toEqual({ matched: ['shop/web'] });
  });

  it('drops a replayed delivery, after verification only', async () => {
    const h = harness([helloWorld]);
    const id = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
    const forged = await h.post('github', githubPushBody, githubHeaders(githubPushBody, OTHER_SECRET, 'push', id));
    expect(forged.statusCode).toBe(401);
    const first = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET, 'push', id));
    expect(first.statusCode).toBe(202);
    const replay = await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET, 'push', id));
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toEqual({ duplicate: true });
    expect(h.onPush).toHaveBeenCalledTimes(1);
    // IDs are kept per provider.
    const generic = JSON.stringify({ repository: helloWorld.repo, ref: helloWorld.ref });
    const other = await h.post('generic', generic, { 'x-signature': signSha256(generic, SECRET), 'x-delivery-id': id });
    expect(other.statusCode).toBe(202);
    expect(h.results.map(([, r]) => r)).toEqual(['unauthorized', 'accepted', 'duplicate', 'accepted']);
  });

  it('forgets the delivery when onPush fails, so a redelivery works', async () => {
    const h = harness([helloWorld]);
    h.onPush.mockRejectedValueOnce(new Error('kube down'));
    const headers = githubHeaders(githubPushBody, SECRET);
    const failed = await h.post('github', githubPushBody, headers);
    expect(failed.statusCode).toBe(503);
    expect(failed.json()).toMatchObject({ error: 'unavailable' });
    const again = await h.post('github', githubPushBody, headers);
    expect(again.statusCode).toBe(202);
    expect(h.results.map(([, r]) => r)).toEqual(['error', 'accepted']);
  });

  describe('re-reading a secret that did not verify', () => {
    const rotating = (reread: () => Promise<Buffer | undefined> | undefined) =>
      vi.fn(async (): Promise<Candidate[]> => [{ namespace: 'shop', name: 'web', secret: SECRET, reread }]);

    it('accepts a push signed with the re-read secret (a rotation)', async () => {
      const reread = vi.fn(async () => OTHER_SECRET);
      const h = harness([], { candidates: rotating(reread) });
      const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, OTHER_SECRET));
      expect(res.statusCode).toBe(202);
      expect(res.json()).toEqual({ matched: ['shop/web'] });
      expect(reread).toHaveBeenCalledTimes(1);
    });

    it('does not re-read when a secret verified, and answers 401 when no re-read is due', async () => {
      const reread = vi.fn((): Promise<Buffer | undefined> | undefined => undefined);
      const h = harness([], { candidates: rotating(reread) });
      expect((await h.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET))).statusCode).toBe(202);
      expect(reread).not.toHaveBeenCalled();
      const forged = await h.post('github', githubPushBody, githubHeaders(githubPushBody, GLOBAL));
      expect(forged.statusCode).toBe(401);
      expect(reread).toHaveBeenCalledTimes(1);
    });

    it('answers 503 when the re-read fails, as a failed lookup does', async () => {
      const h = harness([], { candidates: rotating(() => Promise.reject(new Error('kube down'))) });
      const res = await h.post('github', githubPushBody, githubHeaders(githubPushBody, OTHER_SECRET));
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ error: 'unavailable' });
      expect(h.results.map(([, r]) => r)).toEqual(['error']);
    });
  });

  it('refuses a body over the limit with 413', async () => {
    const h = harness([helloWorld]);
    const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
    const res = await h.post('github', big, githubHeaders(big, SECRET));
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    expect(h.results).toEqual([['github', 'too_large']]);

    const small = harness([helloWorld], { bodyLimit: 1024 });
    const res2 = await small.post('github', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(res2.statusCode).toBe(413);
    expect(small.onPush).not.toHaveBeenCalled();
  });

  it('answers malformed requests with 400 and a JSON error', async () => {
    const h = harness([helloWorld]);
    const broken = '{"ref": "refs/heads/master", ';
    const res = await h.post('github', broken, githubHeaders(broken, SECRET));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'bad_request', message: 'body is not valid JSON' });

    const list = '[1, 2]';
    expect((await h.post('github', list, githubHeaders(list, SECRET))).statusCode).toBe(400);

    const noEvent = await h.post('github', githubPushBody, {
      'x-hub-signature-256': signSha256(githubPushBody, SECRET),
    });
    expect(noEvent.statusCode).toBe(400);
    expect(noEvent.json().message).toContain('x-github-event');

    const text = await h.post('github', githubPushBody, {
      ...githubHeaders(githubPushBody, SECRET),
      'content-type': 'text/plain',
    });
    expect(text.statusCode).toBe(400);
    expect(text.json()).toMatchObject({ error: 'bad_request' });
    expect(h.onPush).not.toHaveBeenCalled();
    expect(h.results.every(([, r]) => r === 'bad_request')).toBe(true);
  });

  it('keeps its raw-body parsers to its own routes', async () => {
    const h = harness([helloWorld]);
    h.server.post('/echo', async (request) => ({ body: request.body }));
    const res = await h.server.inject({ method: 'POST', url: '/echo', payload: { a: 1 } });
    expect(res.json()).toEqual({ body: { a: 1 } });
  });

  it('answers an unknown provider with 404 and reports nothing', async () => {
    const h = harness([helloWorld]);
    const res = await h.post('svn', githubPushBody, githubHeaders(githubPushBody, SECRET));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'not_found', message: 'unknown webhook provider' });
    expect(h.results).toEqual([]);
  });

  it('keeps secrets, signatures and URL credentials out of logs and replies', async () => {
    const h = harness([helloWorld], { globalSecret: GLOBAL });
    const signed = githubHeaders(githubPushBody, SECRET);
    const replies = [
      await h.post('github', githubPushBody, signed),
      await h.post('github', githubPushBody, githubHeaders(githubPushBody, OTHER_SECRET)),
      await h.post('gitlab', fixture('gitlab-push.json'), { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'wr0ng' }),
    ];
    const generic = JSON.stringify({ repository: 'https://bot:tok3n@git.example.com/x/y.git', ref: 'refs/heads/main' });
    replies.push(await h.post('generic', generic, { 'x-signature': signSha256(generic, GLOBAL) }));
    const text = JSON.stringify(h.logs) + replies.map((r) => r.body).join('');
    expect(h.logs.length).toBeGreaterThan(0);
    for (const secret of [SECRET, OTHER_SECRET, GLOBAL, 'wr0ng', 'tok3n', signed['x-hub-signature-256']]) {
      expect(text).not.toContain(secret.toString().replace(/^sha256=/, ''));
    }
  });
});

describe('--webhook-secret-file', () => {
  it('drops exactly one trailing newline', () => {
    const cases: [string, string][] = [
      ['key', 'key'],
      ['key\n', 'key'],
      ['key\r\n', 'key'],
      ['key\n\n', 'key\n'],
      ['key\r', 'key\r'],
      ['\n', ''],
    ];
    for (const [file, secret] of cases) expect(secretFromFile(Buffer.from(file)).toString()).toBe(secret);
  });

  it('reads the file, and refuses an empty or missing one naming the flag, never the content', () => {
    const dir = mkdtempSync(join(tmpdir(), 'teal-secret-file-'));
    try {
      const file = join(dir, 'token');
      writeFileSync(file, 'global-hook-key\n');
      expect(readWebhookSecretFile(file).toString()).toBe('global-hook-key');
      for (const empty of ['', '\n', '\r\n']) {
        writeFileSync(file, empty);
        expect(() => readWebhookSecretFile(file)).toThrow(`--webhook-secret-file: ${file} is empty`);
      }
      expect(() => readWebhookSecretFile(join(dir, 'missing'))).toThrow(/^--webhook-secret-file: cannot read .*ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the plugin’s steps, without fastify', () => {
  it('answers a body over the limit with a 413 that names the limit, counted as too_large', () => {
    for (const error of [new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), { message: 'too big', statusCode: 413 }]) {
      expect(failedDelivery(error, 1024)).toEqual({
        status: 413,
        body: { error: 'payload_too_large', message: 'request body exceeds 1024 bytes' },
        result: 'too_large',
      });
    }
  });

  it('answers fastify’s other refusals with a 400 and its message, counted as bad_request', () => {
    for (const error of [
      new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE('text/plain'),
      new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
    ]) {
      expect(failedDelivery(error, 1024)).toEqual({
        status: 400,
        body: { error: 'bad_request', message: error.message },
        result: 'bad_request',
      });
    }
  });

  it('answers anything else with a 500 that tells nothing of it, counted as error', () => {
    const answer = failedDelivery(new Error('ECONNREFUSED token=s3cret'), 1024);
    expect(answer).toEqual({ status: 500, body: { error: 'internal', message: 'internal error' }, result: 'error' });
    expect(JSON.stringify(answer.body)).not.toContain('s3cret');
  });

  it('takes the defaults, drops an empty global secret, and refuses a bound that is not a positive integer', () => {
    expect(webhookSettings({})).toEqual({ bodyLimit: 1024 * 1024, maxDeliveryIds: 10_000, globalSecret: undefined });
    expect(webhookSettings({ globalSecret: Buffer.alloc(0) }).globalSecret).toBeUndefined();
    expect(webhookSettings({ globalSecret: GLOBAL }).globalSecret).toBe(GLOBAL);
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => webhookSettings({ bodyLimit: bad })).toThrow('webhooks: bodyLimit must be a positive integer');
      expect(() => webhookSettings({ maxDeliveryIds: bad })).toThrow(
        'webhooks: maxDeliveryIds must be a positive integer',
      );
    }
  });
});
