// Proves the real-build harness's tools are what the build Job's images run and
// that its registry is real and under the test's control: the project's scripts
// install the Debian packages and build BuildKit and kaniko at the pinned
// versions; Debian's registry on loopback takes a push over its HTTP API, gives
// back the digest the push answered, and with auth refuses an anonymous push.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuildTools, ensureBuildTools, readVersionsEnv } from '../cluster/build-tools.ts';
import { basicAuth, manifestDigest, type Registry, type RegistryAuth, startRegistry } from '../cluster/registry.ts';

const run = promisify(execFile);
const versions = readVersionsEnv();
const AUTH: RegistryAuth = { user: 'pusher', password: 'pa55-word' };

let tools: BuildTools;
let registry: Registry;
let authRegistry: Registry;

// A cold toolchain build compiles BuildKit and kaniko from their Go modules:
// about 400 CPU-seconds and 2 GB of downloads, many minutes on a busy 2-core
// machine. Warm, the scripts return at once. The bound is against hangs only.
const COLD_BUILD_MS = 30 * 60_000;

beforeAll(async () => {
  tools = await ensureBuildTools((line) => console.error(line));
  registry = await startRegistry();
  authRegistry = await startRegistry({ auth: AUTH });
}, COLD_BUILD_MS);

afterAll(async () => {
  await registry?.stop();
  await authRegistry?.stop();
});

async function versionOf(binary: string, ...args: string[]): Promise<string> {
  const { stdout, stderr } = await run(join(tools.bin, binary), args);
  return `${stdout}${stderr}`;
}

describe('the build toolchain', () => {
  it('is BuildKit and kaniko at the versions of the build Job’s default images', async () => {
    const buildkit = versions.get('BUILDKIT_VERSION') as string;
    const kaniko = versions.get('KANIKO_VERSION') as string;
    expect(await versionOf('buildctl', '--version')).toContain(`github.com/moby/buildkit ${buildkit}`);
    expect(await versionOf('buildkitd', '--version')).toContain(`github.com/moby/buildkit ${buildkit}`);
    expect(await versionOf('executor', 'version')).toContain(kaniko);
  });

  it('has the rootless image’s entry script, executable', () => {
    expect(() => accessSync(join(tools.bin, 'buildctl-daemonless.sh'), constants.X_OK)).not.toThrow();
  });

  it('has the Debian tools the builds run with', () => {
    for (const path of ['/usr/bin/runc', '/usr/bin/rootlesskit', '/usr/bin/newuidmap', '/bin/busybox']) {
      expect(existsSync(path), path).toBe(true);
    }
  });
});

describe('the test registry', () => {
  it('listens on loopback and takes a pushed image; manifestDigest gives the digest the push answered', async () => {
    expect(registry.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const pushed = await pushImage(registry.address, 'team/app', 'v1');
    expect(pushed.status).toBe(201);
    expect(pushed.digest).toBe(pushed.localDigest);
    expect(await manifestDigest(registry.address, 'team/app', 'v1')).toBe(pushed.digest);
  });

  it('with auth, refuses a push without credentials or with a wrong password (401) and takes it with them', async () => {
    const anonymous = await startUpload(authRegistry.address, 'team/app');
    expect(anonymous.status).toBe(401);
    const wrong = await startUpload(authRegistry.address, 'team/app', { ...AUTH, password: 'wrong' });
    expect(wrong.status).toBe(401);
    const pushed = await pushImage(authRegistry.address, 'team/app', 'v1', AUTH);
    expect(pushed.status).toBe(201);
    expect(await manifestDigest(authRegistry.address, 'team/app', 'v1', AUTH)).toBe(pushed.digest);
    await expect(manifestDigest(authRegistry.address, 'team/app', 'v1')).rejects.toThrow(/401/);
  });

  it('removes its data when stopped', async () => {
    const own = await startRegistry();
    await pushImage(own.address, 'team/app', 'v1');
    expect(existsSync(own.dataDir)).toBe(true);
    await own.stop();
    expect(existsSync(own.dataDir)).toBe(false);
    await expect(fetch(`${own.url}/v2/`)).rejects.toThrow();
  });
});

interface Pushed {
  status: number;
  /** Docker-Content-Digest of the manifest PUT. */
  digest: string | null;
  /** sha256 of the manifest bytes sent. */
  localDigest: string;
}

/** A tiny image over the registry's HTTP API: one config blob and an OCI manifest (no layers). */
async function pushImage(address: string, repo: string, tag: string, auth?: RegistryAuth): Promise<Pushed> {
  const config = Buffer.from(
    JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }),
  );
  const configDigest = sha256(config);
  await uploadBlob(address, repo, config, configDigest, auth);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
      layers: [],
    }),
  );
  const res = await fetch(`http://${address}/v2/${repo}/manifests/${tag}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/vnd.oci.image.manifest.v1+json', ...authHeader(auth) },
    body: manifest,
  });
  await res.body?.cancel();
  return { status: res.status, digest: res.headers.get('docker-content-digest'), localDigest: sha256(manifest) };
}

function startUpload(address: string, repo: string, auth?: RegistryAuth): Promise<Response> {
  return fetch(`http://${address}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: authHeader(auth) });
}

/** A monolithic upload: POST opens it, one PUT with the digest sends the bytes and closes it. */
async function uploadBlob(address: string, repo: string, blob: Buffer, digest: string, auth?: RegistryAuth) {
  const opened = await startUpload(address, repo, auth);
  await opened.body?.cancel();
  const location = opened.headers.get('location');
  if (opened.status !== 202 || !location) throw new Error(`blob upload to ${repo}: ${opened.status}`);
  const url = new URL(location, `http://${address}`);
  url.searchParams.set('digest', digest);
  const put = await fetch(url, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream', ...authHeader(auth) },
    body: blob,
  });
  await put.body?.cancel();
  if (put.status !== 201) throw new Error(`blob PUT to ${repo}: ${put.status}`);
}

function authHeader(auth: RegistryAuth | undefined): Record<string, string> {
  return auth ? { Authorization: basicAuth(auth) } : {};
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}
