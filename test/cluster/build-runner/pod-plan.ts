// What a kubelet makes of a build pod's container before it starts it: the
// argv (the image's entrypoint unless the pod names a command), the env (the
// image's, then the pod's, with Secret references resolved), the volume mounts
// (the items of Secret, ConfigMap and projected volumes as files, emptyDirs,
// hostPaths) and the termination message policy.
// Pure: the Secrets and ConfigMaps come in as data, so the rules are unit-tested.
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';

/** What the build engines' images bring that a pod spec does not say. */
export interface ImageConfig {
  engine: 'buildkit' | 'kaniko';
  entrypoint: string[];
  env: Record<string, string>;
  workingDir: string;
}

// From the images' own Dockerfiles (moby/buildkit rootless stage, kaniko's executor stage).
const BUILDKIT_ROOTLESS: ImageConfig = {
  engine: 'buildkit',
  entrypoint: ['rootlesskit', 'buildkitd'],
  env: {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/home/user',
    USER: 'user',
    XDG_RUNTIME_DIR: '/run/user/1000',
    TMPDIR: '/home/user/.local/tmp',
    BUILDKIT_HOST: 'unix:///run/user/1000/buildkit/buildkitd.sock',
  },
  workingDir: '/home/user',
};

const KANIKO_EXECUTOR: ImageConfig = {
  engine: 'kaniko',
  entrypoint: ['/kaniko/executor'],
  env: {
    PATH: '/usr/local/bin:/kaniko',
    HOME: '/root',
    USER: 'root',
    SSL_CERT_DIR: '/kaniko/ssl/certs',
    DOCKER_CONFIG: '/kaniko/.docker/',
    DOCKER_CREDENTIAL_GCR_CONFIG: '/kaniko/.config/gcloud/docker_credential_gcr_config.json',
  },
  workingDir: '/workspace',
};

/** The config of an image the runner can play, by its repository; undefined for any other image. */
export function imageConfig(image: string): ImageConfig | undefined {
  const repository = image
    .replace(/@.*$/, '')
    .replace(/:[^/]*$/, '')
    .replace(/^docker\.io\//, '');
  if (repository === 'moby/buildkit' && /:[^/]*rootless[^/]*$/.test(image.replace(/@.*$/, ''))) {
    return BUILDKIT_ROOTLESS;
  }
  if (repository === 'gcr.io/kaniko-project/executor') return KANIKO_EXECUTOR;
  return undefined;
}

/** A Secret's data, decoded, by key. */
export type SecretData = Record<string, Buffer>;

export interface PlannedFile {
  /** Relative to the mount path. */
  path: string;
  content: Buffer;
  mode: number;
}

export type PlannedMount =
  /** A Secret, ConfigMap or projected volume: its items as files. */
  | { kind: 'files'; mountPath: string; readOnly: boolean; files: PlannedFile[] }
  | { kind: 'emptyDir'; mountPath: string }
  /** A folder of the host, bound as it is (the operator image's build: its context, BuildKit's cache). */
  | { kind: 'hostPath'; path: string; mountPath: string; readOnly: boolean };

export interface ContainerPlan {
  podName: string;
  containerName: string;
  image: string;
  config: ImageConfig;
  argv: string[];
  env: Record<string, string>;
  mounts: PlannedMount[];
  terminationMessagePath: string;
  fallbackToLogs: boolean;
}

/** Why a kubelet would not start the container (it would stay Waiting with this reason). */
export class ContainerConfigError extends Error {}

/** The plan for the pod's single container; throws ContainerConfigError where a kubelet would refuse it. */
export function planContainer(
  pod: V1Pod,
  secrets: (name: string) => SecretData | undefined,
  configMaps: (name: string) => SecretData | undefined = () => undefined,
): ContainerPlan {
  const container = pod.spec?.containers[0];
  if (!container || (pod.spec?.containers.length ?? 0) !== 1) {
    throw new ContainerConfigError('a build pod has exactly one container');
  }
  const config = imageConfig(container.image ?? '');
  if (!config) throw new ContainerConfigError(`image ${container.image} is not a build engine the runner plays`);
  return {
    podName: pod.metadata?.name ?? '',
    containerName: container.name,
    image: container.image ?? '',
    config,
    argv: argvOf(container, config),
    env: { ...config.env, HOSTNAME: pod.metadata?.name ?? '', ...containerEnv(container, secrets) },
    mounts: (container.volumeMounts ?? []).map((m) =>
      planMount(m.mountPath, m.readOnly ?? false, volumeNamed(pod, m.name), { secrets, configMaps }),
    ),
    terminationMessagePath: container.terminationMessagePath ?? '/dev/termination-log',
    fallbackToLogs: container.terminationMessagePolicy === 'FallbackToLogsOnError',
  };
}

/** Kubernetes' rule: command replaces the entrypoint, args replace the image's cmd (none here). */
function argvOf(container: V1Container, config: ImageConfig): string[] {
  const argv = [...(container.command ?? config.entrypoint), ...(container.args ?? [])];
  if (argv.length === 0) throw new ContainerConfigError('no command');
  return argv;
}

function containerEnv(container: V1Container, secrets: (name: string) => SecretData | undefined) {
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    const ref = e.valueFrom?.secretKeyRef;
    if (!ref) continue;
    const value = secrets(ref.name ?? '')?.[ref.key];
    if (value !== undefined) env[e.name] = value.toString('utf8');
    else if (!ref.optional) throw new ContainerConfigError(`secret "${ref.name}" has no key "${ref.key}"`);
  }
  return env;
}

function volumeNamed(pod: V1Pod, name: string): V1Volume {
  const volume = pod.spec?.volumes?.find((v) => v.name === name);
  if (!volume) throw new ContainerConfigError(`no volume named ${name}`);
  return volume;
}

interface VolumeData {
  secrets: (name: string) => SecretData | undefined;
  configMaps: (name: string) => SecretData | undefined;
}

function planMount(mountPath: string, readOnly: boolean, volume: V1Volume, data: VolumeData): PlannedMount {
  if (volume.emptyDir) return { kind: 'emptyDir', mountPath };
  if (volume.hostPath) return { kind: 'hostPath', path: volume.hostPath.path, mountPath, readOnly };
  const files = (sources: FileSource[], defaultMode = 0o644): PlannedMount => ({
    kind: 'files',
    mountPath,
    readOnly,
    files: sources.flatMap((source) => filesOf(source, defaultMode)),
  });
  if (volume.secret) {
    const { secretName = '', items, optional } = volume.secret;
    return files(
      [{ kind: 'secret', name: secretName, data: data.secrets(secretName), items, optional }],
      volume.secret.defaultMode,
    );
  }
  if (volume.configMap) {
    const { name = '', items, optional } = volume.configMap;
    return files(
      [{ kind: 'configmap', name, data: data.configMaps(name), items, optional }],
      volume.configMap.defaultMode,
    );
  }
  if (volume.projected) {
    const sources = (volume.projected.sources ?? []).map((source): FileSource => {
      if (source.secret) {
        const { name = '', items, optional } = source.secret;
        return { kind: 'secret', name, data: data.secrets(name), items, optional };
      }
      if (source.configMap) {
        const { name = '', items, optional } = source.configMap;
        return { kind: 'configmap', name, data: data.configMaps(name), items, optional };
      }
      throw new ContainerConfigError(`volume ${volume.name}: only secret and configMap projections are played`);
    });
    return files(sources, volume.projected.defaultMode);
  }
  throw new ContainerConfigError(
    `volume ${volume.name}: only secret, configMap, projected, emptyDir and hostPath volumes are played`,
  );
}

/** A Secret or a ConfigMap a volume (or one of its projections) takes files from. */
interface FileSource {
  kind: 'secret' | 'configmap';
  name: string;
  data: SecretData | undefined;
  items?: { key: string; path: string; mode?: number }[];
  optional?: boolean;
}

/** Its items as files, as a kubelet lays them out; a missing object or key fails the mount unless optional. */
function filesOf(source: FileSource, defaultMode: number): PlannedFile[] {
  const { kind, name, data, optional } = source;
  if (!data) {
    if (optional) return [];
    throw new ContainerConfigError(`${kind} "${name}" not found`);
  }
  const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key, mode: undefined }));
  const files: PlannedFile[] = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined) {
      if (optional) continue;
      throw new ContainerConfigError(`${kind} "${name}" has no key "${item.key}"`);
    }
    files.push({ path: item.path, content, mode: item.mode ?? defaultMode });
  }
  return files;
}

/** A kubelet's limits on a termination message and on the log tail that stands in for it. */
export const MESSAGE_MAX_BYTES = 4096;
export const LOG_TAIL_MAX_BYTES = 2048;
export const LOG_TAIL_MAX_LINES = 80;

export interface Outcome {
  exitCode: number;
  terminationLog: string;
  log: string;
  fallbackToLogs: boolean;
  startedAt: Date;
  finishedAt: Date;
}

/** The pod status a kubelet writes for a finished container of a restartPolicy: Never pod. */
export function finishedStatus(plan: Pick<ContainerPlan, 'containerName' | 'image'>, outcome: Outcome) {
  const failed = outcome.exitCode !== 0;
  return {
    phase: failed ? 'Failed' : 'Succeeded',
    containerStatuses: [
      {
        name: plan.containerName,
        image: plan.image,
        ready: false,
        started: false,
        restartCount: 0,
        state: {
          terminated: {
            exitCode: outcome.exitCode,
            reason: failed ? 'Error' : 'Completed',
            message: terminationMessage(outcome),
            startedAt: outcome.startedAt.toISOString(),
            finishedAt: outcome.finishedAt.toISOString(),
          },
        },
      },
    ],
  };
}

function terminationMessage(outcome: Outcome): string {
  const message = lastBytes(outcome.terminationLog, MESSAGE_MAX_BYTES);
  if (message !== '' || !outcome.fallbackToLogs || outcome.exitCode === 0) return message;
  return lastBytes(
    outcome.log
      .split('\n')
      .slice(-LOG_TAIL_MAX_LINES - 1)
      .join('\n'),
    LOG_TAIL_MAX_BYTES,
  );
}

function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= max ? text : bytes.subarray(bytes.length - max).toString('utf8');
}
