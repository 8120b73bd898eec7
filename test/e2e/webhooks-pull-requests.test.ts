// A pull-request webhook as a hint for previews (issue #28 item 2), end to end
// up to the App: a real Gitea on 127.0.0.1 (test/cluster/gitea.ts) delivers its
// signed pull_request event to the operator's webhook endpoint when a pull
// request is opened, and the parent App whose spec.previews follows the
// repository gets teal.dev/previews-requested-at; an App on the same
// repository without previews does not, and a badly signed delivery changes nothing.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_PREVIEWS_REQUESTED } from '../../src/app/preview-labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { signSha256 } from '../../src/app/signature.ts';
import { type Gitea, type GiteaUser, startGitea } from '../cluster/gitea.ts';
import { createRepo } from '../support/git-server.ts';
import {
  createRepository,
  createWebhook,
  gitUrl,
  openPullRequest,
  pushBranches,
  type RepoRef,
} from '../support/gitea.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

/** A bound against hangs that a cold build of Gitea on a busy 2-core machine stays under. */
const GITEA_BUILD_MS = 40 * 60_000;
const SECRET = 'the shop webhook secret';

const { core, custom } = clients();
let gitea: Gitea;
let alice: GiteaUser;
let repo: RepoRef;
let workdir: string;
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator;

/**
 * The repository as an App names it. Apps take https only, and this Gitea serves
 * http; Teal compares repositories without their scheme (as a push's ssh URL
 * selects an App on https), so this names the repository of Gitea's http clone
 * URL. Nothing here clones it: only the webhook's selection is under test.
 */
const appRepoUrl = () => gitUrl(gitea, repo).replace(/^http:/, 'https:');

function shopApp(name: string, previews: boolean): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: { url: appRepoUrl(), ref: 'main', webhookSecretRef: { name: 'shop-hook' }, pollInterval: '0' },
      },
      build: { image: 'registry.example.com/team/shop' },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      ...(previews
        ? {
            previews: {
              provider: 'gitea',
              apiURL: gitea.apiUrl,
              tokenSecretRef: { name: 'shop-gitea' },
              build: { image: 'registry.example.com/previews/shop', pushSecretRef: { name: 'previews-push' } },
              exposure: { ingress: { host: 'pr-{{number}}.preview.example.com' } },
            },
          }
        : {}),
    },
  } as AppInput;
}

const annotationsOf = async (name: string): Promise<Record<string, string>> => {
  const app = (await custom.getNamespacedCustomObject({
    group: 'teal.dev',
    version: 'v1alpha1',
    namespace: ns,
    plural: 'apps',
    name,
  })) as { metadata: { annotations?: Record<string, string> } };
  return app.metadata.annotations ?? {};
};

beforeAll(async () => {
  gitea = await startGitea();
  alice = await gitea.createUser('alice');
  repo = await createRepository(gitea, alice, 'shop');
  workdir = await mkdtemp(join(tmpdir(), 'teal-hook-prs-'));
  const local = await createRepo(join(workdir, 'shop'));
  await local.commit('feature', { 'app.txt': 'feature\n' }, { branch: 'feature' });
  await pushBranches(gitea, alice, local, repo, ['main', 'feature']);

  ({ name: ns, remove: removeNs } = await createNamespace('hook-prs'));
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'shop-hook' }, data: { token: Buffer.from(SECRET).toString('base64') } },
  });
  for (const [name, previews] of [
    ['shop', true],
    ['shop-plain', false],
  ] as const) {
    await custom.createNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      body: shopApp(name, previews),
    });
  }
  // Created before the operator starts: its readiness then means its App cache holds them.
  operator = await startOperator({ namespace: ns });
  await createWebhook(gitea, alice, repo, {
    url: `http://127.0.0.1:${operator.healthPort}/webhooks/gitea`,
    secret: SECRET,
    events: ['pull_request'],
  });
}, GITEA_BUILD_MS);

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await gitea?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('pull-request webhooks from a real Gitea', () => {
  it('a delivery with a bad signature is refused (401) and changes nothing', async () => {
    const fixture = await readFile(new URL('../fixtures/webhooks/gitea-pull-request.json', import.meta.url), 'utf8');
    const body = fixture.replaceAll('http://localhost:3000/gitea/webhooks', gitUrl(gitea, repo).replace(/\.git$/, ''));
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/gitea`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gitea-event': 'pull_request',
        'x-gitea-delivery': randomUUID(),
        'x-gitea-signature': signSha256(body, 'a guessed secret').slice('sha256='.length),
      },
      body,
    });
    expect(res.status).toBe(401);
    expect((await annotationsOf('shop'))[ANN_PREVIEWS_REQUESTED]).toBeUndefined();
  });

  it('opening a pull request marks the parent App, and only it', async () => {
    await openPullRequest(gitea, alice, repo, { head: 'feature', title: 'A new feature' });
    const requested = await waitFor('the parent App to get the previews request', async () => {
      return (await annotationsOf('shop'))[ANN_PREVIEWS_REQUESTED];
    });
    expect(requested).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect((await annotationsOf('shop-plain'))[ANN_PREVIEWS_REQUESTED]).toBeUndefined();
  });
});
