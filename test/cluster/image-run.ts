// Runs an image from a registry the way a container runtime would, with no
// Docker engine: its manifest (an index resolved to linux/amd64), config and
// layers pulled through the registry API, the layers applied in order into a
// rootfs (whiteouts honoured), and its entrypoint and command started by runc
// as the image's USER, in its WORKDIR, with its ENV. It shares the host's
// network, so a server in it answers on the host's loopback.
// Free of vitest, like the rest of test/cluster.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { authHeader, type PushTarget, sha256 } from './image-push.ts';
import { MANIFEST_ACCEPT } from './registry.ts';

const run = promisify(execFile);
const INDEX_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
];

/** The parts of an OCI image config a runtime acts on. */
export interface ImageRunConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
  ExposedPorts?: Record<string, object>;
}

export interface PulledImage {
  /** A runc bundle folder: rootfs/ holds the applied layers. */
  bundle: string;
  config: ImageRunConfig;
}

interface Manifest {
  mediaType?: string;
  config: { digest: string };
  layers: { digest: string; mediaType: string }[];
  manifests?: { digest: string; platform?: { os: string; architecture: string } }[];
}

/** Pulls repo@reference (a tag or a digest) into bundleDir/rootfs. */
export async function pullImage(registry: PushTarget, repo: string, reference: string, bundleDir: string) {
  const manifest = await resolveManifest(registry, repo, reference);
  const configBlob = await getBlob(registry, repo, manifest.config.digest);
  const config = (JSON.parse(configBlob.toString('utf8')) as { config?: ImageRunConfig }).config ?? {};
  const rootfs = join(bundleDir, 'rootfs');
  await mkdir(rootfs, { recursive: true });
  for (const layer of manifest.layers) {
    const file = join(bundleDir, 'layer.tar');
    await writeFile(file, await getBlob(registry, repo, layer.digest));
    await applyLayer(rootfs, file);
    await rm(file);
  }
  const pulled: PulledImage = { bundle: bundleDir, config };
  return pulled;
}

async function resolveManifest(registry: PushTarget, repo: string, reference: string): Promise<Manifest> {
  const manifest = await getManifest(registry, repo, reference);
  if (!manifest.manifests || !INDEX_TYPES.includes(manifest.mediaType ?? '')) return manifest;
  const entry = manifest.manifests.find((m) => m.platform?.os === 'linux' && m.platform.architecture === 'amd64');
  if (!entry) throw new Error(`${repo}:${reference}: no linux/amd64 image in its index`);
  return getManifest(registry, repo, entry.digest);
}

async function getManifest(registry: PushTarget, repo: string, reference: string): Promise<Manifest> {
  const res = await fetch(`${registry.url}/v2/${repo}/manifests/${reference}`, {
    headers: { ...authHeader(registry), Accept: MANIFEST_ACCEPT },
  });
  if (!res.ok) throw new Error(`GET manifest ${repo}:${reference}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Manifest;
}

/** A blob, checked against its digest. */
async function getBlob(registry: PushTarget, repo: string, digest: string): Promise<Buffer> {
  const res = await fetch(`${registry.url}/v2/${repo}/blobs/${digest}`, { headers: authHeader(registry) });
  if (!res.ok) throw new Error(`GET blob ${repo}@${digest}: ${res.status}`);
  const blob = Buffer.from(await res.arrayBuffer());
  if (sha256(blob) !== digest) throw new Error(`GET blob ${repo}@${digest}: the content has another digest`);
  return blob;
}

/**
 * One layer over the ones below it, as the OCI layer spec says: `.wh.NAME`
 * deletes NAME below, `.wh..wh..opq` empties its folder below; then the rest
 * is extracted with its owners (we are root). tar detects the compression.
 */
async function applyLayer(rootfs: string, file: string): Promise<void> {
  const { stdout } = await run('tar', ['-tf', file], { maxBuffer: 256 * 1024 * 1024 });
  for (const entry of stdout.split('\n')) {
    const path = entry.replace(/^\.\//, '').replace(/\/$/, '');
    const name = path.split('/').at(-1) ?? '';
    if (!name.startsWith('.wh.')) continue;
    const dir = path.slice(0, path.length - name.length);
    if (name === '.wh..wh..opq') {
      await run('find', [join(rootfs, dir), '-mindepth', '1', '-delete']).catch(() => {});
    } else {
      await rm(join(rootfs, dir, name.slice('.wh.'.length)), { recursive: true, force: true });
    }
  }
  await run('tar', ['-xf', file, '-C', rootfs, '--numeric-owner', '--same-permissions', '--exclude=.wh.*']);
}

export interface RunningImage {
  process: ChildProcess;
  /** stdout and stderr so far. */
  logs: () => string;
  /** SIGKILL the container, wait for runc to return, remove its state. */
  stop: () => Promise<void>;
}

/**
 * What a pod spec changes of the image's process, as a kubelet applies it: command
 * replaces the entrypoint (and drops the image's command), args replace the command,
 * runAsUser/runAsGroup the image's USER; mounts, a read-only root and no capabilities.
 */
export interface ContainerOptions {
  command?: string[];
  args?: string[];
  user?: { uid: number; gid: number };
  /** A host folder bound (a Secret's files, as a kubelet writes them), or a tmpfs (an emptyDir). */
  mounts?: ({ destination: string; source: string; readOnly: boolean } | { destination: string; tmpfs: true })[];
  readOnlyRootFilesystem?: boolean;
  /** capabilities: {drop: [ALL]}; runc's default set otherwise. */
  dropAllCapabilities?: boolean;
}

/** The process's argv under Kubernetes' rule for command and args. */
export function containerArgv(config: ImageRunConfig, options: Pick<ContainerOptions, 'command' | 'args'>): string[] {
  const entrypoint = options.command ?? config.Entrypoint ?? [];
  const cmd = options.args ?? (options.command ? [] : (config.Cmd ?? []));
  return [...entrypoint, ...cmd];
}

/**
 * Starts the image's entrypoint and command with runc: the image's USER
 * (numeric uid[:gid]; a name is not looked up), WORKDIR and ENV plus `env`,
 * the host's network, its own other namespaces and runc's default capabilities,
 * unless `options` (a pod spec's) say otherwise.
 */
export async function runImage(
  image: PulledImage,
  id: string,
  env: Record<string, string> = {},
  options: ContainerOptions = {},
) {
  const configFile = join(image.bundle, 'config.json');
  await rm(configFile, { force: true });
  await run('runc', ['spec', '--bundle', image.bundle]);
  const spec = JSON.parse(await readFile(configFile, 'utf8'));
  const args = containerArgv(image.config, options);
  if (args.length === 0) throw new Error('the image has neither an entrypoint nor a command');
  spec.process = {
    ...spec.process,
    terminal: false,
    args,
    env: [...(image.config.Env ?? []), ...Object.entries(env).map(([k, v]) => `${k}=${v}`)],
    cwd: image.config.WorkingDir || '/',
    user: options.user ?? userOf(image.config.User),
    ...(options.dropAllCapabilities
      ? { capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] } }
      : {}),
  };
  spec.root = { path: 'rootfs', readonly: options.readOnlyRootFilesystem ?? false };
  spec.linux.namespaces = spec.linux.namespaces.filter((n: { type: string }) => n.type !== 'network');
  for (const mount of options.mounts ?? []) {
    spec.mounts.push(
      'tmpfs' in mount
        ? { destination: mount.destination, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] }
        : {
            destination: mount.destination,
            type: 'bind',
            source: mount.source,
            options: ['rbind', mount.readOnly ? 'ro' : 'rw'],
          },
    );
  }
  await writeFile(configFile, JSON.stringify(spec));
  const child = spawn('runc', ['run', '--bundle', image.bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const running: RunningImage = {
    process: child,
    logs: () => output,
    stop: async () => {
      await run('runc', ['kill', id, 'KILL']).catch(() => {});
      await exited;
      await run('runc', ['delete', '--force', id]).catch(() => {});
    },
  };
  return running;
}

/** A numeric USER as runc's user; the image's default (root) when it names none. */
export function userOf(user: string | undefined): { uid: number; gid: number } {
  if (!user) return { uid: 0, gid: 0 };
  const [uid = '', gid = uid] = user.split(':');
  if (!/^\d+$/.test(uid) || !/^\d+$/.test(gid)) throw new Error(`USER ${user}: only numeric users are run here`);
  return { uid: Number(uid), gid: Number(gid) };
}
