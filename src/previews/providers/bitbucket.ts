// Bitbucket Cloud's REST API 2.0 (developer.atlassian.com/cloud/bitbucket/rest):
// pull requests, repository permissions, build statuses, pull request comments.
// Bitbucket Data Center is another API (/rest/api/1.0) and is not covered.
//
// What Bitbucket Cloud lacks, and what follows:
// - no labels on pull requests: labels are always empty, and labelAddedBy
//   answers unsupported (a label cannot approve a fork here);
// - no pull refs: the head is the source branch, refs/heads/<branch>, of the
//   source repository; for a fork that is another repository (headCloneUrl);
// - its pull request lists give a 12-digit commit hash: each is resolved to the
//   full SHA once (GET commit/{hash}) and kept, as a commit never changes.
import { z } from 'zod';
import {
  COMMIT_STATUS_CONTEXT,
  type CommitStatusState,
  type PullRequest,
  type RepositoryPermission,
} from '../pull-request.ts';
import { checkRepository } from './api-url.ts';
import {
  BaseHost,
  type CheckedStatus,
  type CommentCalls,
  eachParsed,
  type HostOptions,
  type Paging,
  parseReply,
  parseShapes,
  permissionNamed,
  SHA,
} from './base.ts';
import type { PostedComment } from './comment.ts';
import { failure, type HostResult, type LabelAddition, ok, type PreviewHost } from './host.ts';

const Repository = z.object({
  full_name: z.string(),
  links: z.object({ html: z.object({ href: z.string() }) }).optional(),
});
const Endpoint = z.object({
  branch: z.object({ name: z.string() }),
  commit: z.object({ hash: z.string().regex(/^[0-9a-f]{7,64}$/) }).nullable(),
  // null when the source fork was deleted.
  repository: Repository.nullable(),
});
export const BitbucketPull = z.object({
  id: z.number().int().positive(),
  title: z.string(),
  draft: z.boolean().optional(),
  source: Endpoint,
  destination: Endpoint,
  author: z.object({ nickname: z.string().optional(), display_name: z.string().optional() }).nullable(),
  links: z.object({ html: z.object({ href: z.string() }) }),
  updated_on: z.string(),
});
export type BitbucketPullShape = z.output<typeof BitbucketPull>;

/** The pull request, its head the full SHA already resolved from the list's short hash. */
export function bitbucketPullRequest(p: BitbucketPullShape, headSha: string): PullRequest {
  const fromFork = p.source.repository?.full_name !== p.destination.repository?.full_name;
  const forkHtml = fromFork ? p.source.repository?.links?.html.href : undefined;
  return {
    number: p.id,
    title: p.title,
    headSha,
    headRef: `refs/heads/${p.source.branch.name}`,
    ...(forkHtml ? { headCloneUrl: `${forkHtml}.git` } : {}),
    baseBranch: p.destination.branch.name,
    labels: [],
    draft: p.draft ?? false,
    fromFork,
    author: p.author?.nickname ?? p.author?.display_name ?? '',
    webUrl: p.links.html.href,
    updatedAt: p.updated_on,
  };
}

const CommentShape = z.object({
  id: z.number(),
  deleted: z.boolean().optional(),
  content: z.object({ raw: z.string().nullable() }),
  user: z.object({ account_id: z.string().optional() }).nullable(),
});

export function bitbucketComments(items: readonly unknown[]): PostedComment[] {
  return eachParsed(items, CommentShape, (c) =>
    c.deleted ? undefined : { id: String(c.id), body: c.content.raw ?? '', author: c.user?.account_id ?? '' },
  );
}

const STATES: Readonly<Record<CommitStatusState, string>> = {
  pending: 'INPROGRESS',
  success: 'SUCCESSFUL',
  failure: 'FAILED',
  error: 'FAILED',
};
/** A build status's key goes into URL paths: no slash. */
export const BITBUCKET_STATUS_KEY = COMMIT_STATUS_CONTEXT.replace('/', '-');
const PERMISSIONS: Readonly<Record<string, RepositoryPermission>> = { admin: 'admin', write: 'write', read: 'read' };
/** An account id (557058:...) or a {uuid}: what Bitbucket names users by. */
const ACCOUNT = /^(\{[0-9a-f-]{36}\}|[A-Za-z0-9:-]{1,128})$/;

/** Bitbucket's pages: {"values": [...], "next": URL}, not Link headers. */
const PAGING: Paging = {
  itemsOf: (json) => {
    const values = (json as { values?: unknown } | null)?.values;
    return Array.isArray(values) ? values : undefined;
  },
  nextOf: (reply) => {
    const next = (reply.json as { next?: unknown } | null)?.next;
    return typeof next === 'string' && URL.canParse(next) ? new URL(next) : undefined;
  },
};

/** Basic for user:secret (an app password, or an API token with its e-mail), Bearer for an access token. */
export function bitbucketAuth(token: string): readonly [string, string] {
  if (token.includes(':')) return ['authorization', `Basic ${Buffer.from(token, 'utf8').toString('base64')}`];
  return ['authorization', `Bearer ${token}`];
}

export class BitbucketHost extends BaseHost implements PreviewHost {
  /** Full SHAs by repository and short hash. */
  private readonly shas = new Map<string, string>();
  private readonly webBase: string;

  constructor(o: HostOptions) {
    super(o, bitbucketAuth(o.token), {}, PAGING);
    this.webBase = o.apiUrl.hostname === 'api.bitbucket.org' ? 'https://bitbucket.org' : o.apiUrl.origin;
  }

  private path(rest: string): string {
    return `repositories/${this.repoPath()}/${rest}`;
  }

  async listOpen(): Promise<HostResult<PullRequest[]>> {
    const call = {
      op: 'listing pull requests',
      path: this.path('pullrequests'),
      query: { state: 'OPEN', pagelen: '50' },
    };
    const items = await this.pages(call);
    if (!items.ok) return items;
    const shapes = parseShapes('bitbucket', items.value, BitbucketPull);
    if (!shapes.ok) return shapes;
    const out: PullRequest[] = [];
    for (const p of shapes.value) {
      const sha = await this.fullSha(p);
      if (!sha.ok) return sha;
      out.push(bitbucketPullRequest(p, sha.value));
    }
    return ok(out);
  }

  private async fullSha(p: BitbucketPullShape): Promise<HostResult<string>> {
    const op = 'resolving a head commit';
    const hash = p.source.commit?.hash;
    const repo = checkRepository(p.source.repository?.full_name ?? '', 'bitbucket', 'source.repository');
    if (!hash || !repo.ok) return failure('InvalidResponse', `bitbucket: ${op}: pull request ${p.id} has none`);
    const key = `${repo.value.join('/')}@${hash}`;
    const known = this.shas.get(key) ?? (SHA.test(hash) ? hash : undefined);
    if (known) return ok(known);
    const path = `repositories/${repo.value.map(encodeURIComponent).join('/')}/commit/${hash}`;
    const reply = await this.send({ op, path });
    if (!reply.ok) return reply;
    const commit = parseReply('bitbucket', op, reply.value.json, z.object({ hash: z.string().regex(SHA) }));
    if (!commit.ok || !commit.value.hash.startsWith(hash)) {
      return failure('InvalidResponse', `bitbucket: ${op}: not the commit asked for`);
    }
    this.shas.set(key, commit.value.hash);
    return ok(commit.value.hash);
  }

  async permission(login: string): Promise<HostResult<RepositoryPermission>> {
    const op = 'reading a permission';
    if (!ACCOUNT.test(login)) return ok('none');
    const field = login.startsWith('{') ? 'user.uuid' : 'user.account_id';
    const path = `workspaces/${encodeURIComponent(this.repo[0] ?? '')}/permissions/repositories/${encodeURIComponent(this.repo[1] ?? '')}`;
    const reply = await this.send({ op, path, query: { q: `${field}="${login}"` } });
    if (!reply.ok) return reply;
    const parsed = parseReply(
      'bitbucket',
      op,
      reply.value.json,
      z.object({ values: z.array(z.object({ permission: z.string() })) }),
    );
    if (!parsed.ok) return parsed;
    return ok(permissionNamed(PERMISSIONS, parsed.value.values[0]?.permission ?? ''));
  }

  async labelAddedBy(): Promise<HostResult<LabelAddition | undefined>> {
    return failure('Unsupported', 'bitbucket: Bitbucket Cloud pull requests have no labels');
  }

  async removeLabel(): Promise<HostResult<void>> {
    return failure('Unsupported', 'bitbucket: Bitbucket Cloud pull requests have no labels');
  }

  protected statusCall(sha: string, s: CheckedStatus) {
    // Bitbucket requires a URL: without a preview yet, the repository's page.
    const url = s.targetUrl ?? `${this.webBase}/${this.repoPath()}`;
    const body = {
      key: BITBUCKET_STATUS_KEY,
      name: COMMIT_STATUS_CONTEXT,
      state: STATES[s.state],
      description: s.description,
      url,
    };
    return { path: this.path(`commit/${sha}/statuses/build`), body };
  }

  protected commentCalls(): CommentCalls {
    const comments = (number: number) => this.path(`pullrequests/${number}/comments`);
    return {
      list: async (number) => {
        const items = await this.pages({ op: 'listing comments', path: comments(number), query: { pagelen: '100' } });
        return items.ok ? ok(bitbucketComments(items.value)) : items;
      },
      create: (number, raw) =>
        this.create({ op: 'posting the comment', path: comments(number), body: { content: { raw } } }),
      edit: (number, id, raw) => {
        const path = `${comments(number)}/${encodeURIComponent(id)}`;
        return this.sendOnly({ op: 'editing the comment', method: 'PUT', path, body: { content: { raw } } });
      },
      // A repository or workspace access token is no user: the marker alone finds the comment.
      self: () => this.tokenUser('account_id', (f) => f.status === 403),
    };
  }
}
