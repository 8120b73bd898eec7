// Pull-request webhooks as a hint for previews (issue #28 item 2): each
// provider's pull-request event is recognised and verified as a push is, only
// its repository URLs are read, and it selects the Apps whose spec.previews
// follows that repository; the hint is written at most once per App per gap.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { webhookCandidates } from '../../src/api/webhook-apps.ts';
import { type Provider, parseDelivery } from '../../src/api/webhook-providers.ts';
import { WebhookSecretCache } from '../../src/api/webhook-secret-cache.ts';
import { HintSpacing, spacedHints } from '../../src/api/webhook-spacing.ts';
import { type Candidate, Deliveries, RawBody, type WebhookLogger } from '../../src/api/webhooks.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import { signSha256 } from '../../src/app/signature.ts';

const fixture = (name: string): Buffer => readFileSync(new URL(`../fixtures/webhooks/${name}`, import.meta.url));

const githubPullRequests = (
  JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@octokit/webhooks-examples'), 'utf8')) as {
    name: string;
    examples: Record<string, unknown>[];
  }[]
).find((d) => d.name === 'pull_request')?.examples;
const githubOpened = githubPullRequests?.find((e) => e.action === 'opened');
if (githubOpened === undefined) throw new Error('no GitHub pull_request opened example');

const SECRET = Buffer.from('s3cret-app-key');
const WRONG = Buffer.from('not-the-apps-key');

interface Case {
  provider: Provider;
  event: string;
  body: Buffer;
  /** A repository URL the payload gives, as an App's source.git.url would. */
  repo: string;
  headers(body: Buffer, secret: Buffer, event: string): Record<string, string>;
}

const hex = (body: Buffer, secret: Buffer) => signSha256(body, secret).slice('sha256='.length);

const CASES: Case[] = [
  {
    provider: 'github',
    event: 'pull_request',
    body: Buffer.from(JSON.stringify(githubOpened)),
    repo: 'git@github.com:Codertocat/Hello-World.git',
    headers: (body, secret, event) => ({ 'x-github-event': event, 'x-hub-signature-256': signSha256(body, secret) }),
  },
  {
    provider: 'gitlab',
    event: 'Merge Request Hook',
    body: fixture('gitlab-merge-request.json'),
    repo: 'http://example.com/gitlabhq/gitlab-test.git',
    headers: (_body, secret, event) => ({ 'x-gitlab-event': event, 'x-gitlab-token': secret.toString() }),
  },
  {
    provider: 'gitea',
    event: 'pull_request',
    body: fixture('gitea-pull-request.json'),
    repo: 'http://localhost:3000/gitea/webhooks.git',
    headers: (body, secret, event) => ({ 'x-gitea-event': event, 'x-gitea-signature': hex(body, secret) }),
  },
  {
    provider: 'bitbucket',
    event: 'pullrequest:created',
    body: fixture('bitbucket-cloud-pullrequest-created.json'),
    repo: 'https://bitbucket.org/teamsinspace/weather.git',
    headers: (body, secret, event) => ({ 'x-event-key': event, 'x-hub-signature': signSha256(body, secret) }),
  },
];

function app(name: string, repo: string, previews?: { repository?: string }): CachedApp {
  return {
    metadata: { namespace: 'team', name, resourceVersion: '1' },
    spec: {
      source: { git: { url: repo, ref: 'main', webhookSecretRef: { name: 'hook' } } },
      ...(previews ? { previews: { provider: 'github', ...previews } } : {}),
    },
  };
}

const quiet: WebhookLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

function receiver(apps: CachedApp[]) {
  const secrets = new WebhookSecretCache({ load: async () => SECRET });
  const onPush = vi.fn(async () => {});
  const onPullRequest = vi.fn(async (_matched: Candidate[]) => {});
  const deliveries = new Deliveries(
    { candidates: (hint) => webhookCandidates(secrets, apps, hint), onPush, onPullRequest },
    undefined,
    100,
  );
  const deliver = (c: Case, secret: Buffer, event = c.event) =>
    deliveries.handle(
      { provider: c.provider, headers: c.headers(c.body, secret, event), body: new RawBody(c.body, 'json') },
      quiet,
    );
  return { deliver, onPush, onPullRequest };
}

describe.each(CASES)('a $provider pull-request event ($event)', (c) => {
  it('is a pull_request hint with the repository URLs only: no ref, SHA, number or state', () => {
    const parsed = parseDelivery(c.provider, c.headers(c.body, SECRET, c.event), c.body, 'json');
    expect(parsed.kind).toBe('pull_request');
    expect(parsed.refs).toEqual([]);
    expect(parsed.repoUrls.length).toBeGreaterThan(0);
    expect(Object.keys(parsed).sort()).toEqual(['deliveryId', 'event', 'kind', 'refs', 'repoUrls']);
  });

  it('verified with the App secret, marks only the Apps whose previews follow the repository (202)', async () => {
    const r = receiver([app('parent', c.repo, {}), app('plain', c.repo), app('elsewhere', 'https://example.org/a/b')]);
    const answer = await r.deliver(c, SECRET);
    expect(answer).toMatchObject({ status: 202, result: 'accepted', body: { matched: ['team/parent'] } });
    expect(r.onPullRequest).toHaveBeenCalledTimes(1);
    expect(r.onPullRequest.mock.calls[0]?.[0].map((m) => m.name)).toEqual(['parent']);
    expect(r.onPush).not.toHaveBeenCalled();
  });

  it('is refused with a wrong secret (401), and nothing is marked', async () => {
    const r = receiver([app('parent', c.repo, {})]);
    const answer = await r.deliver(c, WRONG);
    expect(answer).toMatchObject({ status: 401, result: 'unauthorized' });
    expect(r.onPullRequest).not.toHaveBeenCalled();
  });

  it('verified for an App without previews, is ignored (200), nothing marked', async () => {
    const r = receiver([app('plain', c.repo)]);
    const answer = await r.deliver(c, SECRET);
    expect(answer).toMatchObject({ status: 200, result: 'ignored', body: { matched: [] } });
    expect(r.onPullRequest).not.toHaveBeenCalled();
  });
});

describe('the repository previews follow', () => {
  const github = CASES[0] as Case;

  it('is spec.previews.repository when set, whatever git URL the App builds from', async () => {
    const r = receiver([
      app('mirrored', 'https://git.example.com/mirror/hello.git', { repository: 'Codertocat/Hello-World' }),
      app('other', 'git@github.com:Codertocat/Hello-World.git', { repository: 'someone/else' }),
    ]);
    const answer = await r.deliver(github, SECRET);
    expect(answer).toMatchObject({ status: 202, body: { matched: ['team/mirrored'] } });
  });

  it('is never taken from a push: a push to that repository is not a pull-request hint', async () => {
    const push = { ...github, event: 'push' };
    const r = receiver([app('parent', github.repo, {})]);
    await r.deliver(push, SECRET, 'push');
    expect(r.onPullRequest).not.toHaveBeenCalled();
  });
});

describe('hint spacing', () => {
  it('writes at once, then keeps one write for the end of the gap, which later requests share', () => {
    const s = new HintSpacing(5_000);
    expect(s.schedule('team/a', 0)).toBe(0);
    expect(s.schedule('team/b', 1_000)).toBe(0);
    expect(s.schedule('team/a', 2_000)).toBe(3_000);
    expect(s.schedule('team/a', 3_000)).toBeUndefined();
    s.done('team/a');
    expect(s.schedule('team/a', 6_000)).toBe(4_000);
    s.done('team/a');
    expect(s.schedule('team/a', 20_000)).toBe(0);
    expect(s.size).toBe(1);
  });

  it('awaits a write now and leaves a later one to a timer', async () => {
    vi.useFakeTimers();
    try {
      let clock = 0;
      const writes: string[] = [];
      const hint = spacedHints(
        async (ns, name) => {
          writes.push(`${ns}/${name}@${clock}`);
        },
        () => {},
        new HintSpacing(5_000),
        () => clock,
      );
      await hint([{ namespace: 'team', name: 'a' }]);
      clock = 1_000;
      await hint([{ namespace: 'team', name: 'a' }]);
      await hint([{ namespace: 'team', name: 'a' }]);
      expect(writes).toEqual(['team/a@0']);
      clock = 5_000;
      await vi.advanceTimersByTimeAsync(4_000);
      expect(writes).toEqual(['team/a@0', 'team/a@5000']);
    } finally {
      vi.useRealTimers();
    }
  });
});
