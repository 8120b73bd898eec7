// Git URL parsing, validation and normalisation. parseGitUrl and checkGitUrl
// accept only the forms the App schema allows; normalizeRepoUrl is lenient
// because webhook payloads also carry http://, git:// and html URLs.

export type GitProtocol = 'https' | 'ssh' | 'file';

export interface GitUrl {
  protocol: GitProtocol;
  /** Lower-cased host name; empty for file://. */
  host: string;
  port?: number;
  user?: string;
  /** As written: starts with "/" except in the scp-like form (user@host:path). */
  path: string;
}

export interface CheckGitUrlOptions {
  /** file:// reads the operator's own filesystem, so only local development allows it. */
  allowFile?: boolean;
}

const HOST = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const HTTPS = /^https:\/\/(?:([^@/]*)@)?([^/:@]+)(?::([0-9]{1,5}))?(\/.*)$/;
const SSH = /^ssh:\/\/(?:([^@/]*)@)?([^/:@]+)(?::([0-9]{1,5}))?(\/.*)$/;
// scp-like: no slash before the colon, as git itself decides.
const SCP = /^([^@/:]+)@([^/:@]+):(.+)$/;
const FILE = /^file:\/\/(\/.*)$/;
const MAX_LENGTH = 2048;

const FORMS = 'https://host/path, ssh://[user@]host/path, user@host:path or file:///path';

class UrlProblem extends Error {}

function portOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UrlProblem(`port ${text} is out of range`);
  return port;
}

function hostOf(text: string): string {
  if (!HOST.test(text)) throw new UrlProblem(`"${text}" is not a valid host name`);
  return text.toLowerCase();
}

function userOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  if (text.includes(':')) throw new UrlProblem('url must not contain credentials; put them in the secretRef Secret');
  if (!USER.test(text)) throw new UrlProblem(`"${text}" is not a valid user name`);
  return text;
}

function pathOf(text: string, leadingSlash: boolean): string {
  const bare = leadingSlash ? text.slice(1) : text;
  if (bare === '' || /^\/*$/.test(bare)) throw new UrlProblem('url has no repository path');
  // A path git could pass on to ssh as an option.
  if (bare.startsWith('-')) throw new UrlProblem('repository path must not start with "-"');
  return text;
}

function parse(url: string): GitUrl {
  if (url === '') throw new UrlProblem('url is empty');
  if (url.length > MAX_LENGTH) throw new UrlProblem(`url is longer than ${MAX_LENGTH} characters`);
  if (url.startsWith('-')) throw new UrlProblem('url must not start with "-"');
  if (/[\s\x00-\x1f\x7f]/.test(url)) throw new UrlProblem('url must not contain whitespace or control characters');

  let m = HTTPS.exec(url);
  if (m) {
    const [, userinfo, host = '', port, path = ''] = m;
    if (userinfo !== undefined)
      throw new UrlProblem('https url must not contain credentials; put them in the secretRef Secret');
    return withPort({ protocol: 'https', host: hostOf(host), path: pathOf(path, true) }, portOf(port));
  }
  m = SSH.exec(url);
  if (m) {
    const [, user, host = '', port, path = ''] = m;
    return withUser(
      withPort({ protocol: 'ssh', host: hostOf(host), path: pathOf(path, true) }, portOf(port)),
      userOf(user),
    );
  }
  m = FILE.exec(url);
  if (m) return { protocol: 'file', host: '', path: pathOf(m[1] ?? '', true) };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    const scheme = url.slice(0, url.indexOf(':')).toLowerCase();
    if (scheme === 'http') throw new UrlProblem('plain http is not allowed; use https');
    if (['https', 'ssh', 'file'].includes(scheme)) throw new UrlProblem(`url must be ${FORMS}`);
    throw new UrlProblem(`url scheme "${scheme}" is not supported; use ${FORMS}`);
  }
  m = SCP.exec(url);
  if (m) {
    const [, user = '', host = '', path = ''] = m;
    return { protocol: 'ssh', host: hostOf(host), user: userOf(user), path: pathOf(path, false) };
  }
  throw new UrlProblem(`url must be ${FORMS}`);
}

function withPort(url: GitUrl, port: number | undefined): GitUrl {
  return port === undefined ? url : { ...url, port };
}

function withUser(url: GitUrl, user: string | undefined): GitUrl {
  return user === undefined ? url : { ...url, user };
}

/** Parses one of the accepted forms; throws an Error whose message names the problem. */
export function parseGitUrl(url: string): GitUrl {
  try {
    return parse(url);
  } catch (err) {
    if (err instanceof UrlProblem) throw new Error(err.message);
    throw err;
  }
}

/** Undefined when the URL may be used, else a message naming the problem. */
export function checkGitUrl(url: string, options: CheckGitUrlOptions = {}): string | undefined {
  let parsed: GitUrl;
  try {
    parsed = parse(url);
  } catch (err) {
    if (err instanceof UrlProblem) return err.message;
    throw err;
  }
  if (parsed.protocol === 'file' && !options.allowFile)
    return 'file:// urls are refused unless the operator allows local repositories';
  return undefined;
}

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443, ssh: 22, git: 9418 };
const LENIENT = /^([a-z][a-z0-9+.-]*):\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^/:@]*)(?::([0-9]*))?(\/.*)?$/i;

function cleanPath(path: string): string {
  let p = path.replace(/\/{2,}/g, '/').replace(/^\/+/, '');
  p = p.replace(/\/+$/, '');
  if (p.endsWith('.git')) p = p.slice(0, -4);
  return p.replace(/\/+$/, '');
}

/**
 * One key per repository, whatever way its URL is written: scheme, user and
 * default ports dropped, host lower-cased, ".git" and trailing "/" removed,
 * path case kept (most servers treat paths case-sensitively). Unrecognised
 * input comes back trimmed, so it still compares equal to itself.
 */
export function normalizeRepoUrl(url: string): string {
  const text = url.trim();
  const m = LENIENT.exec(text);
  if (m) {
    const [, rawScheme = '', host = '', port, path = ''] = m;
    const scheme = rawScheme.toLowerCase();
    if (scheme === 'file') return `file:///${cleanPath(path)}`;
    const base = scheme.includes('ssh') ? 'ssh' : scheme;
    const portPart = port && Number(port) !== DEFAULT_PORTS[base] ? `:${Number(port)}` : '';
    return `${host.toLowerCase()}${portPart}/${cleanPath(path)}`;
  }
  const scp = /^(?:[^@/:]+@)?([^/:@]+):(.+)$/.exec(text);
  if (scp) return `${(scp[1] ?? '').toLowerCase()}/${cleanPath(scp[2] ?? '')}`;
  return text;
}

/** Scheme, host and port: what the URL says to connect to, for http.<url>.* config scoping. */
export function urlOrigin(url: GitUrl): string {
  return `${url.protocol}://${url.host}${url.port === undefined ? '' : `:${url.port}`}`;
}

/** The URL with any https userinfo or user:password removed, for messages about a URL that was refused. */
export function safeUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^\s/@]*)@/i, (whole, scheme: string, userinfo: string) =>
    /^https?:/i.test(scheme) || userinfo.includes(':') ? `${scheme}***@` : whole,
  );
}
