// GitHub's REST API (docs.github.com/rest, version 2022-11-28): pull requests,
// collaborator permission, issue events, commit statuses, issue comments.
// A 304 to a conditional request does not count against GitHub's rate limit.
import { z } from 'zod';
import type { PullRequest } from '../pull-request.ts';
import { eachParsed, type HostOptions, type LabelEvent, SHA } from './base.ts';
import type { PostedComment } from './comment.ts';
import { GITHUB_PERMISSIONS, GitHubShapedHost, githubShapedPullRequest } from './github-shaped.ts';

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
  return githubShapedPullRequest(p, {
    labels: p.labels.map((l) => l.name),
    draft: p.draft ?? false,
    // A deleted fork leaves head.repo null: still not the base repository.
    fromFork: p.head.repo?.id !== p.base.repo.id,
  });
}

const IssueEvent = z.object({
  event: z.string(),
  actor: z.object({ login: z.string() }).nullable(),
  label: z.object({ name: z.string() }).optional(),
  created_at: z.string(),
});

export function githubLabelEvents(events: readonly unknown[]): LabelEvent[] {
  return eachParsed(events, IssueEvent, (e) =>
    e.label && (e.event === 'labeled' || e.event === 'unlabeled')
      ? { added: e.event === 'labeled', label: e.label.name, by: e.actor?.login ?? '', at: e.created_at }
      : undefined,
  );
}

const Comment = z.object({
  id: z.number(),
  body: z.string().nullable(),
  user: z.object({ login: z.string() }).nullable(),
});

export function githubComments(items: readonly unknown[]): PostedComment[] {
  return eachParsed(items, Comment, (c) => ({ id: String(c.id), body: c.body ?? '', author: c.user?.login ?? '' }));
}

export class GitHubHost extends GitHubShapedHost<typeof GitHubPull> {
  constructor(o: HostOptions) {
    super(o, {
      auth: ['authorization', `Bearer ${o.token}`],
      headers: { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' },
      page: { per_page: '100' },
      pull: GitHubPull,
      toPullRequest: githubPullRequest,
      permissions: GITHUB_PERMISSIONS,
      labelHistory: { op: 'reading label events', path: 'events', events: githubLabelEvents },
      commentsPaged: true,
      comments: githubComments,
      // A GitHub App's installation token may not read /user (403, or 404): then the marker alone finds the comment.
      anonymous: (f) => f.status === 403 || f.status === 404,
    });
  }
}
