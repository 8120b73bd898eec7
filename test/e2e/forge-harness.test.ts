// Proves the git hosting server the pull-request preview tests use (issue #28)
// is a real Gitea under the test's control: built from Go modules, on a free
// loopback port, with pull requests from a branch and from a fork, the pull refs
// they get in the base repository, commit statuses, comments, labels with who
// added them, collaborator permissions, and webhooks it signs and delivers to a
// listener on 127.0.0.1.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/api/webhook-providers.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { createRepo, type TestRepo } from '../support/git-server.ts';
import {
  addLabels,
  collaboratorPermission,
  combinedStatus,
  comments,
  commitStatuses,
  createLabel,
  createRepository,
  createWebhook,
  editComment,
  fetchRef,
  type GiteaPullRequest,
  getPullRequest,
  type HookListener,
  labelEvents,
  listPullRequests,
  lsRemote,
  openForkPullRequest,
  openPullRequest,
  postComment,
  postCommitStatus,
  pushBranches,
  type RepoRef,
  removeLabel,
  setCollaborator,
  startHookListener,
} from '../support/gitea.ts';
import { waitFor } from '../support/wait.ts';

/** A bound against hangs that a cold build of Gitea on a busy 2-core machine stays under. */
const GITEA_BUILD_MS = 40 * 60_000;

let gitea: Gitea;
let workdir: string;
/** Owns the repository; bob forks it; carol may write to it, dave may read it. */
let alice: GiteaUser;
let bob: GiteaUser;
let carol: GiteaUser;
let dave: GiteaUser;
let upstream: RepoRef;
let fork: RepoRef;
let aliceClone: TestRepo;
let bobClone: TestRepo;
let branchPr: GiteaPullRequest;
let forkPr: GiteaPullRequest;

beforeAll(async () => {
  const started = Date.now();
  gitea = await startGitea({ log: (line) => console.error(line) });
  console.error(`gitea ${gitea.version} ready in ${Date.now() - started} ms at ${gitea.url}`);
  workdir = await mkdtemp(join(tmpdir(), 'teal-forge-test-'));
  alice = await gitea.createUser('alice');
  bob = await gitea.createUser('bob');
  carol = await gitea.createUser('carol');
  dave = await gitea.createUser('dave');

  upstream = await createRepository(gitea, alice, 'shop');
  aliceClone = await createRepo(join(workdir, 'alice'));
  await aliceClone.commit('feature', { 'app.txt': 'feature\n' }, { branch: 'feature' });
  await pushBranches(gitea, alice, aliceClone, upstream, ['main', 'feature']);
  branchPr = await openPullRequest(gitea, alice, upstream, { head: 'feature', title: 'A branch of the repository' });

  bobClone = await createRepo(join(workdir, 'bob'));
  ({ fork, pr: forkPr } = await openForkPullRequest(gitea, bob, upstream, bobClone, 'A change from a fork'));
  // Without `make gitea` first (make test runs it), the first run builds Gitea here: minutes, not seconds.
}, GITEA_BUILD_MS);

afterAll(async () => {
  await gitea?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('the tests’ Gitea', () => {
  it('runs on 127.0.0.1 on the port it was given and reports its version', async () => {
    expect(gitea.url).toBe(`http://127.0.0.1:${gitea.port}`);
    expect(gitea.version).toMatch(/^1\.\d+\.\d+/);
    const res = await fetch(`${gitea.apiUrl}/user`, { headers: { authorization: `token ${alice.token}` } });
    expect(((await res.json()) as { login: string }).login).toBe('alice');
  });

  it('lists a pull request from a branch and one from a fork, with their head commits and where each head lives', async () => {
    const { body: open } = await listPullRequests(gitea, alice, upstream, { state: 'open' });
    const byNumber = new Map(open.map((pr) => [pr.number, pr]));
    expect([...byNumber.keys()].sort()).toEqual([branchPr.number, forkPr.number].sort());

    const fromBranch = byNumber.get(branchPr.number) as GiteaPullRequest;
    expect(fromBranch.head.sha).toBe(await aliceClone.revParse('refs/heads/feature'));
    expect(fromBranch.head.ref).toBe('feature');
    expect(fromBranch.head.repo_id).toBe(fromBranch.base.repo_id);
    expect(fromBranch.head.repo?.fork).toBe(false);
    expect(fromBranch.user.login).toBe('alice');

    const fromFork = byNumber.get(forkPr.number) as GiteaPullRequest;
    expect(fromFork.head.sha).toBe(await bobClone.revParse('refs/heads/fork-change'));
    expect(fromFork.head.ref).toBe('fork-change');
    expect(fromFork.head.repo_id).not.toBe(fromFork.base.repo_id);
    expect(fromFork.head.repo?.full_name).toBe('bob/shop');
    expect(fromFork.head.repo?.fork).toBe(true);
    expect(fromFork.base.repo?.full_name).toBe('alice/shop');
    expect(fromFork.base.ref).toBe('main');
    expect(fromFork.user.login).toBe('bob');
  });

  it('pages the list with limit, X-Total-Count and a Link to the next page, and sends no ETag for it', async () => {
    const first = await listPullRequests(gitea, alice, upstream, { state: 'open', limit: 1, page: 1 });
    expect(first.body).toHaveLength(1);
    expect(first.headers.get('x-total-count')).toBe('2');
    expect(first.headers.get('link')).toMatch(/page=2[^>]*>; rel="next"/);
    const second = await listPullRequests(gitea, alice, upstream, { state: 'open', limit: 1, page: 2 });
    expect(second.body.map((pr) => pr.number)).not.toEqual(first.body.map((pr) => pr.number));
    // Gitea's JSON API has no conditional requests: every poll is a full 200 (docs/gitea-api.md).
    expect(first.headers.get('etag')).toBeNull();
    const again = await listPullRequests(gitea, alice, upstream, { state: 'open' }, { 'if-none-match': '"x"' });
    expect(again.status).toBe(200);
  });

  it('keeps refs/pull/N/head in the base repository, fetchable over git HTTP with a token, and moves it on a new commit', async () => {
    const reader = await createRepo(join(workdir, 'reader'));
    const refs = await lsRemote(gitea, dave, reader, upstream);
    expect(refs.get(`refs/pull/${branchPr.number}/head`)).toBe(branchPr.head.sha);
    expect(refs.get(`refs/pull/${forkPr.number}/head`)).toBe(forkPr.head.sha);
    expect(await fetchRef(gitea, dave, reader, upstream, `refs/pull/${forkPr.number}/head`)).toBe(forkPr.head.sha);

    const next = await bobClone.commit('second commit on the fork', { 'fork.txt': 'fork 2\n' });
    await pushBranches(gitea, bob, bobClone, fork, ['fork-change']);
    // Gitea updates the pull request and its ref from a queue after the push: wait for it.
    await waitFor('the pull request to show the new head', async () =>
      (await getPullRequest(gitea, alice, upstream, forkPr.number)).head.sha === next ? true : undefined,
    );
    expect(await fetchRef(gitea, dave, reader, upstream, `refs/pull/${forkPr.number}/head`)).toBe(next);
    forkPr = await getPullRequest(gitea, alice, upstream, forkPr.number);
  });

  it('reads back a commit status and an edited comment posted through the API', async () => {
    const sha = branchPr.head.sha;
    await postCommitStatus(gitea, alice, upstream, sha, {
      state: 'pending',
      context: 'teal/preview',
      description: 'building',
    });
    await postCommitStatus(gitea, alice, upstream, sha, {
      state: 'success',
      context: 'teal/preview',
      description: 'ready',
      targetUrl: 'http://shop-pr-1.preview.test/',
    });
    const statuses = await commitStatuses(gitea, alice, upstream, sha);
    expect(statuses.map((s) => [s.context, s.status, s.description])).toEqual([
      ['teal/preview', 'success', 'ready'],
      ['teal/preview', 'pending', 'building'],
    ]);
    expect(statuses[0]?.target_url).toBe('http://shop-pr-1.preview.test/');
    expect(statuses[0]?.creator.login).toBe('alice');
    const combined = await combinedStatus(gitea, alice, upstream, sha);
    expect(combined.state).toBe('success');
    expect(combined.statuses.map((s) => [s.context, s.status])).toEqual([['teal/preview', 'success']]);

    const comment = await postComment(gitea, alice, upstream, branchPr.number, '<!-- teal.dev/preview -->\nbuilding');
    await editComment(gitea, alice, upstream, comment.id, '<!-- teal.dev/preview -->\nready');
    const all = await comments(gitea, alice, upstream, branchPr.number);
    expect(all.map((c) => [c.id, c.user.login, c.body])).toEqual([
      [comment.id, 'alice', '<!-- teal.dev/preview -->\nready'],
    ]);
  });

  it('tells who added and removed a label, and each user’s permission on the repository', async () => {
    await setCollaborator(gitea, alice, upstream, 'carol', 'write');
    await setCollaborator(gitea, alice, upstream, 'dave', 'read');
    const label = await createLabel(gitea, alice, upstream, 'preview');
    await addLabels(gitea, carol, upstream, forkPr.number, ['preview']);
    await removeLabel(gitea, carol, upstream, forkPr.number, label);
    await addLabels(gitea, alice, upstream, forkPr.number, ['preview']);

    expect((await getPullRequest(gitea, alice, upstream, forkPr.number)).labels.map((l) => l.name)).toEqual([
      'preview',
    ]);
    const events = await labelEvents(gitea, alice, upstream, forkPr.number);
    expect(events.map((e) => [e.label, e.by, e.added])).toEqual([
      ['preview', 'carol', true],
      ['preview', 'carol', false],
      ['preview', 'alice', true],
    ]);

    // A read collaborator may not label: Gitea answers 403 and nothing changes.
    const denied = await fetch(`${gitea.apiUrl}/repos/alice/shop/issues/${branchPr.number}/labels`, {
      method: 'POST',
      headers: { authorization: `token ${dave.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ labels: ['preview'] }),
    });
    expect(denied.status).toBe(403);

    const permissions = Object.fromEntries(
      await Promise.all(
        ['alice', 'bob', 'carol', 'dave'].map(async (u) => [
          u,
          await collaboratorPermission(gitea, alice, upstream, u),
        ]),
      ),
    );
    // The repository is public: anyone, bob who opened the fork's pull request too, may read it.
    expect(permissions).toEqual({ alice: 'owner', bob: 'read', carol: 'write', dave: 'read' });
  });

  describe('webhooks', () => {
    let listener: HookListener;
    beforeAll(async () => {
      listener = await startHookListener();
    });
    afterAll(async () => {
      await listener?.close();
    });

    it('delivers pull_request events to a listener on 127.0.0.1, signed with the secret', async () => {
      const secret = 'hook-secret-for-the-test';
      await createWebhook(gitea, alice, upstream, { url: listener.url, secret, events: ['pull_request'] });
      await aliceClone.commit('another feature', { 'other.txt': 'other\n' }, { branch: 'other' });
      await pushBranches(gitea, alice, aliceClone, upstream, ['other']);
      const opened = await openPullRequest(gitea, alice, upstream, { head: 'other', title: 'Webhook please' });

      const delivery = await waitFor('the opened event', async () =>
        listener.deliveries.find((d) => d.body.action === 'opened' && d.body.number === opened.number),
      );
      expect(delivery.headers['x-gitea-event']).toBe('pull_request');
      const expected = createHmac('sha256', secret).update(delivery.raw).digest('hex');
      expect(delivery.headers['x-gitea-signature']).toBe(expected);
      expect(delivery.headers['x-hub-signature-256']).toBe(`sha256=${expected}`);
      // Teal's own webhook verification accepts it, and refuses another secret.
      expect(verifySignature('gitea', delivery.headers, delivery.raw, secret)).toBe(true);
      expect(verifySignature('gitea', delivery.headers, delivery.raw, 'another-secret')).toBe(false);
      const pr = delivery.body.pull_request as GiteaPullRequest;
      expect(pr.head.sha).toBe(await aliceClone.revParse('refs/heads/other'));
      expect(pr.number).toBe(opened.number);
    });
  });
});
