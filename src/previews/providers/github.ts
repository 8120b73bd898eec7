// GitHub's REST API (docs.github.com/rest, version 2022-11-28): pull requests,
// collaborator permission, issue events, commit statuses, issue comments.
// A 304 to a conditional request does not count against GitHub's rate limit.
import { z } from 'zod';
import {
  COMMIT_STATUS_CONTEXT,
  type CommitStatus,
  type PullRequest,
  type RepositoryPermission,
} from '../pull-request.ts';
import {
  BaseHost,
  type CommentCalls,
  type HostOptions,
  type LabelEvent,
  lastLabeler,
  noneWhenNotFound,
  parseItems,
  parseReply,
  SHA,
} from './base.ts';
import type { PostedComment } from './comment.ts';
import { failure, type HostResult, type LabelAddition, ok, type PreviewHost } from './host.ts';
import { nextLink, type Reply } from './http.ts';
import { checkedStatus } from './status.ts';

const Repo = z.object({ id: z.number() });
export const GitHubPull = z.object({
  number: z.number().int().positive(),
  title: z.string(),
  draft: z.boolean().optional(),
  labels: z.array(z.object({ name: z.string() })),
  head: z.object({ sha: z.string().regex(SHA), ref: z.string(), repo: Repo.nullable() }),
  base: z.object({ ref: z.string(), repo: Repo }),
  user: z.object({ login: z.string() }).nullable(),
  html_url: z.string(),
  updated_at: z.string(),
});

export function githubPullRequest(p: z.output<typeof GitHubPull>): PullRequest {
  return {
    number: p.number,
    title: p.title,
    headSha: p.head.sha,
    headRef: `refs/pull/${p.number}/head`,
    baseBranch: p.base.ref,
    labels: p.labels.map((l) => l.name),
    draft: p.draft ?? false,
    // A deleted fork leaves head.repo null: still not the base repository.
    fromFork: p.head.repo?.id !== p.base.repo.id,
    author: p.user?.login ?? '',
    webUrl: p.html_url,
    updatedAt: p.updated_at,
  };
}

const IssueEvent = z.object({
  event: z.string(),
  actor: z.object({ login: z.string() }).nullable(),
  label: z.object({ name: z.string() }).optional(),
  created_at: z.string(),
});

export function githubLabelEvents(events: readonly unknown[]): LabelEvent[] {
  return events.flatMap((raw) => {
    const e = IssueEvent.safeParse(raw);
    if (!e.success || !e.data.label || (e.data.event !== 'labeled' && e.data.event !== 'unlabeled')) return [];
    return [
      {
        added: e.data.event === 'labeled',
        label: e.data.label.name,
        by: e.data.actor?.login ?? '',
        at: e.data.created_at,
      },
    ];
  });
}

const Comment = z.object({
  id: z.number(),
  body: z.string().nullable(),
  user: z.object({ login: z.string() }).nullable(),
});

export function githubComments(items: readonly unknown[]): PostedComment[] {
  return items.flatMap((raw) => {
    const c = Comment.safeParse(raw);
    return c.success ? [{ id: String(c.data.id), body: c.data.body ?? '', author: c.data.user?.login ?? '' }] : [];
  });
}

const PERMISSIONS: Readonly<Record<string, RepositoryPermission>> = {
  admin: 'admin',
  write: 'write',
  read: 'read',
  none: 'none',
};
const PermissionReply = z.object({ permission: z.string() });

const asList = (json: unknown) => (Array.isArray(json) ? json : undefined);
const next = (reply: Reply) => nextLink(reply.header('link'), reply.url);

export class GitHubHost extends BaseHost implements PreviewHost {
  constructor(o: HostOptions) {
    super(o, ['authorization', `Bearer ${o.token}`], {
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
    });
  }

  private path(rest: string): string {
    return `repos/${this.repoPath()}/${rest}`;
  }

  async listOpen(): Promise<HostResult<PullRequest[]>> {
    const call = { op: 'listing pull requests', path: this.path('pulls'), query: { state: 'open', per_page: '100' } };
    const items = await this.http.pages(call, asList, next);
    return items.ok ? parseItems('github', items.value, GitHubPull, githubPullRequest) : items;
  }

  async permission(login: string): Promise<HostResult<RepositoryPermission>> {
    const op = 'reading a permission';
    const reply = await this.send({ op, path: this.path(`collaborators/${encodeURIComponent(login)}/permission`) });
    if (!reply.ok) return noneWhenNotFound(reply, 'none');
    const parsed = parseReply('github', op, reply.value.json, PermissionReply);
    return parsed.ok ? ok(PERMISSIONS[parsed.value.permission] ?? 'none') : parsed;
  }

  async labelAddedBy(number: number, label: string): Promise<HostResult<LabelAddition | undefined>> {
    const call = { op: 'reading label events', path: this.path(`issues/${number}/events`), query: { per_page: '100' } };
    const events = await this.http.pages(call, asList, next);
    return events.ok ? ok(lastLabeler(githubLabelEvents(events.value), label)) : events;
  }

  async setStatus(sha: string, status: CommitStatus): Promise<HostResult<void>> {
    if (!SHA.test(sha)) return failure('Rejected', 'github: setting a status: not a commit SHA');
    const s = checkedStatus(status);
    const body = {
      state: s.state,
      description: s.description,
      context: COMMIT_STATUS_CONTEXT,
      target_url: s.targetUrl,
    };
    const reply = await this.send({ op: 'setting a status', method: 'POST', path: this.path(`statuses/${sha}`), body });
    return reply.ok ? ok(undefined) : reply;
  }

  protected commentCalls(): CommentCalls {
    return {
      list: async (number) => {
        const call = {
          op: 'listing comments',
          path: this.path(`issues/${number}/comments`),
          query: { per_page: '100' },
        };
        const items = await this.http.pages(call, asList, next);
        return items.ok ? ok(githubComments(items.value)) : items;
      },
      create: async (number, body) => {
        const op = 'posting the comment';
        const reply = await this.send({
          op,
          method: 'POST',
          path: this.path(`issues/${number}/comments`),
          body: { body },
        });
        if (!reply.ok) return reply;
        const parsed = parseReply('github', op, reply.value.json, z.object({ id: z.number() }));
        return parsed.ok ? ok(String(parsed.value.id)) : parsed;
      },
      edit: async (_number, id, body) => {
        const call = { op: 'editing the comment', method: 'PATCH' as const, body: { body } };
        const reply = await this.send({ ...call, path: this.path(`issues/comments/${encodeURIComponent(id)}`) });
        return reply.ok ? ok(undefined) : reply;
      },
      self: async () => {
        // A GitHub App's installation token may not read /user: then the marker alone finds the comment.
        const reply = await this.send({ op: 'reading the token user', path: 'user' });
        if (!reply.ok) return reply.failure.status === 403 ? ok(undefined) : noneWhenNotFound(reply, undefined);
        const parsed = parseReply(
          'github',
          'reading the token user',
          reply.value.json,
          z.object({ login: z.string() }),
        );
        return parsed.ok ? ok(parsed.value.login) : parsed;
      },
    };
  }
}
