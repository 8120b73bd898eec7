// What the previews ask of a git host (issue #28), whatever the provider: one
// interface, one implementation per provider (github.ts, gitlab.ts, gitea.ts,
// bitbucket.ts) over the shared HTTP executor (http.ts). Every answer is a
// typed result: a failure never throws, and its message is safe to show in a
// condition (no token, no URL userinfo, nothing of the response body).
import type {
  CommitStatus,
  PreviewProvider,
  ProviderError,
  ProviderErrorReason,
  PullRequest,
  RepositoryPermission,
} from '../pull-request.ts';

/** Who may approve a fork's pull request: someone who could push to the repository. */
export function mayApprove(permission: RepositoryPermission): boolean {
  return permission === 'admin' || permission === 'write';
}

/** A failed request: the planner's ProviderError, with the HTTP status when there was one. */
export interface HostFailure extends ProviderError {
  status?: number;
}

export type HostResult<T> = { ok: true; value: T } | { ok: false; failure: HostFailure };

export const ok = <T>(value: T): HostResult<T> => ({ ok: true, value });
export const failed = <T>(failure: HostFailure): HostResult<T> => ({ ok: false, failure });
export const failure = (reason: ProviderErrorReason, message: string): HostResult<never> => failed({ reason, message });

export type CommentAction = 'created' | 'edited' | 'unchanged';

export interface PreviewHost {
  readonly provider: PreviewProvider;
  /** Every open pull request of the repository, all pages, each page a conditional request. */
  listOpen(): Promise<HostResult<PullRequest[]>>;
  /** The user's permission on the repository (login as the provider names users). */
  permission(login: string): Promise<HostResult<RepositoryPermission>>;
  /** Who added the label last and when, if it is on the pull request now (undefined when it is not). */
  labelAddedBy(number: number, label: string): Promise<HostResult<LabelAddition | undefined>>;
  setStatus(sha: string, status: CommitStatus): Promise<HostResult<void>>;
  /**
   * Creates Teal's one comment on the pull request, or edits it in place,
   * found again by its marker (previewCommentMarker, put first by the client:
   * the body is given without it).
   */
  upsertComment(number: number, body: string): Promise<HostResult<CommentAction>>;
  /**
   * The head commit the pull request had at that time, where the host records
   * pushes server-side (GitLab's merge request versions); undefined when it
   * had none yet. Absent where the host keeps no such record.
   */
  headAt?(number: number, at: string): Promise<HostResult<string | undefined>>;
  /** Takes the label off the pull request (a stale approval on a fork); done when it is not on it. */
  removeLabel(number: number, label: string): Promise<HostResult<void>>;
  /** Epoch ms before which a request would be refused without being sent (0: now). */
  notBefore(): number;
}

export interface LabelAddition {
  /** The login of whoever added it. */
  by: string;
  /** When (ISO 8601), as the provider recorded it. */
  at: string;
}
