// Gitea's REST API v1 (gitea.com/api/swagger), Forgejo's too: pull requests,
// collaborator permission, the issue timeline, commit statuses, issue comments.
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

export const GiteaPull = z.object({
  number: z.number().int().positive(),
  title: z.string(),
  draft: z.boolean().optional(),
  labels: z.array(z.object({ name: z.string() })).nullable(),
  head: z.object({ sha: z.string().regex(SHA), ref: z.string(), repo_id: z.number() }),
  base: z.object({ ref: z.string(), repo_id: z.number() }),
  user: z.object({ login: z.string() }).nullable(),
  html_url: z.string(),
  updated_at: z.string(),
});

// Gitea's default work-in-progress prefixes ([repository] PULL_REQUEST.WORK_IN_PROGRESS_PREFIXES),
// for servers older than the API's draft field.
const WIP = /^\s*(wip:|\[wip\])/i;

export function giteaPullRequest(p: z.output<typeof GiteaPull>): PullRequest {
  return {
    number: p.number,
    title: p.title,
    headSha: p.head.sha,
    headRef: `refs/pull/${p.number}/head`,
    baseBranch: p.base.ref,
    labels: (p.labels ?? []).map((l) => l.name),
    draft: p.draft ?? WIP.test(p.title),
    fromFork: p.head.repo_id !== p.base.repo_id,
    author: p.user?.login ?? '',
    webUrl: p.html_url,
    updatedAt: p.updated_at,
  };
}

const TimelineItem = z.object({
  type: z.string(),
  // A label comment's content: "1" when the label was added, empty when removed.
  body: z.string().nullable().optional(),
  label: z.object({ name: z.string() }).nullable().optional(),
  user: z.object({ login: z.string() }).nullable(),
  created_at: z.string(),
});

export function giteaLabelEvents(items: readonly unknown[]): LabelEvent[] {
  return items.flatMap((raw) => {
    const t = TimelineItem.safeParse(raw);
    if (!t.success || t.data.type !== 'label' || !t.data.label) return [];
    return [
      { added: t.data.body === '1', label: t.data.label.name, by: t.data.user?.login ?? '', at: t.data.created_at },
    ];
  });
}

const Comment = z.object({ id: z.number(), body: z.string(), user: z.object({ login: z.string() }).nullable() });

export function giteaComments(items: readonly unknown[]): PostedComment[] {
  return items.flatMap((raw) => {
    const c = Comment.safeParse(raw);
    return c.success ? [{ id: String(c.data.id), body: c.data.body, author: c.data.user?.login ?? '' }] : [];
  });
}

const PERMISSIONS: Readonly<Record<string, RepositoryPermission>> = {
  owner: 'admin',
  admin: 'admin',
  write: 'write',
  read: 'read',
  none: 'none',
};

const asList = (json: unknown) => (Array.isArray(json) ? json : undefined);
const next = (reply: Reply) => nextLink(reply.header('link'), reply.url);
/** Gitea caps limit at its MAX_RESPONSE_ITEMS, 50 by default. */
const PAGE = { limit: '50' };

export class GiteaHost extends BaseHost implements PreviewHost {
  constructor(o: HostOptions) {
    super(o, ['authorization', `token ${o.token}`]);
  }

  private path(rest: string): string {
    return `repos/${this.repoPath()}/${rest}`;
  }

  async listOpen(): Promise<HostResult<PullRequest[]>> {
    const call = { op: 'listing pull requests', path: this.path('pulls'), query: { state: 'open', ...PAGE } };
    const items = await this.http.pages(call, asList, next);
    return items.ok ? parseItems('gitea', items.value, GiteaPull, giteaPullRequest) : items;
  }

  async permission(login: string): Promise<HostResult<RepositoryPermission>> {
    const op = 'reading a permission';
    const reply = await this.send({ op, path: this.path(`collaborators/${encodeURIComponent(login)}/permission`) });
    if (!reply.ok) return noneWhenNotFound(reply, 'none');
    const parsed = parseReply('gitea', op, reply.value.json, z.object({ permission: z.string() }));
    return parsed.ok ? ok(PERMISSIONS[parsed.value.permission] ?? 'none') : parsed;
  }

  async labelAddedBy(number: number, label: string): Promise<HostResult<LabelAddition | undefined>> {
    const call = { op: 'reading the timeline', path: this.path(`issues/${number}/timeline`), query: PAGE };
    const items = await this.http.pages(call, asList, next);
    return items.ok ? ok(lastLabeler(giteaLabelEvents(items.value), label)) : items;
  }

  async setStatus(sha: string, status: CommitStatus): Promise<HostResult<void>> {
    if (!SHA.test(sha)) return failure('Rejected', 'gitea: setting a status: not a commit SHA');
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
        const call = { op: 'listing comments', path: this.path(`issues/${number}/comments`) };
        const items = await this.http.pages(call, asList, next);
        return items.ok ? ok(giteaComments(items.value)) : items;
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
        const parsed = parseReply('gitea', op, reply.value.json, z.object({ id: z.number() }));
        return parsed.ok ? ok(String(parsed.value.id)) : parsed;
      },
      edit: async (_number, id, body) => {
        const path = this.path(`issues/comments/${encodeURIComponent(id)}`);
        const reply = await this.send({ op: 'editing the comment', method: 'PATCH', path, body: { body } });
        return reply.ok ? ok(undefined) : reply;
      },
      self: async () => {
        const reply = await this.send({ op: 'reading the token user', path: 'user' });
        if (!reply.ok) return reply;
        const parsed = parseReply('gitea', 'reading the token user', reply.value.json, z.object({ login: z.string() }));
        return parsed.ok ? ok(parsed.value.login) : parsed;
      },
    };
  }
}
