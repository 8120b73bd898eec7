// A real OCI registry for the real-build tests: Debian's docker-registry
// (distribution 2.8) on 127.0.0.1, with its own configuration and storage in a
// temporary folder that goes with it, and htpasswd auth when asked. BuildKit and
// kaniko push plain HTTP to 127.0.0.1 without any flag; any other name needs TLS.
// Free of vitest, like the rest of test/cluster.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/ports.ts';
import { waitFor } from '../support/wait.ts';
import { type Supervised, supervise } from './supervised.ts';

const run = promisify(execFile);

/** From Debian's docker-registry package (install-build-packages.sh). */
export const REGISTRY_BINARY = '/usr/bin/docker-registry';

export interface RegistryAuth {
  user: string;
  password: string;
}

export interface RegistryOptions {
  /** Basic auth from an htpasswd file: without these credentials, pulls and pushes get 401. */
  auth?: RegistryAuth;
  /**
   * HTTPS with this certificate, for this host name (which the clients must resolve to 127.0.0.1):
   * BuildKit speaks plain HTTP to a loopback address, so a registry with TLS is reached by name.
   */
  tls?: RegistryTls;
}

export interface RegistryTls {
  host: string;
  certPem: string;
  keyPem: string;
}

export interface Registry {
  /** `127.0.0.1:port` (with TLS, `host:port`), as an image reference names it. */
  address: string;
  /** Base URL of its HTTP API, http://127.0.0.1:port (with TLS, https://host:port) */
  url: string;
  /** With TLS: its certificate, the CA its clients trust. */
  caPem?: string;
  port: number;
  pid: number;
  auth?: RegistryAuth;
  /** Where it stores blobs and manifests. */
  dataDir: string;
  logs: () => string;
  /** SIGTERM, wait for it to exit, and remove its configuration and data. */
  stop: () => Promise<void>;
}

/** Starts a registry on a free loopback port and waits until /v2/ answers. */
export async function startRegistry(options: RegistryOptions = {}): Promise<Registry> {
  if (!existsSync(REGISTRY_BINARY)) {
    throw new Error(`${REGISTRY_BINARY} is missing: run test/cluster/install-build-packages.sh as root`);
  }
  const workdir = await mkdtemp(join(tmpdir(), 'teal-registry-'));
  try {
    const htpasswd = options.auth ? await writeHtpasswd(workdir, options.auth) : undefined;
    const tls = options.tls ? await writeTls(workdir, options.tls) : undefined;
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const configFile = join(workdir, 'config.yml');
      await writeFile(configFile, registryConfig(join(workdir, 'data'), port, htpasswd, tls));
      const started = launch(configFile);
      try {
        await waitUntilAnswering(started, port, options.tls);
        return handle(started, workdir, port, options);
      } catch (err) {
        await started.stop();
        // Another process may take the probed port before the registry binds it.
        if (attempt >= 3 || !started.logs().includes('address already in use')) throw err;
      }
    }
  } catch (err) {
    await rm(workdir, { recursive: true, force: true });
    throw err;
  }
}

/** The registry's configuration: filesystem storage, loopback only, and htpasswd auth when a file is given. */
export function registryConfig(
  dataDir: string,
  port: number,
  htpasswdFile?: string,
  tls?: { certificate: string; key: string },
): string {
  // JSON is YAML: no quoting rules to get wrong.
  return JSON.stringify(
    {
      version: 0.1,
      log: { level: 'info', fields: { service: 'registry' } },
      storage: { filesystem: { rootdirectory: dataDir }, delete: { enabled: true } },
      // Debian's default listens on every interface (:5000): never that here.
      // The upload state's signing secret; without one it warns and makes up its own anyway.
      http: { addr: `127.0.0.1:${port}`, secret: randomBytes(16).toString('hex'), ...(tls ? { tls } : {}) },
      ...(htpasswdFile ? { auth: { htpasswd: { realm: 'teal-test', path: htpasswdFile } } } : {}),
    },
    null,
    2,
  );
}

/** The registry takes bcrypt entries only; htpasswd -B makes them. */
async function writeHtpasswd(workdir: string, auth: RegistryAuth): Promise<string> {
  const { stdout } = await run('htpasswd', ['-Bbn', auth.user, auth.password]);
  const file = join(workdir, 'htpasswd');
  await writeFile(file, stdout);
  return file;
}

/** The certificate and key files the registry's http.tls names. */
async function writeTls(workdir: string, tls: RegistryTls): Promise<{ certificate: string; key: string }> {
  const certificate = join(workdir, 'tls.crt');
  const key = join(workdir, 'tls.key');
  await writeFile(certificate, tls.certPem);
  await writeFile(key, tls.keyPem, { mode: 0o600 });
  return { certificate, key };
}

function launch(configFile: string): Supervised {
  // REGISTRY_* variables override the config file: none of the caller's may leak in.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REGISTRY_')));
  const child = spawn(REGISTRY_BINARY, ['serve', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env });
  return supervise(child);
}

async function waitUntilAnswering(started: Supervised, port: number, tls: RegistryTls | undefined): Promise<void> {
  // Any HTTP answer will do: with auth, /v2/ answers 401 once it is up.
  // waitFor retries on errors, so an exit is an answer, not a throw: it ends the wait at once.
  const outcome = await waitFor('the registry to answer /v2/', async () => {
    if (started.child.exitCode !== null || started.child.signalCode !== null) return 'exited';
    const res = await registryGet(tls ? `${tls.host}:${port}` : `127.0.0.1:${port}`, '/v2/', {}, tls?.certPem);
    return res.status === 200 || res.status === 401 ? 'up' : undefined;
  });
  if (outcome === 'exited') throw new Error(`docker-registry exited (${started.child.exitCode}):\n${started.logs()}`);
}

function handle(started: Supervised, workdir: string, port: number, options: RegistryOptions): Registry {
  const { auth, tls } = options;
  return {
    address: `${tls?.host ?? '127.0.0.1'}:${port}`,
    url: tls ? `https://${tls.host}:${port}` : `http://127.0.0.1:${port}`,
    ...(tls ? { caPem: tls.certPem } : {}),
    port,
    pid: started.child.pid as number,
    ...(auth ? { auth } : {}),
    dataDir: join(workdir, 'data'),
    logs: started.logs,
    stop: async () => {
      await started.stop();
      await rm(workdir, { recursive: true, force: true });
    },
  };
}

/** Every manifest kind BuildKit or kaniko pushes: a registry only answers with a kind the client accepts. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** The Authorization header for a registry with htpasswd auth. */
export function basicAuth(auth: RegistryAuth): string {
  return `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}`;
}

/**
 * The digest the registry gives for repo:tag (its Docker-Content-Digest), the
 * one an image reference `repo@sha256:...` resolves to.
 */
export async function manifestDigest(
  address: string,
  repo: string,
  tag: string,
  auth?: RegistryAuth,
  caPem?: string,
): Promise<string> {
  const headers: Record<string, string> = { Accept: MANIFEST_ACCEPT };
  if (auth) headers.Authorization = basicAuth(auth);
  const res = await registryGet(address, `/v2/${repo}/manifests/${encodeURIComponent(tag)}`, headers, caPem);
  if (res.status !== 200) throw new Error(`GET ${repo}:${tag} from ${address}: ${res.status} ${res.body}`);
  const digest = res.headers['docker-content-digest'];
  if (typeof digest !== 'string')
    throw new Error(`GET ${repo}:${tag} from ${address}: no Docker-Content-Digest header`);
  return digest;
}

/**
 * A GET of the registry at host:port: plain HTTP to 127.0.0.1, or HTTPS trusting caPem, connecting
 * to 127.0.0.1 whatever the host (a test name this machine does not resolve) and checking the
 * certificate against the host.
 */
export function registryGet(
  address: string,
  path: string,
  headers: Record<string, string>,
  caPem?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const [host = '', port = ''] = address.split(':');
  const request = caPem === undefined ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        path,
        headers: { ...headers, Host: address },
        ...(caPem === undefined ? {} : { ca: caPem, servername: host }),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
