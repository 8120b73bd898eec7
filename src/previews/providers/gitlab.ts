// GitLab's REST API v4 (docs.gitlab.com/api): merge requests, members,
// resource label events, commit statuses, merge request notes. The project is
// named by its full path, URL-encoded as one segment.
import { z } from 'zod';
import {
  COMMIT_STATUS_CONTEXT,
  type CommitStatusState,
  type PullRequest,
  type RepositoryPermission,
} from '../pull-request.ts';
import {
  BaseHost,
  type CheckedStatus,
  type CommentCalls,
  eachParsed,
  type HostOptions,
  type LabelEvent,
  lastLabeler,
  noneWhenNotFound,
  parseItems,
  parseReply,
  SHA,
} from './base.ts';
import type { PostedComment } from './comment.ts';
import { type HostResult, type LabelAddition, ok, type PreviewHost } from './host.ts';

export const GitLabMergeRequest = z.object({
  iid: z.number().int().positive(),
  title: z.string(),
  sha: z.string().regex(SHA),
  source_branch: z.string(),
  target_branch: z.string(),
  source_project_id: z.number(),
  target_project_id: z.number(),
  labels: z.array(z.union([z.string(), z.object({ name: z.string() })])),
  draft: z.boolean().optional(),
  work_in_progress: z.boolean().optional(),
  author: z.object({ username: z.string() }).nullable(),
  web_url: z.string(),
  updated_at: z.string(),
});

export function gitlabPullRequest(m: z.output<typeof GitLabMergeRequest>): PullRequest {
  return {
    number: m.iid,
    title: m.title,
    headSha: m.sha,
    headRef: `refs/merge-requests/${m.iid}/head`,
    baseBranch: m.target_branch,
    // with_labels_details=true gives objects; the default gives names.
    labels: m.labels.map((l) => (typeof l === 'string' ? l : l.name)),
    // draft since GitLab 14.0; work_in_progress before it.
    draft: m.draft ?? m.work_in_progress ?? false,
    fromFork: m.source_project_id !== m.target_project_id,
    author: m.author?.username ?? '',
    webUrl: m.web_url,
    updatedAt: m.updated_at,
  };
}

/** GitLab's access levels: 50 owner, 40 maintainer, 30 developer (may push), 20 reporter, 15 planner, 10 guest, 5 minimal. */
export function gitlabPermission(accessLevel: number): RepositoryPermission {
  if (accessLevel >= 40) return 'admin';
  if (accessLevel >= 30) return 'write';
  return accessLevel >= 10 ? 'read' : 'none';
}

const LabelEventShape = z.object({
  action: z.string(),
  // null when the label was deleted since.
  label: z.object({ name: z.string() }).nullable(),
  user: z.object({ username: z.string() }).nullable(),
  created_at: z.string(),
});

export function gitlabLabelEvents(events: readonly unknown[]): LabelEvent[] {
  return eachParsed(events, LabelEventShape, (e) =>
    e.label && (e.action === 'add' || e.action === 'remove')
      ? { added: e.action === 'add', label: e.label.name, by: e.user?.username ?? '', at: e.created_at }
      : undefined,
  );
}

const Version = z.object({ head_commit_sha: z.string().regex(SHA), created_at: z.string() });

/** The head of the latest version (push) at or before the time, from GitLab's merge request versions. */
export function gitlabHeadAt(versions: readonly unknown[], at: string): string | undefined {
  const when = Date.parse(at);
  let head: { sha: string; time: number } | undefined;
  for (const raw of versions) {
    const v = Version.safeParse(raw);
    const time = v.success ? Date.parse(v.data.created_at) : Number.NaN;
    if (!v.success || !(time <= when) || (head && head.time >= time)) continue;
    head = { sha: v.data.head_commit_sha, time };
  }
  return head?.sha;
}

const Note = z.object({
  id: z.number(),
  body: z.string(),
  system: z.boolean().optional(),
  author: z.object({ username: z.string() }).nullable(),
});

export function gitlabComments(items: readonly unknown[]): PostedComment[] {
  return eachParsed(items, Note, (n) =>
    n.system ? undefined : { id: String(n.id), body: n.body, author: n.author?.username ?? '' },
  );
}

/** GitLab's states; "running" says building or deploying better than its "pending" (queued). */
const STATES: Readonly<Record<CommitStatusState, string>> = {
  pending: 'running',
  success: 'success',
  failure: 'failed',
  error: 'failed',
};

/** GitLab refuses a status in the state it already has: the status is as asked. */
const alreadyInState = (status: number, text: string) => status === 400 && /cannot transition status/i.test(text);

const PAGE = { per_page: '100' };

export class GitLabHost extends BaseHost implements PreviewHost {
  constructor(o: HostOptions) {
    super(o, ['authorization', `Bearer ${o.token}`]);
  }

  private path(rest: string): string {
    return `projects/${encodeURIComponent(this.repo.join('/'))}/${rest}`;
  }

  async listOpen(): Promise<HostResult<PullRequest[]>> {
    const query = { state: 'opened', ...PAGE };
    const items = await this.pages({ op: 'listing merge requests', path: this.path('merge_requests'), query });
    return items.ok ? parseItems('gitlab', items.value, GitLabMergeRequest, gitlabPullRequest) : items;
  }

  async permission(login: string): Promise<HostResult<RepositoryPermission>> {
    const op = 'reading a permission';
    const users = await this.send({ op, path: 'users', query: { username: login } });
    if (!users.ok) return users;
    const found = parseReply(
      'gitlab',
      op,
      users.value.json,
      z.array(z.object({ id: z.number(), username: z.string() })),
    );
    if (!found.ok) return found;
    const user = found.value.find((u) => u.username.toLowerCase() === login.toLowerCase());
    if (!user) return ok('none');
    const member = await this.send({ op, path: this.path(`members/all/${user.id}`) });
    if (!member.ok) return noneWhenNotFound(member, 'none');
    const level = parseReply('gitlab', op, member.value.json, z.object({ access_level: z.number() }));
    return level.ok ? ok(gitlabPermission(level.value.access_level)) : level;
  }

  async labelAddedBy(number: number, label: string): Promise<HostResult<LabelAddition | undefined>> {
    const call = { op: 'reading label events', path: this.path(`merge_requests/${number}/resource_label_events`) };
    const events = await this.pages({ ...call, query: PAGE });
    return events.ok ? ok(lastLabeler(gitlabLabelEvents(events.value), label)) : events;
  }

  async headAt(number: number, at: string): Promise<HostResult<string | undefined>> {
    const call = { op: 'reading merge request versions', path: this.path(`merge_requests/${number}/versions`) };
    const versions = await this.pages({ ...call, query: PAGE });
    return versions.ok ? ok(gitlabHeadAt(versions.value, at)) : versions;
  }

  /** Takes the label off the merge request (remove_labels: a label not on it is no error). */
  async removeLabel(number: number, label: string): Promise<HostResult<void>> {
    const path = this.path(`merge_requests/${number}`);
    return this.sendOnly({ op: 'removing a label', method: 'PUT', path, body: { remove_labels: label } });
  }

  protected statusCall(sha: string, s: CheckedStatus) {
    const body = {
      state: STATES[s.state],
      description: s.description,
      name: COMMIT_STATUS_CONTEXT,
      target_url: s.targetUrl,
    };
    return { path: this.path(`statuses/${sha}`), body, alreadyDone: alreadyInState };
  }

  protected commentCalls(): CommentCalls {
    const notes = (number: number) => this.path(`merge_requests/${number}/notes`);
    return {
      list: async (number) => {
        const query = { ...PAGE, sort: 'asc', order_by: 'created_at' };
        const items = await this.pages({ op: 'listing notes', path: notes(number), query });
        return items.ok ? ok(gitlabComments(items.value)) : items;
      },
      create: (number, body) => this.create({ op: 'posting the comment', path: notes(number), body: { body } }),
      edit: (number, id, body) => {
        const path = `${notes(number)}/${encodeURIComponent(id)}`;
        return this.sendOnly({ op: 'editing the comment', method: 'PUT', path, body: { body } });
      },
      self: () => this.tokenUser('username'),
    };
  }
}
