// kubectl teal as a platform team ships it (issue #27 §2 "Standalone"): what
// scripts/standalone-cli.ts (`make cli`) makes — single executables for linux
// amd64 and arm64, their .tar.gz archives with SHA-256 files, and a krew
// manifest — installed by the real krew (built from Go modules) from the
// manifest and this machine's archive, then run by the real kubectl with a PATH
// of krew's bin folder and kubectl's only: no Node, no repository.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { ARCH } from '../support/cli.ts';
import { createNamespace, WAIT_MS } from '../support/kube.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARCHES = ['amd64', 'arm64'] as const;
/** Node's single-executable fuse, flipped to :1 in a binary that carries a blob. */
const FUSE_SET = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1';

interface KrewPlatform {
  selector: { matchLabels: { os: string; arch: string } };
  uri: string;
  sha256: string;
  bin: string;
  files: { from: string; to: string }[];
}

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

describe('kubectl teal as a single executable, archived and installed with krew', () => {
  let out: string;
  let krewRoot: string;
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;

  /** The real kubectl with the krew-installed plugin, and nothing else, on PATH. */
  const kubectl = async (args: string[]) => {
    const env = {
      PATH: [join(krewRoot, 'bin'), inject('binDir')].join(delimiter),
      HOME: krewRoot,
      KUBECONFIG: inject('kubeconfig'),
      NO_COLOR: '1',
    };
    return run(join(inject('binDir'), 'kubectl'), args, { env, cwd: krewRoot, timeout: WAIT_MS });
  };

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'teal-standalone-'));
    krewRoot = await mkdtemp(join(tmpdir(), 'teal-krew-'));
    await run(process.execPath, [join(ROOT, 'scripts/standalone-cli.ts'), '--outdir', out], {
      cwd: ROOT,
      timeout: 4 * WAIT_MS,
    });
    ({ name: ns, remove: removeNs } = await createNamespace('cli-standalone'));
  });

  afterAll(async () => {
    await removeNs?.();
    for (const dir of [out, krewRoot]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes an archive per platform whose checksum its .sha256 file and the krew manifest give', async () => {
    const manifest = parse(await readFile(join(out, 'plugins/teal.yaml'), 'utf8')) as {
      kind: string;
      metadata: { name: string };
      spec: { version: string; platforms: KrewPlatform[] };
    };
    expect(manifest.kind).toBe('Plugin');
    expect(manifest.metadata.name).toBe('teal');
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(manifest.spec.version).toBe(`v${pkg.version}`);
    for (const arch of ARCHES) {
      const archive = join(out, `kubectl-teal-linux-${arch}.tar.gz`);
      const sum = await sha256(archive);
      expect(await readFile(`${archive}.sha256`, 'utf8')).toBe(`${sum}  kubectl-teal-linux-${arch}.tar.gz\n`);
      const platform = manifest.spec.platforms.find((p) => p.selector.matchLabels.arch === arch);
      expect(platform).toMatchObject({ selector: { matchLabels: { os: 'linux' } }, sha256: sum, bin: 'kubectl-teal' });
      expect(platform?.uri.endsWith(`/kubectl-teal-linux-${arch}.tar.gz`)).toBe(true);
      const { stdout } = await run('tar', ['-tzf', archive]);
      expect(stdout.split('\n').filter(Boolean).sort()).toEqual(['LICENSES.txt', 'kubectl-teal']);
    }
  });

  it('makes the arm64 executable an aarch64 ELF with the plugin injected', async () => {
    const exe = await readFile(join(out, 'kubectl-teal-linux-arm64/kubectl-teal'));
    expect(exe.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    // e_machine, little-endian at offset 18: 0xB7 is AArch64.
    expect(exe.readUInt16LE(18)).toBe(0xb7);
    expect(exe.includes(FUSE_SET)).toBe(true);
    const licenses = await readFile(join(out, 'kubectl-teal-linux-arm64/LICENSES.txt'), 'utf8');
    expect(licenses).toMatch(/^== Node\.js \d+\.\d+\.\d+$/m);
    expect(licenses).toMatch(/^== @kubernetes\/client-node@/m);
  });

  it('is installed by krew from the manifest and archive, and runs as `kubectl teal` with no Node on PATH', async () => {
    const krew = (
      await run('bash', [join(ROOT, 'test/cluster/build-krew.sh')], { timeout: 4 * WAIT_MS })
    ).stdout.trim();
    await run(
      krew,
      [
        'install',
        `--manifest=${join(out, 'plugins/teal.yaml')}`,
        `--archive=${join(out, `kubectl-teal-linux-${ARCH}.tar.gz`)}`,
      ],
      { env: { KREW_ROOT: krewRoot, HOME: krewRoot, PATH: '' }, timeout: WAIT_MS },
    );
    for (const dir of [join(krewRoot, 'bin'), inject('binDir')]) expect(existsSync(join(dir, 'node'))).toBe(false);

    const version = await kubectl(['teal', 'version']);
    expect(version.stdout).toMatch(/^kubectl-teal v\d+\.\d+\.\d+ \(node v24\./);

    await createApp(ns, e2eApp('standalone'));
    const got = await kubectl(['teal', 'get', 'standalone', '-n', ns, '-o', 'json']);
    expect((JSON.parse(got.stdout) as { name?: string; namespace?: string }).name).toBe('standalone');
  });

  it('answers kubectl completion through a link named kubectl_complete-teal, as docs/cli.md says to make', async () => {
    await symlink(join(krewRoot, 'bin/kubectl-teal'), join(krewRoot, 'bin/kubectl_complete-teal'));
    const { stdout } = await kubectl(['__complete', 'teal', 'get', '-n', ns, 'stand']);
    expect(stdout.split('\n')[0]).toBe('standalone');
  });
});
