// The Gitea client (src/previews/providers/gitea.ts) against a real Gitea on
// 127.0.0.1 (test/cluster/gitea.ts): the open pull requests from a branch and
// from a fork with their pull refs, a poll again (Gitea sends no ETag: a full
// read, the same list), the teal/preview status read back, Teal's one comment
// edited in place and found again by a new client, permissions, who added a
// label, and a poll's approvals (issue #28).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostDeps, type PreviewHost, previewHost } from '../../src/previews/providers/index.ts';
import { pollListing } from '../../src/previews/providers/listing.ts';
import { previewCommentMarker } from '../../src/previews/pull-request.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { createRepo, git, type TestRepo } from '../support/git-server.ts';
import {
  addLabels,
  combinedStatus,
  comments,
  createLabel,
  createRepository,
  fetchRef,
  type GiteaLabel,
  type GiteaPullRequest,
  getPullRequest,
  openForkPullRequest,
  openPullRequest,
  postComment,
  pushBranches,
  type RepoRef,
  removeLabel,
  setCollaborator,
} from '../support/gitea.ts';

/** A bound against hangs that a cold build of Gitea on a busy 2-core machine stays under. */
const GITEA_BUILD_MS = 40 * 60_000;
const APP = 'team/web';

let gitea: Gitea;
let workdir: string;
/** alice owns the repository, bob forks it, carol may write, dave may read; teal is the token's user (repository admin). */
let alice: GiteaUser;
let bob: GiteaUser;
let carol: GiteaUser;
let dave: GiteaUser;
let teal: GiteaUser;
let upstream: RepoRef;
let aliceClone: TestRepo;
let bobClone: TestRepo;
let branchPr: GiteaPullRequest;
let forkPr: GiteaPullRequest;
let approvalLabel: GiteaLabel;

/** What the client sent and got: the real fetch, each request's If-None-Match and each answer's status kept. */
function recorded() {
  const seen: { ifNoneMatch: string | null; status: number }[] = [];
  const deps: HostDeps = {
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      seen.push({ ifNoneMatch: new Headers(init?.headers).get('if-none-match'), status: response.status });
      return response;
    },
  };
  return { seen, deps };
}

function host(deps: HostDeps = {}): PreviewHost {
  const made = previewHost(
    {
      provider: 'gitea',
      apiUrl: gitea.apiUrl,
      repository: `${upstream.owner}/${upstream.name}`,
      token: teal.token,
      appKey: APP,
    },
    deps,
  );
  if (!made.ok) throw new Error(made.message);
  return made.value;
}

beforeAll(async () => {
  gitea = await startGitea();
  workdir = await mkdtemp(join(tmpdir(), 'teal-previews-gitea-'));
  [alice, bob, carol, dave, teal] = (await Promise.all(
    ['alice', 'bob', 'carol', 'dave', 'teal-bot'].map((name) => gitea.createUser(name)),
  )) as [GiteaUser, GiteaUser, GiteaUser, GiteaUser, GiteaUser];
  upstream = await createRepository(gitea, alice, 'shop');
  await setCollaborator(gitea, alice, upstream, carol.username, 'write');
  await setCollaborator(gitea, alice, upstream, dave.username, 'read');
  // Gitea answers another user's permission only to a repository admin.
  await setCollaborator(gitea, alice, upstream, teal.username, 'admin');
  approvalLabel = await createLabel(gitea, alice, upstream, 'preview-ok');

  aliceClone = await createRepo(join(workdir, 'alice'));
  await aliceClone.commit('feature', { 'app.txt': 'feature\n' }, { branch: 'feature' });
  await pushBranches(gitea, alice, aliceClone, upstream, ['main', 'feature']);
  branchPr = await openPullRequest(gitea, alice, upstream, { head: 'feature', title: 'A branch of the repository' });

  bobClone = await createRepo(join(workdir, 'bob'));
  ({ pr: forkPr } = await openForkPullRequest(gitea, bob, upstream, bobClone, 'From a fork'));
}, GITEA_BUILD_MS);

afterAll(async () => {
  await gitea?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('the Gitea client on a real Gitea', () => {
  it('lists both open pull requests with their head SHAs, fork flags and pull refs that git fetches to the head', async () => {
    const listed = await host().listOpen();
    if (!listed.ok) throw new Error(listed.failure.message);
    const byNumber = new Map(listed.value.map((pr) => [pr.number, pr]));
    const fromBranch = byNumber.get(branchPr.number);
    const fromFork = byNumber.get(forkPr.number);
    expect(fromBranch).toMatchObject({
      headSha: await aliceClone.revParse('refs/heads/feature'),
      headRef: `refs/pull/${branchPr.number}/head`,
      baseBranch: 'main',
      fromFork: false,
      author: 'alice',
      draft: false,
    });
    expect(fromFork).toMatchObject({
      headSha: await bobClone.revParse('refs/heads/fork-change'),
      headRef: `refs/pull/${forkPr.number}/head`,
      fromFork: true,
      author: 'bob',
    });
    // The pull ref lives in the base repository, the fork's too.
    const fetched = await fetchRef(gitea, teal, aliceClone, upstream, fromFork?.headRef ?? '', 'refs/previews/fork');
    expect(fetched).toBe(fromFork?.headSha);
  });

  it('a second poll gives the same list; Gitea sends no ETag, so it is a full read, not a 304', async () => {
    const { seen, deps } = recorded();
    const client = host(deps);
    const first = await client.listOpen();
    const second = await client.listOpen();
    expect(second).toEqual(first);
    expect(seen).toEqual([
      { ifNoneMatch: null, status: 200 },
      { ifNoneMatch: null, status: 200 },
    ]);
  });

  it('sets the teal/preview status: pending, then success with the preview URL; the description cut to 140', async () => {
    const sha = forkPr.head.sha;
    const client = host();
    expect(await client.setStatus(sha, { state: 'pending', description: 'building' })).toEqual({
      ok: true,
      value: undefined,
    });
    const status = {
      state: 'success' as const,
      description: `ready ${'x'.repeat(200)}`,
      targetUrl: 'https://pr-2.preview.example.com/',
    };
    expect(await client.setStatus(sha, status)).toEqual({ ok: true, value: undefined });
    const combined = await combinedStatus(gitea, alice, upstream, sha);
    expect(combined.statuses.map((s) => [s.context, s.status, s.target_url, s.description.length])).toEqual([
      ['teal/preview', 'success', 'https://pr-2.preview.example.com/', 140],
    ]);
    expect(combined.statuses[0]?.creator.login).toBe('teal-bot');
  });

  it('keeps one comment: created, edited in place, found again by a new client; a forged marker is left alone', async () => {
    const marker = previewCommentMarker('gitea', APP);
    await postComment(gitea, bob, upstream, forkPr.number, `${marker}\nforged by the fork's author`);
    const client = host();
    expect(await client.upsertComment(forkPr.number, 'building')).toEqual({ ok: true, value: 'created' });
    expect(await client.upsertComment(forkPr.number, 'ready')).toEqual({ ok: true, value: 'edited' });
    expect(await client.upsertComment(forkPr.number, 'ready')).toEqual({ ok: true, value: 'unchanged' });
    const restarted = host();
    expect(await restarted.upsertComment(forkPr.number, 'ready, commit 2')).toEqual({ ok: true, value: 'edited' });
    const all = await comments(gitea, alice, upstream, forkPr.number);
    expect(all.map((c) => [c.user.login, c.body])).toEqual([
      ['bob', `${marker}\nforged by the fork's author`],
      ['teal-bot', `${marker}\nready, commit 2`],
    ]);
  });

  it('reads permissions: the owner admin, a writer write, a reader and the fork author read, a stranger none', async () => {
    const client = host();
    const asked = await Promise.all(['alice', 'carol', 'dave', 'bob', 'nobody-here'].map((u) => client.permission(u)));
    expect(asked).toEqual([
      { ok: true, value: 'admin' },
      { ok: true, value: 'write' },
      { ok: true, value: 'read' },
      { ok: true, value: 'read' },
      { ok: true, value: 'none' },
    ]);
  });

  it("who added the approval label last, and a poll's approval with the writer's permission and the fork's head", async () => {
    const client = host();
    await addLabels(gitea, alice, upstream, forkPr.number, [approvalLabel.name]);
    await removeLabel(gitea, alice, upstream, forkPr.number, approvalLabel);
    expect(await client.labelAddedBy(forkPr.number, 'preview-ok')).toEqual({ ok: true, value: undefined });
    await addLabels(gitea, carol, upstream, forkPr.number, [approvalLabel.name]);
    const added = await client.labelAddedBy(forkPr.number, 'Preview-OK');
    expect(added.ok && added.value?.by).toBe('carol');
    const listing = await pollListing(client, 'preview-ok');
    expect(listing.ok && listing.approvals).toEqual([
      {
        number: forkPr.number,
        label: 'preview-ok',
        by: 'carol',
        at: added.ok ? added.value?.at : '',
        permission: 'write',
        sha: forkPr.head.sha,
      },
    ]);
  });

  it('takes the approval label off by its id (a stale approval), and a label not on it is done', async () => {
    const client = host();
    await addLabels(gitea, alice, upstream, branchPr.number, [approvalLabel.name]);
    expect(await client.removeLabel(branchPr.number, 'Preview-OK')).toEqual({ ok: true, value: undefined });
    expect((await getPullRequest(gitea, alice, upstream, branchPr.number)).labels).toEqual([]);
    expect(await client.removeLabel(branchPr.number, 'preview-ok')).toEqual({ ok: true, value: undefined });
  });

  it("reads every page: 52 open pull requests over Gitea's pages of 50", async () => {
    const branches = Array.from({ length: 50 }, (_, i) => `many-${i}`);
    for (const branch of branches) {
      await git(aliceClone.dir, 'checkout', '--quiet', '-B', branch, 'main');
      await aliceClone.commit(branch, { [`${branch}.txt`]: `${branch}\n` });
    }
    await pushBranches(gitea, alice, aliceClone, upstream, branches);
    for (const branch of branches) await openPullRequest(gitea, alice, upstream, { head: branch, title: branch });
    const { seen, deps } = recorded();
    const listed = await host(deps).listOpen();
    expect(listed.ok && listed.value.length).toBe(52);
    expect(listed.ok && new Set(listed.value.map((p) => p.number)).size).toBe(52);
    expect(seen.length).toBe(2);
  });
});
