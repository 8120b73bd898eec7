// Where a preview's commit comes from (issue #28 item 3). A child App pins the
// pull request's head by its full SHA (spec.source.git.ref) and names the
// provider's pull ref in ANN_PR_REF: for a fork's pull request that ref is the
// only name the base repository has for the commit. The build fetches the SHA
// itself (build/job.ts), so the ref only names the commit in status.source,
// the build Job and kubectl teal get; it never reaches git. It is read only on
// an App that is a preview (labelled with and owned by its parent App) whose
// ref is a full SHA, and only in the two shapes the providers make; anything
// else is ignored and reported.
import { KIND } from '../app/app-api.ts';
import { matching, type ValueProblem, ValueReader } from '../app/cluster-values.ts';
import { ANN_PR_REF, LABEL_PREVIEW_OF } from '../app/preview-labels.ts';
import type { ResolvedSource } from '../build/status.ts';

/** refs/pull/N/head (GitHub, Gitea, Forgejo) or refs/merge-requests/N/head (GitLab): nothing else. */
export const PULL_REF = /^refs\/(pull|merge-requests)\/[1-9][0-9]{0,9}\/head$/;

const pullRef = matching(PULL_REF, 'refs/pull/<number>/head or refs/merge-requests/<number>/head', 40);

/** A full commit SHA as spec.source.git.ref may hold it (SHA-1 or SHA-256 repositories). */
const FULL_SHA = /^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;

/** The metadata and source of an App, as far as the pull ref needs them (loose: read from the cluster). */
export interface PreviewLike {
  metadata: {
    name: string;
    labels?: Record<string, string> | undefined;
    annotations?: Record<string, string> | undefined;
    ownerReferences?: unknown;
  };
  spec: { source?: { git: { ref: string } } | undefined };
}

/** Whether an ownerReference names an App of that name (the App cache keeps a child's App owners, and no more). */
function ownedBy(ownerReferences: unknown, parent: string): boolean {
  if (!Array.isArray(ownerReferences)) return false;
  return ownerReferences.some(
    (o: unknown) =>
      typeof o === 'object' &&
      o !== null &&
      (o as { kind?: unknown }).kind === KIND &&
      (o as { name?: unknown }).name === parent,
  );
}

/** Whether the App is a preview: labelled with its parent's name and owned by that App. */
export function isPreview(app: PreviewLike): boolean {
  const parent = app.metadata.labels?.[LABEL_PREVIEW_OF];
  return parent !== undefined && parent !== '' && ownedBy(app.metadata.ownerReferences, parent);
}

/**
 * The pull ref that names a preview's commit, or nothing (not a preview, no annotation,
 * a ref that is not a full SHA, or a bad value: that one with a problem for a Warning Event).
 */
export function readPullRef(app: PreviewLike): { ref?: string; problems: ValueProblem[] } {
  const git = app.spec.source?.git;
  if (!git || !FULL_SHA.test(git.ref) || !isPreview(app)) return { problems: [] };
  const read = new ValueReader(`App ${app.metadata.name}`);
  const ref = read.annotation(app.metadata.annotations, ANN_PR_REF, pullRef);
  return { ...(ref !== undefined ? { ref } : {}), problems: read.problems };
}

/**
 * The resolved source of a preview: the commit its spec pins (which the poller takes as it is, without
 * asking the server), named by the pull ref it is fetched through, so status.source, the build Job and
 * `kubectl teal get` say `refs/pull/N/head@sha1:<commit>`. Anything else stays as it was resolved.
 */
export function throughPullRef(resolved: ResolvedSource, ref: string | undefined): ResolvedSource {
  if (ref === undefined || resolved.ref !== resolved.commit) return resolved;
  return { ...resolved, ref };
}
