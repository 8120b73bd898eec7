// Ref resolution with `git ls-remote` through simple-git. Input is validated
// before git runs, passed after `--` so it can never be read as an option,
// and matched exactly (ls-remote's own patterns match on the ref's tail).
import { performance } from 'node:perf_hooks';
import { GitPluginError, simpleGit } from 'simple-git';
import { GIT_REF_CHARS } from '../app/patterns.ts';
import { type GitAuth, type GitCredentials, redact, secretValues, withGitAuth } from './credentials.ts';
import { GitError, type GitErrorReason } from './errors.ts';
import { checkGitUrl, parseGitUrl, safeUrl } from './url.ts';

export { GitError, type GitErrorReason, isGitError } from './errors.ts';

export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ResolvedRef {
  /** The full ref that matched (refs/heads/x, refs/tags/x, HEAD), or the commit itself for a SHA. */
  ref: string;
  commit: string;
}

export interface RemoteOptions {
  url: string;
  credentials?: GitCredentials | undefined;
  /** Whole ls-remote deadline; default 30 s. */
  timeoutMs?: number;
  /** Allow file:// URLs (local development and tests). */
  allowFile?: boolean;
}

export interface ResolveOptions extends RemoteOptions {
  /** Branch, tag, full ref or full 40-hex commit SHA. */
  ref: string;
}

export interface ResolveResult extends ResolvedRef {
  durationMs: number;
}

export interface ResolveRefsOptions extends RemoteOptions {
  refs: readonly string[];
}

export interface ResolveRefsResult {
  /** One entry per requested ref: its commit, or a RefNotFound / InvalidSource GitError. */
  results: Map<string, ResolvedRef | GitError>;
  /** 0 when no network call was needed. */
  durationMs: number;
  /** Whether ls-remote ran (false when every ref was a commit SHA or invalid). */
  listed: boolean;
}

const FULL_SHA = /^[0-9a-fA-F]{40}$/;

/** Undefined when git could use the ref, else what is wrong (git check-ref-format rules). */
export function checkRef(ref: string): string | undefined {
  if (ref === '') return 'ref is empty';
  if (ref.length > 255) return 'ref is longer than 255 characters';
  if (ref.startsWith('-')) return 'ref must not start with "-"';
  if (!GIT_REF_CHARS.test(ref)) return 'ref must not contain spaces, control characters or any of ~^:?*[\\';
  if (ref.startsWith('/') || ref.startsWith('.')) return 'ref must not start with "/" or "."';
  if (ref.endsWith('/') || ref.endsWith('.') || ref.endsWith('.lock'))
    return 'ref must not end with "/", "." or ".lock"';
  if (['..', '//', '@{', '/.'].some((bad) => ref.includes(bad)))
    return 'ref must not contain "..", "//", "@{" or a component starting with "."';
  if (ref === '@') return 'ref must not be "@"';
  return undefined;
}

/** Candidate full refs for a ref as written, most preferred first; tags list their peeled form first. */
function candidates(ref: string): string[] {
  if (ref === 'HEAD') return ['HEAD'];
  if (ref.startsWith('refs/tags/')) return [`${ref}^{}`, ref];
  if (ref.startsWith('refs/')) return [ref];
  // A branch wins over a tag of the same name: Teal follows branches.
  return [`refs/heads/${ref}`, `refs/tags/${ref}^{}`, `refs/tags/${ref}`];
}

function describe(url: string, refs: readonly string[]): string {
  return refs.length === 1 ? `ref "${refs[0]}" of ${url}` : `refs of ${url}`;
}

interface Diagnosis {
  reason: GitErrorReason;
  summary: string;
  /** Whether git's own line adds anything (its prompt failures only confuse). */
  showDetail: boolean;
}

/** What went wrong, from git's (LC_ALL=C) stderr. */
function classify(stderr: string, hasCredentials: boolean): Diagnosis {
  if (/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/i.test(stderr))
    return {
      reason: 'AuthenticationFailed',
      summary: 'ssh host key verification failed (check known_hosts)',
      showDetail: false,
    };
  if (/SSL certificate problem|certificate verif|unable to get local issuer|self.signed certificate/i.test(stderr))
    return {
      reason: 'AuthenticationFailed',
      summary: 'TLS certificate verification failed (check ca.crt)',
      showDetail: true,
    };
  if (/could not read (Username|Password)|terminal prompts disabled/i.test(stderr))
    return {
      reason: 'AuthenticationFailed',
      summary: hasCredentials
        ? 'authentication failed: the server refused the credentials'
        : 'authentication failed: the repository needs credentials (secretRef)',
      showDetail: false,
    };
  if (
    /Authentication failed|returned error: 40[13]|Permission denied \(|HTTP Basic: Access denied|Invalid username or password/i.test(
      stderr,
    )
  )
    return { reason: 'AuthenticationFailed', summary: 'authentication failed', showDetail: true };
  if (/Repository not found|does not appear to be a git repository|returned error: 404|not found/i.test(stderr))
    return { reason: 'Unreachable', summary: 'repository not found', showDetail: true };
  return { reason: 'Unreachable', summary: 'repository unreachable', showDetail: true };
}

// ssh's boilerplate after any failure; never the telling line.
const GENERIC =
  /Could not read from remote repository|Please make sure you have the correct access rights|and the repository exists/i;

/** The most telling line of git's stderr: the first specific fatal/error line, else the first specific line. */
function detailOf(stderr: string): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !GENERIC.test(line));
  const fatal = lines.find((line) => /^(fatal|error):/i.test(line));
  const line = (fatal ?? lines[0] ?? '').replace(/^(fatal|error):\s*/i, '');
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

async function lsRemote(
  url: string,
  patterns: string[],
  auth: GitAuth,
  timeoutMs: number,
): Promise<Map<string, string>> {
  const git = simpleGit({
    baseDir: auth.dir,
    maxConcurrentProcesses: 1,
    abort: AbortSignal.timeout(timeoutMs),
    allowEnvironment: auth.allowEnvironment,
    unsafe: auth.unsafe,
  }).env(auth.env);
  const out = await git.listRemote(['--', url, ...patterns]);
  const refs = new Map<string, string>();
  for (const line of out.split('\n')) {
    const m = /^([0-9a-f]{40}|[0-9a-f]{64})\t(\S+)$/.exec(line.trim());
    if (m?.[1] && m[2]) refs.set(m[2], m[1]);
  }
  return refs;
}

/**
 * Resolves several refs of one repository with a single ls-remote. Whole-repo
 * failures (bad URL, unreachable, authentication) throw a GitError; per-ref
 * outcomes (RefNotFound, an invalid ref) come back in the map.
 */
export async function resolveRefs(options: ResolveRefsOptions): Promise<ResolveRefsResult> {
  const { url, credentials } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const urlProblem = checkGitUrl(url, { allowFile: options.allowFile ?? false });
  // A refused URL may itself hold a credential, so only its redacted form is kept.
  if (urlProblem) throw new GitError('InvalidSource', `invalid git url: ${urlProblem}`, { url: safeUrl(url) });

  const results = new Map<string, ResolvedRef | GitError>();
  const wanted: string[] = [];
  for (const ref of new Set(options.refs)) {
    const problem = checkRef(ref);
    if (problem) results.set(ref, new GitError('InvalidSource', `invalid ref for ${url}: ${problem}`, { url, ref }));
    else if (FULL_SHA.test(ref)) results.set(ref, { ref: ref.toLowerCase(), commit: ref.toLowerCase() });
    else wanted.push(ref);
  }
  if (wanted.length === 0) return { results, durationMs: 0, listed: false };

  const parsed = parseGitUrl(url);
  const patterns = [...new Set(wanted.flatMap(candidates))];
  const secrets = secretValues(credentials);
  const started = performance.now();
  let listed: Map<string, string>;
  try {
    listed = await withGitAuth(parsed, credentials, (auth) => {
      secrets.push(...auth.secrets);
      return lsRemote(url, patterns, auth, timeoutMs);
    });
  } catch (err) {
    if (err instanceof GitError) throw err;
    const what = describe(url, wanted);
    if (err instanceof GitPluginError && err.plugin === 'abort')
      throw new GitError('Unreachable', `cannot list ${what}: timed out after ${timeoutMs} ms`, { url });
    const stderr = err instanceof Error ? err.message : String(err);
    const { reason, summary, showDetail } = classify(stderr, credentials !== undefined && secrets.length > 0);
    const detail = showDetail ? redact(detailOf(stderr), secrets) : '';
    throw new GitError(reason, `cannot list ${what}: ${summary}${detail ? `: ${detail}` : ''}`, {
      url,
      ...(wanted.length === 1 ? { ref: wanted[0] } : {}),
    });
  }
  const durationMs = performance.now() - started;

  for (const ref of wanted) {
    const match = candidates(ref).find((candidate) => listed.has(candidate));
    const commit = match === undefined ? undefined : listed.get(match);
    if (match === undefined || commit === undefined) {
      results.set(ref, new GitError('RefNotFound', `ref "${ref}" not found in ${url}`, { url, ref }));
    } else {
      results.set(ref, { ref: match.replace(/\^\{\}$/, ''), commit });
    }
  }
  return { results, durationMs, listed: true };
}

/** Resolves one ref to a commit; a full SHA resolves to itself without network. Throws GitError. */
export async function resolveRef(options: ResolveOptions): Promise<ResolveResult> {
  const { ref, ...remote } = options;
  const { results, durationMs } = await resolveRefs({ ...remote, refs: [ref] });
  const result = results.get(ref);
  if (result === undefined) throw new GitError('RefNotFound', `ref "${ref}" not found in ${options.url}`);
  if (result instanceof GitError) throw result;
  return { ...result, durationMs };
}
