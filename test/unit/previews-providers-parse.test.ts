// Each provider's JSON into the shared PullRequest, label history and comments:
// payloads shaped as the providers' REST docs show them (fields trimmed, values
// our own), including the fields Teal must not trust or must not miss.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseItems } from '../../src/previews/providers/base.ts';
import { BitbucketPull, bitbucketComments, bitbucketPullRequest } from '../../src/previews/providers/bitbucket.ts';
import { GiteaPull, giteaComments, giteaLabelEvents, giteaPullRequest } from '../../src/previews/providers/gitea.ts';
import {
  GitHubPull,
  githubComments,
  githubLabelEvents,
  githubPullRequest,
} from '../../src/previews/providers/github.ts';
import {
  GitLabMergeRequest,
  gitlabComments,
  gitlabHeadAt,
  gitlabLabelEvents,
  gitlabPermission,
  gitlabPullRequest,
} from '../../src/previews/providers/gitlab.ts';
import { bitbucketPull, giteaPull, githubPull, gitlabMr, SHA1, SHA2 } from '../support/provider-payloads.ts';

// GitHub's own published webhook payloads (@octokit/webhooks-examples): their
// pull_request objects are the REST API's pull request shape.
const githubPullExamples = z
  .array(z.object({ name: z.string(), examples: z.array(z.unknown()) }))
  .parse(JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@octokit/webhooks-examples'), 'utf8')))
  .filter((d) => d.name === 'pull_request')
  .flatMap((d) => z.array(z.object({ action: z.string(), pull_request: z.unknown() })).parse(d.examples));

describe('GitHub pull requests', () => {
  it("reads every pull request of GitHub's published pull_request webhook examples", () => {
    expect(githubPullExamples.length).toBeGreaterThan(10);
    const result = parseItems(
      'github',
      githubPullExamples.map((e) => e.pull_request),
      GitHubPull,
      githubPullRequest,
    );
    expect(result.ok).toBe(true);
    const labeled = githubPullExamples.findIndex((e) => e.action === 'labeled');
    expect(result.ok && result.value[labeled]).toEqual({
      number: 2,
      title: 'Update the README with new information.',
      headSha: 'ec26c3e57ca3a959ca5aad62de7213c562f8c821',
      headRef: 'refs/pull/2/head',
      baseBranch: 'master',
      labels: ['bug'],
      draft: false,
      fromFork: false,
      author: 'Codertocat',
      webUrl: 'https://github.com/Codertocat/Hello-World/pull/2',
      updatedAt: '2019-05-15T15:20:35Z',
    });
    const drafts = githubPullExamples.flatMap((e, i) =>
      e.action === 'converted_to_draft' && result.ok ? [result.value[i]?.draft] : [],
    );
    expect(drafts.length > 0 && drafts.every((d) => d === true)).toBe(true);
  });

  it('reads a fork pull request with its pull ref, labels, draft flag and author', () => {
    const result = parseItems('github', [githubPull()], GitHubPull, githubPullRequest);
    expect(result).toEqual({
      ok: true,
      value: [
        {
          number: 1347,
          title: 'Amazing new feature',
          headSha: SHA1,
          headRef: 'refs/pull/1347/head',
          baseBranch: 'main',
          labels: ['preview'],
          draft: false,
          fromFork: true,
          author: 'octocat',
          webUrl: 'https://github.com/acme/shop/pull/1347',
          updatedAt: '2026-11-21T20:01:12Z',
        },
      ],
    });
  });

  it('a branch of the same repository is no fork; a deleted fork (head.repo null) still is', () => {
    const same = githubPull({
      head: { ref: 'topic', sha: SHA1, repo: { id: 1296270 } },
      draft: true,
    });
    const gone = githubPull({ head: { ref: 'topic', sha: SHA1, repo: null } });
    const result = parseItems('github', [same, gone], GitHubPull, githubPullRequest);
    expect(result.ok && result.value.map((p) => [p.fromFork, p.draft])).toEqual([
      [false, true],
      [true, false],
    ]);
  });

  it('one pull request not of the documented shape fails the whole list, naming the field', () => {
    const bad = githubPull({ head: { ref: 'x', sha: 'not-a-sha', repo: null } });
    const result = parseItems('github', [githubPull(), bad], GitHubPull, githubPullRequest);
    expect(result).toEqual({
      ok: false,
      failure: {
        reason: 'InvalidResponse',
        message: 'github: listing pull requests: item 1 is not a pull request (head.sha)',
      },
    });
  });

  it('label history: the last event for the label decides, compared case-blind', () => {
    const events = [
      {
        id: 1,
        event: 'labeled',
        actor: { login: 'mallory' },
        label: { name: 'preview' },
        created_at: '2026-11-21T10:00:00Z',
      },
      {
        id: 2,
        event: 'unlabeled',
        actor: { login: 'alice' },
        label: { name: 'preview' },
        created_at: '2026-11-21T11:00:00Z',
      },
      { id: 3, event: 'referenced', actor: { login: 'bob' }, commit_id: SHA1, created_at: '2026-11-21T11:30:00Z' },
      {
        id: 4,
        event: 'labeled',
        actor: { login: 'alice' },
        label: { name: 'Preview' },
        created_at: '2026-11-21T12:00:00Z',
      },
    ];
    expect(githubLabelEvents(events)).toEqual([
      { added: true, label: 'preview', by: 'mallory', at: '2026-11-21T10:00:00Z' },
      { added: false, label: 'preview', by: 'alice', at: '2026-11-21T11:00:00Z' },
      { added: true, label: 'Preview', by: 'alice', at: '2026-11-21T12:00:00Z' },
    ]);
  });

  it('comments: id, body and author; a deleted user leaves an empty author', () => {
    const comments = [
      { id: 1, body: 'Me too', user: { login: 'octocat' } },
      { id: 2, body: null, user: null },
    ];
    expect(githubComments(comments)).toEqual([
      { id: '1', body: 'Me too', author: 'octocat' },
      { id: '2', body: '', author: '' },
    ]);
  });
});

describe('GitLab merge requests', () => {
  it('reads a merge request with its merge-request ref, iid as the number and labels as names', () => {
    const result = parseItems('gitlab', [gitlabMr()], GitLabMergeRequest, gitlabPullRequest);
    expect(result).toEqual({
      ok: true,
      value: [
        {
          number: 133,
          title: 'Manual job rules',
          headSha: SHA2,
          headRef: 'refs/merge-requests/133/head',
          baseBranch: 'main',
          labels: ['documentation', 'preview'],
          draft: false,
          fromFork: false,
          author: 'marcel.amirault',
          webUrl: 'https://gitlab.com/group/sub/project/-/merge_requests/133',
          updatedAt: '2026-11-21T14:00:08.695Z',
        },
      ],
    });
  });

  it('a fork is another source project; draft falls back to work_in_progress; label details give names', () => {
    const old = gitlabMr({ source_project_id: 1, draft: undefined, work_in_progress: true });
    const detailed = gitlabMr({ labels: [{ id: 1, name: 'preview', color: '#fff' }] });
    const result = parseItems('gitlab', [old, detailed], GitLabMergeRequest, gitlabPullRequest);
    expect(result.ok && result.value.map((p) => [p.fromFork, p.draft, p.labels])).toEqual([
      [true, true, ['documentation', 'preview']],
      [false, false, ['preview']],
    ]);
  });

  it('access levels: Developer and above may push (write), Maintainer and Owner are admin', () => {
    expect([50, 40, 30, 20, 15, 10, 5, 0].map(gitlabPermission)).toEqual([
      'admin',
      'admin',
      'write',
      'read',
      'read',
      'read',
      'none',
      'none',
    ]);
  });

  it('resource label events: add and remove, a deleted label skipped', () => {
    const events = [
      {
        id: 142,
        user: { id: 1, username: 'root' },
        created_at: '2026-11-20T13:38:20.077Z',
        resource_type: 'MergeRequest',
        resource_id: 253,
        label: { id: 73, name: 'preview', color: '#34495E' },
        action: 'add',
      },
      { id: 143, user: { id: 1, username: 'root' }, created_at: '2026-11-20T13:39:00Z', label: null, action: 'add' },
      {
        id: 144,
        user: { id: 2, username: 'eve' },
        created_at: '2026-11-20T13:40:00Z',
        label: { id: 73, name: 'preview' },
        action: 'remove',
      },
    ];
    expect(gitlabLabelEvents(events)).toEqual([
      { added: true, label: 'preview', by: 'root', at: '2026-11-20T13:38:20.077Z' },
      { added: false, label: 'preview', by: 'eve', at: '2026-11-20T13:40:00Z' },
    ]);
  });

  it('versions: the head pushed last at or before a time; none before the first push', () => {
    const versions = [
      { id: 2, head_commit_sha: SHA2, created_at: '2026-11-21T10:00:00.000Z' },
      { id: 1, head_commit_sha: SHA1, created_at: '2026-11-21T09:00:00.000Z' },
    ];
    expect(gitlabHeadAt(versions, '2026-11-21T10:00:00.000Z')).toBe(SHA2);
    expect(gitlabHeadAt(versions, '2026-11-21T09:59:59.999Z')).toBe(SHA1);
    expect(gitlabHeadAt(versions, '2026-11-21T08:00:00.000Z')).toBeUndefined();
    expect(gitlabHeadAt(versions, 'not a time')).toBeUndefined();
  });

  it('notes: system notes (label changes, pushes) are not comments', () => {
    const notes = [
      { id: 302, body: 'added ~preview label', system: true, author: { username: 'root' } },
      { id: 303, body: 'Looks good', system: false, author: { username: 'root' } },
    ];
    expect(gitlabComments(notes)).toEqual([{ id: '303', body: 'Looks good', author: 'root' }]);
  });
});

describe('Gitea pull requests', () => {
  it('reads a fork pull request with refs/pull/N/head', () => {
    const result = parseItems('gitea', [giteaPull()], GiteaPull, giteaPullRequest);
    expect(result).toEqual({
      ok: true,
      value: [
        {
          number: 7,
          title: 'Add a cart',
          headSha: SHA1,
          headRef: 'refs/pull/7/head',
          baseBranch: 'main',
          labels: ['preview'],
          draft: false,
          fromFork: true,
          author: 'alice',
          webUrl: 'https://gitea.example.com/acme/shop/pulls/7',
          updatedAt: '2026-11-21T10:00:00Z',
        },
      ],
    });
  });

  it('without the draft field (older servers), a WIP: or [WIP] title is a draft; null labels are none', () => {
    const wip = giteaPull({ draft: undefined, title: 'WIP: cart', labels: null });
    const bracket = giteaPull({ draft: undefined, title: '[wip] cart' });
    const plain = giteaPull({ draft: undefined, title: 'cart wip' });
    const result = parseItems('gitea', [wip, bracket, plain], GiteaPull, giteaPullRequest);
    expect(result.ok && result.value.map((p) => [p.draft, p.labels.length])).toEqual([
      [true, 0],
      [true, 1],
      [false, 1],
    ]);
  });

  it('timeline: label comments are added ("1") or removed (""); other items skipped', () => {
    const timeline = [
      { id: 1, type: 'comment', body: 'hi', user: { login: 'bob' }, created_at: '2026-11-21T09:00:00Z' },
      {
        id: 2,
        type: 'label',
        body: '1',
        label: { name: 'preview' },
        user: { login: 'bob' },
        created_at: '2026-11-21T10:00:00Z',
      },
      {
        id: 3,
        type: 'label',
        body: '',
        label: { name: 'preview' },
        user: { login: 'carol' },
        created_at: '2026-11-21T11:00:00Z',
      },
    ];
    expect(giteaLabelEvents(timeline)).toEqual([
      { added: true, label: 'preview', by: 'bob', at: '2026-11-21T10:00:00Z' },
      { added: false, label: 'preview', by: 'carol', at: '2026-11-21T11:00:00Z' },
    ]);
  });

  it('comments', () => {
    expect(giteaComments([{ id: 9, body: 'x', user: { login: 'teal-bot' } }])).toEqual([
      { id: '9', body: 'x', author: 'teal-bot' },
    ]);
  });
});

describe('Bitbucket Cloud pull requests', () => {
  it('reads a fork pull request: no labels, the head a branch of the fork, its full SHA resolved apart', () => {
    const shape = BitbucketPull.parse(bitbucketPull());
    expect(bitbucketPullRequest(shape, SHA1)).toEqual({
      number: 42,
      title: 'Checkout flow',
      headSha: SHA1,
      headRef: 'refs/heads/feature/checkout',
      headCloneUrl: 'https://bitbucket.org/alice/shop.git',
      baseBranch: 'main',
      labels: [],
      draft: false,
      fromFork: true,
      author: 'alice',
      webUrl: 'https://bitbucket.org/acme/shop/pull-requests/42',
      updatedAt: '2026-11-21T10:00:00.000000+00:00',
    });
  });

  it('a branch of the same repository has no clone URL of its own', () => {
    const same = bitbucketPull({
      source: {
        branch: { name: 'topic' },
        commit: { hash: SHA1.slice(0, 12) },
        repository: { full_name: 'acme/shop' },
      },
    });
    const pr = bitbucketPullRequest(BitbucketPull.parse(same), SHA1);
    expect([pr.fromFork, pr.headCloneUrl]).toEqual([false, undefined]);
  });

  it('comments: deleted ones skipped, the author is the account id', () => {
    const values = [
      { id: 1, deleted: false, content: { raw: 'ok', markup: 'markdown' }, user: { account_id: '557058:bbbb' } },
      { id: 2, deleted: true, content: { raw: '', markup: 'markdown' }, user: { account_id: '557058:bbbb' } },
    ];
    expect(bitbucketComments(values)).toEqual([{ id: '1', body: 'ok', author: '557058:bbbb' }]);
  });
});
