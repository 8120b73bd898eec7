// Git credentials from a Secret, in Flux GitRepository's key names, handed to
// a git child process without ever putting a secret on a command line, in a
// URL or in a git config file: https auth travels in GIT_CONFIG_* environment
// variables, SSH keys and CA certificates in 0600 files inside a private
// temporary directory that is removed afterwards.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SimpleGitOptions } from 'simple-git';
import { GitError } from './errors.ts';
import { type GitUrl, urlOrigin } from './url.ts';

export interface GitCredentials {
  username?: string;
  /** A password or an access token. */
  password?: string;
  bearerToken?: string;
  /** A private SSH key (OpenSSH or PEM). */
  identity?: string;
  /** Required with identity: host keys are always checked strictly. */
  knownHosts?: string;
  /** PEM bundle of a private CA for https. */
  caCert?: string;
}

/** Secret data keys, as Flux's GitRepository names them. */
export const SECRET_KEYS = {
  username: 'username',
  password: 'password',
  bearerToken: 'bearerToken',
  identity: 'identity',
  knownHosts: 'known_hosts',
  caCert: 'ca.crt',
} as const satisfies Record<keyof GitCredentials, string>;

/**
 * Decodes a Secret's `data` (base64 values) and checks the combination.
 * Throws GitError InvalidSource, naming keys but never values.
 */
export function credentialsFromSecretData(
  data: Record<string, string> | undefined,
  secretName = 'Secret',
): GitCredentials {
  const creds: GitCredentials = {};
  for (const [field, key] of Object.entries(SECRET_KEYS) as [keyof GitCredentials, string][]) {
    const encoded = data?.[key];
    if (encoded === undefined) continue;
    const value = Buffer.from(encoded, 'base64').toString('utf8');
    if (value !== '') creds[field] = value;
  }
  const problem = credentialsProblem(creds);
  if (problem) throw new GitError('InvalidSource', `${secretName}: ${problem}`);
  return creds;
}

/** Undefined when the combination is usable, else what is wrong (key names only). */
export function credentialsProblem(creds: GitCredentials): string | undefined {
  if (creds.password !== undefined && creds.username === undefined) return '"password" needs "username"';
  if (creds.username !== undefined && creds.password === undefined) return '"username" needs "password"';
  if (creds.bearerToken !== undefined && creds.password !== undefined)
    return 'set either "username"/"password" or "bearerToken", not both';
  if (creds.identity !== undefined && creds.knownHosts === undefined)
    return '"identity" needs "known_hosts": host keys are always verified';
  return undefined;
}

type UnsafeFlags = NonNullable<SimpleGitOptions['unsafe']>;

/** Everything one git child process needs; dispose() removes the temporary files. */
export interface GitAuth extends AsyncDisposable {
  /** Private 0700 directory: the child's cwd and HOME, and where key files live. */
  readonly dir: string;
  /** The complete child environment (nothing else is inherited). */
  readonly env: Record<string, string>;
  /** The guarded variables set above, for simple-git's allowEnvironment. */
  readonly allowEnvironment: string[];
  /** The simple-git unsafe switches those variables need, and no others. */
  readonly unsafe: UnsafeFlags;
  /** Values (and encodings of them) that must never be shown. */
  readonly secrets: string[];
  dispose(): Promise<void>;
}

export interface PrepareGitAuthOptions {
  /** Where the private directory is made; default os.tmpdir(). */
  tmpRoot?: string;
}

// Passed through from the operator's environment; everything else, notably
// GIT_*, SSH_AUTH_SOCK and XDG_CONFIG_HOME, is left behind so ambient config,
// credential helpers and agents never serve an App's request.
const PASS_THROUGH = [
  'PATH',
  'TMPDIR',
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'NO_PROXY',
  'no_proxy',
  'ALL_PROXY',
  'all_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** What a git invocation's authentication adds up to: its environment, the simple-git unsafe flags, the values to mask. */
interface AuthParts {
  env: Record<string, string>;
  unsafe: UnsafeFlags;
  secrets: string[];
}

/** The environment every invocation starts from, with nothing of the operator's own git or ssh setup. */
function baseEnv(dir: string, url: GitUrl): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of PASS_THROUGH) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  // HOME points at the empty private dir and GIT_CONFIG_NOSYSTEM drops
  // /etc/gitconfig: no ambient config, credential helper or insteadOf applies.
  return Object.assign(env, {
    HOME: dir,
    LC_ALL: 'C', // error classification reads git's English messages
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '', // empty, not unset: stops git falling back to SSH_ASKPASS or core.askPass
    GIT_ALLOW_PROTOCOL: url.protocol, // no ext::, and no redirect from https to http
  });
}

/** https: a Basic or Bearer header scoped to the URL's origin, and a private CA. */
async function httpsAuth(dir: string, url: GitUrl, creds: GitCredentials, parts: AuthParts): Promise<void> {
  const { env, secrets } = parts;
  let header: string | undefined;
  if (creds.username !== undefined && creds.password !== undefined) {
    const basic = Buffer.from(`${creds.username}:${creds.password}`).toString('base64');
    header = `Authorization: Basic ${basic}`;
    secrets.push(creds.password, basic, encodeURIComponent(creds.password));
  } else if (creds.bearerToken !== undefined) {
    header = `Authorization: Bearer ${creds.bearerToken}`;
    secrets.push(creds.bearerToken);
  }
  if (header !== undefined) {
    // Scoped to this origin, so the header is never sent to another host.
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = `http.${urlOrigin(url)}/.extraHeader`;
    env.GIT_CONFIG_VALUE_0 = header;
    secrets.push(header);
    parts.unsafe.allowUnsafeConfigEnvCount = true;
  }
  if (creds.caCert !== undefined) {
    const caFile = join(dir, 'ca.crt');
    await writeFile(caFile, withNewline(creds.caCert), { mode: 0o600, flag: 'wx' });
    env.GIT_SSL_CAINFO = caFile;
  }
}

/** ssh: the App's key and known_hosts only, with strict host key checking. */
async function sshAuth(dir: string, creds: GitCredentials, parts: AuthParts): Promise<void> {
  // -F /dev/null and IdentityAgent=none: the operator's own ssh config,
  // keys and agent never answer for an App.
  const ssh = ['ssh', '-F', '/dev/null', '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none'];
  if (creds.identity !== undefined) {
    const keyFile = join(dir, 'identity');
    await writeFile(keyFile, withNewline(creds.identity), { mode: 0o600, flag: 'wx' });
    ssh.push('-i', keyFile);
    parts.secrets.push(creds.identity);
  } else {
    ssh.push('-o', 'IdentityFile=none');
  }
  ssh.push('-o', 'StrictHostKeyChecking=yes');
  if (creds.knownHosts !== undefined) {
    const knownHosts = join(dir, 'known_hosts');
    await writeFile(knownHosts, withNewline(creds.knownHosts), { mode: 0o600, flag: 'wx' });
    ssh.push('-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'GlobalKnownHostsFile=/dev/null');
  }
  parts.env.GIT_SSH_COMMAND = ssh.map((arg) => (/^[\w./=,:-]+$/.test(arg) ? arg : shellQuote(arg))).join(' ');
  parts.unsafe.allowUnsafeSshCommand = true;
}

/**
 * Builds the environment for one git invocation against `url`. Only the
 * credentials the URL's protocol uses are applied (https: token or CA; ssh:
 * key and known_hosts). Always call dispose(), or use withGitAuth or
 * `await using`.
 */
export async function prepareGitAuth(
  url: GitUrl,
  creds: GitCredentials = {},
  options: PrepareGitAuthOptions = {},
): Promise<GitAuth> {
  const problem = credentialsProblem(creds);
  if (problem) throw new GitError('InvalidSource', `credentials: ${problem}`);

  const dir = await mkdtemp(join(options.tmpRoot ?? tmpdir(), 'teal-git-'));
  let disposed = false;
  const dispose = async (): Promise<void> => {
    if (disposed) return;
    disposed = true;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const parts: AuthParts = { env: baseEnv(dir, url), unsafe: { allowUnsafeAskPass: true }, secrets: [] };
    if (url.protocol === 'https') await httpsAuth(dir, url, creds, parts);
    else if (url.protocol === 'ssh') await sshAuth(dir, creds, parts);
    const { env, unsafe, secrets } = parts;
    const allowEnvironment = Object.keys(env).filter((key) => key.startsWith('GIT_'));
    return { dir, env, allowEnvironment, unsafe, secrets, dispose, [Symbol.asyncDispose]: dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** Runs fn with a prepared GitAuth and always removes its files afterwards. */
export async function withGitAuth<T>(
  url: GitUrl,
  creds: GitCredentials | undefined,
  fn: (auth: GitAuth) => Promise<T>,
  options: PrepareGitAuthOptions = {},
): Promise<T> {
  const auth = await prepareGitAuth(url, creds, options);
  try {
    return await fn(auth);
  } finally {
    await auth.dispose();
  }
}

/** Every secret-bearing value of a credentials object, for redact(). */
export function secretValues(creds: GitCredentials | undefined): string[] {
  if (!creds) return [];
  const out: string[] = [];
  for (const value of [creds.password, creds.bearerToken, creds.identity]) {
    if (value !== undefined) out.push(value);
  }
  if (creds.password !== undefined) {
    out.push(encodeURIComponent(creds.password));
    if (creds.username !== undefined) out.push(Buffer.from(`${creds.username}:${creds.password}`).toString('base64'));
  }
  return out;
}

const REDACTED = '***';

/**
 * Removes secrets from text meant for people: the given values (and the
 * long lines of multi-line ones such as keys), user:password in URLs, and
 * Authorization header values.
 */
export function redact(text: string, secrets: Iterable<string | undefined>): string {
  const values = new Set<string>();
  for (const secret of secrets) {
    if (!secret) continue;
    values.add(secret);
    if (secret.includes('\n')) {
      for (const line of secret.split(/\r?\n/)) if (line.trim().length >= 16) values.add(line.trim());
    }
  }
  let out = text;
  for (const value of [...values].sort((a, b) => b.length - a.length)) out = out.split(value).join(REDACTED);
  return out
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*:[^\s/@]*@/gi, `$1${REDACTED}@`)
    .replace(/(authorization:\s*)(basic|bearer)\s+[^\s'"]+/gi, `$1$2 ${REDACTED}`);
}
