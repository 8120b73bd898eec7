// Pushes a one-layer image to a registry from a root filesystem on disk, with no
// build engine: the layer is a reproducible gzip'd tar, the config and manifest
// are OCI JSON, and the upload is the registry's own HTTP API (blob upload, then
// manifest). The base images of real builds are made this way, since this
// machine has no Docker Hub and no Docker engine.
// Free of vitest, like the rest of test/cluster.
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { basicAuth, type RegistryAuth } from './registry.ts';

const MANIFEST_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const CONFIG_TYPE = 'application/vnd.oci.image.config.v1+json';
const LAYER_TYPE = 'application/vnd.oci.image.layer.v1.tar+gzip';

/** Where to push: a Registry from startRegistry fits. */
export interface PushTarget {
  /** Base URL of the registry's HTTP API, http://127.0.0.1:port */
  url: string;
  auth?: RegistryAuth;
}

/** A gzip'd tar layer and the sha256 of its uncompressed tar (the config's diff_id). */
export interface Layer {
  gz: Buffer;
  diffId: string;
}

export interface ImageConfig {
  /** PATH and the like, as NAME=value. */
  env: string[];
  user?: string;
  cmd?: string[];
}

export const sha256 = (data: Buffer | string): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

export interface LayerOptions {
  /** Paths (tar --exclude patterns, relative to the root as ./x) left out of the layer. */
  exclude?: string[];
  /**
   * Keep the files' numeric owners (a debootstrap tree has root:shadow and the like);
   * by default every entry is owned by 0:0.
   */
  keepOwners?: boolean;
}

/**
 * The directory as a layer: sorted entries, mtimes at 0, modes and symlinks kept,
 * gzip without a name or time in its header, so the same tree gives the same digest.
 */
export async function layerFromDir(root: string, options: LayerOptions = {}): Promise<Layer> {
  const owners = options.keepOwners ? ['--numeric-owner'] : ['--owner=0', '--group=0', '--numeric-owner'];
  const excludes = (options.exclude ?? []).map((pattern) => `--exclude=${pattern}`);
  const args = ['--create', '--directory', root, '--sort=name', '--mtime=@0', ...owners, ...excludes, '.'];
  // Only the gzip'd bytes are kept; the diff_id comes from gunzipping them once.
  const gz = await pipeline(['tar', ...args], ['gzip', '-n']);
  return { gz, diffId: diffIdOf(gz) };
}

/** A layer already on disk as .tar.gz (a cached one). */
export async function layerFromFile(file: string): Promise<Layer> {
  const gz = await readFile(file);
  return { gz, diffId: diffIdOf(gz) };
}

export function diffIdOf(gz: Buffer): string {
  return sha256(gunzipSync(gz, { maxOutputLength: 2 ** 31 }));
}

/** Runs `a | b` and returns b's stdout; either failing fails the whole. */
export function pipeline(a: string[], b: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const [aCmd = '', ...aArgs] = a;
    const [bCmd = '', ...bArgs] = b;
    const first = spawn(aCmd, aArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    const second = spawn(bCmd, bArgs, { stdio: ['pipe', 'pipe', 'pipe'] });
    first.stdout.pipe(second.stdin);
    const chunks: Buffer[] = [];
    let errors = '';
    second.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    first.stderr.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    second.stderr.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    const exit = (child: ChildProcess) =>
      new Promise<number | null>((done) => {
        child.once('error', (err) => {
          errors += `${err.message}\n`;
          done(-1);
        });
        child.once('close', done);
      });
    Promise.all([exit(first), exit(second)]).then(([codeA, codeB]) => {
      if (codeA === 0 && codeB === 0) resolve(Buffer.concat(chunks));
      else reject(new Error(`${a[0]} | ${b[0]} failed (${codeA}, ${codeB}):\n${errors.slice(-4000)}`));
    }, reject);
  });
}

/** The OCI image config of a one-layer linux/amd64 image. */
export function imageConfig(layer: Layer, config: ImageConfig): Buffer {
  return Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {
        Env: config.env,
        ...(config.user ? { User: config.user } : {}),
        ...(config.cmd ? { Cmd: config.cmd } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [layer.diffId] },
    }),
  );
}

export function imageManifest(config: Buffer, layer: Layer): string {
  return JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_TYPE,
    config: { mediaType: CONFIG_TYPE, size: config.length, digest: sha256(config) },
    layers: [{ mediaType: LAYER_TYPE, size: layer.gz.length, digest: sha256(layer.gz) }],
  });
}

/** Pushes repo:tag (layer, config, manifest); returns the manifest digest the registry answered. */
export async function pushImage(
  target: PushTarget,
  repo: string,
  tag: string,
  layer: Layer,
  config: ImageConfig,
): Promise<string> {
  const configBlob = imageConfig(layer, config);
  await pushBlob(target, repo, layer.gz);
  await pushBlob(target, repo, configBlob);
  const manifest = imageManifest(configBlob, layer);
  const res = await fetch(`${target.url}/v2/${repo}/manifests/${encodeURIComponent(tag)}`, {
    method: 'PUT',
    headers: { ...authHeader(target), 'content-type': MANIFEST_TYPE },
    body: manifest,
  });
  if (res.status !== 201) throw new Error(`PUT manifest ${repo}:${tag}: ${res.status} ${await res.text()}`);
  const digest = res.headers.get('docker-content-digest');
  // The registry digests the bytes it stored: any other answer means it rewrote them.
  if (digest !== sha256(manifest))
    throw new Error(`PUT manifest ${repo}:${tag}: digest ${digest}, sent ${sha256(manifest)}`);
  return digest;
}

/** A monolithic upload (POST, then PUT with the digest); a blob already there is not sent again. */
export async function pushBlob(target: PushTarget, repo: string, blob: Buffer): Promise<void> {
  const digest = sha256(blob);
  const head = await fetch(`${target.url}/v2/${repo}/blobs/${digest}`, { method: 'HEAD', headers: authHeader(target) });
  if (head.ok) return;
  const start = await fetch(`${target.url}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: authHeader(target) });
  if (start.status !== 202) throw new Error(`POST blob upload to ${repo}: ${start.status} ${await start.text()}`);
  const location = new URL(start.headers.get('location') ?? '', target.url);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, {
    method: 'PUT',
    headers: { ...authHeader(target), 'content-type': 'application/octet-stream' },
    body: blob,
  });
  if (put.status !== 201) throw new Error(`PUT blob ${digest} to ${repo}: ${put.status} ${await put.text()}`);
}

export function authHeader(target: PushTarget): Record<string, string> {
  return target.auth ? { Authorization: basicAuth(target.auth) } : {};
}
