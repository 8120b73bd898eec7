// Pull-request previews in `make dev` (issue #28): a real Gitea on 127.0.0.1
// (test/cluster/gitea.ts, when it is built) holds the weather app, and the
// demo App previews its pull requests.
//
// - A Gitea user (DEV_USER) with a token, and the repository DEV_USER/weather-app.
// - The demo's bare repository stays the clone's remote; its post-receive hook
//   pushes each pushed ref on to Gitea (post-receive.ts), so `git push` in the
//   clone works as without Gitea.
// - The App follows the Gitea repository where Gitea keeps it on disk
//   (file://, the operator's --allow-file-git as in plain `make dev`): Apps take
//   https git URLs only and this Gitea serves http. Gitea writes each pull
//   request's refs/pull/N/head there, so a preview builds from the pull ref.
// - A signed Gitea webhook for pull requests to the operator's /webhooks/gitea,
//   with the secret of the App's webhookSecretRef (the operator's global secret
//   too, which the generic webhook of the hook is signed with).
// - spec.previews: provider gitea, apiURL the local Gitea, the token in a Secret,
//   and the previews' own registry and push Secret. No exposure: the simulated
//   cluster has no Ingress controller, so no preview URL is reported.
// - A file in the demo folder (FORGE_FILE) tells `make dev-pr` where Gitea is
//   and who to be; openDevPullRequest pushes a branch and opens a pull request.
// Free of vitest, like the rest of test/cluster.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseDocument } from 'yaml';
import { secretFromFile } from '../../src/api/webhooks.ts';
import { git } from '../support/git-server.ts';
import {
  createRepository,
  createWebhook,
  type GiteaAddress,
  type GiteaPullRequest,
  gitAs,
  gitUrl,
  openPullRequest,
  pushBranches,
  type RepoRef,
} from '../support/gitea.ts';
import { type Demo, prepareDemo } from './demo.ts';
import type { Gitea, GiteaUser } from './gitea.ts';

/** The Gitea user that owns the weather app and opens pull requests in dev. */
export const DEV_USER = 'developer';
const REPOSITORY = 'weather-app';
/** Where make dev's Gitea listens; TEAL_DEV_GITEA_ADDR moves it. */
export const DEV_GITEA_ADDR = process.env.TEAL_DEV_GITEA_ADDR ?? '127.0.0.1:3000';
/** In the demo folder: where dev's Gitea is and its user's token, for `make dev-pr` (mode 0600, removed on stop). */
export const FORGE_FILE = 'gitea.json';

/** The Secrets dev makes beside the App. */
export const TOKEN_SECRET = 'weather-gitea';
export const WEBHOOK_SECRET = 'weather-webhook';
export const PREVIEWS_PUSH_SECRET = 'weather-previews-push';
/** Where preview builds push: not the App's own image (previews never push with production's credentials). */
export const PREVIEWS_IMAGE = 'registry.example.com/previews/weather';

/** What `make dev` and `make dev-pr` share about dev's Gitea. */
export interface DevForge extends GiteaAddress {
  user: GiteaUser;
  repo: RepoRef;
  /** The URL the App follows: the bare repository on Gitea's disk. */
  appRepoUrl: string;
}

export interface DevPreviews {
  /** The demo (prepareDemo's), its manifest with spec.previews. */
  demo: Demo;
  forge: DevForge;
  /** The Secrets to apply before the App, one JSON document each. */
  secrets: string[];
}

/**
 * What `make dev` sets up when its Gitea runs: the demo whose hook pushes on to
 * Gitea, Gitea seeded with it and with a webhook to the operator at
 * `operatorUrl` (http://host:port), and the App's Secrets in `namespace`.
 */
export async function prepareDevPreviews(
  gitea: Gitea,
  demoDir: string,
  options: { operatorUrl: string; namespace: string },
): Promise<DevPreviews> {
  await mkdir(demoDir, { recursive: true });
  const forge = await seedDevGitea(gitea, demoDir);
  const demo = await prepareDemo(demoDir, `${options.operatorUrl}/webhooks/generic`, {
    repositoryUrl: forge.appRepoUrl,
    forgeFile: join(demoDir, FORGE_FILE),
  });
  // One secret for both: the hook signs with the operator's global one, Gitea with the App's.
  const secret = secretFromFile(await readFile(demo.secretFile)).toString('utf8');
  await publishToGitea(forge, demo.remote, { url: `${options.operatorUrl}/webhooks/gitea`, secret });
  const secrets = devForgeSecrets(forge, options.namespace, secret).map((s) => JSON.stringify(s));
  return { demo: { ...demo, manifest: withPreviews(demo.manifest, forge) }, forge, secrets };
}

/** The port of an address host:port. */
export function portOf(address: string): number {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`not host:port: ${address}`);
  return port;
}

/**
 * The dev user with a token and the empty weather-app repository (the demo's
 * commits are pushed by publishToGitea), written down in demoDir/FORGE_FILE.
 */
export async function seedDevGitea(gitea: Gitea, demoDir: string): Promise<DevForge> {
  const user = await gitea.createUser(DEV_USER);
  const repo = await createRepository(gitea, user, REPOSITORY);
  const bare = join(gitea.repositoriesDir, repo.owner.toLowerCase(), `${repo.name.toLowerCase()}.git`);
  const forge: DevForge = { url: gitea.url, apiUrl: gitea.apiUrl, user, repo, appRepoUrl: pathToFileURL(bare).href };
  await writeFile(join(demoDir, FORGE_FILE), JSON.stringify(forge, null, 2), { mode: 0o600 });
  return forge;
}

/** What `make dev` wrote, or why `make dev-pr` cannot go on. */
export async function readForgeFile(demoDir: string): Promise<DevForge> {
  const path = join(demoDir, FORGE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new Error(
      `no ${path}: is make dev running, with Gitea? (it runs Gitea once it is built: make gitea, or make dev PREVIEWS=1)`,
    );
  }
  try {
    return JSON.parse(text) as DevForge;
  } catch (err) {
    throw new Error(
      `${path} is not what make dev writes (${err instanceof Error ? err.message : String(err)}): run make dev again`,
    );
  }
}

/** Whether dev's Gitea still answers: a make dev stopped without its clean-up leaves its file behind. */
async function answering(forge: DevForge): Promise<void> {
  const up = await fetch(`${forge.apiUrl}/version`, { signal: AbortSignal.timeout(10_000) }).then(
    (res) => res.ok,
    () => false,
  );
  if (!up) throw new Error(`dev's Gitea does not answer on ${forge.url}: is make dev still running?`);
}

/**
 * The demo's branches pushed to Gitea (the App follows it from there), and
 * Gitea's signed pull-request webhook to the operator.
 */
export async function publishToGitea(
  forge: DevForge,
  bareRepository: string,
  webhook: { url: string; secret: string },
): Promise<void> {
  const bare = { dir: bareRepository, revParse: (rev: string) => git(bareRepository, 'rev-parse', rev) };
  const heads = await git(bareRepository, 'for-each-ref', '--format=%(refname:lstrip=2)', 'refs/heads');
  await pushBranches(forge, forge.user, bare, forge.repo, heads.split('\n').filter(Boolean));
  await createWebhook(forge, forge.user, forge.repo, { ...webhook, events: ['pull_request'] });
}

/** The Secrets of dev's previews in the App's namespace: the token, the webhook secret, and the previews' push Secret. */
export function devForgeSecrets(forge: DevForge, namespace: string, webhookSecret: string): object[] {
  const secret = (name: string, stringData: Record<string, string>, type?: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    ...(type ? { type } : {}),
    stringData,
  });
  return [
    secret(TOKEN_SECRET, { token: forge.user.token }),
    secret(WEBHOOK_SECRET, { token: webhookSecret }),
    // Simulated builds push nowhere: the Secret is there because spec.previews.build must name one.
    secret(PREVIEWS_PUSH_SECRET, { '.dockerconfigjson': '{"auths":{}}' }, 'kubernetes.io/dockerconfigjson'),
  ];
}

/** The demo App following dev's Gitea, with its webhook secret and spec.previews. */
export function withPreviews(manifest: string, forge: DevForge): string {
  const doc = parseDocument(manifest);
  doc.setIn(['spec', 'source', 'git', 'webhookSecretRef'], doc.createNode({ name: WEBHOOK_SECRET }));
  const previews = {
    provider: 'gitea',
    apiURL: forge.apiUrl,
    repository: `${forge.repo.owner}/${forge.repo.name}`,
    tokenSecretRef: { name: TOKEN_SECRET },
    // The shortest the schema allows: a missed webhook delays a preview by half a minute at most.
    interval: '30s',
    build: { image: PREVIEWS_IMAGE, pushSecretRef: { name: PREVIEWS_PUSH_SECRET } },
  };
  doc.setIn(['spec', 'previews'], doc.createNode(previews));
  return doc.toString();
}

export interface DevPullRequest {
  pr: GiteaPullRequest;
  branch: string;
  /** The branch's commit: the one the preview builds. */
  head: string;
}

/**
 * `make dev-pr`: a branch from Gitea's main with a small change to the weather
 * data (Seoul's description names the branch), pushed as the dev user, and a
 * pull request of it into main. Works in a throwaway clone: the user's clone is
 * not touched.
 */
export async function openDevPullRequest(forge: DevForge, now = new Date()): Promise<DevPullRequest> {
  await answering(forge);
  const branch = `dev-pr-${now.toISOString().replace(/\D/g, '').slice(0, 14)}`;
  const tmp = await mkdtemp(join(tmpdir(), 'teal-dev-pr-'));
  try {
    const dir = join(tmp, REPOSITORY);
    await gitAs(forge.user, { dir: tmp }, 'clone', '--quiet', '--branch', 'main', gitUrl(forge, forge.repo), dir);
    await git(dir, 'checkout', '--quiet', '-b', branch);
    const data = join(dir, 'sample_data.json');
    const cities = JSON.parse(await readFile(data, 'utf8')) as Record<string, { description?: string }>;
    const seoul = cities.seoul;
    if (!seoul) throw new Error('sample_data.json on main has no "seoul": nothing to change for the pull request');
    seoul.description = `snow (${branch})`;
    await writeFile(data, `${JSON.stringify(cities, null, 2)}\n`);
    await git(dir, 'commit', '--quiet', '-am', `Seoul: snow (${branch})`);
    const local = { dir, revParse: (rev: string) => git(dir, 'rev-parse', rev) };
    await pushBranches(forge, forge.user, local, forge.repo, [branch]);
    const head = await local.revParse('HEAD');
    const pr = await openPullRequest(forge, forge.user, forge.repo, {
      head: branch,
      title: `Seoul: snow (${branch})`,
      body: 'Opened by `make dev-pr`: Teal builds this commit and runs it as a preview (docs/previews.md).',
    });
    return { pr, branch, head };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
