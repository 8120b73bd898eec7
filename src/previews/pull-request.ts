// A pull request (a merge request on GitLab) as Teal's previews see it, whatever
// the provider (issue #28). The provider clients (src/previews/providers/) read
// their API into this shape; the previews planner decides from it alone, so the
// planner never knows which provider it serves. Every field is input from the
// provider: it is validated where it is read, never trusted to be a safe name.

/** The git hosting services previews can follow; gitea covers Forgejo too. */
export const PREVIEW_PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket'] as const;
export type PreviewProvider = (typeof PREVIEW_PROVIDERS)[number];

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
  /** The page a person opens to see it. */
  webUrl: string;
  /** When the provider last saw a change to it (ISO 8601). */
  updatedAt: string;
}
