// Gitea's REST API v1 (gitea.com/api/swagger), Forgejo's too: pull requests,
// collaborator permission, the issue timeline, commit statuses, issue comments.
// The calls are GitHub's (github-shaped.ts); GiteaHost below lists where Gitea differs.
import { z } from 'zod';
import type { PullRequest, RepositoryPermission } from '../pull-request.ts';
import { eachParsed, type HostOptions, type LabelEvent, SHA } from './base.ts';
import type { PostedComment } from './comment.ts';
import { GITHUB_PERMISSIONS, GitHubShapedHost, githubShapedPullRequest } from './github-shaped.ts';

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
  return githubShapedPullRequest(p, {
    labels: (p.labels ?? []).map((l) => l.name),
    draft: p.draft ?? WIP.test(p.title),
    fromFork: p.head.repo_id !== p.base.repo_id,
  });
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
  return eachParsed(items, TimelineItem, (t) =>
    t.type === 'label' && t.label
      ? { added: t.body === '1', label: t.label.name, by: t.user?.login ?? '', at: t.created_at }
      : undefined,
  );
}

const Comment = z.object({ id: z.number(), body: z.string(), user: z.object({ login: z.string() }).nullable() });

export function giteaComments(items: readonly unknown[]): PostedComment[] {
  return eachParsed(items, Comment, (c) => ({ id: String(c.id), body: c.body, author: c.user?.login ?? '' }));
}

/** GitHub's permission names, and the repository's owner, which Gitea names apart (GitHub says admin for one). */
const PERMISSIONS: Readonly<Record<string, RepositoryPermission>> = { owner: 'admin', ...GITHUB_PERMISSIONS };

/**
 * Gitea mirrors GitHub's v3 calls (github-shaped.ts); it differs in: the token
 * scheme (token, not Bearer) and no API version header; its page size (limit,
 * capped at MAX_RESPONSE_ITEMS, 50 by default); label history in the issue
 * timeline, not issue events; a comment list that takes no page size (since and
 * before only); a label taken off by its id; and a token is always a user (GET user never refuses a valid one).
 */
export class GiteaHost extends GitHubShapedHost<typeof GiteaPull> {
  constructor(o: HostOptions) {
    super(o, {
      auth: ['authorization', `token ${o.token}`],
      page: { limit: '50' },
      pull: GiteaPull,
      toPullRequest: giteaPullRequest,
      permissions: PERMISSIONS,
      labelHistory: { op: 'reading the timeline', path: 'timeline', events: giteaLabelEvents },
      commentsPaged: false,
      comments: giteaComments,
      labelById: true,
    });
  }
}
