// A preview's child App builds and releases the pull request's exact commit
// (issue #28 item 3), on the real Gitea (test/cluster/gitea.ts), with the build
// Job's own BuildKit and kaniko run for real by the build runner
// (test/cluster/build-runner.ts; KWOK leaves build pods in real-build-*
// namespaces to it) and a real registry on 127.0.0.1. The pull request comes
// from a fork, so no branch of the base repository points at its head: the
// base repository has that commit only under refs/pull/N/head. The operator's
// previews controller makes the child App (childApp) once the owner approves
// the head; a second push needs a new approval, so the child stays on the
// first commit. Each engine's parent App has a repository of its own (one App
// previews a repository: previews/repository-owner.ts), with the same fork's
// pull request.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_PR_REF, ANN_PREVIEWS_REQUESTED } from '../../src/app/preview-labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { previewName } from '../../src/previews/names.ts';
import { GiteaPull, giteaPullRequest } from '../../src/previews/providers/gitea.ts';
import type { PullRequest } from '../../src/previews/pull-request.ts';
import { pushBusyboxBase } from '../cluster/base-images.ts';
import { type BuildRunner, startBuildRunner } from '../cluster/build-runner.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { type Registry, startRegistry } from '../cluster/registry.ts';
import { createApp, getApp, phase, type StoredApp, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { createRepo, type TestRepo } from '../support/git-server.ts';
import {
  addLabels,
  createLabel,
  createRepository,
  type GiteaLabel,
  giteaCall,
  lsRemote,
  openForkPullRequest,
  pushBranches,
  type RepoRef,
  removeLabel,
} from '../support/gitea.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { readRegistryImage } from '../support/registry-image.ts';
import { startTlsFront, type TlsFront } from '../support/tls-front.ts';
import { StopWaiting } from '../support/wait.ts';

const { core, batch, custom } = clients();
/** A cold toolchain or Gitea build compiles Go modules: a bound against a hang only. */
const SETUP_MS = 40 * 60_000;
/** Builds for real on a busy machine: the release of a preview waits on one. Bounds against hangs only. */
const BUILD_MS = 5 * 60_000;
const TEST_MS = 2 * BUILD_MS + 60_000;

let ns: string;
let removeNs: () => Promise<void>;
let registry: Registry;
let gitea: Gitea;
let front: TlsFront;
let runner: BuildRunner;
let operator: Operator;
let workdir: string;
let alice: GiteaUser;
let bob: GiteaUser;
/** A base repository with a fork's pull request on it, approved by its owner. */
interface Upstream {
  repo: RepoRef;
  fork: RepoRef;
  clone: TestRepo;
  /** The fork's pull request as the Gitea client hands it to the planner. */
  pr: PullRequest;
  approval: GiteaLabel;
}
/** By parent App: shop builds with BuildKit, shop-kaniko with kaniko. */
const upstreams = new Map<string, Upstream>();
const upstreamOf = (parent: string): Upstream => {
  const found = upstreams.get(parent);
  if (!found) throw new Error(`no repository for ${parent}`);
  return found;
};

/** Every file of the commit goes into the image, so the image says which commit it was built from. */
const dockerfile = () => `FROM ${registry.address}/base/busybox:1\nCOPY . /src/\n`;

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools();
  gitea = await startGitea({ log: (line) => console.error(line) });
  ({ name: ns, remove: removeNs } = await createNamespace('real-build'));
  registry = await startRegistry();
  await pushBusyboxBase(registry, 'base/busybox', '1');
  front = await startTlsFront({ host: '127.0.0.1', port: gitea.port });
  workdir = await mkdtemp(join(tmpdir(), 'teal-previews-build-'));
  alice = await gitea.createUser('alice');
  bob = await gitea.createUser('bob');
  const aliceClone = await createRepo(join(workdir, 'alice'));
  await aliceClone.commit('the app', { Dockerfile: dockerfile(), 'version.txt': 'main\n' });
  for (const name of ['shop', 'shop-kaniko']) upstreams.set(name, await approvedForkPullRequest(name, aliceClone));
  await putSecret('shop-gitea', { token: alice.token });
  // The build trusts the front's certificate through the git Secret's ca.crt, as a company's CA.
  await putSecret('shop-git', { 'ca.crt': front.caPem });
  // The registry is open: the previews' push Secret names another host, so no credential is sent.
  await putSecret(
    'previews-push',
    { '.dockerconfigjson': JSON.stringify({ auths: { 'registry.invalid': { auth: base64('u:p') } } }) },
    'kubernetes.io/dockerconfigjson',
  );
  runner = startBuildRunner({
    kc: kubeConfig(),
    namespace: ns,
    toolsDir,
    extraCaPem: front.caPem,
    log: (line) => console.error(`build-runner: ${line}`),
  });
  await createApp(ns, parentInput('shop', 'buildkit'));
  await createApp(ns, parentInput('shop-kaniko', 'kaniko'));
  operator = await startOperator({ namespace: ns });
}, SETUP_MS);

afterAll(async () => {
  await operator?.stop();
  await runner?.stop();
  await front?.close();
  await gitea?.stop();
  await registry?.stop();
  await removeNs?.();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

const base64 = (text: string) => Buffer.from(text).toString('base64');

/** alice's repository of that name, bob's fork of it and his pull request from it, which alice approves. */
async function approvedForkPullRequest(name: string, aliceClone: TestRepo): Promise<Upstream> {
  const repo = await createRepository(gitea, alice, name);
  await pushBranches(gitea, alice, aliceClone, repo, ['main']);
  const clone = await createRepo(join(workdir, `bob-${name}`));
  const opened = await openForkPullRequest(gitea, bob, repo, clone, 'A change from a fork');
  const raw = await giteaCall<unknown>(gitea, alice, 'GET', `/repos/alice/${name}/pulls/${opened.pr.number}`);
  const pr = giteaPullRequest(GiteaPull.parse(raw.body));
  // The owner approves the fork's head: the approval is pinned to that commit.
  const approval = await createLabel(gitea, alice, repo, APPROVAL);
  await addLabels(gitea, alice, repo, pr.number, [APPROVAL]);
  return { repo, fork: opened.fork, clone, pr, approval };
}

async function putSecret(name: string, data: Record<string, string>, type?: string): Promise<void> {
  const body = {
    metadata: { name },
    ...(type ? { type } : {}),
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, base64(v)])),
  };
  await core.createNamespacedSecret({ namespace: ns, body });
}

const APPROVAL = 'preview-approved';

/** The parent App as a user would write it: its repository on Gitea (through the front), with previews. */
function parentInput(name: string, engine: 'buildkit' | 'kaniko'): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: { url: `${front.url}/alice/${name}.git`, ref: 'main', secretRef: { name: 'shop-git' }, pollInterval: '0' },
      },
      build: { engine, image: `${registry.address}/${ns}/${name}` },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      previews: {
        provider: 'gitea',
        apiURL: gitea.apiUrl,
        tokenSecretRef: { name: 'shop-gitea' },
        forks: { policy: 'approve', approvalLabel: APPROVAL },
        build: { image: `${registry.address}/${ns}/${name}-previews`, pushSecretRef: { name: 'previews-push' } },
      },
    },
  };
}

/** The child App the previews controller makes for the fork's pull request, once it is there. */
async function childOf(parent: string): Promise<string> {
  const { pr } = upstreamOf(parent);
  const name = previewName(parent, pr.number);
  const child = await waitFor(`the previews controller to make ${name}`, () => getApp(ns, name).catch(() => undefined));
  const metadata = child.metadata as StoredApp['metadata'] & { annotations?: Record<string, string> };
  expect(metadata.annotations?.[ANN_PR_REF]).toBe(pr.headRef);
  expect((child.spec as { source?: { git?: { ref?: string } } }).source?.git?.ref).toBe(pr.headSha);
  return name;
}

/** A webhook's hint on the parents: the controller lists the pull requests again at once. */
async function listAgain(): Promise<void> {
  for (const name of ['shop', 'shop-kaniko']) {
    await custom.patchNamespacedCustomObject(
      {
        group: 'teal.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'apps',
        name,
        body: { metadata: { annotations: { [ANN_PREVIEWS_REQUESTED]: new Date().toISOString() } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

/** Released at that commit; a failed build ends the wait at once with its message. */
const released = (head: string) => (app: StoredApp) => {
  if (app.status?.build?.phase === 'Failed') throw new StopWaiting(`build failed: ${app.status.build.message}`);
  return phase('Healthy')(app) && app.status?.active?.commit === head && app.status?.build?.phase === 'Succeeded';
};

async function jobsOf(app: string) {
  return (await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/app=${app}` })).items;
}

/** The files of the image the registry holds for <repository>:<commit>. */
async function imageFiles(repository: string, commit: string) {
  const image = await readRegistryImage(registry.address, repository, commit);
  return { fork: await image.readFile('/src/fork.txt'), second: await image.readFile('/src/second.txt') };
}

describe("a preview's child App on a fork's pull request (real Gitea, real builds)", () => {
  let child: string;
  let kaniko: string;
  let head: string;
  let kanikoHead: string;

  it('the head commit is in the base repository only under the pull ref', async () => {
    for (const { pr, repo, clone } of upstreams.values()) {
      expect(pr.fromFork).toBe(true);
      expect(pr.headRef).toBe(`refs/pull/${pr.number}/head`);
      const refs = await lsRemote(gitea, alice, clone, repo);
      expect(refs.get(pr.headRef)).toBe(pr.headSha);
      expect([...refs].filter(([ref, sha]) => sha === pr.headSha && ref !== pr.headRef)).toEqual([]);
    }
    head = upstreamOf('shop').pr.headSha;
    kanikoHead = upstreamOf('shop-kaniko').pr.headSha;
  });

  it(
    'BuildKit: the child App builds the head commit, names it by its pull ref, and releases it',
    async () => {
      const { pr } = upstreamOf('shop');
      child = await childOf('shop');
      const app = await waitForApp(
        ns,
        child,
        `${head.slice(0, 12)} built for real and released`,
        released(head),
        BUILD_MS,
      );
      expect(app.status?.source).toMatchObject({
        ref: pr.headRef,
        commit: head,
        revision: `${pr.headRef}@sha1:${head}`,
      });
      expect(app.status?.build?.commit).toBe(head);
      const [job, ...others] = await jobsOf(child);
      expect(others).toEqual([]);
      expect(job?.metadata?.labels?.['teal.dev/commit']).toBe(head);
      expect(job?.metadata?.annotations?.['teal.dev/ref']).toBe(pr.headRef);
      const build = runner.finished.find((b) => b.pod.startsWith(`${job?.metadata?.name}-`));
      expect(build?.exitCode).toBe(0);
      // The fork's file is in the image: the commit only the pull ref names was fetched and built.
      expect(await imageFiles(`${ns}/shop-previews`, head)).toEqual({ fork: 'fork\n', second: undefined });

      const get = await tealIn(ns, 'get', child);
      expect(get.code).toBe(0);
      expect(get.stdout).toContain(`${pr.headRef}@sha1:${head}`);
    },
    TEST_MS,
  );

  it(
    'kaniko: the child App fetches the head commit by its SHA (go-git clones no pull ref), names it by its pull ref, and releases it',
    async () => {
      const { pr } = upstreamOf('shop-kaniko');
      kaniko = await childOf('shop-kaniko');
      const app = await waitForApp(
        ns,
        kaniko,
        `${kanikoHead.slice(0, 12)} built by kaniko and released`,
        released(kanikoHead),
        BUILD_MS,
      );
      expect(app.status?.source?.ref).toBe(pr.headRef);
      const [job] = await jobsOf(kaniko);
      const args = job?.spec?.template.spec?.containers[0]?.args ?? [];
      expect(args).toContain(
        `--context=${front.url.replace(/^https:/, 'git:')}/alice/shop-kaniko.git#${kanikoHead}#${kanikoHead}`,
      );
      expect(await imageFiles(`${ns}/shop-kaniko-previews`, kanikoHead)).toEqual({ fork: 'fork\n', second: undefined });
    },
    TEST_MS,
  );

  it(
    'a second push moves the pull ref; the App pinned to the first commit builds that commit again, never the new one',
    async () => {
      // The owner takes the approval off, and the fork pushes again: the new head is approved by nobody.
      // (A label left on approves no later push either: previews-lifecycle.test.ts.)
      const seconds = new Map<string, string>();
      for (const [parent, { repo, fork, clone, pr, approval }] of upstreams) {
        await removeLabel(gitea, alice, repo, pr.number, approval);
        await clone.commit('a second change', { 'second.txt': 'second\n' });
        await pushBranches(gitea, bob, clone, fork, ['fork-change']);
        const second = await clone.revParse('HEAD');
        seconds.set(parent, second);
        await waitFor(`Gitea to move ${repo.name}'s ${pr.headRef} to ${second.slice(0, 12)}`, async () => {
          const refs = await lsRemote(gitea, alice, clone, repo);
          return refs.get(pr.headRef) === second ? true : undefined;
        });
      }
      // The controller sees the new head, which nobody approved: the children stay on the first commit.
      await listAgain();
      for (const [parent, { pr }] of upstreams) {
        const second = seconds.get(parent) ?? '';
        await waitForApp(ns, parent, `the new head ${second.slice(0, 12)} listed, awaiting approval`, (a) =>
          (a.status?.previews?.pullRequests ?? []).some(
            (p) => p.number === pr.number && p.head === second && p.state === 'AwaitingApproval',
          ),
        );
      }
      for (const [app, pinned] of [
        [child, head],
        [kaniko, kanikoHead],
      ] as const) {
        const stored = await getApp(ns, app);
        expect((stored.spec as { source?: { git?: { ref?: string } } }).source?.git?.ref).toBe(pinned);
      }

      // The first builds are deleted, so each App builds its commit again, now that the pull ref names another.
      for (const [parent, app, pinned] of [
        ['shop', child, head],
        ['shop-kaniko', kaniko, kanikoHead],
      ] as const) {
        const repository = `${parent}-previews`;
        const second = seconds.get(parent);
        const { pr } = upstreamOf(parent);
        const [first, ...others] = await jobsOf(app);
        expect(others).toEqual([]);
        const firstUid = first?.metadata?.uid;
        await batch.deleteNamespacedJob({
          name: first?.metadata?.name ?? '',
          namespace: ns,
          propagationPolicy: 'Background',
        });
        const again = await waitFor(
          `${app}: the build of the pinned commit again`,
          async () => {
            const jobs = await jobsOf(app);
            const job = jobs.find((j) => j.metadata?.uid !== firstUid && !j.metadata?.deletionTimestamp);
            if (job?.status?.failed) throw new StopWaiting(`${app}: the build failed`);
            return job?.status?.succeeded === 1 ? job : undefined;
          },
          { timeoutMs: BUILD_MS },
        );
        expect(again.metadata?.labels?.['teal.dev/commit']).toBe(pinned);
        expect(await imageFiles(`${ns}/${repository}`, pinned)).toEqual({ fork: 'fork\n', second: undefined });
        const after = await waitForApp(ns, app, 'the pinned commit active', released(pinned), BUILD_MS);
        expect(after.status?.source).toMatchObject({ ref: pr.headRef, commit: pinned });
        expect((await jobsOf(app)).map((j) => j.metadata?.labels?.['teal.dev/commit'])).not.toContain(second);
        const tags = (await (await fetch(`http://${registry.address}/v2/${ns}/${repository}/tags/list`)).json()) as {
          tags: string[];
        };
        expect(tags.tags).toEqual([pinned]);
      }
    },
    TEST_MS,
  );

  it('a pull ref annotation that is not a pull ref is an InvalidAnnotation Warning Event and builds nothing', async () => {
    const jobsBefore = (await jobsOf(child)).map((j) => j.metadata?.uid).sort();
    const bad = '--upload-pack=touch /tmp/pwned';
    await custom.patchNamespacedCustomObject(
      {
        group: 'teal.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'apps',
        name: child,
        body: { metadata: { annotations: { [ANN_PR_REF]: bad } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const warning = `InvalidAnnotation: App ${child}: annotation ${ANN_PR_REF}=${JSON.stringify(bad)}`;
    await waitFor('the Warning Event for the bad pull ref', async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${child}` });
      const warnings = events.items.filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`);
      return warnings.some((w) => w.startsWith(warning)) ? true : undefined;
    });
    // Nothing is built or fetched differently: the same commit active, no new build.
    const app = await getApp(ns, child);
    expect(app.status?.source?.commit).toBe(head);
    expect(app.status?.active?.commit).toBe(head);
    expect((await jobsOf(child)).map((j) => j.metadata?.uid).sort()).toEqual(jobsBefore);
  });
});
