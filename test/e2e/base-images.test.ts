// The base images real builds start FROM, made locally and pushed to a real
// registry (test/cluster/base-images.ts): the registry's digest is the push's,
// the config describes the layer it sits beside, and each image, pulled back
// through the registry API and unpacked, runs in a runc container.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PushedBase, pushBusyboxBase, pushPythonBase } from '../cluster/base-images.ts';
import { MANIFEST_ACCEPT, manifestDigest, type Registry, startRegistry } from '../cluster/registry.ts';

const run = promisify(execFile);
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../..');
/**
 * A cold python base runs debootstrap: 1.5 to 3 minutes on this 2-core machine,
 * more on a slow mirror, then a 50 MB gzip. A bound against a hang only.
 */
const BOOTSTRAP_MS = 20 * 60_000;

let registry: Registry;
let work: string;

beforeAll(async () => {
  await run('bash', [join(repoRoot, 'test/cluster/install-build-packages.sh')]);
  registry = await startRegistry();
  work = await mkdtemp(join(tmpdir(), 'teal-base-images-test-'));
});

afterAll(async () => {
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

interface Pulled {
  config: { architecture: string; os: string; rootfs: { diff_ids: string[] }; config: { Env: string[] } };
  layerGz: Buffer;
}

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

async function getBlob(repo: string, digest: string): Promise<Buffer> {
  const res = await fetch(`${registry.url}/v2/${repo}/blobs/${digest}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** Manifest, config and the one layer, as a client pulling repo@digest gets them. */
async function pull(repo: string, digest: string): Promise<Pulled> {
  const res = await fetch(`${registry.url}/v2/${repo}/manifests/${digest}`, { headers: { Accept: MANIFEST_ACCEPT } });
  expect(res.status).toBe(200);
  const manifest = (await res.json()) as { config: { digest: string }; layers: { digest: string }[] };
  expect(manifest.layers).toHaveLength(1);
  const config = JSON.parse((await getBlob(repo, manifest.config.digest)).toString());
  const layerGz = await getBlob(repo, manifest.layers[0]?.digest ?? '');
  return { config, layerGz };
}

async function unpack(name: string, layerGz: Buffer): Promise<string> {
  const bundle = join(work, name);
  await mkdir(join(bundle, 'rootfs'), { recursive: true });
  const file = join(bundle, 'layer.tar.gz');
  await writeFile(file, layerGz);
  await run('tar', ['-xzf', file, '-C', join(bundle, 'rootfs'), '--numeric-owner']);
  await rm(file);
  return bundle;
}

/**
 * The capabilities a Dockerfile's RUN gets from BuildKit or Docker: groupadd
 * and useradd need CHOWN (/etc/gshadow is root:shadow), runc's spec has only three.
 */
const BUILD_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_RAW',
  'CAP_SYS_CHROOT',
  'CAP_MKNOD',
  'CAP_AUDIT_WRITE',
  'CAP_SETFCAP',
];

/** Runs args in the bundle's rootfs with runc: its default spec (own namespaces, no network), writable. */
async function runc(bundle: string, args: string[], env: string[], uid = 0): Promise<string> {
  const configFile = join(bundle, 'config.json');
  await rm(configFile, { force: true });
  await run('runc', ['spec', '--bundle', bundle, ...(process.getuid?.() === 0 ? [] : ['--rootless'])]);
  const spec = JSON.parse(await readFile(configFile, 'utf8'));
  const capabilities = uid === 0 ? { bounding: BUILD_CAPS, effective: BUILD_CAPS, permitted: BUILD_CAPS } : {};
  spec.process = { ...spec.process, terminal: false, args, env, cwd: '/', user: { uid, gid: uid }, capabilities };
  spec.root = { path: 'rootfs', readonly: false };
  await writeFile(configFile, JSON.stringify(spec));
  const state = join(work, 'runc-state');
  const id = `teal-base-${process.pid}-${Date.now()}`;
  const { stdout } = await run('runc', ['--root', state, 'run', '--bundle', bundle, id]);
  return stdout;
}

/** The image's layer as its config names it: the sha256 of the uncompressed tar. */
function expectDiffIdMatches(pulled: Pulled): void {
  expect(pulled.config.rootfs.diff_ids).toEqual([sha256(gunzipSync(pulled.layerGz, { maxOutputLength: 2 ** 31 }))]);
  expect(pulled.config).toMatchObject({ architecture: 'amd64', os: 'linux' });
}

describe('the busybox base', () => {
  let pushed: PushedBase;
  let pulled: Pulled;

  beforeAll(async () => {
    pushed = await pushBusyboxBase(registry);
    pulled = await pull('library/busybox', pushed.digest);
  });

  it('is at the digest the push answered, and its config names its layer', async () => {
    expect(pushed.ref).toBe('library/busybox:1.36');
    expect(await manifestDigest(registry.address, 'library/busybox', '1.36')).toBe(pushed.digest);
    expectDiffIdMatches(pulled);
  });

  it('is the same image when pushed again: the layer is reproducible', async () => {
    const again = await pushBusyboxBase(registry, 'library/busybox', 'again');
    expect(again.digest).toBe(pushed.digest);
  });

  it('runs busybox in a runc container from its own rootfs', async () => {
    const bundle = await unpack('busybox', pulled.layerGz);
    expect(await runc(bundle, ['/bin/busybox', 'echo', 'ok'], pulled.config.config.Env)).toBe('ok\n');
    // Applet links on PATH, the users a Dockerfile's USER names, a world-writable /tmp.
    const out = await runc(bundle, ['sh', '-c', 'id nobody && stat -c %a /tmp'], pulled.config.config.Env);
    expect(out).toMatch(/^uid=65534\(nobody\).*\n1777\n$/);
  });
});

describe('the python:3.12-slim stand-in', () => {
  let pushed: PushedBase;
  let pulled: Pulled;

  // Cold, this bootstraps Debian into the cache first (see BOOTSTRAP_MS); warm, seconds.
  beforeAll(async () => {
    pushed = await pushPythonBase(registry, undefined, undefined, (line) => console.error(line));
    pulled = await pull('library/python', pushed.digest);
  }, BOOTSTRAP_MS);

  it('is at the digest the push answered, and its config names its layer', async () => {
    expect(pushed.ref).toBe('library/python:3.12-slim');
    expect(await manifestDigest(registry.address, 'library/python', '3.12-slim')).toBe(pushed.digest);
    expectDiffIdMatches(pulled);
  });

  it("runs python3, and the weather-app Dockerfile's RUN and CMD, in a runc container", async () => {
    const bundle = await unpack('python', pulled.layerGz);
    const env = pulled.config.config.Env;
    expect(await runc(bundle, ['python3', '-c', 'print(1)'], env)).toBe('1\n');
    const dockerfile = await readFile(join(repoRoot, 'examples/weather-app/Dockerfile'), 'utf8');
    await runc(bundle, ['sh', '-c', runInstruction(dockerfile)], env);
    // USER 10001:10001 and CMD ["python", ...]: `python` as the user the RUN made.
    const out = await runc(
      bundle,
      ['python', '-c', 'import os, pwd; print(pwd.getpwuid(os.getuid()).pw_name)'],
      env,
      10001,
    );
    expect(out).toBe('app\n');
  });
});

/** The Dockerfile's one RUN instruction, its continuation lines joined, as sh takes it. */
function runInstruction(dockerfile: string): string {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  const line = joined.split('\n').find((l) => l.startsWith('RUN '));
  if (!line) throw new Error('no RUN in the weather-app Dockerfile');
  return line.slice('RUN '.length);
}
