// A pull request (a merge request on GitLab) as Teal's previews see it, whatever
// the provider (issue #28). The provider clients (src/previews/providers/) read
// their API into this shape; the previews planner decides from it alone, so the
// planner never knows which provider it serves. Every field is input from the
// provider: it is validated where it is read, never trusted to be a safe name.

// The providers are part of the App's schema (spec.previews.provider), said there once.
import { COMMIT_STATUS_STATES, type PreviewProvider } from '../app/previews-schema.ts';

export { DEFAULT_API_URLS, PREVIEW_PROVIDERS, type PreviewProvider } from '../app/previews-schema.ts';

export interface PullRequest {
  /** The provider's number for it in its repository (GitHub's number, GitLab's iid). */
  number: number;
  title: string;
  /** The head commit, 40 hex digits (SHA-1) or 64 (SHA-256). */
  headSha: string;
  /** The ref the provider serves the head at: refs/pull/N/head, refs/merge-requests/N/head, ... */
  headRef: string;
  /** The branch it would merge into, without refs/heads/. */
  baseBranch: string;
  labels: string[];
  draft: boolean;
  /** True when the head lives in another repository than the base (a fork). */
  fromFork: boolean;
  /** The login of whoever opened it. */
  author: string;
  /**
   * Where to fetch headRef from when the base repository does not serve it:
   * Bitbucket Cloud has no pull refs, so a fork's head is a branch of the fork.
   * Absent everywhere else.
   */
  headCloneUrl?: string;
  /** The page a person opens to see it. */
  webUrl: string;
  /** When the provider last saw a change to it (ISO 8601). */
  updatedAt: string;
}

// ---- what the provider clients tell the planner besides the pull requests ----

/**
 * What a person may do in the repository, as the provider's permission API says
 * (GitHub's collaborator permission; GitLab's access level; Gitea's and
 * Bitbucket's). The clients map their provider's levels onto these: GitHub
 * maintain is write and triage is read; GitLab Developer is write, Maintainer
 * and Owner admin, Reporter and Guest read.
 */
export const REPOSITORY_PERMISSIONS = ['admin', 'write', 'read', 'none'] as const;
export type RepositoryPermission = (typeof REPOSITORY_PERMISSIONS)[number];

/**
 * The approval label on a pull request, as the provider clients found it: who
 * added it, with which permission, and the head commit the pull request had
 * when it was added (the approval is for that commit only: a new commit needs a
 * new approval). The clients read the label's event (GitHub's issue timeline,
 * GitLab's resource label events, ...) and the permission of its author.
 */
export interface PullRequestApproval {
  number: number;
  label: string;
  /** The head commit, full SHA, when the label was added. */
  sha: string;
  /** The login of whoever added the label. */
  by: string;
  permission: RepositoryPermission;
  /** When the label was added (ISO 8601). */
  at: string;
}

/** Why a provider request failed, for the planner's condition and its wake-up time. */
export const PROVIDER_ERROR_REASONS = [
  /** 403/429 with a rate limit (primary or secondary): wait until retryAt. */
  'RateLimited',
  /** 401, or 403 without a rate limit: the token is wrong or lacks a scope. */
  'Unauthorized',
  /** 404: the repository (or the API URL) is not there, or the token cannot see it. */
  'NotFound',
  /** A network error, a timeout or a 5xx. */
  'Unavailable',
  /** An answer that did not parse as the provider's documented shape. */
  'InvalidResponse',
  /** 400, 409 or 422: the provider refused the request as sent (a SHA it does not know, ...). */
  'Rejected',
  /** The provider has no such thing (Bitbucket Cloud pull requests have no labels). */
  'Unsupported',
  /** The token Secret (spec.previews.tokenSecretRef) is missing, lacks its key, or holds no usable token: nothing was asked. */
  'TokenUnavailable',
] as const;
export type ProviderErrorReason = (typeof PROVIDER_ERROR_REASONS)[number];

export interface ProviderError {
  reason: ProviderErrorReason;
  /** Says what failed, without any credential (no token, no URL with userinfo). */
  message: string;
  /** Not before this time (ISO 8601): Retry-After, x-ratelimit-reset or the client's backoff. */
  retryAt?: string;
}

/**
 * One poll of the provider: the open pull requests (all of them, the clients
 * page through; unchanged when the provider answered 304), and the approvals
 * found on them; or why the poll failed.
 */
export type PullRequestListing =
  | { ok: true; pullRequests: PullRequest[]; approvals: PullRequestApproval[] }
  | { ok: false; error: ProviderError };

// ---- what the planner asks the provider clients to write ----

/** The commit status's context (GitHub), name (GitLab, Gitea) or key (Bitbucket). */
export const COMMIT_STATUS_CONTEXT = 'teal/preview';

/** Marks Teal's one comment on a pull request, so the clients find it again to edit it in place. */
export const PREVIEW_COMMENT_MARKER = '<!-- teal.dev/preview -->';

// namespace/name of a Kubernetes object: nothing that could end the marker.
const APP_KEY = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\/[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;

/**
 * The first line of one App's comment, as the provider clients write and find
 * it: PREVIEW_COMMENT_MARKER naming the App, so two Apps previewing one
 * repository (a monorepo) keep a comment each. Bitbucket escapes HTML, so
 * there it is an empty link reference definition, which CommonMark renders as
 * nothing. Throws on a key that is not namespace/name (a caller's bug).
 */
export function previewCommentMarker(provider: PreviewProvider, appKey: string): string {
  if (!APP_KEY.test(appKey)) throw new Error(`comment marker: "${appKey}" is not namespace/name`);
  const marked = PREVIEW_COMMENT_MARKER.replace(' -->', ` app=${appKey} -->`);
  return provider === 'bitbucket' ? `[//]: # (${marked.slice(5, -4)})` : marked;
}

export { COMMIT_STATUS_STATES };
export type CommitStatusState = (typeof COMMIT_STATUS_STATES)[number];

export interface CommitStatus {
  state: CommitStatusState;
  /** One line, at most 140 characters (GitHub's limit), no credential. */
  description: string;
  /** The preview's URL, once it serves. */
  targetUrl?: string;
}
