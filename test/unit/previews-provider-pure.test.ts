// The pure checks of the provider clients: API URL and repository, the
// comment marker and finding Teal's own comment, a status's description and
// target URL, a Link header's next page (issue #28).
import { describe, expect, it } from 'vitest';
import { checkApiUrl, checkRepository } from '../../src/previews/providers/api-url.ts';
import { lastLabeler } from '../../src/previews/providers/base.ts';
import { findOwnComment, markedBody } from '../../src/previews/providers/comment.ts';
import { nextLink } from '../../src/previews/providers/http.ts';
import { STATUS_DESCRIPTION_MAX, statusDescription, statusTargetUrl } from '../../src/previews/providers/status.ts';
import { previewCommentMarker } from '../../src/previews/pull-request.ts';

describe('checkApiUrl', () => {
  const check = (raw: string | undefined, provider: 'github' | 'gitea' = 'github') =>
    checkApiUrl(raw, provider, 'spec.previews.apiURL');

  it('takes https with a path, drops a trailing slash; defaults to the public service', () => {
    const url = check('https://git.example.com/api/v1/');
    expect(url.ok && url.value.href).toBe('https://git.example.com/api/v1');
    const github = check(undefined);
    expect(github.ok && github.value.href).toBe('https://api.github.com/');
  });

  it('http only to loopback (tests); never userinfo, a query or another scheme', () => {
    expect(check('http://127.0.0.1:3000/api/v1').ok).toBe(true);
    expect(check('http://[::1]:3000').ok).toBe(true);
    expect(check('http://localhost:3000').ok).toBe(true);
    expect(check('http://git.example.com')).toEqual({
      ok: false,
      message: 'spec.previews.apiURL: must be https (http only to loopback)',
    });
    expect(check('https://bot:s3cret@git.example.com')).toEqual({
      ok: false,
      message: 'spec.previews.apiURL: must not carry a user or password (the token is a Secret)',
    });
    expect(check('https://git.example.com/?token=x').ok).toBe(false);
    expect(check('ftp://git.example.com').ok).toBe(false);
    expect(check('not a url')).toEqual({ ok: false, message: 'spec.previews.apiURL: not a URL' });
    expect(check(undefined, 'gitea')).toEqual({ ok: false, message: 'spec.previews.apiURL: required for gitea' });
  });

  it('the refusal never repeats the userinfo it refused', () => {
    const result = check('https://bot:s3cret@git.example.com');
    expect(JSON.stringify(result)).not.toContain('s3cret');
  });
});

describe('checkRepository', () => {
  it('owner/name for GitHub, Gitea and Bitbucket; nested groups for GitLab only', () => {
    expect(checkRepository('acme/shop.git', 'github', 'r')).toEqual({ ok: true, value: ['acme', 'shop'] });
    expect(checkRepository('g/sub/p', 'gitlab', 'r')).toEqual({ ok: true, value: ['g', 'sub', 'p'] });
    expect(checkRepository('g/sub/p', 'github', 'r')).toEqual({ ok: false, message: 'r: must be owner/name' });
    expect(checkRepository('shop', 'gitlab', 'r')).toEqual({ ok: false, message: 'r: must be group/.../project' });
  });

  it('no segment that climbs or escapes the path', () => {
    expect(checkRepository('acme/..', 'github', 'r').ok).toBe(false);
    expect(checkRepository('acme/sh%2Fop', 'github', 'r').ok).toBe(false);
    expect(checkRepository('acme/shop?x=1', 'github', 'r').ok).toBe(false);
  });
});

describe('the comment marker', () => {
  it('names the App, hidden as an HTML comment, or as an empty link reference on Bitbucket (which escapes HTML)', () => {
    expect(previewCommentMarker('github', 'team/web')).toBe('<!-- teal.dev/preview app=team/web -->');
    expect(previewCommentMarker('bitbucket', 'team/web')).toBe('[//]: # (teal.dev/preview app=team/web)');
  });

  it('refuses a key that could close the comment', () => {
    expect(() => previewCommentMarker('github', 'team/web --> <img>')).toThrow(/not namespace\/name/);
  });

  it("finds Teal's own comment: the marker on the first line, written by the token's user", () => {
    const marker = previewCommentMarker('github', 'team/web');
    const comments = [
      { id: '1', body: `quoting: ${marker}`, author: 'teal-bot' },
      { id: '2', body: markedBody(marker, 'forged'), author: 'mallory' },
      { id: '3', body: markedBody(previewCommentMarker('github', 'team/api'), 'other App'), author: 'teal-bot' },
      { id: '4', body: markedBody(marker, 'the preview'), author: 'Teal-Bot' },
      { id: '5', body: markedBody(marker, 'a later one'), author: 'teal-bot' },
    ];
    expect(findOwnComment(comments, marker, 'teal-bot')?.id).toBe('4');
    // Who the token is unknown (a GitHub App): the oldest marked one.
    expect(findOwnComment(comments, marker, undefined)?.id).toBe('2');
    expect(findOwnComment(comments.slice(0, 1), marker, 'teal-bot')).toBeUndefined();
  });
});

describe('lastLabeler', () => {
  it('the last addition, unless the label was taken off after it', () => {
    const on = { added: true, label: 'preview', by: 'alice', at: '1' };
    const off = { added: false, label: 'preview', by: 'bob', at: '2' };
    expect(lastLabeler([on], 'Preview')).toEqual({ by: 'alice', at: '1' });
    expect(lastLabeler([on, off], 'preview')).toBeUndefined();
    expect(lastLabeler([off, { ...on, by: 'carol', at: '3' }], 'preview')).toEqual({ by: 'carol', at: '3' });
    expect(lastLabeler([on], 'other')).toBeUndefined();
  });
});

describe('status', () => {
  it('the description is one line of at most 140 characters', () => {
    expect(statusDescription('build\nfailed:  step 3')).toBe('build failed: step 3');
    const long = statusDescription('x'.repeat(300));
    expect(long).toHaveLength(STATUS_DESCRIPTION_MAX);
    expect(long.endsWith('…')).toBe(true);
  });

  it('the target URL only when http(s) without userinfo', () => {
    expect(statusTargetUrl('https://pr-7.preview.example.com/')).toBe('https://pr-7.preview.example.com/');
    expect(statusTargetUrl('javascript:alert(1)')).toBeUndefined();
    expect(statusTargetUrl('https://u:p@example.com/')).toBeUndefined();
    expect(statusTargetUrl('nope')).toBeUndefined();
  });
});

describe('nextLink', () => {
  it("the rel=next of GitHub's, GitLab's and Gitea's Link headers", () => {
    const base = new URL('https://api.github.com/repos/a/b/pulls');
    const link =
      '<https://api.github.com/repositories/1/pulls?page=2>; rel="next", <https://api.github.com/repositories/1/pulls?page=5>; rel="last"';
    expect(nextLink(link, base)?.href).toBe('https://api.github.com/repositories/1/pulls?page=2');
    expect(nextLink('<https://x/?page=1>; rel="prev", <https://x/?page=3>; rel="last"', base)).toBeUndefined();
    expect(nextLink(null, base)).toBeUndefined();
  });
});
