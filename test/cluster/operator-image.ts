// The operator image, built from the repository's Dockerfile as it is, by the
// project's own rootless BuildKit run the way the build runner runs a build pod
// (build-runner/buildkit-host.ts: buildctl-daemonless.sh as the build user, in
// a private mount namespace), with Docker Hub's node:24-slim served by a test
// registry as its mirror (the stand-in of base-images.ts). The Dockerfile's RUN
// steps reach Debian's mirror and the npm registry as this machine does.
// BuildKit keeps its cache in ~/.cache/teal/operator-image, so a build after a
// change to src/ runs `npm ci` again only when package-lock.json changed.
// Free of vitest, like the rest of test/cluster.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { baseImagesCacheDir, nodeBaseRecipe, pushNodeBase } from './base-images.ts';
import { ensureBuildUser, idsOf } from './build-runner/build-user.ts';
import { startBuildkitContainer } from './build-runner/buildkit-host.ts';
import { planContainer } from './build-runner/pod-plan.ts';
import { readVersionsEnv } from './build-tools.ts';
import type { PushTarget } from './image-push.ts';

const run = promisify(execFile);

/** Where the build's output goes: pushed as a reference (a registry on 127.0.0.1), or an OCI archive on the host. */
export type ImageOutput = { push: string } | { ociArchive: string };

export interface OperatorImageOptions {
  /** The repository's root: its Dockerfile and the build context. */
  repoRoot: string;
  /** The folder build-toolchain.sh prints. */
  toolsDir: string;
  /** The registry that stands in for Docker Hub: node:24-slim is pushed there first. */
  mirror: PushTarget & { address: string };
  output: ImageOutput;
  log?: (line: string) => void;
  /** BuildKit's progress as it comes; it is in the error when the build fails either way. */
  onOutput?: (chunk: Buffer) => void;
}

export interface BuiltImage {
  /** The image manifest's digest (BuildKit's containerimage.digest). */
  digest: string;
  /** BuildKit's progress, as the container printed it. */
  log: string;
}

// In the container's home (a tmpfs of its own): a bind elsewhere would make the folder on the host.
const CONTEXT = '/home/user/context';
const OUT = '/home/user/out';
const BUILDKIT_STATE = '/home/user/.local/share/buildkit';

/**
 * Pushes the node stand-in to the mirror, then builds the image; throws with BuildKit's
 * log when the build fails. One build at a time per machine: they share BuildKit's state,
 * which its daemon locks (a second would fail rather than wait), so they queue on a lock.
 */
export async function buildOperatorImage(options: OperatorImageOptions): Promise<BuiltImage> {
  const log = options.log ?? (() => {});
  const lockFile = join(operatorImageCacheDir(), '..', 'build.lock');
  await mkdir(join(lockFile, '..'), { recursive: true });
  const release = await lock(lockFile, () => log('operator-image: another build holds the lock; waiting for it'));
  try {
    return await buildLocked(options, log);
  } finally {
    release();
  }
}

/** flock(1) on the file: at once when it is free, else after onWait, waiting for it. */
async function lock(file: string, onWait: () => void): Promise<() => void> {
  const held = await hold(file, true);
  if (held) return held;
  onWait();
  const waited = await hold(file, false);
  if (!waited) throw new Error(`flock ${file} failed`);
  return waited;
}

/**
 * A flock process holding the lock (-o: flock itself holds it, not the command) for as
 * long as its command, cat, reads its stdin: ending stdin releases it, and so does this
 * process's death, which closes the pipe. Undefined when -n found the lock taken.
 */
function hold(file: string, nonBlocking: boolean): Promise<(() => void) | undefined> {
  const args = [...(nonBlocking ? ['-n'] : []), '-o', file, 'sh', '-c', 'echo locked; exec cat'];
  const child = spawn('flock', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve) => {
    child.stdout.once('data', () => resolve(() => child.stdin.end()));
    child.once('exit', () => resolve(undefined));
  });
}

async function buildLocked(options: OperatorImageOptions, log: (line: string) => void): Promise<BuiltImage> {
  const recipe = await nodeBaseRecipe(options.repoRoot, readVersionsEnv());
  await pushNodeBase(options.mirror, recipe, 'library/node', '24-slim', log);
  const user = await ensureBuildUser();
  const owner = await idsOf(user);
  const state = operatorImageCacheDir();
  await boundCache(state, log);
  await mkdir(state, { recursive: true, mode: 0o700 });
  await chown(state, owner.uid, owner.gid);
  const work = await mkdtemp(join(tmpdir(), 'teal-operator-image-'));
  try {
    const out = join(work, 'out');
    await mkdir(out);
    await chown(out, owner.uid, owner.gid);
    const pod = imageBuildPod(options.repoRoot, state, out, options.output);
    const plan = planContainer(pod, () => undefined);
    log(`operator-image: ${plan.argv.join(' ')}`);
    const running = await startBuildkitContainer(plan, {
      toolsDir: options.toolsDir,
      workRoot: join(work, 'containers'),
      dockerHubMirror: options.mirror.address,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    });
    const exited = await running.done;
    if (exited.exitCode !== 0) {
      throw new Error(`the operator image's build failed (exit ${exited.exitCode}):\n${exited.log.slice(-12_000)}`);
    }
    const metadata = JSON.parse(await readFile(join(out, 'metadata.json'), 'utf8')) as Record<string, unknown>;
    const digest = metadata['containerimage.digest'];
    if (typeof digest !== 'string')
      throw new Error(`BuildKit's metadata has no image digest: ${JSON.stringify(metadata)}`);
    if ('ociArchive' in options.output) await copyFile(join(out, 'image.oci.tar'), options.output.ociArchive);
    return { digest, log: exited.log };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Where BuildKit's cache is started afresh. One base image's layers, node_modules
 * and the bundle come to about 1.3 GiB, and every change to src/ or package-lock.json
 * adds its layers; BuildKit's default GC policy keeps a tenth of the disk and collects
 * only when less than a fifth of it is free (cmd/buildkitd/config/gcpolicy_unix.go).
 */
const CACHE_LIMIT_BYTES = 4 * 2 ** 30;

async function boundCache(dir: string, log: (line: string) => void): Promise<void> {
  if (!existsSync(dir)) return;
  const bytes = Number((await run('du', ['-sb', dir])).stdout.split('\t')[0]);
  if (bytes <= CACHE_LIMIT_BYTES) return;
  log(`operator-image: BuildKit's cache holds ${(bytes / 2 ** 30).toFixed(1)} GiB, over 4: starting it afresh`);
  await rm(dir, { recursive: true, force: true });
}

/** BuildKit's own state between builds (its layer cache), kept with the other tools' caches. */
export function operatorImageCacheDir(): string {
  return join(baseImagesCacheDir(), '..', 'operator-image', 'buildkit');
}

/**
 * The build as a pod the build runner plays: the BuildKit rootless image with the
 * Job's BUILDKITD_FLAGS, the checkout as the local context (read-only), BuildKit's
 * state and the output folder as host folders.
 */
export function imageBuildPod(repoRoot: string, state: string, out: string, output: ImageOutput): V1Pod {
  const to = 'push' in output ? `type=image,name=${output.push},push=true` : `type=oci,dest=${OUT}/image.oci.tar`;
  return {
    metadata: { name: 'teal-operator-image' },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'buildkit',
          image: DEFAULT_BUILD_IMAGES.buildkit,
          command: [
            'buildctl-daemonless.sh',
            'build',
            '--frontend=dockerfile.v0',
            `--local=context=${CONTEXT}`,
            `--local=dockerfile=${CONTEXT}`,
            `--output=${to}`,
            `--metadata-file=${OUT}/metadata.json`,
            '--progress=plain',
          ],
          env: [{ name: 'BUILDKITD_FLAGS', value: '--oci-worker-no-process-sandbox' }],
          volumeMounts: [
            { name: 'context', mountPath: CONTEXT, readOnly: true },
            { name: 'out', mountPath: OUT },
            { name: 'buildkitd', mountPath: BUILDKIT_STATE },
          ],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
      ],
      volumes: [
        { name: 'context', hostPath: { path: repoRoot, type: 'Directory' } },
        { name: 'out', hostPath: { path: out, type: 'Directory' } },
        { name: 'buildkitd', hostPath: { path: state, type: 'Directory' } },
      ],
    },
  };
}
