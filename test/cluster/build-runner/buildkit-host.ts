// The container runtime for the BuildKit rootless image: the container's own
// argv and env run on the host in a private mount namespace (enter-pod.sh), as
// the dedicated build user, with the pod's volumes bound where the pod mounts
// them, the toolchain where the image has it (/usr/local/bin) and the test's CA
// in the image's bundle. BuildKit then makes its own user namespace
// (rootlesskit) as it does in the image.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuildUser } from './build-user.ts';
import type { ContainerPlan } from './pod-plan.ts';

const ENTER_POD = fileURLToPath(new URL('./enter-pod.sh', import.meta.url));
const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface HostOptions {
  /** buildctl, buildkitd and buildctl-daemonless.sh (build-toolchain.sh). */
  toolsDir: string;
  /** PEM certificates the image's CA bundle trusts besides the host's (the test's git server). */
  extraCaPem?: string;
  /** Where each container gets its folder (log, volumes, /tmp). */
  workRoot: string;
}

export interface HostRun {
  exitCode: number;
  terminationLog: string;
  log: string;
  logFile: string;
  startedAt: Date;
  finishedAt: Date;
}

export interface Running {
  done: Promise<HostRun>;
  kill: () => void;
}

/** Starts the container; `done` settles when it has exited. */
export async function startBuildkitContainer(plan: ContainerPlan, options: HostOptions): Promise<Running> {
  const user = await ensureBuildUser();
  const { uid, gid } = await idsOf(user);
  await mkdir(options.workRoot, { recursive: true });
  const work = await mkdtemp(join(options.workRoot, `${plan.podName}-`));
  await chmod(work, 0o755);
  const mounts = await prepareVolumes(plan, work, uid, gid);
  mounts.push(`${options.toolsDir} /usr/local/bin ro`);
  if (options.extraCaPem) mounts.push(`${await caBundle(work, options.extraCaPem)} ${HOST_CA_BUNDLE} ro`);
  await writeFile(join(work, 'mounts'), `${mounts.join('\n')}\n`);
  await writeFile(join(work, 'termination-log'), '');
  await chown(join(work, 'termination-log'), uid, gid);
  await mkdir(join(work, 'tmp'));
  await chmod(join(work, 'tmp'), 0o1777);
  return spawnContainer(plan, work, user);
}

async function idsOf(user: string): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith(`${user}:`));
  const [, , uid, gid] = (line ?? '').split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Secret items as files under the volume's folder, emptyDirs as folders the user owns; "SOURCE DEST [ro]" lines. */
async function prepareVolumes(plan: ContainerPlan, work: string, uid: number, gid: number): Promise<string[]> {
  const lines: string[] = [];
  for (const [index, mount] of plan.mounts.entries()) {
    const source = join(work, `volume-${index}`);
    await mkdir(source);
    if (mount.kind === 'emptyDir') {
      await chown(source, uid, gid);
      await chmod(source, 0o777);
      lines.push(`${source} ${mount.mountPath}`);
      continue;
    }
    await chmod(source, 0o755);
    for (const file of mount.files) {
      const path = join(source, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.content, { mode: file.mode });
      await chmod(path, file.mode);
    }
    lines.push(`${source} ${mount.mountPath}${mount.readOnly ? ' ro' : ''}`);
  }
  return lines;
}

async function caBundle(work: string, extraCaPem: string): Promise<string> {
  const path = join(work, 'ca-certificates.crt');
  const host = await readFile(HOST_CA_BUNDLE, 'utf8').catch(() => '');
  await writeFile(path, `${host}\n${extraCaPem}\n`, { mode: 0o644 });
  return path;
}

function spawnContainer(plan: ContainerPlan, work: string, user: string): Running {
  const logFile = join(work, 'container.log');
  const logStream = createWriteStream(logFile);
  let log = '';
  const startedAt = new Date();
  const child = spawn('unshare', ['--mount', '--propagation', 'private', ENTER_POD, work, user, '--', ...plan.argv], {
    env: plan.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const collect = (chunk: Buffer) => {
    log += chunk.toString('utf8');
    logStream.write(chunk);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const done = new Promise<HostRun>((resolve) => {
    child.on('close', async (code, signal) => {
      logStream.end();
      const terminationLog = await readFile(join(work, 'termination-log'), 'utf8').catch(() => '');
      // A container killed by a signal exits 128+n, as a runtime reports it.
      const exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : 15);
      resolve({ exitCode, terminationLog, log, logFile, startedAt, finishedAt: new Date() });
    });
  });
  // The whole process group: buildkitd and rootlesskit run under the script.
  const kill = () => {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  return { done, kill };
}
