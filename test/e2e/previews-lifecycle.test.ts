// Previews end to end (issue #28, Tests on real parts: scenarios), on the real
// Gitea (test/cluster/gitea.ts) behind HTTPS (test/support/tls-front.ts: Apps
// take https git URLs only), the operator as a process and builds simulated by
// KWOK (test/cluster/stages.yaml). A pull request from a branch comes up at its
// URL with the commit status success and one comment saying so; a new commit
// is a new revision released blue/green, the previous one active until the new
// one is; a fork's pull request is never built without an approval, is built
// once a user with write access adds the label, and a later commit on it is
// not built until approved again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_PR_HEAD, ANN_PREVIEWS_REQUESTED } from '../../src/app/preview-labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { previewName } from '../../src/previews/names.ts';
import { COMMIT_STATUS_CONTEXT, previewCommentMarker } from '../../src/previews/pull-request.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { createApp, getApp, phase, type StoredApp, waitForApp, watchActiveServices } from '../support/apps.ts';
import { createRepo, type TestRepo } from '../support/git-server.ts';
import {
  addLabels,
  comments,
  commitStatuses,
  createLabel,
  createRepository,
  type GiteaPullRequest,
  getPullRequest,
  lsRemote,
  openForkPullRequest,
  openPullRequest,
  pushBranches,
  type RepoRef,
  setCollaborator,
} from '../support/gitea.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { startTlsFront, type TlsFront } from '../support/tls-front.ts';
import { StopWaiting } from '../support/wait.ts';
import { watchChanges } from '../support/watch.ts';

const { core, batch, custom } = clients();
/** A cold build of Gitea on a busy 2-core machine stays under it: a bound against hangs only. */
const SETUP_MS = 40 * 60_000;
const TEST_MS = 5 * 60_000;
const APPROVAL = 'preview-approved';
const HOST = (n: number) => `pr-${n}.preview.example.com`;
const URL_OF = (n: number) => `https://${HOST(n)}/`;

let gitea: Gitea;
let front: TlsFront;
let alice: GiteaUser;
let bob: GiteaUser;
let carol: GiteaUser;
let repo: RepoRef;
let fork: RepoRef;
let aliceClone: TestRepo;
let bobClone: TestRepo;
let workdir: string;
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator;
/** From a branch of the repository. */
let branchPr: GiteaPullRequest;
/** From bob's fork. */
let forkPr: GiteaPullRequest;

const b64 = (s: string) => Buffer.from(s).toString('base64');

function parentApp(): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'shop' },
    spec: {
      source: {
        git: { url: `${front.url}/alice/shop.git`, ref: 'main', secretRef: { name: 'shop-git' }, pollInterval: '0' },
      },
      build: { image: 'registry.example.com/team/shop' },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      previews: {
        provider: 'gitea',
        apiURL: gitea.apiUrl,
        tokenSecretRef: { name: 'shop-gitea' },
        interval: '5m',
        forks: { policy: 'approve', approvalLabel: APPROVAL },
        build: { image: 'registry.example.com/previews/shop', pushSecretRef: { name: 'previews-push' } },
        exposure: { ingress: { host: 'pr-{{number}}.preview.example.com' } },
      },
    },
  } as AppInput;
}

beforeAll(async () => {
  gitea = await startGitea();
  front = await startTlsFront({ host: '127.0.0.1', port: gitea.port });
  alice = await gitea.createUser('alice');
  bob = await gitea.createUser('bob');
  carol = await gitea.createUser('carol');
  repo = await createRepository(gitea, alice, 'shop');
  await setCollaborator(gitea, alice, repo, carol.username, 'write');
  await createLabel(gitea, alice, repo, APPROVAL);
  workdir = await mkdtemp(join(tmpdir(), 'teal-previews-lifecycle-'));
  aliceClone = await createRepo(join(workdir, 'alice'));
  await aliceClone.commit('a Dockerfile', { Dockerfile: 'FROM scratch\n' });
  await aliceClone.commit('feature', { 'app.txt': 'feature\n' }, { branch: 'feature' });
  await pushBranches(gitea, alice, aliceClone, repo, ['main', 'feature']);
  branchPr = await openPullRequest(gitea, alice, repo, { head: 'feature', title: 'A new feature' });
  bobClone = await createRepo(join(workdir, 'bob'));
  ({ fork, pr: forkPr } = await openForkPullRequest(gitea, bob, repo, bobClone, 'A change from a fork'));

  ({ name: ns, remove: removeNs } = await createNamespace('previews-lifecycle'));
  const secret = async (name: string, data: Record<string, string>, type?: string) =>
    core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name },
        ...(type ? { type } : {}),
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      },
    });
  await secret('shop-gitea', { token: alice.token });
  // Apps and their source resolution trust the front's certificate through the git Secret's ca.crt.
  await secret('shop-git', { 'ca.crt': front.caPem });
  await secret(
    'previews-push',
    { '.dockerconfigjson': JSON.stringify({ auths: { 'registry.example.com': { auth: b64('u:p') } } }) },
    'kubernetes.io/dockerconfigjson',
  );
  await createApp(ns, parentApp());
  operator = await startOperator({ namespace: ns });
}, SETUP_MS);

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await front?.close();
  await gitea?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

/** What the webhook receiver writes (src/api/webhooks.ts): the parent lists the pull requests again at once. */
async function listAgain(): Promise<void> {
  await custom.patchNamespacedCustomObject(
    {
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'shop',
      body: { metadata: { annotations: { [ANN_PREVIEWS_REQUESTED]: new Date().toISOString() } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

const recordOf = (app: StoredApp, n: number) => app.status?.previews?.pullRequests?.find((p) => p.number === n);

/** Released at that commit; a failed build ends the wait at once with its message. */
const released = (head: string) => (app: StoredApp) => {
  if (app.status?.build?.phase === 'Failed') throw new StopWaiting(`build failed: ${app.status.build.message}`);
  return phase('Healthy')(app) && app.status?.active?.commit === head;
};

/** Teal's commit statuses on a commit, newest first. */
async function ourStatuses(sha: string) {
  return (await commitStatuses(gitea, alice, repo, sha)).filter((s) => s.context === COMMIT_STATUS_CONTEXT);
}

async function ourComments(n: number) {
  return (await comments(gitea, alice, repo, n)).filter((c) =>
    c.body.startsWith(previewCommentMarker('gitea', `${ns}/shop`)),
  );
}

/** The build Jobs of an App, by the commit each builds. */
async function buildJobsOf(app: string): Promise<string[]> {
  const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/app=${app}` });
  return jobs.items.map((j) => j.metadata?.labels?.['teal.dev/commit'] ?? '');
}

async function pinnedRef(name: string): Promise<string | undefined> {
  const app = await getApp(ns, name).catch(() => undefined);
  return (app?.spec as { source?: { git?: { ref?: string } } } | undefined)?.source?.git?.ref;
}

describe('previews from open to a new commit, and a fork gated by approval (real Gitea, KWOK builds)', () => {
  it(
    'open → ready at its URL: built and released, commit status success with the URL, one comment with the URL and commit, status.previews Ready',
    async () => {
      const n = branchPr.number;
      const head = branchPr.head.sha;
      const child = previewName('shop', n);
      await waitForApp(ns, child, `${head.slice(0, 12)} built and released`, released(head), TEST_MS);
      const success = await waitFor(
        'the commit status success on the head',
        async () => {
          const [latest] = await ourStatuses(head);
          return latest?.status === 'success' ? latest : undefined;
        },
        { timeoutMs: TEST_MS },
      );
      expect(success.target_url).toBe(URL_OF(n));
      expect((await ourStatuses(head)).at(-1)?.status).toBe('pending');
      const comment = await waitFor(
        'the comment to show the URL',
        async () => {
          const found = await ourComments(n);
          return found.some((c) => c.body.includes(URL_OF(n))) ? found : undefined;
        },
        { timeoutMs: TEST_MS },
      );
      expect(comment).toHaveLength(1);
      expect(comment[0]?.body).toContain(`\`${head.slice(0, 12)}\``);
      const parent = await waitForApp(ns, 'shop', 'status.previews: Ready', (a) => recordOf(a, n)?.state === 'Ready');
      expect(recordOf(parent, n)).toMatchObject({ name: child, head, url: URL_OF(n) });
    },
    TEST_MS * 2,
  );

  it(
    'a new commit → a new revision released blue/green, the previous one active until then; status pending then success on the new head; one comment, edited',
    async () => {
      const n = branchPr.number;
      const child = previewName('shop', n);
      const old = branchPr.head.sha;
      const [firstComment] = await ourComments(n);
      // Every active Service switch goes to a fully available ReplicaSet; every status of the child names an active revision.
      const services = await watchActiveServices(ns);
      const actives: (string | undefined)[] = [];
      const stopApps = await watchChanges(
        `/apis/teal.dev/v1alpha1/namespaces/${ns}/apps`,
        { fieldSelector: `metadata.name=${child}` },
        (_type, app: StoredApp) => {
          const commit = app.status?.active?.commit;
          if (actives.at(-1) !== commit) actives.push(commit);
        },
      );
      try {
        await aliceClone.commit('more', { 'app.txt': 'more\n' }, { branch: 'feature' });
        await pushBranches(gitea, alice, aliceClone, repo, ['feature']);
        const next = await aliceClone.revParse('refs/heads/feature');
        await listAgain();
        await waitFor('the child to pin the new head', async () =>
          (await pinnedRef(child)) === next ? true : undefined,
        );
        await waitForApp(ns, child, `${next.slice(0, 12)} built and released`, released(next), TEST_MS);
        const success = await waitFor(
          'the commit status success on the new head',
          async () => {
            const [latest] = await ourStatuses(next);
            return latest?.status === 'success' ? latest : undefined;
          },
          { timeoutMs: TEST_MS },
        );
        expect(success.target_url).toBe(URL_OF(n));
        expect((await ourStatuses(next)).at(-1)?.status).toBe('pending');
        const edited = await waitFor(
          'the one comment edited to the new commit, ready',
          async () => {
            const found = await ourComments(n);
            const shows = found.some((c) => c.body.includes(`\`${next.slice(0, 12)}\``) && c.body.includes(URL_OF(n)));
            return shows ? found : undefined;
          },
          { timeoutMs: TEST_MS },
        );
        expect(edited.map((c) => c.id)).toEqual([firstComment?.id]);
        // The old revision was active until the new one was: never none in between.
        expect(actives).toEqual([old, next]);
        expect(services.violations).toEqual([]);
        expect(services.checks()).toBeGreaterThanOrEqual(1);
        expect((await getApp(ns, child)).status?.history?.some((h) => (h as { commit?: string }).commit === old)).toBe(
          true,
        );
      } finally {
        stopApps();
        services.stop();
      }
    },
    TEST_MS * 2,
  );

  it(
    'a fork without approval: no build Job ever, while the other pull request builds; approved by a writer → built; a new commit (the label left on) → not built, the label taken off, built once approved again',
    async () => {
      const n = forkPr.number;
      const child = previewName('shop', n);
      const first = forkPr.head.sha;
      await listAgain();
      const waiting = await waitForApp(ns, 'shop', 'the fork recorded AwaitingApproval', (a) => {
        const r = recordOf(a, n);
        return r?.state === 'AwaitingApproval' && r.head === first;
      });
      expect(recordOf(waiting, n)?.name).toBeUndefined();
      expect(await getApp(ns, child).catch(() => undefined)).toBeUndefined();
      // The other pull request's builds went on meanwhile; none of the fork's commit.
      expect(await buildJobsOf(previewName('shop', branchPr.number))).not.toEqual([]);
      const allJobs = await batch.listNamespacedJob({ namespace: ns });
      expect(allJobs.items.map((j) => j.metadata?.labels?.['teal.dev/commit'])).not.toContain(first);
      const [pending] = await ourStatuses(first);
      expect(pending?.status).toBe('pending');

      // carol has write access: her label approves this commit.
      await addLabels(gitea, carol, repo, n, [APPROVAL]);
      await listAgain();
      await waitForApp(ns, child, `${first.slice(0, 12)} approved, built and released`, released(first), TEST_MS);
      expect(await buildJobsOf(child)).toEqual([first]);

      // bob pushes again; the label stays on the pull request as carol left it.
      await bobClone.commit('a second change', { 'second.txt': 'second\n' });
      await pushBranches(gitea, bob, bobClone, fork, ['fork-change']);
      const second = await bobClone.revParse('HEAD');
      await waitFor(`Gitea to move refs/pull/${n}/head to ${second.slice(0, 12)}`, async () => {
        const refs = await lsRemote(gitea, alice, bobClone, repo);
        return refs.get(`refs/pull/${n}/head`) === second ? true : undefined;
      });
      await listAgain();
      await waitForApp(ns, 'shop', 'the new head recorded AwaitingApproval', (a) => {
        const r = recordOf(a, n);
        return r?.state === 'AwaitingApproval' && r.head === second;
      });
      const stored = await getApp(ns, child);
      expect((stored.spec as { source?: { git?: { ref?: string } } }).source?.git?.ref).toBe(first);
      expect((stored.metadata as { annotations?: Record<string, string> }).annotations?.[ANN_PR_HEAD]).toBe(first);
      expect(stored.status?.active?.commit).toBe(first);
      expect(await buildJobsOf(child)).toEqual([first]);
      const all = await batch.listNamespacedJob({ namespace: ns });
      expect(all.items.map((j) => j.metadata?.labels?.['teal.dev/commit'])).not.toContain(second);
      // The label approved the first commit only: Teal takes it off, so that approving the new one is a new act.
      await waitFor('Teal to take the stale approval label off', async () => {
        const labels = (await getPullRequest(gitea, alice, repo, n)).labels.map((l) => l.name);
        return labels.includes(APPROVAL) ? undefined : true;
      });
      expect((await getApp(ns, child)).status?.active?.commit).toBe(first);

      // carol approves again: the new commit is built and released.
      await addLabels(gitea, carol, repo, n, [APPROVAL]);
      await listAgain();
      await waitForApp(ns, child, `${second.slice(0, 12)} approved, built and released`, released(second), TEST_MS);
      expect((await buildJobsOf(child)).sort()).toEqual([first, second].sort());
    },
    TEST_MS * 2,
  );
});
