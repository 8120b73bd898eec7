// The provider's API URL and the repository, as spec.previews gives them: pure
// checks, each refusal naming the field. The schema refuses most of this
// already (app/previews-schema.ts); the clients check again because the token
// goes to this URL and nowhere else: https (http only to this machine, for
// tests), no userinfo (a credential in a URL ends up in logs), no query or
// fragment (the clients add their own paths and queries).
import { isIP } from 'node:net';
import { DEFAULT_API_URLS, type PreviewProvider } from '../pull-request.ts';

export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

/** The API URL, without a trailing slash, or why not. */
export function checkApiUrl(raw: string | undefined, provider: PreviewProvider, field: string): Checked<URL> {
  const text = raw ?? DEFAULT_API_URLS[provider];
  if (text === undefined || text.trim() === '') return { ok: false, message: `${field}: required for ${provider}` };
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { ok: false, message: `${field}: not a URL` };
  }
  const why = refusal(url);
  if (why) return { ok: false, message: `${field}: ${why}` };
  url.pathname = url.pathname.replace(/\/+$/, '');
  return { ok: true, value: url };
}

function refusal(url: URL): string | undefined {
  if (url.username !== '' || url.password !== '') return 'must not carry a user or password (the token is a Secret)';
  if (url.search !== '' || url.hash !== '') return 'must not have a query or fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return isLoopback(url.hostname) ? undefined : 'must be https (http only to loopback)';
  return 'must be https';
}

/** 127.0.0.0/8, ::1 and localhost: where only this machine listens. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return isIP(host) === 6 && host === '::1';
}

/** A URL the host handed back (a next page, a redirect) may be followed with the token only on the same origin. */
export function sameOrigin(a: URL, b: URL): boolean {
  return a.origin === b.origin;
}

// A path segment: what GitHub, GitLab, Gitea and Bitbucket allow in owner,
// group and repository names, and nothing that could climb (".", "..").
const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * owner/name (GitHub, Gitea), workspace/slug (Bitbucket), or
 * group/subgroup/.../project (GitLab), as path segments, or why not.
 */
export function checkRepository(raw: string, provider: PreviewProvider, field: string): Checked<string[]> {
  const segments = raw
    .trim()
    .replace(/\.git$/, '')
    .split('/');
  const nested = provider === 'gitlab';
  if (segments.length < 2 || (!nested && segments.length > 2) || segments.length > 20) {
    return { ok: false, message: `${field}: must be ${nested ? 'group/.../project' : 'owner/name'}` };
  }
  const bad = segments.find((s) => !SEGMENT.test(s) || s === '.' || s === '..');
  if (bad !== undefined) return { ok: false, message: `${field}: "${bad.slice(0, 100)}" is not a valid name` };
  return { ok: true, value: segments };
}
