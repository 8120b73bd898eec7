// An approval pinned to the commit Teal first saw it on (issue #28 item 5). GitLab
// records each push, so its client reports the head at the label's own time. GitHub,
// Gitea and Bitbucket keep no push time the API gives: their clients report the head
// at the time of the listing, and a label left on the pull request would approve
// every later push. So the first head an approval is seen on is kept in the pull
// request's record (status.previews[].approval), and the same approval (the same
// person adding the label at the same time) is taken for that commit ever after: a
// new commit needs the label added again, which is a new approval.
import { sha } from '../app/hash.ts';
import type { PreviewStatus } from '../app/previews-schema.ts';
import type { PullRequestApproval } from './pull-request.ts';

/** One act of approval: who added the label, and when. Hashed, so a record of it has a fixed size. */
export const approvalId = (a: Pick<PullRequestApproval, 'by' | 'at'>): string => sha(`${a.by}\n${a.at}`).slice(0, 32);

/** The approvals of a listing, each at the commit its record pinned it to, if it has one. */
export function pinApprovals(
  approvals: readonly PullRequestApproval[],
  prior: ReadonlyMap<number, PreviewStatus>,
): PullRequestApproval[] {
  return approvals.map((a) => {
    const pinned = prior.get(a.number)?.approval;
    return pinned && pinned.id === approvalId(a) ? { ...a, sha: pinned.sha } : a;
  });
}

/** What a pull request's record keeps of its approval: the act and the commit it is for. */
export function approvalRecord(
  approvals: readonly PullRequestApproval[],
  number: number,
): PreviewStatus['approval'] | undefined {
  const approval = approvals.find((a) => a.number === number && a.sha !== '');
  return approval ? { id: approvalId(approval), sha: approval.sha } : undefined;
}
