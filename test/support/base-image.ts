// A tiny busybox base image for real builds, made without Docker Hub: one layer
// with the static /bin/busybox (Debian's busybox-static), a link per applet and
// an /etc/passwd, pushed to a test registry through the registry API
// (FROM scratch in effect; the registry's own digest checks apply).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

const run = promisify(execFile);
const BUSYBOX = '/bin/busybox';
const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';

const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** Pushes the base as <registryUrl's host>/<repository>:<tag>; returns the manifest digest. */
export async function pushBusyboxBase(registryUrl: string, repository: string, tag: string): Promise<string> {
  const layer = await busyboxLayer();
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['sh'] },
      rootfs: { type: 'layers', diff_ids: [sha256(layer.tar)] },
    }),
  );
  const gz = gzipSync(layer.tar);
  await pushBlob(registryUrl, repository, config);
  await pushBlob(registryUrl, repository, gz);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_TYPE,
    config: {
      mediaType: 'application/vnd.docker.container.image.v1+json',
      size: config.length,
      digest: sha256(config),
    },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: gz.length, digest: sha256(gz) }],
  });
  const res = await fetch(`${registryUrl}/v2/${repository}/manifests/${tag}`, {
    method: 'PUT',
    headers: { 'content-type': MANIFEST_TYPE },
    body: manifest,
  });
  if (res.status !== 201) throw new Error(`manifest push: ${res.status} ${await res.text()}`);
  return sha256(manifest);
}

/** The layer as an uncompressed tar: bin/busybox, bin/<applet> links, etc/passwd and etc/group. */
async function busyboxLayer(): Promise<{ tar: Buffer }> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-busybox-'));
  try {
    const root = join(dir, 'rootfs');
    await mkdir(join(root, 'bin'), { recursive: true });
    await mkdir(join(root, 'etc'));
    await mkdir(join(root, 'tmp'), { mode: 0o1777 });
    await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
    const { stdout } = await run(BUSYBOX, ['--list']);
    for (const applet of stdout.split('\n').filter((a) => a !== '' && a !== 'busybox')) {
      await symlink('busybox', join(root, 'bin', applet));
    }
    await writeFile(
      join(root, 'etc', 'passwd'),
      'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
    );
    await writeFile(join(root, 'etc', 'group'), 'root:x:0:\nnobody:x:65534:\n');
    const tarFile = join(dir, 'layer.tar');
    // Fixed owner and times: the same base from every run.
    await run('tar', [
      '--create',
      '--file',
      tarFile,
      '--directory',
      root,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mtime=@0',
      '--sort=name',
      '.',
    ]);
    return { tar: await readFile(tarFile) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pushBlob(registryUrl: string, repository: string, blob: Buffer): Promise<void> {
  const start = await fetch(`${registryUrl}/v2/${repository}/blobs/uploads/`, { method: 'POST' });
  if (start.status !== 202) throw new Error(`blob upload: ${start.status} ${await start.text()}`);
  const location = new URL(start.headers.get('location') ?? '', registryUrl);
  location.searchParams.set('digest', sha256(blob));
  const put = await fetch(location, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: blob,
  });
  if (put.status !== 201) throw new Error(`blob push: ${put.status} ${await put.text()}`);
}
