// Teal's one comment on a pull request: the App's marker (previewCommentMarker)
// on its first line lets Teal find it again after a restart and edit it in
// place, never post a second one. Pure; each client lists the comments and
// calls findOwnComment.

/** The body as posted: the marker on its own first line. */
export function markedBody(marker: string, body: string): string {
  return `${marker}\n${body}`;
}

export interface PostedComment {
  id: string;
  body: string;
  /** The author's login (GitHub, GitLab, Gitea) or account id (Bitbucket). */
  author: string;
}

/**
 * Teal's comment among the pull request's: the oldest whose first line is
 * the marker and, when Teal knows who its token is, written by it (anyone may
 * paste the marker into a comment of their own; Teal edits only its own).
 */
export function findOwnComment(
  comments: readonly PostedComment[],
  marker: string,
  self: string | undefined,
): PostedComment | undefined {
  const own = (c: PostedComment) => self === undefined || c.author.toLowerCase() === self.toLowerCase();
  return comments.find((c) => c.body.trimStart().split(/\r?\n/, 1)[0]?.trimEnd() === marker && own(c));
}
