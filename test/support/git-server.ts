// Real git repositories for tests, and an HTTPS smart-HTTP server in front of
// them (git http-backend as CGI, a throwaway self-signed certificate, Basic or
// Bearer auth). Everything binds 127.0.0.1.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

// Deterministic identity and no ambient config, so commits work on any machine.
export const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Teal Test',
  GIT_AUTHOR_EMAIL: 'test@teal.invalid',
  GIT_COMMITTER_NAME: 'Teal Test',
  GIT_COMMITTER_EMAIL: 'test@teal.invalid',
  LC_ALL: 'C',
};

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: GIT_ENV });
  return stdout.trim();
}

export interface TestRepo {
  dir: string;
  /** Writes files (path -> content), commits them on `branch` (default: the current one), returns the SHA. */
  commit(message: string, files?: Record<string, string>, options?: { branch?: string }): Promise<string>;
  /** Creates a branch (slashes allowed) at `from` (default HEAD) without switching to it. */
  branch(name: string, from?: string): Promise<string>;
  /** A lightweight tag, or an annotated one when a message is given; returns the tagged commit. */
  tag(name: string, options?: { message?: string; target?: string }): Promise<string>;
  /** The object a revision names (`git rev-parse`). */
  revParse(revision: string): Promise<string>;
}

/** git init in dir (created if missing) on branch main, with one initial commit. */
export async function createRepo(dir: string): Promise<TestRepo> {
  await mkdir(dir, { recursive: true });
  await git(dir, 'init', '--quiet', '--initial-branch=main');
  await git(dir, 'config', 'commit.gpgsign', 'false');

  const repo: TestRepo = {
    dir,
    async commit(message, files = {}, options = {}) {
      if (options.branch !== undefined) {
        const exists = await git(dir, 'rev-parse', '--verify', '--quiet', `refs/heads/${options.branch}`).then(
          () => true,
          () => false,
        );
        await git(dir, 'checkout', '--quiet', ...(exists ? [] : ['-b']), options.branch);
      }
      for (const [path, content] of Object.entries(files)) {
        const full = join(dir, path);
        await mkdir(dirname(full), { recursive: true });
        await writeFile(full, content);
      }
      await git(dir, 'add', '--all');
      await git(dir, 'commit', '--quiet', '--allow-empty', '-m', message);
      return git(dir, 'rev-parse', 'HEAD');
    },
    async branch(name, from = 'HEAD') {
      await git(dir, 'branch', name, from);
      return git(dir, 'rev-parse', `refs/heads/${name}`);
    },
    async tag(name, options = {}) {
      const target = options.target ?? 'HEAD';
      if (options.message === undefined) await git(dir, 'tag', name, target);
      else await git(dir, 'tag', '--annotate', '--message', options.message, name, target);
      return git(dir, 'rev-parse', `refs/tags/${name}^{commit}`);
    },
    revParse: (revision) => git(dir, 'rev-parse', revision),
  };
  await repo.commit('initial commit', { 'README.md': '# test\n' });
  return repo;
}

export interface GitHttpsServerOptions {
  /** Directory holding the repositories; url(name) serves root/name. */
  root: string;
  username?: string;
  password?: string;
  /** Also accept `Authorization: Bearer <token>`. */
  bearerToken?: string;
}

export interface GitHttpsServer {
  url(repoName: string): string;
  /** The self-signed certificate, as a ca.crt for clients. */
  caPem: string;
  port: number;
  /** Requests served so far, and how many were refused for auth. */
  readonly requests: number;
  /** GET info/refs requests: one per ls-remote or fetch. */
  readonly lsRemotes: number;
  readonly unauthorized: number;
  /** Authorization header values seen (to check what a client sent). */
  readonly authorizations: readonly string[];
  stop(): Promise<void>;
}

/**
 * A throwaway certificate for 127.0.0.1 (PEM key and cert), for the test servers; and for a host
 * name besides, when one is given (a registry a build must reach by name).
 */
export async function selfSignedCertificate(dnsName?: string): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-cert-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${dnsName ?? '127.0.0.1'}`,
      '-addext',
      `subjectAltName=${dnsName ? `DNS:${dnsName},` : ''}IP:127.0.0.1`,
      '-keyout',
      key,
      '-out',
      cert,
    ]);
    return { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function authorized(req: IncomingMessage, options: GitHttpsServerOptions): boolean {
  const { username, password, bearerToken } = options;
  if (username === undefined && password === undefined && bearerToken === undefined) return true;
  const header = req.headers.authorization ?? '';
  const basic = /^Basic\s+(\S+)$/i.exec(header);
  if (basic?.[1] && username !== undefined && password !== undefined) {
    if (Buffer.from(basic[1], 'base64').toString('utf8') === `${username}:${password}`) return true;
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  return bearer?.[1] !== undefined && bearerToken !== undefined && bearer[1] === bearerToken;
}

/** Runs git-http-backend as a CGI script for one request. */
function serveCgi(req: IncomingMessage, res: ServerResponse, root: string): void {
  const url = new URL(req.url ?? '/', 'https://127.0.0.1');
  const pathInfo = decodeURIComponent(url.pathname.replace(/^\/git/, ''));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    PATH_INFO: pathInfo,
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REQUEST_METHOD: req.method ?? 'GET',
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '',
    ...(req.headers['content-length'] ? { CONTENT_LENGTH: req.headers['content-length'] } : {}),
    ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
    // Protocol v2 is negotiated through this header.
    ...(typeof req.headers['git-protocol'] === 'string' ? { HTTP_GIT_PROTOCOL: req.headers['git-protocol'] } : {}),
  };
  const child = spawn(HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  req.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    const endLf = head.indexOf('\n\n');
    const cut = end >= 0 ? { at: end, len: 4 } : endLf >= 0 ? { at: endLf, len: 2 } : undefined;
    if (!cut) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, cut.at).toString('latin1').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
      else res.setHeader(name, value);
    }
    res.statusCode = status;
    res.write(head.subarray(cut.at + cut.len));
  });
  child.on('close', () => {
    if (!headersDone) res.statusCode = 502;
    res.end();
  });
  child.on('error', () => {
    res.statusCode = 500;
    res.end();
  });
}

/** An HTTPS git server on 127.0.0.1 and a random port, for repositories under root. */
export async function startGitHttpsServer(options: GitHttpsServerOptions): Promise<GitHttpsServer> {
  const { key, cert } = await selfSignedCertificate();
  let requests = 0;
  let lsRemotes = 0;
  let unauthorized = 0;
  const authorizations: string[] = [];
  const server: Server = createServer({ key, cert }, (req, res) => {
    requests++;
    // Every fetch or ls-remote over smart HTTP starts with GET info/refs (protocol v2 then POSTs ls-refs).
    if (req.method === 'GET' && req.url?.includes('/info/refs')) lsRemotes++;
    if (req.headers.authorization) authorizations.push(req.headers.authorization);
    if (!authorized(req, options)) {
      unauthorized++;
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    serveCgi(req, res, options.root);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: (repoName) => `https://127.0.0.1:${port}/git/${repoName}`,
    caPem: cert,
    port,
    get requests() {
      return requests;
    },
    get lsRemotes() {
      return lsRemotes;
    },
    get unauthorized() {
      return unauthorized;
    },
    authorizations,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A 127.0.0.1 port with nothing listening (bound then released). */
export async function closedPort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
