// Pull-request previews in `make dev` (issue #28, "Done when"): what `make dev`
// sets up when its Gitea runs (test/cluster/dev-gitea.ts, as cli.ts calls it),
// on a real Gitea and the real control plane: the weather app pushed to Gitea
// and followed from there, a push in the clone carried on to Gitea by the
// demo's hook, and `make dev-pr` (cluster.ts pr, run as make runs it) opening a
// pull request whose signed webhook reaches the App.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  ANN_PR_REF,
  ANN_PREVIEWS_REQUESTED,
  LABEL_PREVIEW_OF,
  LABEL_PULL_REQUEST,
} from '../../src/app/preview-labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { type DevPreviews, prepareDevPreviews } from '../cluster/dev-gitea.ts';
import { type Gitea, startGitea } from '../cluster/gitea.ts';
import { createApp, getApp, waitForApp } from '../support/apps.ts';
import { comments, commitStatuses, giteaCall, listPullRequests } from '../support/gitea.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../cluster/cli.ts', import.meta.url));
/** A bound against hangs that a cold build of Gitea on a busy 2-core machine stays under. */
const GITEA_BUILD_MS = 40 * 60_000;

const { core } = clients();
let gitea: Gitea;
let ns: string;
let removeNs: () => Promise<void>;
let cache: string;
let operator: Operator;
let dev: DevPreviews;

/** Where the branch is on dev's Gitea, by its API. */
async function giteaBranch(branch: string): Promise<string> {
  const { owner, name } = dev.forge.repo;
  const path = `/repos/${owner}/${name}/branches/${branch}`;
  return (await giteaCall<{ commit: { id: string } }>(gitea, dev.forge.user, 'GET', path)).body.commit.id;
}

const annotationsOf = async (name: string): Promise<Record<string, string>> => {
  const app = (await getApp(ns, name)) as { metadata: { annotations?: Record<string, string> } };
  return app.metadata.annotations ?? {};
};

const git = (cwd: string, ...args: string[]) => run('git', args, { cwd });

beforeAll(async () => {
  gitea = await startGitea();
  ({ name: ns, remove: removeNs } = await createNamespace('dev-previews'));
  // cluster.ts keeps the demo in $TEAL_CACHE_DIR/demo: `make dev-pr` finds dev's Gitea there.
  cache = await mkdtemp(join(tmpdir(), 'teal-dev-previews-'));
  const demoDir = join(cache, 'demo');
  // Where prepareDemo keeps the secret (it makes one only if there is none): the operator reads it first here.
  const secretFile = join(demoDir, 'webhook-secret');
  await mkdir(demoDir, { recursive: true });
  await writeFile(secretFile, 'a dev webhook secret', { mode: 0o600 });
  operator = await startOperator({
    namespace: ns,
    // As make dev runs it: the App follows Gitea's repository on disk.
    extraArgs: ['--allow-file-git', `--webhook-secret-file=${secretFile}`],
  });
  dev = await prepareDevPreviews(gitea, demoDir, {
    operatorUrl: `http://127.0.0.1:${operator.healthPort}`,
    namespace: ns,
  });
  for (const secret of dev.secrets) await core.createNamespacedSecret({ namespace: ns, body: JSON.parse(secret) });
  await createApp(ns, parse(dev.demo.manifest) as AppInput);
}, GITEA_BUILD_MS);

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await gitea?.stop();
  if (cache) await rm(cache, { recursive: true, force: true });
});

describe("make dev's Gitea on a fixed port", () => {
  it('says the port is in use, rather than waiting on whatever answers there', async () => {
    // Gitea does not exit when its port is taken; a server of another kind answers there.
    const other = createServer((_, res) => res.writeHead(404).end());
    other.listen(0, '127.0.0.1');
    await once(other, 'listening');
    const { port } = other.address() as AddressInfo;
    try {
      await expect(startGitea({ port })).rejects.toThrow(`Gitea did not start: 127.0.0.1:${port} is in use\n`);
    } finally {
      other.close();
    }
  });
});

describe('make dev with its Gitea', () => {
  it('releases the weather app from Gitea, where the demo was pushed, with spec.previews on it', async () => {
    const main = await giteaBranch('main');
    expect(main).toBe((await git(dev.demo.remote, 'rev-parse', 'refs/heads/main')).stdout.trim());
    const app = await waitForApp(
      ns,
      'weather',
      'the first release, from Gitea',
      (a) => a.status?.phase === 'Healthy' && a.status?.active?.commit === main,
    );
    const spec = app.spec as AppInput['spec'];
    expect(spec.source?.git.url).toBe(dev.forge.appRepoUrl);
    expect(spec.previews).toMatchObject({
      provider: 'gitea',
      apiURL: gitea.apiUrl,
      repository: `${dev.forge.repo.owner}/${dev.forge.repo.name}`,
      tokenSecretRef: { name: 'weather-gitea' },
    });
    const hooks = await giteaCall<{ config: { url: string }; events: string[]; active: boolean }[]>(
      gitea,
      dev.forge.user,
      'GET',
      `/repos/${dev.forge.repo.owner}/${dev.forge.repo.name}/hooks`,
    );
    expect(hooks.body).toMatchObject([
      {
        active: true,
        // Gitea takes pull_request as the group: opened, closed, labelled, synchronized (a new commit), ...
        events: expect.arrayContaining(['pull_request', 'pull_request_sync', 'pull_request_label']),
        config: { url: `http://127.0.0.1:${operator.healthPort}/webhooks/gitea` },
      },
    ]);
  });

  it('carries a push in the clone on to Gitea, and the hook tells Teal', async () => {
    const clone = dev.demo.clone;
    const data = join(clone, 'sample_data.json');
    await writeFile(data, (await readFile(data, 'utf8')).replace('clear sky', 'light rain'));
    await git(clone, 'commit', '-qam', 'Seoul: light rain');
    const pushed = await git(clone, 'push');
    expect(pushed.stderr).toContain(`pushed to Gitea ${gitea.url}/developer/weather-app`);
    expect(pushed.stderr).toContain(`webhook 202 {"matched":["${ns}/weather"]}`);
    const head = (await git(clone, 'rev-parse', 'HEAD')).stdout.trim();
    expect(await giteaBranch('main')).toBe(head);
    await waitForApp(ns, 'weather', 'the push seen', (a) => a.status?.source?.commit === head);
  });

  it('make dev-pr opens a pull request on Gitea, whose webhook asks the App to list its pull requests', async () => {
    const before = (await annotationsOf('weather'))[ANN_PREVIEWS_REQUESTED];
    expect(before).toBeUndefined();
    const { stdout } = await run(process.execPath, [CLI, 'pr'], {
      env: { ...process.env, TEAL_CACHE_DIR: cache },
    });
    const open = await listPullRequests(gitea, dev.forge.user, dev.forge.repo, { state: 'open' });
    expect(open.body).toHaveLength(1);
    const [pr] = open.body;
    expect(pr?.head.ref).toMatch(/^dev-pr-\d{14}$/);
    expect(pr?.base.ref).toBe('main');
    expect(stdout).toContain(`Pull request #${pr?.number}`);
    expect(stdout).toContain(pr?.html_url);
    expect(stdout).toContain(`kubectl teal previews weather --watch`);
    // The branch changes the weather data, and nothing else.
    const files = await giteaCall<{ filename: string }[]>(
      gitea,
      dev.forge.user,
      'GET',
      `/repos/${dev.forge.repo.owner}/${dev.forge.repo.name}/pulls/${pr?.number}/files`,
    );
    expect(files.body.map((f) => f.filename)).toEqual(['sample_data.json']);
    await waitFor('the pull request webhook to reach the App', async () => {
      return (await annotationsOf('weather'))[ANN_PREVIEWS_REQUESTED];
    });
  });

  it("shows the pull request's preview coming up: the child App at its head, and the teal/preview status on it", async () => {
    const [pr] = (await listPullRequests(gitea, dev.forge.user, dev.forge.repo, { state: 'open' })).body;
    if (!pr) throw new Error('no pull request open: the test above opens it');
    const childName = `weather-pr-${pr.number}`;
    const child = await waitForApp(ns, childName, 'the preview of the pull request', () => true);
    expect(child.metadata).toMatchObject({
      labels: { [LABEL_PREVIEW_OF]: 'weather', [LABEL_PULL_REQUEST]: String(pr.number) },
    });
    expect((child.spec as AppInput['spec']).source?.git).toMatchObject({
      url: dev.forge.appRepoUrl,
      ref: pr.head.sha,
    });
    // The pull ref the preview is fetched by is in the repository the App follows (Gitea's on disk).
    const pullRef = `refs/pull/${pr.number}/head`;
    expect((child.metadata as { annotations?: Record<string, string> }).annotations?.[ANN_PR_REF]).toBe(pullRef);
    const advertised = (await git(cache, 'ls-remote', dev.forge.appRepoUrl, pullRef)).stdout;
    expect(advertised.split('\t')[0]).toBe(pr.head.sha);
    const ready = await waitForApp(
      ns,
      'weather',
      'the preview ready',
      (a) => a.status?.previews?.pullRequests?.some((p) => p.number === pr.number && p.state === 'Ready') === true,
    );
    expect(ready.status?.previews?.pullRequests).toMatchObject([
      { number: pr.number, name: childName, head: pr.head.sha, state: 'Ready' },
    ]);
    const statuses = await waitFor('the teal/preview status to say ready', async () => {
      const all = await commitStatuses(gitea, dev.forge.user, dev.forge.repo, pr.head.sha);
      return all[0]?.status === 'success' ? all : undefined;
    });
    expect(statuses[0]).toMatchObject({ context: 'teal/preview', status: 'success' });
    // On its way there it said what it was doing: pending first.
    expect(statuses.at(-1)).toMatchObject({ context: 'teal/preview', status: 'pending' });
    const said = await waitFor("Teal's comment on the pull request", async () => {
      const all = await comments(gitea, dev.forge.user, dev.forge.repo, pr.number);
      return all.length > 0 ? all : undefined;
    });
    expect(said).toHaveLength(1);
    expect(said[0]?.body).toContain(`kubectl teal`);
  });
});
