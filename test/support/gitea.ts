// What the pull-request preview tests do on the real Gitea (test/cluster/gitea.ts):
// repositories, branches pushed with real git, pull requests from a branch and
// from a fork, labels, collaborators, webhooks, and reading back the statuses
// and comments Teal posts. Every call goes through Gitea's REST API as one of
// its users; docs/gitea-api.md says what each endpoint answers. Free of vitest,
// so that `make dev` may use it.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { Gitea, GiteaUser } from '../cluster/gitea.ts';
import { GIT_ENV, git, type TestRepo } from './git-server.ts';
import { waitFor } from './wait.ts';

/** Where a Gitea answers: all the calls below need (make dev's pull-request script has no more). */
export type GiteaAddress = Pick<Gitea, 'url' | 'apiUrl'>;

/** A repository on the server, as owner/name. */
export interface RepoRef {
  owner: string;
  name: string;
}

export interface ApiAnswer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** One API call as a user; any status outside 2xx throws with Gitea's message unless it is in `allow`. */
export async function giteaCall<T>(
  gitea: Pick<Gitea, 'apiUrl'>,
  user: Pick<GiteaUser, 'token'>,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; allow?: number[] } = {},
): Promise<ApiAnswer<T>> {
  const res = await fetch(`${gitea.apiUrl}${path}`, {
    method,
    headers: {
      authorization: `token ${user.token}`,
      accept: 'application/json',
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  if (!res.ok && !options.allow?.includes(res.status)) {
    throw new Error(`gitea ${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  }
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as T };
}

const run = promisify(execFile);

const repoPath = (repo: RepoRef) => `/repos/${encodeURIComponent(repo.owner)}/${encodeURIComponent(repo.name)}`;

// The parts of Gitea's answers the tests read (modules/structs in Gitea's source).
export interface GiteaRepository {
  id: number;
  full_name: string;
  fork: boolean;
  clone_url: string;
  owner: { login: string };
  name: string;
}
export interface GiteaBranchInfo {
  label: string;
  ref: string;
  sha: string;
  repo_id: number;
  repo: GiteaRepository | null;
}
export interface GiteaPullRequest {
  id: number;
  number: number;
  title: string;
  state: 'open' | 'closed';
  draft: boolean;
  merged: boolean;
  user: { login: string };
  labels: { id: number; name: string }[];
  html_url: string;
  updated_at: string;
  head: GiteaBranchInfo;
  base: GiteaBranchInfo;
}
export interface GiteaCommitStatus {
  id: number;
  /** Named `state` when posted, `status` when read back. */
  status: string;
  context: string;
  description: string;
  target_url: string;
  creator: { login: string };
}
export interface GiteaComment {
  id: number;
  body: string;
  user: { login: string };
}
export interface GiteaLabel {
  id: number;
  name: string;
  color: string;
}
export interface GiteaTimelineItem {
  id: number;
  type: string;
  body: string;
  user: { login: string };
  label: GiteaLabel | null;
  created_at: string;
}

/** An empty repository of the user's (the tests push its content with real git). */
export async function createRepository(
  gitea: GiteaAddress,
  user: GiteaUser,
  name: string,
  options: { private?: boolean } = {},
): Promise<RepoRef> {
  const { body } = await giteaCall<GiteaRepository>(gitea, user, 'POST', '/user/repos', {
    body: { name, private: options.private ?? false, default_branch: 'main', auto_init: false },
  });
  return { owner: body.owner.login, name: body.name };
}

/** The user's fork of a repository (Gitea forks synchronously). */
export async function forkRepository(gitea: GiteaAddress, user: GiteaUser, repo: RepoRef): Promise<RepoRef> {
  const { body } = await giteaCall<GiteaRepository>(gitea, user, 'POST', `${repoPath(repo)}/forks`, { body: {} });
  return { owner: body.owner.login, name: body.name };
}

/** The git HTTP URL of a repository; no credential in it (gitAs sends them in a header). */
export function gitUrl(gitea: Pick<Gitea, 'url'>, repo: RepoRef): string {
  return `${gitea.url}/${encodeURIComponent(repo.owner)}/${encodeURIComponent(repo.name)}.git`;
}

/**
 * Runs git in a local repository as the user: its token goes in an HTTP header
 * set through git's environment, so it is in no remote URL, argument list or
 * error message.
 */
export async function gitAs(user: GiteaUser, local: Pick<TestRepo, 'dir'>, ...args: string[]): Promise<string> {
  const basic = Buffer.from(`${user.username}:${user.token}`).toString('base64');
  try {
    const { stdout } = await run('git', args, {
      cwd: local.dir,
      env: {
        ...GIT_ENV,
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
        GIT_TERMINAL_PROMPT: '0',
      },
    });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; code?: number };
    throw new Error(`git ${args.join(' ')} as ${user.username} failed (${e.code}): ${e.stderr ?? ''}`);
  }
}

/**
 * Pushes local branches (each `branch` to the same name) to the repository as the
 * user, with real git, and waits until Gitea's API shows each at the pushed
 * commit: Gitea records pushed branches from a queue after the push returns, and
 * a pull request opened before that finds no branch (404).
 */
export async function pushBranches(
  gitea: GiteaAddress,
  user: GiteaUser,
  local: Pick<TestRepo, 'dir' | 'revParse'>,
  repo: RepoRef,
  branches: string[],
  options: { force?: boolean } = {},
): Promise<void> {
  const refspecs = branches.map((b) => `${options.force ? '+' : ''}refs/heads/${b}:refs/heads/${b}`);
  await gitAs(user, local, 'push', '--quiet', gitUrl(gitea, repo), ...refspecs);
  for (const branch of branches) {
    const sha = await local.revParse(`refs/heads/${branch}`);
    const path = `${repoPath(repo)}/branches/${encodeURIComponent(branch)}`;
    await waitFor(`Gitea to record ${repo.owner}/${repo.name} ${branch} at ${sha}`, async () => {
      const { status, body } = await giteaCall<{ commit: { id: string } }>(gitea, user, 'GET', path, { allow: [404] });
      return status === 200 && body.commit.id === sha ? true : undefined;
    });
  }
}

/**
 * Fetches a ref of the repository into the local one (to `into`, by default the
 * same name) over git HTTP as the user, and returns the commit it names.
 */
export async function fetchRef(
  gitea: GiteaAddress,
  user: GiteaUser,
  local: TestRepo,
  repo: RepoRef,
  ref: string,
  into = ref,
): Promise<string> {
  await gitAs(user, local, 'fetch', '--quiet', '--no-tags', gitUrl(gitea, repo), `+${ref}:${into}`);
  return local.revParse(`${into}^{commit}`);
}

/** The refs a repository advertises over git HTTP (ls-remote), ref -> object. */
export async function lsRemote(
  gitea: GiteaAddress,
  user: GiteaUser,
  local: TestRepo,
  repo: RepoRef,
): Promise<Map<string, string>> {
  const out = await gitAs(user, local, 'ls-remote', gitUrl(gitea, repo));
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [sha = '', ref = ''] = line.split('\t');
        return [ref, sha];
      }),
  );
}

/**
 * A pull request into the repository's main from a fork: the user forks it,
 * starts branch fork-change in the local clone from the fork's main, commits
 * fork.txt there, pushes it to the fork and opens the pull request.
 */
export async function openForkPullRequest(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  local: TestRepo,
  title: string,
): Promise<{ fork: RepoRef; pr: GiteaPullRequest }> {
  const fork = await forkRepository(gitea, user, repo);
  // The work starts from the fork's main, which is the repository's.
  const forkMain = await fetchRef(gitea, user, local, fork, 'refs/heads/main', 'refs/remotes/fork/main');
  await git(local.dir, 'checkout', '--quiet', '-b', 'fork-change', forkMain);
  await local.commit('from the fork', { 'fork.txt': 'fork\n' });
  await pushBranches(gitea, user, local, fork, ['fork-change']);
  const pr = await openPullRequest(gitea, user, repo, { head: { fork, branch: 'fork-change' }, title });
  return { fork, pr };
}

/**
 * Opens a pull request into `base` of the repository. `head` is a branch of the
 * same repository, or `{ fork, branch }` for a branch of a fork (Gitea names it owner:branch).
 */
export async function openPullRequest(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  options: { head: string | { fork: RepoRef; branch: string }; base?: string; title: string; body?: string },
): Promise<GiteaPullRequest> {
  const head = typeof options.head === 'string' ? options.head : `${options.head.fork.owner}:${options.head.branch}`;
  const { body } = await giteaCall<GiteaPullRequest>(gitea, user, 'POST', `${repoPath(repo)}/pulls`, {
    body: { head, base: options.base ?? 'main', title: options.title, body: options.body ?? '' },
  });
  return body;
}

export async function getPullRequest(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
): Promise<GiteaPullRequest> {
  return (await giteaCall<GiteaPullRequest>(gitea, user, 'GET', `${repoPath(repo)}/pulls/${number}`)).body;
}

/** One page of the repository's pull requests, with the answer's headers (Link, X-Total-Count, ETag if any). */
export async function listPullRequests(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  query: { state?: 'open' | 'closed' | 'all'; page?: number; limit?: number } = {},
  headers: Record<string, string> = {},
): Promise<ApiAnswer<GiteaPullRequest[]>> {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  return giteaCall<GiteaPullRequest[]>(gitea, user, 'GET', `${repoPath(repo)}/pulls?${params}`, {
    headers,
    allow: [304],
  });
}

export async function closePullRequest(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
): Promise<void> {
  await giteaCall(gitea, user, 'PATCH', `${repoPath(repo)}/pulls/${number}`, { body: { state: 'closed' } });
}

/** A label of the repository (color as #rrggbb). */
export async function createLabel(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  name: string,
  color = '#00aabb',
): Promise<GiteaLabel> {
  return (await giteaCall<GiteaLabel>(gitea, user, 'POST', `${repoPath(repo)}/labels`, { body: { name, color } })).body;
}

/** Adds labels (by name) to a pull request as the user: the timeline records the user as who labeled. */
export async function addLabels(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
  names: string[],
): Promise<GiteaLabel[]> {
  const path = `${repoPath(repo)}/issues/${number}/labels`;
  return (await giteaCall<GiteaLabel[]>(gitea, user, 'POST', path, { body: { labels: names } })).body;
}

export async function removeLabel(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
  label: GiteaLabel,
): Promise<void> {
  await giteaCall(gitea, user, 'DELETE', `${repoPath(repo)}/issues/${number}/labels/${label.id}`);
}

export interface LabelEvent {
  label: string;
  /** Who added or removed it. */
  by: string;
  added: boolean;
  at: string;
}

/** Who added and removed which label on a pull request, oldest first, from its timeline. */
export async function labelEvents(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
): Promise<LabelEvent[]> {
  const path = `${repoPath(repo)}/issues/${number}/timeline?limit=50`;
  const { body } = await giteaCall<GiteaTimelineItem[]>(gitea, user, 'GET', path);
  return body
    .filter((item) => item.type === 'label' && item.label)
    .map((item) => ({
      label: item.label?.name ?? '',
      by: item.user.login,
      // Gitea's label comment: content "1" when the label was added, empty when removed.
      added: item.body === '1',
      at: item.created_at,
    }));
}

export type Permission = 'read' | 'write' | 'admin';

/** Makes a user a collaborator of the repository with that permission (as its owner or an admin). */
export async function setCollaborator(
  gitea: GiteaAddress,
  owner: GiteaUser,
  repo: RepoRef,
  username: string,
  permission: Permission,
): Promise<void> {
  const path = `${repoPath(repo)}/collaborators/${encodeURIComponent(username)}`;
  await giteaCall(gitea, owner, 'PUT', path, { body: { permission } });
}

/** What the collaborator permission endpoint answers for a user: none, read, write, admin or owner. */
export async function collaboratorPermission(
  gitea: GiteaAddress,
  asker: GiteaUser,
  repo: RepoRef,
  username: string,
): Promise<string> {
  const path = `${repoPath(repo)}/collaborators/${encodeURIComponent(username)}/permission`;
  return (await giteaCall<{ permission: string }>(gitea, asker, 'GET', path)).body.permission;
}

export async function postCommitStatus(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  sha: string,
  status: {
    state: 'pending' | 'success' | 'error' | 'failure';
    context: string;
    description?: string;
    targetUrl?: string;
  },
): Promise<GiteaCommitStatus> {
  const body = {
    state: status.state,
    context: status.context,
    description: status.description ?? '',
    target_url: status.targetUrl ?? '',
  };
  return (await giteaCall<GiteaCommitStatus>(gitea, user, 'POST', `${repoPath(repo)}/statuses/${sha}`, { body })).body;
}

/**
 * Every status posted on a commit, newest first. Gitea's default order is by
 * creation second, which ties for statuses posted within one second;
 * sort=leastindex orders by the per-commit index, highest (newest) first.
 */
export async function commitStatuses(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  sha: string,
): Promise<GiteaCommitStatus[]> {
  const path = `${repoPath(repo)}/commits/${sha}/statuses?sort=leastindex`;
  return (await giteaCall<GiteaCommitStatus[]>(gitea, user, 'GET', path)).body;
}

/** The combined status of a commit: the worst state over the latest status of each context. */
export async function combinedStatus(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  sha: string,
): Promise<{ state: string; statuses: GiteaCommitStatus[] }> {
  const path = `${repoPath(repo)}/commits/${sha}/status`;
  return (await giteaCall<{ state: string; statuses: GiteaCommitStatus[] }>(gitea, user, 'GET', path)).body;
}

export async function postComment(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
  body: string,
): Promise<GiteaComment> {
  const path = `${repoPath(repo)}/issues/${number}/comments`;
  return (await giteaCall<GiteaComment>(gitea, user, 'POST', path, { body: { body } })).body;
}

export async function editComment(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  id: number,
  body: string,
): Promise<GiteaComment> {
  const path = `${repoPath(repo)}/issues/comments/${id}`;
  return (await giteaCall<GiteaComment>(gitea, user, 'PATCH', path, { body: { body } })).body;
}

export async function comments(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  number: number,
): Promise<GiteaComment[]> {
  return (await giteaCall<GiteaComment[]>(gitea, user, 'GET', `${repoPath(repo)}/issues/${number}/comments`)).body;
}

/** A repository webhook, JSON, signed with the secret, on the given events (Gitea's names). */
export async function createWebhook(
  gitea: GiteaAddress,
  user: GiteaUser,
  repo: RepoRef,
  options: { url: string; secret: string; events: string[] },
): Promise<{ id: number }> {
  const body = {
    type: 'gitea',
    active: true,
    events: options.events,
    branch_filter: '*',
    config: { url: options.url, content_type: 'json', secret: options.secret },
  };
  return (await giteaCall<{ id: number }>(gitea, user, 'POST', `${repoPath(repo)}/hooks`, { body })).body;
}

export interface HookDelivery {
  headers: IncomingHttpHeaders;
  /** The body exactly as sent: signatures are over these bytes. */
  raw: Buffer;
  body: Record<string, unknown>;
}

export interface HookListener {
  url: string;
  deliveries: HookDelivery[];
  close: () => Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that records every request and answers 200. */
export async function startHookListener(): Promise<HookListener> {
  const deliveries: HookDelivery[] = [];
  const server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        // Kept as raw bytes: the test looks at them.
      }
      deliveries.push({ headers: req.headers, raw, body });
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/gitea`,
    deliveries,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
