// One poll of a git host as the previews planner takes it (PullRequestListing):
// the open pull requests, and for each fork's pull request that carries the
// approval label, who added it last, their permission, and the head commit it
// was added on (issue #28 item 5). The planner decides whether an approval
// counts; this only reports what the host says.
//
// The head it was added on: GitLab records each push server-side (merge
// request versions), so the head at the label's time is exact there. GitHub,
// Gitea and Bitbucket keep no push time the REST API gives (a commit's dates
// are the author's to set), so there it is the head seen now, at the first poll
// after the label: the planner keeps the first SHA it saw for an approval
// (same by and at), and a push in between (one poll interval at most, less
// after a webhook) is the window left.
import type { PullRequest, PullRequestApproval, PullRequestListing } from '../pull-request.ts';
import type { HostFailure, HostResult, PreviewHost } from './host.ts';

const errorOf = (f: HostFailure): PullRequestListing => ({
  ok: false,
  error: { reason: f.reason, message: f.message, ...(f.retryAt ? { retryAt: f.retryAt } : {}) },
});

export async function pollListing(host: PreviewHost, approvalLabel: string | undefined): Promise<PullRequestListing> {
  const listed = await host.listOpen();
  if (!listed.ok) return errorOf(listed.failure);
  const approvals: PullRequestApproval[] = [];
  for (const pr of listed.value.filter((p) => needsApproval(p, approvalLabel))) {
    const found = await approvalOf(host, pr, approvalLabel ?? '');
    if (!found.ok) return errorOf(found.failure);
    if (found.value) approvals.push(found.value);
  }
  return { ok: true, pullRequests: listed.value, approvals };
}

/** A fork's pull request carrying the label (names compare case-blind, as the hosts do). */
export function needsApproval(pr: PullRequest, label: string | undefined): boolean {
  const name = label?.toLowerCase();
  return name !== undefined && pr.fromFork && pr.labels.some((l) => l.toLowerCase() === name);
}

async function approvalOf(
  host: PreviewHost,
  pr: PullRequest,
  label: string,
): Promise<HostResult<PullRequestApproval | undefined>> {
  const added = await host.labelAddedBy(pr.number, label);
  if (!added.ok || !added.value) return added.ok ? { ok: true, value: undefined } : added;
  const { by, at } = added.value;
  const permission = await host.permission(by);
  if (!permission.ok) return permission;
  const then = host.headAt ? await host.headAt(pr.number, at) : { ok: true as const, value: pr.headSha };
  if (!then.ok) return then;
  // No push recorded by then: the approval is for no commit.
  const approval = { number: pr.number, label, by, at, permission: permission.value, sha: then.value ?? '' };
  return { ok: true, value: approval };
}
