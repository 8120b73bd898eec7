// A real Gitea for the pull-request preview tests (issue #28): built from Go
// modules (build-gitea.sh), run on 127.0.0.1 and a free port from a throwaway
// folder (SQLite, install locked, no mail, no SSH, offline), with an admin whose
// token the tests use, and ordinary users made on demand. Webhooks may go to
// loopback addresses only, so Gitea can deliver to Teal's API or a test's
// listener on 127.0.0.1 and nowhere else. Free of vitest, like the rest of
// test/cluster, so that `make dev` may use it.
//
// What its API offers for previews (pull requests, pull refs, statuses,
// comments, labels and who added them, permissions, webhooks) is written down
// in docs/gitea-api.md; test/support/gitea.ts holds the calls the tests make.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '../support/ports.ts';
import { waitFor } from '../support/wait.ts';
import { type Supervised, supervise } from './supervised.ts';

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

/** The admin the harness makes; the tests act as it unless they make other users. */
export const GITEA_ADMIN = 'teal-admin';

export interface GiteaUser {
  username: string;
  password: string;
  /** An API token with every scope, for `Authorization: token ...` and as the git HTTP password. */
  token: string;
}

export interface GiteaOptions {
  log?: (line: string) => void;
  /** A fixed port on 127.0.0.1 (make dev's, so that its URL stays the same between runs); default: a free one. */
  port?: number;
}

export interface Gitea {
  /** http://127.0.0.1:port, no trailing slash: the web root and git over HTTP (url/owner/repo.git). */
  url: string;
  /** url + /api/v1 */
  apiUrl: string;
  port: number;
  pid: number;
  /** Where it keeps the bare repositories, as <owner>/<name>.git, both lowercased (Gitea's layout). */
  repositoriesDir: string;
  version: string;
  admin: GiteaUser;
  /** A new ordinary (not admin) user with a token. Names are Gitea's: letters, digits, - _ . */
  createUser: (username: string) => Promise<GiteaUser>;
  logs: () => string;
  /** SIGTERM, wait for it to exit, and remove its folder (repositories, database). */
  stop: () => Promise<void>;
}

/** The folder of the built Gitea if it is there (TEAL_GITEA_DIR, else build-gitea.sh's cache), without building it. */
export async function cachedGitea(): Promise<string | undefined> {
  const fromEnv = process.env.TEAL_GITEA_DIR;
  if (fromEnv) return fromEnv;
  try {
    const { stdout } = await run('bash', [join(here, 'build-gitea.sh'), '--cached']);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The folder of the built Gitea (bin/gitea, options/, templates/): TEAL_GITEA_DIR if set, else build-gitea.sh's cache. */
export async function ensureGitea(log: (line: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.TEAL_GITEA_DIR;
  if (fromEnv) return fromEnv;
  const child = execFile('bash', [join(here, 'build-gitea.sh')], { maxBuffer: 64 * 1024 * 1024 });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    for (const line of chunk.toString().split('\n')) if (line.startsWith('build-gitea:')) log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`build-gitea.sh failed with exit code ${code}:\n${err.slice(-4000)}`);
  return out.trim().split('\n').at(-1) as string;
}

interface Layout {
  giteaDir: string;
  binary: string;
  workdir: string;
  config: string;
  /** The admin's password: made per server, used once to make its token. */
  adminPassword: string;
}

const repositoriesDir = (workdir: string) => join(workdir, 'repositories');

/**
 * app.ini for one test server. Everything it writes stays under workdir; it
 * listens on 127.0.0.1 only and reaches nothing outside (OFFLINE_MODE, no
 * mailer, no update checker, no SSH, no LFS, no Actions).
 */
export function giteaConfig(layout: Pick<Layout, 'giteaDir' | 'workdir'>, port: number): string {
  const { giteaDir, workdir } = layout;
  const secret = () => randomBytes(32).toString('hex');
  const sections: Record<string, Record<string, string | number | boolean>> = {
    '': {
      APP_NAME: 'Teal test forge',
      RUN_MODE: 'prod',
      RUN_USER: userInfo().username,
      WORK_PATH: workdir,
      // CI runs as root; the server is a throwaway on loopback.
      I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: true,
    },
    server: {
      PROTOCOL: 'http',
      HTTP_ADDR: '127.0.0.1',
      HTTP_PORT: port,
      DOMAIN: '127.0.0.1',
      ROOT_URL: `http://127.0.0.1:${port}/`,
      // The git hooks of a push call Gitea's internal API here (that is how a push updates pull requests).
      LOCAL_ROOT_URL: `http://127.0.0.1:${port}/`,
      DISABLE_SSH: true,
      START_SSH_SERVER: false,
      OFFLINE_MODE: true,
      LFS_START_SERVER: false,
      // options/ and templates/ come from the build's folder: without the bindata tag Gitea reads them from disk.
      STATIC_ROOT_PATH: giteaDir,
      APP_DATA_PATH: join(workdir, 'data'),
    },
    database: { DB_TYPE: 'sqlite3', PATH: join(workdir, 'data', 'gitea.db') },
    repository: { ROOT: repositoriesDir(workdir), DEFAULT_BRANCH: 'main' },
    security: {
      INSTALL_LOCK: true,
      SECRET_KEY: secret(),
      INTERNAL_TOKEN: secret(),
      // Cheap hashing: passwords are throwaway and every Basic-auth call pays for it.
      PASSWORD_HASH_ALGO: 'pbkdf2_v1',
    },
    oauth2: { JWT_SECRET: randomBytes(32).toString('base64url') },
    service: {
      DISABLE_REGISTRATION: true,
      ENABLE_NOTIFY_MAIL: false,
      REGISTER_EMAIL_CONFIRM: false,
      NO_REPLY_ADDRESS: 'noreply.teal.invalid',
    },
    mailer: { ENABLED: false },
    // Deliveries to a test's listener or to Teal's API on loopback; never anywhere else.
    webhook: { ALLOWED_HOST_LIST: 'loopback', DELIVER_TIMEOUT: 10 },
    'cron.update_checker': { ENABLED: false },
    indexer: { ISSUE_INDEXER_TYPE: 'db', REPO_INDEXER_ENABLED: false },
    session: { PROVIDER: 'memory' },
    cache: { ADAPTER: 'memory' },
    actions: { ENABLED: false },
    packages: { ENABLED: false },
    log: { MODE: 'console', LEVEL: 'Warn', ROOT_PATH: join(workdir, 'log') },
  };
  return Object.entries(sections)
    .map(([name, keys]) => {
      const lines = Object.entries(keys).map(([key, value]) => `${key} = ${value}`);
      return [...(name ? [`[${name}]`] : []), ...lines].join('\n');
    })
    .join('\n\n');
}

/** Builds (or reuses) Gitea, starts it on a free loopback port with its admin, and waits until its API answers. */
export async function startGitea(options: GiteaOptions = {}): Promise<Gitea> {
  const log = options.log ?? (() => {});
  const giteaDir = await ensureGitea(log);
  const workdir = await mkdtemp(join(tmpdir(), 'teal-gitea-'));
  const layout: Layout = {
    giteaDir,
    binary: join(giteaDir, 'bin', 'gitea'),
    workdir,
    config: join(workdir, 'app.ini'),
    adminPassword: newPassword(),
  };
  try {
    return await startOnPort(layout, options.port);
  } catch (err) {
    await rm(workdir, { recursive: true, force: true });
    throw err;
  }
}

/** What Gitea logs when its port is taken. */
const ADDRESS_IN_USE = 'address already in use';

/** Another process may take the probed port before Gitea binds it: then it tries another, unless the port was given. */
async function startOnPort(layout: Layout, fixed: number | undefined): Promise<Gitea> {
  for (let attempt = 1; ; attempt++) {
    const port = fixed ?? (await freePort());
    await writeFile(layout.config, giteaConfig(layout, port));
    if (attempt === 1) await prepare(layout);
    const started = launch(layout);
    try {
      const version = await waitUntilReady(started, port);
      return await handle(layout, started, port, version);
    } catch (err) {
      await started.stop();
      if (fixed !== undefined || attempt >= 3 || !started.logs().includes(ADDRESS_IN_USE)) throw err;
    }
  }
}

/** The database schema and the admin, through Gitea's own CLI, before the server runs. */
async function prepare(layout: Layout): Promise<void> {
  await mkdir(join(layout.workdir, 'data'), { recursive: true });
  await gitea(layout, 'migrate');
  await gitea(
    layout,
    'admin',
    'user',
    'create',
    '--admin',
    '--username',
    GITEA_ADMIN,
    '--password',
    layout.adminPassword,
    '--email',
    `${GITEA_ADMIN}@teal.invalid`,
    '--must-change-password=false',
  );
}

/** Gitea's default policy wants 8 characters or more; mixed case and digits satisfy any it may set. */
function newPassword(): string {
  return `Teal-${randomBytes(12).toString('hex')}`;
}

async function gitea(layout: Layout, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(layout.binary, [...args, '--config', layout.config, '--work-path', layout.workdir], {
      env: giteaEnv(layout),
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`gitea ${args.slice(0, 3).join(' ')}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

/** No ambient git or Gitea configuration: HOME and the git config it writes stay in the workdir. */
function giteaEnv(layout: Layout): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: join(layout.workdir, 'home'),
    GITEA_WORK_DIR: layout.workdir,
    GIT_CONFIG_NOSYSTEM: '1',
    LC_ALL: 'C',
  };
}

function launch(layout: Layout): Supervised {
  const child = spawn(layout.binary, ['web', '--config', layout.config, '--work-path', layout.workdir], {
    env: giteaEnv(layout),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return supervise(child);
}

async function waitUntilReady(started: Supervised, port: number): Promise<string> {
  // waitFor retries on errors, so an exit is an answer, not a throw: it ends the wait at once.
  const outcome = await waitFor('Gitea to answer its API', async () => {
    if (started.child.exitCode !== null || started.child.signalCode !== null) return { exited: true, version: '' };
    // Gitea does not exit when it cannot bind its port: it logs why and waits, and something else answers there.
    if (started.logs().includes(ADDRESS_IN_USE)) return { exited: true, version: '' };
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/version`);
    if (!res.ok) return undefined;
    const { version } = (await res.json()) as { version: string };
    return { exited: false, version };
  });
  if (outcome.exited) {
    const why = started.logs().includes(ADDRESS_IN_USE)
      ? `127.0.0.1:${port} is in use`
      : `it exited (${started.child.exitCode})`;
    throw new Error(`Gitea did not start: ${why}\n${started.logs()}`);
  }
  return outcome.version;
}

async function handle(layout: Layout, started: Supervised, port: number, version: string): Promise<Gitea> {
  const url = `http://127.0.0.1:${port}`;
  const apiUrl = `${url}/api/v1`;
  const admin = await userWithToken(apiUrl, GITEA_ADMIN, layout.adminPassword);
  return {
    url,
    apiUrl,
    port,
    pid: started.child.pid as number,
    repositoriesDir: repositoriesDir(layout.workdir),
    version,
    admin,
    createUser: async (username) => {
      const password = newPassword();
      await adminCall(apiUrl, admin.token, 'POST', '/admin/users', {
        username,
        password,
        email: `${username}@teal.invalid`,
        must_change_password: false,
      });
      return userWithToken(apiUrl, username, password);
    },
    logs: started.logs,
    stop: async () => {
      await started.stop();
      await rm(layout.workdir, { recursive: true, force: true });
    },
  };
}

/** A token with every scope, made by the user itself (Gitea makes tokens only with the user's password). */
async function userWithToken(apiUrl: string, username: string, password: string): Promise<GiteaUser> {
  const res = await fetch(`${apiUrl}/users/${encodeURIComponent(username)}/tokens`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: `teal-test-${randomBytes(4).toString('hex')}`, scopes: ['all'] }),
  });
  if (res.status !== 201) throw new Error(`token for ${username}: ${res.status} ${await res.text()}`);
  const { sha1 } = (await res.json()) as { sha1: string };
  return { username, password, token: sha1 };
}

async function adminCall(apiUrl: string, token: string, method: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `token ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}
