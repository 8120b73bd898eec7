// The container runtime for kaniko's executor image: kaniko unpacks the base
// image over its own root, so it only ever runs inside a runc container whose
// rootfs is a throwaway folder shaped like the image (/kaniko/executor, the CA
// bundle in /kaniko/ssl/certs, /workspace), with the pod's volumes and
// /dev/termination-log bound in. It shares the host's network, as a pod's
// loopback registry is the host's in this harness; every other namespace is
// its own, with the capabilities a container runtime grants by default.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ContainerPlan } from './pod-plan.ts';
import { kanikoMirrorEnv } from './registry-mirror.ts';
import {
  caBundle,
  createWorkdir,
  type HostOptions,
  hostsFile,
  prepareVolumes,
  type Running,
  runLogged,
} from './workdir.ts';

const run = promisify(execFile);

// containerd's and Docker's default set, which a pod without a securityContext gets.
const DEFAULT_CAPABILITIES = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

interface RuncSpec {
  process: Record<string, unknown>;
  root: { path: string; readonly: boolean };
  hostname: string;
  mounts: { destination: string; type: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string }[] };
}

/** Starts the container; `done` settles when it has exited and runc has removed it. */
export async function startKanikoContainer(plan: ContainerPlan, options: HostOptions): Promise<Running> {
  const work = await createWorkdir(options, plan);
  const bundle = join(work, 'bundle');
  const rootfs = join(bundle, 'rootfs');
  await imageRootfs(rootfs, options);
  const binds = [
    { source: join(options.toolsDir, 'executor'), destination: '/kaniko/executor', readOnly: true },
    { source: join(work, 'termination-log'), destination: '/dev/termination-log', readOnly: false },
    ...(await prepareVolumes(plan, work)),
  ];
  await mkdir(bundle, { recursive: true });
  await run('runc', ['spec', '--bundle', bundle]);
  const spec = JSON.parse(await readFile(join(bundle, 'config.json'), 'utf8')) as RuncSpec;
  spec.process = {
    ...spec.process,
    terminal: false,
    args: plan.argv,
    // The mirror comes from the runner, not the pod: test setup, the Job stays as users get it.
    env: Object.entries({ ...plan.env, ...kanikoMirrorEnv(options.dockerHubMirror) }).map(([k, v]) => `${k}=${v}`),
    cwd: plan.config.workingDir,
    noNewPrivileges: false,
    capabilities: Object.fromEntries(['bounding', 'effective', 'permitted'].map((set) => [set, DEFAULT_CAPABILITIES])),
  };
  spec.root = { path: 'rootfs', readonly: false };
  spec.hostname = plan.podName.slice(0, 63);
  spec.linux.namespaces = spec.linux.namespaces.filter((n) => n.type !== 'network');
  for (const b of binds) {
    spec.mounts.push({
      destination: b.destination,
      type: 'bind',
      source: b.source,
      options: ['rbind', b.readOnly ? 'ro' : 'rw'],
    });
  }
  await writeFile(join(bundle, 'config.json'), JSON.stringify(spec, null, 2));
  const id = `teal-build-${plan.podName}`.slice(0, 60);
  return runLogged('runc', ['run', '--bundle', bundle, id], process.env, work, () => {
    run('runc', ['kill', id, 'KILL']).catch(() => {});
  });
}

/** What the executor image holds besides the binary (bound in): its folders, CA bundle and name service files. */
async function imageRootfs(rootfs: string, options: HostOptions): Promise<void> {
  for (const dir of ['kaniko/ssl/certs', 'kaniko/.docker', 'workspace', 'etc', 'tmp', 'root']) {
    await mkdir(join(rootfs, dir), { recursive: true });
  }
  await writeFile(join(rootfs, 'kaniko', 'executor'), '');
  await copyFile(
    await caBundle(join(rootfs, '..', '..'), options.extraCaPem),
    join(rootfs, 'kaniko/ssl/certs/ca-certificates.crt'),
  );
  await copyFile('/etc/resolv.conf', join(rootfs, 'etc', 'resolv.conf')).catch(() => {});
  await writeFile(join(rootfs, 'etc', 'nsswitch.conf'), 'hosts: files dns\n');
  await copyFile(await hostsFile(join(rootfs, '..', '..'), options.hosts), join(rootfs, 'etc', 'hosts'));
}
