import { describe, expect, it } from 'vitest';
import { displayRef, revisionString, shortCommit } from '../../src/git/revision.ts';

const SHA = '0123456789abcdef0123456789abcdef01234567';

describe('revision strings', () => {
  it('formats Flux-style revisions', () => {
    expect(revisionString('refs/heads/main', SHA)).toBe(`main@sha1:${SHA}`);
    expect(revisionString('main', SHA)).toBe(`main@sha1:${SHA}`);
    expect(revisionString('refs/heads/feature/deep/x', SHA)).toBe(`feature/deep/x@sha1:${SHA}`);
    expect(revisionString('refs/tags/v1.2.3', SHA)).toBe(`v1.2.3@sha1:${SHA}`);
    expect(revisionString('refs/pull/7/head', SHA)).toBe(`refs/pull/7/head@sha1:${SHA}`);
  });

  it('gives just the digest for a commit ref', () => {
    expect(revisionString(SHA, SHA)).toBe(`sha1:${SHA}`);
    expect(revisionString('', SHA)).toBe(`sha1:${SHA}`);
  });

  it('names sha256 for SHA-256 repositories', () => {
    const long = 'a'.repeat(64);
    expect(revisionString('refs/heads/main', long)).toBe(`main@sha256:${long}`);
  });

  it('shortens commits and refs', () => {
    expect(shortCommit(SHA)).toBe('0123456');
    expect(displayRef('refs/tags/v1')).toBe('v1');
    expect(displayRef('HEAD')).toBe('HEAD');
  });
});
