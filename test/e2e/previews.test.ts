// Previews run (issue #28 items 2, 3, 6, 9): a parent App with spec.previews on
// a real Gitea (test/cluster/gitea.ts) and the operator as a process. A pull
// request opened from a branch gets a child App <app>-pr-<n>, owned by the
// parent, labelled, following the head's full SHA, with its Ingress; the
// parent's status.previews lists it and PreviewsListed is True; the commit
// status teal/preview and exactly one comment with Teal's marker appear on the
// pull request; closing it (no webhook: the test writes the webhook's hint
// annotation, as the receiver would) deletes the child, and so does the next
// listing alone when no webhook came at all. A token Secret missing
// or wrong: PreviewsListed False naming it, no child, no token said anywhere.
// Two parent Apps on one repository: only the older previews it, the younger
// says which App does and takes over once that one is deleted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ANN_ACTIVE_AT,
  ANN_PR_HEAD,
  ANN_PR_REF,
  ANN_PREVIEWS_REQUESTED,
  ANN_WAKE,
  LABEL_PREVIEW_OF,
  LABEL_PULL_REQUEST,
} from '../../src/app/preview-labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { COMMIT_STATUS_CONTEXT, previewCommentMarker } from '../../src/previews/pull-request.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { createApp, getApp, type StoredApp } from '../support/apps.ts';
import { createRepo } from '../support/git-server.ts';
import {
  closePullRequest,
  comments,
  commitStatuses,
  createRepository,
  type GiteaPullRequest,
  gitUrl,
  openPullRequest,
  pushBranches,
  type RepoRef,
} from '../support/gitea.ts';
import { clients, createNamespace, kubectl, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

/** A bound against hangs that a cold build of Gitea on a busy 2-core machine stays under. */
const GITEA_BUILD_MS = 40 * 60_000;
const WRONG_TOKEN = 'not-a-gitea-token-0123456789';

const { core, kc } = clients();
const networking = kc.makeApiClient(NetworkingV1Api);
let gitea: Gitea;
let alice: GiteaUser;
let repo: RepoRef;
let workdir: string;
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator;
let pr: GiteaPullRequest;
/** The token tests' repositories, one per App: the oldest App naming a repository is the one that previews it. */
let unreadable: RepoRef;
let unauthorized: RepoRef;

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** An App on the repository with previews; its token Secret as named. Apps take https only (see webhooks-pull-requests.test.ts). */
function parentApp(name: string, tokenSecret: string, on: RepoRef = repo, interval = '5m'): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: { git: { url: gitUrl(gitea, on).replace(/^http:/, 'https:'), ref: 'main', pollInterval: '0' } },
      build: { image: 'registry.example.com/team/shop' },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      previews: {
        provider: 'gitea',
        apiURL: gitea.apiUrl,
        tokenSecretRef: { name: tokenSecret },
        interval,
        build: { image: 'registry.example.com/previews/shop', pushSecretRef: { name: 'previews-push' } },
        exposure: { ingress: { host: 'pr-{{number}}.preview.example.com' } },
      },
    },
  } as AppInput;
}

type ChildApp = StoredApp & {
  metadata: StoredApp['metadata'] & {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  spec: { source?: { git?: { ref?: string } } };
};

async function findApp(name: string): Promise<ChildApp | undefined> {
  return (await getApp(ns, name).catch(() => undefined)) as ChildApp | undefined;
}

const listedCondition = (app: StoredApp) => app.status?.conditions?.find((c) => c.type === 'PreviewsListed');

/** The events about an App, as one text. */
async function eventsText(name: string): Promise<string> {
  const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` });
  return events.items.map((e) => `${e.reason} ${e.message}`).join('\n');
}

beforeAll(async () => {
  gitea = await startGitea();
  alice = await gitea.createUser('alice');
  repo = await createRepository(gitea, alice, 'shop');
  workdir = await mkdtemp(join(tmpdir(), 'teal-previews-'));
  const local = await createRepo(join(workdir, 'shop'));
  await local.commit('a Dockerfile', { Dockerfile: 'FROM scratch\n' });
  await local.commit('feature', { 'app.txt': 'feature\n' }, { branch: 'feature' });
  await pushBranches(gitea, alice, local, repo, ['main', 'feature']);
  pr = await openPullRequest(gitea, alice, repo, { head: 'feature', title: 'A new feature' });

  unreadable = await createRepository(gitea, alice, 'unreadable');
  unauthorized = await createRepository(gitea, alice, 'unauthorized');

  ({ name: ns, remove: removeNs } = await createNamespace('previews'));
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'shop-gitea' }, data: { token: b64(alice.token) } },
  });
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'wrong-gitea' }, data: { token: b64(WRONG_TOKEN) } },
  });
  await createApp(ns, parentApp('shop', 'shop-gitea'));
  await createApp(ns, parentApp('nosecret', 'no-such-secret', unreadable));
  await createApp(ns, parentApp('wrong', 'wrong-gitea', unauthorized));
  operator = await startOperator({ namespace: ns });
}, GITEA_BUILD_MS);

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await gitea?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('previews on a real Gitea', () => {
  it('an open pull request gets a child App owned by the parent, following its head SHA, with its Ingress', async () => {
    const parent = await getApp(ns, 'shop');
    const child = await waitFor('the child App shop-pr-N', () => findApp(`shop-pr-${pr.number}`));
    expect(child.metadata.labels).toMatchObject({
      [LABEL_PREVIEW_OF]: 'shop',
      [LABEL_PULL_REQUEST]: String(pr.number),
    });
    expect(child.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'App', name: 'shop', uid: parent.metadata.uid, controller: true }),
    ]);
    expect(child.spec.source?.git?.ref).toBe(pr.head.sha);
    expect(child.spec.source?.git?.ref).toMatch(/^[0-9a-f]{40}$/);
    expect(child.metadata.annotations).toMatchObject({
      [ANN_PR_HEAD]: pr.head.sha,
      [ANN_PR_REF]: `refs/pull/${pr.number}/head`,
    });
    const ingress = await waitFor('the preview Ingress', () =>
      networking.readNamespacedIngress({ namespace: ns, name: `shop-pr-${pr.number}` }).catch(() => undefined),
    );
    expect(ingress.spec?.rules?.[0]?.host).toBe(`pr-${pr.number}.preview.example.com`);
    expect(ingress.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'App', uid: child.metadata.uid });
  });

  it("lists it in the parent's status.previews with PreviewsListed True", async () => {
    const parent = await waitFor('status.previews to list the pull request', async () => {
      const app = await getApp(ns, 'shop');
      const listed = app.status?.previews?.pullRequests?.some((p) => p.number === pr.number);
      return listed && listedCondition(app)?.status === 'True' ? app : undefined;
    });
    const record = parent.status?.previews?.pullRequests?.find((p) => p.number === pr.number);
    expect(record).toMatchObject({
      name: `shop-pr-${pr.number}`,
      head: pr.head.sha,
      url: `https://pr-${pr.number}.preview.example.com/`,
    });
    expect(listedCondition(parent)).toMatchObject({ status: 'True', reason: 'Listed' });
    // Previews by state, and the provider's answers by code: no pull request number or App name as a label.
    const metrics = await (await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).text();
    expect(metrics).toMatch(/^teal_previews\{state="(Building|Deploying|Ready|Failed)"\} 1$/m);
    expect(metrics).toMatch(/^teal_preview_provider_requests_total\{provider="gitea",code="200"\} [1-9]/m);
    expect(metrics).toMatch(/^teal_preview_provider_requests_total\{provider="gitea",code="401"\} [1-9]/m);
    expect(metrics.split('\n').filter((l) => l.startsWith('teal_preview') && /shop|pr-|number/.test(l))).toEqual([]);
  });

  it('posts the commit status teal/preview on the head commit and exactly one comment with the marker', async () => {
    const statuses = await waitFor('the commit status teal/preview', async () => {
      const all = await commitStatuses(gitea, alice, repo, pr.head.sha);
      const ours = all.filter((s) => s.context === COMMIT_STATUS_CONTEXT);
      return ours.length > 0 ? ours : undefined;
    });
    // Newest first: the first one Teal wrote says the preview is on its way.
    expect(statuses.at(-1)?.status).toBe('pending');
    const marked = await waitFor('the preview comment', async () => {
      const found = (await comments(gitea, alice, repo, pr.number)).filter((c) =>
        c.body.startsWith(previewCommentMarker('gitea', `${ns}/shop`)),
      );
      return found.length > 0 ? found : undefined;
    });
    expect(marked).toHaveLength(1);
    expect(marked[0]?.body).toContain(`shop-pr-${pr.number}`);
    // What the provider accepted is recorded, so it is not written again.
    await waitFor('status.previews to record what was reported', async () => {
      const record = (await getApp(ns, 'shop')).status?.previews?.pullRequests?.find((p) => p.number === pr.number);
      return record?.reported?.status?.sha === pr.head.sha && record.reported.comment ? record : undefined;
    });
    expect(
      (await comments(gitea, alice, repo, pr.number)).filter((c) =>
        c.body.startsWith(previewCommentMarker('gitea', `${ns}/shop`)),
      ),
    ).toHaveLength(1);
  });

  it('a token Secret missing or wrong: PreviewsListed False naming it, no child, and the token nowhere', async () => {
    const missing = await waitFor('nosecret: PreviewsListed False', async () => {
      const app = await getApp(ns, 'nosecret');
      return listedCondition(app)?.status === 'False' ? app : undefined;
    });
    expect(listedCondition(missing)).toMatchObject({ reason: 'TokenUnavailable' });
    expect(listedCondition(missing)?.message).toContain('no-such-secret');
    const wrong = await waitFor('wrong: PreviewsListed False', async () => {
      const app = await getApp(ns, 'wrong');
      return listedCondition(app)?.status === 'False' ? app : undefined;
    });
    expect(listedCondition(wrong)).toMatchObject({ reason: 'Unauthorized' });
    for (const name of ['nosecret', 'wrong']) {
      expect(await findApp(`${name}-pr-${pr.number}`)).toBeUndefined();
    }
    const said = [JSON.stringify(wrong.status), await eventsText('wrong'), operator.logs()].join('\n');
    expect(said).not.toContain(WRONG_TOKEN);
    expect(said).not.toContain(alice.token);
  });

  it("a change of the child App reconciles its parent: a wake request on the child moves the preview's activity clock", async () => {
    const name = `shop-pr-${pr.number}`;
    const at = new Date().toISOString();
    const wake = await kubectl(['annotate', '--overwrite', 'apps.teal.dev', name, '-n', ns, `${ANN_WAKE}=${at}`]);
    expect(wake.code, wake.stderr).toBe(0);
    // Only the parent writes the child: its next plan, woken by the child's change, records the wake.
    await waitFor('the parent to record the wake on the child', async () => {
      const child = await findApp(name);
      return child?.metadata.annotations?.[ANN_ACTIVE_AT] === at ? child : undefined;
    });
  });

  it('a webhook hint that is not a time is ignored and told once as a Warning Event', async () => {
    const bad = `${ANN_PREVIEWS_REQUESTED}=soon`;
    const annotated = await kubectl(['annotate', '--overwrite', 'apps.teal.dev', 'nosecret', '-n', ns, bad]);
    expect(annotated.code, annotated.stderr).toBe(0);
    const told = await waitFor('the InvalidAnnotation Event', async () => {
      const text = await eventsText('nosecret');
      return text.includes('InvalidAnnotation') ? text : undefined;
    });
    expect(told).toContain(ANN_PREVIEWS_REQUESTED);
    expect(await findApp(`nosecret-pr-${pr.number}`)).toBeUndefined();
  });

  it('two parent Apps on one repository: only the older previews it; the younger names it, and takes over once it is gone', async () => {
    const twins = await createRepository(gitea, alice, 'twins');
    const local = await createRepo(join(workdir, 'twins'));
    await local.commit('a Dockerfile', { Dockerfile: 'FROM scratch\n' });
    await local.commit('change', { 'app.txt': 'change\n' }, { branch: 'change' });
    await pushBranches(gitea, alice, local, twins, ['main', 'change']);
    const opened = await openPullRequest(gitea, alice, twins, { head: 'change', title: 'A change' });
    const tealComments = async () =>
      (await comments(gitea, alice, twins, opened.number)).filter((c) => c.body.includes('teal.dev/preview'));

    // The older: created first (a tie of creation seconds goes to namespace/name, and twin-a sorts first).
    await createApp(ns, parentApp('twin-a', 'shop-gitea', twins));
    await waitFor('the older App to preview the pull request', async () => {
      const child = await findApp(`twin-a-pr-${opened.number}`);
      return child && (await tealComments()).length > 0 ? child : undefined;
    });
    await createApp(ns, parentApp('twin-b', 'shop-gitea', twins));
    const younger = await waitFor('the younger App to say what it does with its previews', async () => {
      const app = await getApp(ns, 'twin-b');
      const status = listedCondition(app)?.status;
      return status === 'True' || status === 'False' ? app : undefined;
    });
    expect(listedCondition(younger)).toMatchObject({ status: 'False', reason: 'RepositoryPreviewedElsewhere' });
    expect(listedCondition(younger)?.message).toContain(`App ${ns}/twin-a previews alice/twins`);
    expect(await findApp(`twin-b-pr-${opened.number}`)).toBeUndefined();
    const statuses = await commitStatuses(gitea, alice, twins, opened.head.sha);
    expect(statuses.filter((s) => s.context === COMMIT_STATUS_CONTEXT).length).toBeGreaterThan(0);
    const written = await tealComments();
    expect(written).toHaveLength(1);
    expect(written[0]?.body.startsWith(previewCommentMarker('gitea', `${ns}/twin-a`))).toBe(true);

    const deleted = await kubectl(['delete', 'apps.teal.dev', 'twin-a', '-n', ns, '--wait=false']);
    expect(deleted.code, deleted.stderr).toBe(0);
    await waitFor("the younger App's child App", () => findApp(`twin-b-pr-${opened.number}`));
    await waitFor('the younger App to list the pull request', async () => {
      const app = await getApp(ns, 'twin-b');
      return listedCondition(app)?.status === 'True' ? app : undefined;
    });
    await waitFor("the younger App's own comment", async () => {
      const found = (await tealComments()).filter((c) =>
        c.body.startsWith(previewCommentMarker('gitea', `${ns}/twin-b`)),
      );
      return found.length === 1 ? found : undefined;
    });
  });

  it('a pull request closed with no webhook at all (a missed one) loses its child App at the next listing', async () => {
    // Its own repository and parent, listed every 30 s (the least interval): only the listing sees the close.
    const other = await createRepository(gitea, alice, 'polled');
    const local = await createRepo(join(workdir, 'polled'));
    await local.commit('a Dockerfile', { Dockerfile: 'FROM scratch\n' });
    await local.commit('change', { 'app.txt': 'change\n' }, { branch: 'change' });
    await pushBranches(gitea, alice, local, other, ['main', 'change']);
    const opened = await openPullRequest(gitea, alice, other, { head: 'change', title: 'A change' });
    await createApp(ns, parentApp('polled', 'shop-gitea', other, '30s'));
    const child = await waitFor('the child App', () => findApp(`polled-pr-${opened.number}`));
    await closePullRequest(gitea, alice, other, opened.number);
    await waitFor('the child App to be deleted by a listing', async () => {
      const now = await findApp(`polled-pr-${opened.number}`);
      return now === undefined || now.metadata.uid !== child.metadata.uid ? true : undefined;
    });
    const parent = await getApp(ns, 'polled');
    expect(parent.status?.previews?.pullRequests?.some((p) => p.number === opened.number)).toBe(false);
  });

  it('closing the pull request deletes its child App at the next listing (a webhook hint brings it at once)', async () => {
    const child = await waitFor('the child App', () => findApp(`shop-pr-${pr.number}`));
    await closePullRequest(gitea, alice, repo, pr.number);
    // What the webhook receiver writes (src/api/webhooks.ts): no webhook is configured on this Gitea.
    const hint = `${ANN_PREVIEWS_REQUESTED}=${new Date().toISOString()}`;
    const annotated = await kubectl(['annotate', '--overwrite', 'apps.teal.dev', 'shop', '-n', ns, hint]);
    expect(annotated.code, annotated.stderr).toBe(0);
    await waitFor('the child App to be deleted', async () => {
      const now = await findApp(`shop-pr-${pr.number}`);
      return now === undefined || now.metadata.uid !== child.metadata.uid ? true : undefined;
    });
    const parent = await waitFor('status.previews to drop the pull request', async () => {
      const app = await getApp(ns, 'shop');
      return app.status?.previews?.pullRequests?.some((p) => p.number === pr.number) ? undefined : app;
    });
    expect(listedCondition(parent)?.status).toBe('True');
  });
});
