// GitHub's REST API v3 as Gitea (and Forgejo) mirror it: the same paths under
// repos/{owner}/{repo} for pull requests, collaborator permission, commit
// statuses and issue comments, the same bodies, Link-header paging. One client
// writes those calls once; what differs per host is data (its Dialect) and
// each host's file says why.
import { z } from 'zod';
import { COMMIT_STATUS_CONTEXT, type PullRequest, type RepositoryPermission } from '../pull-request.ts';
import {
  BaseHost,
  type CheckedStatus,
  type CommentCalls,
  type HostOptions,
  type LabelEvent,
  lastLabeler,
  noneWhenNotFound,
  parseItems,
  parseReply,
  permissionNamed,
} from './base.ts';
import type { PostedComment } from './comment.ts';
import type { HostFailure, HostResult, LabelAddition, PreviewHost } from './host.ts';
import { ok } from './host.ts';

/** Where a GitHub-shaped host differs from GitHub's API: data, not code. */
export interface Dialect<S extends z.ZodType> {
  /** The header that carries the token. */
  auth: readonly [string, string];
  /** Headers every request carries. */
  headers?: Record<string, string>;
  /** The page size, as the host names and caps it. */
  page: Readonly<Record<string, string>>;
  /** A pull request as the host lists it, and as Teal reads it. */
  pull: S;
  toPullRequest(item: z.output<S>): PullRequest;
  /** The host's permission names. */
  permissions: Readonly<Record<string, RepositoryPermission>>;
  /** The pull request's history that records labels: issues/{n}/{path}, read as label events. */
  labelHistory: { op: string; path: string; events(items: readonly unknown[]): LabelEvent[] };
  /** Whether the comment list takes the page size. */
  commentsPaged: boolean;
  comments(items: readonly unknown[]): PostedComment[];
  /**
   * How a label is named in the path that takes it off a pull request: GitHub
   * takes its name; Gitea its id, read from the pull request's labels first.
   */
  labelById?: boolean;
  /** The failures of GET user that mean a token which is no user. */
  anonymous?: (failure: HostFailure) => boolean;
}

/** What a GitHub-shaped host's pull request has alike. */
interface SharedPull {
  number: number;
  title: string;
  head: { sha: string };
  base: { ref: string };
  user: { login: string } | null;
  html_url: string;
  updated_at: string;
}

/**
 * A GitHub-shaped pull request as Teal reads it; labels, draft and the fork
 * flag are each host's own. The head is the pull ref of the base repository,
 * forks' too.
 */
export function githubShapedPullRequest(
  p: SharedPull,
  own: Pick<PullRequest, 'labels' | 'draft' | 'fromFork'>,
): PullRequest {
  return {
    number: p.number,
    title: p.title,
    headSha: p.head.sha,
    headRef: `refs/pull/${p.number}/head`,
    baseBranch: p.base.ref,
    labels: own.labels,
    draft: own.draft,
    fromFork: own.fromFork,
    author: p.user?.login ?? '',
    webUrl: p.html_url,
    updatedAt: p.updated_at,
  };
}

/** GitHub's permission names (maintain is write, triage read: the API's permission field says so already). */
export const GITHUB_PERMISSIONS: Readonly<Record<string, RepositoryPermission>> = {
  admin: 'admin',
  write: 'write',
  read: 'read',
  none: 'none',
};

const PermissionReply = z.object({ permission: z.string() });
const IssueLabels = z.array(z.object({ id: z.number(), name: z.string() }));

export abstract class GitHubShapedHost<S extends z.ZodType> extends BaseHost implements PreviewHost {
  private readonly dialect: Dialect<S>;

  constructor(o: HostOptions, dialect: Dialect<S>) {
    super(o, dialect.auth, dialect.headers);
    this.dialect = dialect;
  }

  private path(rest: string): string {
    return `repos/${this.repoPath()}/${rest}`;
  }

  async listOpen(): Promise<HostResult<PullRequest[]>> {
    const d = this.dialect;
    const items = await this.pages({
      op: 'listing pull requests',
      path: this.path('pulls'),
      query: { state: 'open', ...d.page },
    });
    return items.ok ? parseItems(this.provider, items.value, d.pull, (p) => d.toPullRequest(p)) : items;
  }

  async permission(login: string): Promise<HostResult<RepositoryPermission>> {
    const op = 'reading a permission';
    const reply = await this.send({ op, path: this.path(`collaborators/${encodeURIComponent(login)}/permission`) });
    if (!reply.ok) return noneWhenNotFound(reply, 'none');
    const parsed = parseReply(this.provider, op, reply.value.json, PermissionReply);
    return parsed.ok ? ok(permissionNamed(this.dialect.permissions, parsed.value.permission)) : parsed;
  }

  async labelAddedBy(number: number, label: string): Promise<HostResult<LabelAddition | undefined>> {
    const { op, path, events } = this.dialect.labelHistory;
    const items = await this.pages({ op, path: this.path(`issues/${number}/${path}`), query: this.dialect.page });
    return items.ok ? ok(lastLabeler(events(items.value), label)) : items;
  }

  /** Takes the label off (issues/{n}/labels/{name or id}); not on it (a 404, or not listed) is done. */
  async removeLabel(number: number, label: string): Promise<HostResult<void>> {
    const op = 'removing a label';
    const labels = this.path(`issues/${number}/labels`);
    let ref = label;
    if (this.dialect.labelById) {
      const listed = await this.send({ op, path: labels });
      if (!listed.ok) return noneWhenNotFound(listed, undefined);
      const parsed = parseReply(this.provider, op, listed.value.json, IssueLabels);
      if (!parsed.ok) return parsed;
      const found = parsed.value.find((l) => l.name.toLowerCase() === label.toLowerCase());
      if (!found) return ok(undefined);
      ref = String(found.id);
    }
    const path = `${labels}/${encodeURIComponent(ref)}`;
    return noneWhenNotFound(await this.sendOnly({ op, method: 'DELETE', path }), undefined);
  }

  protected statusCall(sha: string, s: CheckedStatus) {
    const body = {
      state: s.state,
      description: s.description,
      context: COMMIT_STATUS_CONTEXT,
      target_url: s.targetUrl,
    };
    return { path: this.path(`statuses/${sha}`), body };
  }

  protected commentCalls(): CommentCalls {
    const d = this.dialect;
    const comments = (number: number) => this.path(`issues/${number}/comments`);
    return {
      list: async (number) => {
        const query = d.commentsPaged ? { query: d.page } : {};
        const items = await this.pages({ op: 'listing comments', path: comments(number), ...query });
        return items.ok ? ok(d.comments(items.value)) : items;
      },
      create: (number, body) => this.create({ op: 'posting the comment', path: comments(number), body: { body } }),
      edit: (_number, id, body) => {
        const path = this.path(`issues/comments/${encodeURIComponent(id)}`);
        return this.sendOnly({ op: 'editing the comment', method: 'PATCH', path, body: { body } });
      },
      self: () => this.tokenUser('login', d.anonymous),
    };
  }
}
