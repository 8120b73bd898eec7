// The host side of a build container: its folder (under the runner's work
// root) holding the pod's volumes as a kubelet would lay them out, the
// termination log, the container's log, and the image's CA bundle.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ContainerPlan } from './pod-plan.ts';

export const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface HostOptions {
  /** buildctl, buildkitd, buildctl-daemonless.sh and executor (build-toolchain.sh). */
  toolsDir: string;
  /** PEM certificates the image's CA bundle trusts besides the host's (the test's git server). */
  extraCaPem?: string;
  /** Where each container gets its folder (log, volumes, /tmp). */
  workRoot: string;
  /** host:port of a registry standing in for Docker Hub (registry-mirror.ts); none by default. */
  dockerHubMirror?: string;
  /** Names the container resolves to these addresses, besides localhost (its /etc/hosts). */
  hosts?: Record<string, string> | undefined;
  /** The container's output as it comes (make image prints BuildKit's progress). */
  onOutput?: (chunk: Buffer) => void;
}

export interface BindMount {
  source: string;
  destination: string;
  readOnly: boolean;
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
  /** The log in the CRI format a kubelet keeps (what KWOK serves to `kubectl logs`), written as it comes. */
  criLogFile: string;
}

/** A fresh folder for the container, with an empty termination log the owner may write. */
export async function createWorkdir(options: HostOptions, plan: ContainerPlan, owner?: { uid: number; gid: number }) {
  await mkdir(options.workRoot, { recursive: true });
  const work = await mkdtemp(join(options.workRoot, `${plan.podName}-`));
  await chmod(work, 0o755);
  await writeFile(join(work, 'termination-log'), '');
  if (owner) await chown(join(work, 'termination-log'), owner.uid, owner.gid);
  return work;
}

/**
 * Secret items as files (their modes), emptyDirs as world-writable folders owned by the
 * container's user, hostPaths as they are.
 */
export async function prepareVolumes(
  plan: ContainerPlan,
  work: string,
  owner?: { uid: number; gid: number },
): Promise<BindMount[]> {
  const binds: BindMount[] = [];
  for (const [index, mount] of plan.mounts.entries()) {
    if (mount.kind === 'hostPath') {
      binds.push({ source: mount.path, destination: mount.mountPath, readOnly: mount.readOnly });
      continue;
    }
    const source = join(work, `volume-${index}`);
    await mkdir(source);
    if (mount.kind === 'emptyDir') {
      if (owner) await chown(source, owner.uid, owner.gid);
      await chmod(source, 0o777);
      binds.push({ source, destination: mount.mountPath, readOnly: false });
      continue;
    }
    await chmod(source, 0o755);
    for (const file of mount.files) {
      const path = join(source, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, file.content);
      await chmod(path, file.mode);
    }
    binds.push({ source, destination: mount.mountPath, readOnly: mount.readOnly });
  }
  return binds;
}

/** The container's /etc/hosts: localhost, and the names it is to resolve. */
export async function hostsFile(work: string, hosts: Record<string, string> | undefined): Promise<string> {
  const path = join(work, 'hosts');
  const lines = ['127.0.0.1 localhost', '::1 localhost', ...Object.entries(hosts ?? {}).map(([n, a]) => `${a} ${n}`)];
  await writeFile(path, `${lines.join('\n')}\n`, { mode: 0o644 });
  return path;
}

/** The host's CA bundle plus the extra certificates, as the image's bundle. */
export async function caBundle(work: string, extraCaPem: string | undefined): Promise<string> {
  const path = join(work, 'ca-certificates.crt');
  const host = await readFile(HOST_CA_BUNDLE, 'utf8').catch(() => '');
  await writeFile(path, `${host}\n${extraCaPem ?? ''}\n`, { mode: 0o644 });
  return path;
}

/** Runs the container's process, its stdout and stderr into one log (memory and container.log). */
export function runLogged(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  work: string,
  kill: (pid: number) => void,
  onOutput: (chunk: Buffer) => void = () => {},
): Running {
  const logFile = join(work, 'container.log');
  const criLogFile = join(work, 'container.cri.log');
  const logStream = createWriteStream(logFile);
  const cri = criLogWriter(criLogFile);
  let log = '';
  const startedAt = new Date();
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    log += chunk.toString('utf8');
    onOutput(chunk);
    logStream.write(chunk);
    cri.write(stream, chunk.toString('utf8'));
  };
  child.stdout.on('data', collect('stdout'));
  child.stderr.on('data', collect('stderr'));
  const done = new Promise<HostRun>((resolve) => {
    child.on('close', async (code, signal) => {
      logStream.end();
      cri.end();
      const terminationLog = await readFile(join(work, 'termination-log'), 'utf8').catch(() => '');
      // A container killed by a signal exits 128+n, as a runtime reports it.
      const exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : 15);
      resolve({ exitCode, terminationLog, log, logFile, startedAt, finishedAt: new Date() });
    });
  });
  return {
    done,
    criLogFile,
    kill: () => {
      if (child.pid !== undefined && child.exitCode === null) kill(child.pid);
    },
  };
}

/**
 * The CRI log format: "<RFC 3339 time> <stream> <F|P> <text>" per line, P for
 * a partial line a later entry continues; each stream is split on its own.
 */
function criLogWriter(path: string) {
  const out = createWriteStream(path);
  const pending = { stdout: '', stderr: '' };
  const entry = (stream: 'stdout' | 'stderr', tag: 'F' | 'P', text: string) =>
    out.write(`${new Date().toISOString()} ${stream} ${tag} ${text}\n`);
  return {
    write(stream: 'stdout' | 'stderr', text: string) {
      const lines = (pending[stream] + text).split('\n');
      pending[stream] = lines.pop() ?? '';
      for (const line of lines) entry(stream, 'F', line);
    },
    end() {
      for (const stream of ['stdout', 'stderr'] as const)
        if (pending[stream] !== '') entry(stream, 'F', pending[stream]);
      out.end();
    },
  };
}
