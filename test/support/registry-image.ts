// What an image in the test registry holds, read back through the registry API:
// its config (labels, env) and the content of a file in its layers. The
// real-build tests check with it which commit a build really built.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { basicAuth, MANIFEST_ACCEPT, type RegistryAuth } from '../cluster/registry.ts';

const run = promisify(execFile);

interface Descriptor {
  mediaType: string;
  digest: string;
  platform?: { os?: string; architecture?: string };
}

interface Manifest {
  mediaType?: string;
  manifests?: Descriptor[];
  config?: Descriptor;
  layers?: Descriptor[];
}

export interface ImageConfig {
  config?: { Env?: string[]; Labels?: Record<string, string> };
}

export interface RegistryImage {
  config: ImageConfig;
  /** The content of a file as the image's filesystem has it (the topmost layer holding it), or undefined. */
  readFile(path: string): Promise<string | undefined>;
}

async function get(address: string, path: string, auth: RegistryAuth | undefined, accept?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (accept) headers.Accept = accept;
  if (auth) headers.Authorization = basicAuth(auth);
  const res = await fetch(`http://${address}/v2/${path}`, { headers });
  if (!res.ok) throw new Error(`GET ${path} from ${address}: ${res.status} ${await res.text()}`);
  return res;
}

/** The image manifest of repo:reference; for an index, its first image that is not an attestation. */
async function imageManifest(
  address: string,
  repo: string,
  reference: string,
  auth: RegistryAuth | undefined,
): Promise<Manifest> {
  const manifest = (await (
    await get(address, `${repo}/manifests/${reference}`, auth, MANIFEST_ACCEPT)
  ).json()) as Manifest;
  if (!manifest.manifests) return manifest;
  const image = manifest.manifests.find((m) => m.platform?.os !== 'unknown');
  if (!image) throw new Error(`${repo}:${reference}: an index without an image`);
  return imageManifest(address, repo, image.digest, auth);
}

/** Reads repo:reference from the registry at address (127.0.0.1:port). */
export async function readRegistryImage(
  address: string,
  repo: string,
  reference: string,
  auth?: RegistryAuth,
): Promise<RegistryImage> {
  const manifest = await imageManifest(address, repo, reference, auth);
  if (!manifest.config) throw new Error(`${repo}:${reference}: a manifest without a config`);
  const config = (await (await get(address, `${repo}/blobs/${manifest.config.digest}`, auth)).json()) as ImageConfig;
  const layers = manifest.layers ?? [];
  return {
    config,
    readFile: async (path) => {
      for (const layer of [...layers].reverse()) {
        const blob = Buffer.from(await (await get(address, `${repo}/blobs/${layer.digest}`, auth)).arrayBuffer());
        const content = await fileInLayer(blob, path.replace(/^\/+/, ''));
        if (content !== undefined) return content;
      }
      return undefined;
    },
  };
}

/** One file of a (gzip'd) tar layer, through the system's tar: undefined when the layer does not have it. */
async function fileInLayer(blob: Buffer, path: string): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-layer-'));
  try {
    const file = join(dir, 'layer.tar');
    await writeFile(file, blob);
    const { stdout: names } = await run('tar', ['-tf', file], { maxBuffer: 64 * 1024 * 1024 });
    // Layers name their entries with or without a leading ./
    const entry = names.split('\n').find((n) => n.replace(/^\.\//, '') === path);
    if (entry === undefined) return undefined;
    const { stdout } = await run('tar', ['-xOf', file, entry], { maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
