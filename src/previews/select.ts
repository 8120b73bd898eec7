// Which open pull requests get a preview, and of which commit: the filter of
// spec.previews and the fork gate. Every field of a pull request is provider
// input: one that cannot be used safely is skipped with a message, never guessed.
import type { Previews } from '../app/previews-schema.ts';
import { checkRef } from '../git/resolve.ts';
import type { PullRequest, PullRequestApproval, RepositoryPermission } from './pull-request.ts';
import { PreviewReason, type PreviewReasonValue } from './reasons.ts';

/** What one open pull request gets. */
export type Verdict =
  /** A preview of its head commit. */
  | { kind: 'preview'; pr: PullRequest }
  /** A fork's head commit without an approval: nothing of it is built; staleLabel: the label is on it anyway. */
  | { kind: 'awaitingApproval'; pr: PullRequest; staleLabel: boolean }
  /** No preview (filtered out, or an ignored fork): any it had is deleted. */
  | { kind: 'none'; pr: PullRequest; why: PreviewReasonValue };

export interface Selection {
  verdicts: Verdict[];
  /** Pull requests skipped, each with why ("pull request #3: its head is not ..."). */
  skipped: string[];
  /** The numbers of those skipped: their previews, if any, are left as they are until their data can be read. */
  unread: Set<number>;
}

/** The commit SHAs Teal builds: git's SHA-1, as the App's source resolves a full SHA. */
const FULL_SHA = /^[0-9a-f]{40}$/;

/** Why a pull request's data cannot be used, if it cannot. */
export function pullRequestProblem(pr: PullRequest): string | undefined {
  if (!FULL_SHA.test(pr.headSha)) return 'its head is not a full 40-hex commit SHA';
  const ref = checkRef(pr.headRef);
  if (ref !== undefined || !pr.headRef.startsWith('refs/'))
    return `its head ref is not a full git ref (${ref ?? 'no refs/'})`;
  if (!Array.isArray(pr.labels) || pr.labels.some((l) => typeof l !== 'string')) return 'its labels are not strings';
  // Bitbucket Cloud's fork heads live in the fork only: the child App follows the parent's repository.
  if (pr.headCloneUrl !== undefined) return 'its head lives in another repository, which previews do not build from';
  return undefined;
}

/** spec.previews.filter: every label, one of the target branches, drafts only when included. */
export function matchesFilter(pr: PullRequest, filter: Previews['filter']): boolean {
  if (pr.draft && !filter.includeDrafts) return false;
  if (filter.targetBranches.length > 0 && !filter.targetBranches.includes(pr.baseBranch)) return false;
  return filter.labels.every((label) => pr.labels.includes(label));
}

/** Who may approve a fork's commit for a preview: write access or more. */
export const canApprove = (permission: RepositoryPermission): boolean =>
  permission === 'write' || permission === 'admin';

/**
 * A fork's head commit is approved when the approval label is on the pull
 * request, added by someone who may approve, while the head was this very
 * commit: an approval never carries over to a later commit.
 */
export function isApproved(pr: PullRequest, approvals: readonly PullRequestApproval[], label: string): boolean {
  if (!pr.labels.includes(label)) return false;
  return approvals.some(
    (a) => a.number === pr.number && a.label === label && a.sha === pr.headSha && canApprove(a.permission),
  );
}

/** What one usable pull request gets under spec.previews. */
export function judge(pr: PullRequest, previews: Previews, approvals: readonly PullRequestApproval[]): Verdict {
  if (!matchesFilter(pr, previews.filter)) return { kind: 'none', pr, why: PreviewReason.Unmatched };
  if (!pr.fromFork || previews.forks.policy === 'build') return { kind: 'preview', pr };
  if (previews.forks.policy === 'ignore') return { kind: 'none', pr, why: PreviewReason.ForkIgnored };
  const label = previews.forks.approvalLabel;
  if (isApproved(pr, approvals, label)) return { kind: 'preview', pr };
  return { kind: 'awaitingApproval', pr, staleLabel: pr.labels.includes(label) };
}

/** Every open pull request's verdict; the unusable and the repeated ones skipped, with why. */
export function select(
  pullRequests: readonly PullRequest[],
  approvals: readonly PullRequestApproval[],
  previews: Previews,
): Selection {
  const verdicts: Verdict[] = [];
  const skipped: string[] = [];
  const unread = new Set<number>();
  const seen = new Set<number>();
  for (const pr of pullRequests) {
    if (!Number.isSafeInteger(pr.number) || pr.number < 1) {
      skipped.push('a pull request without a usable number');
      continue;
    }
    const problem = seen.has(pr.number) ? 'listed twice' : pullRequestProblem(pr);
    seen.add(pr.number);
    if (problem) {
      skipped.push(`pull request #${pr.number}: ${problem}`);
      unread.add(pr.number);
    } else verdicts.push(judge(pr, previews, approvals));
  }
  // A number listed twice is read once: its first listing stands.
  return { verdicts: verdicts.filter((v) => !unread.has(v.pr.number)), skipped, unread };
}
