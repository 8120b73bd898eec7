// The container runtime for the BuildKit rootless image: the container's own
// argv and env run on the host in a private mount namespace (enter-pod.sh), as
// the dedicated build user, with the pod's volumes bound where the pod mounts
// them, the toolchain where the image has it (/usr/local/bin) and the test's CA
// in the image's bundle. BuildKit then makes its own user namespace
// (rootlesskit) as it does in the image.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuildUser, idsOf } from './build-user.ts';
import type { ContainerPlan } from './pod-plan.ts';
import { BUILDKITD_CONFIG_PATH, buildkitdConfig } from './registry-mirror.ts';
import {
  type BindMount,
  caBundle,
  createWorkdir,
  HOST_CA_BUNDLE,
  type HostOptions,
  hostsFile,
  prepareVolumes,
  type Running,
  runLogged,
} from './workdir.ts';

const ENTER_POD = fileURLToPath(new URL('./enter-pod.sh', import.meta.url));

/** Starts the container; `done` settles when it has exited. */
export async function startBuildkitContainer(plan: ContainerPlan, options: HostOptions): Promise<Running> {
  const user = await ensureBuildUser();
  const owner = await idsOf(user);
  const work = await createWorkdir(options, plan, owner);
  const binds: BindMount[] = [
    ...(await prepareVolumes(plan, work, owner)),
    { source: options.toolsDir, destination: '/usr/local/bin', readOnly: true },
  ];
  if (options.extraCaPem) {
    binds.push({ source: await caBundle(work, options.extraCaPem), destination: HOST_CA_BUNDLE, readOnly: true });
  }
  if (options.hosts) {
    binds.push({ source: await hostsFile(work, options.hosts), destination: '/etc/hosts', readOnly: true });
  }
  if (options.dockerHubMirror) {
    const config = join(work, 'buildkitd.toml');
    await writeFile(config, buildkitdConfig(options.dockerHubMirror), { mode: 0o644 });
    binds.push({ source: config, destination: BUILDKITD_CONFIG_PATH, readOnly: true });
  }
  const lines = binds.map((b) => `${b.source} ${b.destination}${b.readOnly ? ' ro' : ''}`);
  await writeFile(join(work, 'mounts'), `${lines.join('\n')}\n`);
  await mkdir(join(work, 'tmp'));
  await chmod(join(work, 'tmp'), 0o1777);
  // A PID namespace of its own, as a container has: the container's command is its process 1,
  // and when that ends, or unshare is killed (--kill-child), the kernel kills every process in
  // it. Killing the process group alone left the RUN steps of a build stopped halfway running
  // forever: runc starts them in sessions of their own, which the group does not reach.
  const args = [
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    '--mount',
    '--propagation',
    'private',
    ENTER_POD,
    work,
    user,
    '--',
    ...plan.argv,
  ];
  return runLogged('unshare', args, plan.env, work, (pid) => killGroup(pid), options.onOutput);
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
