// Flux-style revision strings, so `status.source.revision` reads the same as
// a GitRepository's: "main@sha1:<40 hex>" (sha256: for SHA-256 repositories).

/** Branch and tag names as people write them; other refs (refs/pull/1/head) stay whole. */
export function displayRef(ref: string): string {
  for (const prefix of ['refs/heads/', 'refs/tags/']) {
    if (ref.startsWith(prefix)) return ref.slice(prefix.length);
  }
  return ref;
}

/** `<ref>@sha1:<commit>`, or `sha1:<commit>` when the ref is the commit itself (or empty). */
export function revisionString(ref: string, commit: string): string {
  // Never throws: it formats status, and bad input must not crash a reconcile.
  const digest = `${commit.length === 64 ? 'sha256' : 'sha1'}:${commit}`;
  const name = displayRef(ref);
  return name === '' || name === commit ? digest : `${name}@${digest}`;
}

/** The 7-character abbreviation git and the forges show. */
export function shortCommit(commit: string): string {
  return commit.slice(0, 7);
}
