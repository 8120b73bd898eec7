// The kubelet of real build pods: in the namespace it is given (one whose name
// starts with real-build-, which the KWOK stages leave alone once Running; see
// stages.yaml), it runs each Running build pod's own container on the host and
// writes the outcome into the pod status, so the Job completes or fails on the
// real build. Free of vitest, like the rest of test/cluster.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { startBuildkitContainer } from './build-runner/buildkit-host.ts';
import { startKanikoContainer } from './build-runner/kaniko-host.ts';
import { logsPublisher } from './build-runner/pod-logs.ts';
import {
  ContainerConfigError,
  type ContainerPlan,
  finishedStatus,
  planContainer,
  type SecretData,
} from './build-runner/pod-plan.ts';
import type { HostRun, Running } from './build-runner/workdir.ts';

export const REAL_BUILD_NAMESPACE_PREFIX = 'real-build';
const LABEL_BUILD = 'teal.dev/build';
const POLL_MS = 1000;

export interface BuildRunnerOptions {
  kc: KubeConfig;
  namespace: string;
  /** The folder build-toolchain.sh prints. */
  toolsDir: string;
  extraCaPem?: string;
  /**
   * host:port of a registry that serves docker.io's images (test setup: this
   * machine has no Docker Hub); the engines are pointed at it from outside the
   * Job (build-runner/registry-mirror.ts). Off by default.
   */
  dockerHubMirror?: string;
  /**
   * Host names the build containers resolve, to addresses (/etc/hosts), as a cluster's DNS would
   * give them: a registry with a TLS certificate for its name (BuildKit speaks plain HTTP to a
   * loopback address). None by default.
   */
  hosts?: Record<string, string>;
  log?: (line: string) => void;
}

export interface FinishedBuild {
  pod: string;
  exitCode: number;
  message: string;
  logFile: string;
  /** From the container's start to its exit. */
  durationMs: number;
}

export interface BuildRunner {
  readonly finished: readonly FinishedBuild[];
  stop: () => Promise<void>;
}

export function startBuildRunner(options: BuildRunnerOptions): BuildRunner {
  if (!options.namespace.startsWith(`${REAL_BUILD_NAMESPACE_PREFIX}-`)) {
    throw new Error(`namespace ${options.namespace}: KWOK fakes build pods outside real-build-* namespaces`);
  }
  const core = options.kc.makeApiClient(CoreV1Api);
  const log = options.log ?? (() => {});
  const handled = new Set<string>();
  const running = new Map<string, Running>();
  const finished: FinishedBuild[] = [];
  const workRoot = join(tmpdir(), `teal-build-runner-${options.namespace}`);
  const publishLogs = logsPublisher(options.kc, log);
  let stopped = false;

  const handle = async (pod: V1Pod) => {
    const name = pod.metadata?.name ?? '';
    const plan = await planFor(core, pod);
    if (plan instanceof ContainerConfigError) {
      log(`${name}: not started: ${plan.message}`);
      return writeStatus(core, pod, { reason: 'CreateContainerConfigError', message: plan.message });
    }
    log(`${name}: running ${plan.argv.join(' ').slice(0, 120)}`);
    const start = plan.config.engine === 'kaniko' ? startKanikoContainer : startBuildkitContainer;
    const started = await start(plan, {
      toolsDir: options.toolsDir,
      extraCaPem: options.extraCaPem,
      workRoot,
      dockerHubMirror: options.dockerHubMirror,
      hosts: options.hosts,
    });
    running.set(name, started);
    await publishLogs(pod, plan.containerName, started.criLogFile).catch((err) =>
      log(`${name}: Logs object: ${err instanceof Error ? err.message : String(err)}`),
    );
    const run = await started.done;
    running.delete(name);
    if (stopped) return;
    const status = finishedStatus(plan, { ...run, fallbackToLogs: plan.fallbackToLogs });
    const message = status.containerStatuses[0]?.state.terminated.message ?? '';
    finished.push({ pod: name, exitCode: run.exitCode, message, logFile: run.logFile, durationMs: duration(run) });
    log(`${name}: exit ${run.exitCode} in ${duration(run)} ms: ${message.trim().split('\n').at(-1)}`);
    await core.patchNamespacedPodStatus(
      { name, namespace: options.namespace, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };

  const poll = async () => {
    const pods = await core.listNamespacedPod({ namespace: options.namespace, labelSelector: LABEL_BUILD });
    const present = new Set(pods.items.map((p) => p.metadata?.name ?? ''));
    // A pod deleted under a running build (the Job's deadline, the App's deletion) takes its container with it.
    for (const [name, r] of running) if (!present.has(name)) r.kill();
    for (const pod of pods.items) {
      const uid = pod.metadata?.uid ?? '';
      if (handled.has(uid) || !runnable(pod)) continue;
      handled.add(uid);
      handle(pod).catch((err) => log(`${pod.metadata?.name}: ${err instanceof Error ? err.message : String(err)}`));
    }
  };

  const loop = (async () => {
    while (!stopped) {
      await poll().catch((err) => log(`list pods: ${err instanceof Error ? err.message : String(err)}`));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  })();

  return {
    finished,
    stop: async () => {
      stopped = true;
      for (const r of running.values()) r.kill();
      await loop;
      await rm(workRoot, { recursive: true, force: true });
    },
  };
}

/** Running (KWOK's pod-ready stage) and its container not finished yet. */
function runnable(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    !pod.metadata?.deletionTimestamp &&
    !pod.status.containerStatuses?.some((s) => s.state?.terminated)
  );
}

/** The plan, or why a kubelet would not start the container. */
async function planFor(core: CoreV1Api, pod: V1Pod): Promise<ContainerPlan | ContainerConfigError> {
  const namespace = pod.metadata?.namespace ?? '';
  const secrets = new Map<string, SecretData>();
  for (const name of secretNames(pod)) {
    const secret = await core.readNamespacedSecret({ name, namespace }).catch(() => undefined);
    if (!secret) continue;
    const data: SecretData = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) data[key] = Buffer.from(value, 'base64');
    secrets.set(name, data);
  }
  const configMaps = new Map<string, SecretData>();
  for (const name of configMapNames(pod)) {
    const configMap = await core.readNamespacedConfigMap({ name, namespace }).catch(() => undefined);
    if (!configMap) continue;
    const data: SecretData = {};
    for (const [key, value] of Object.entries(configMap.data ?? {})) data[key] = Buffer.from(value, 'utf8');
    for (const [key, value] of Object.entries(configMap.binaryData ?? {})) data[key] = Buffer.from(value, 'base64');
    configMaps.set(name, data);
  }
  try {
    return planContainer(
      pod,
      (name) => secrets.get(name),
      (name) => configMaps.get(name),
    );
  } catch (err) {
    if (err instanceof ContainerConfigError) return err;
    throw err;
  }
}

function secretNames(pod: V1Pod): Set<string> {
  const names = new Set<string>();
  for (const v of pod.spec?.volumes ?? []) {
    if (v.secret?.secretName) names.add(v.secret.secretName);
    for (const source of v.projected?.sources ?? []) if (source.secret?.name) names.add(source.secret.name);
  }
  for (const c of pod.spec?.containers ?? []) {
    for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef?.name) names.add(e.valueFrom.secretKeyRef.name);
  }
  return names;
}

function configMapNames(pod: V1Pod): Set<string> {
  const names = new Set<string>();
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap?.name) names.add(v.configMap.name);
    for (const source of v.projected?.sources ?? []) if (source.configMap?.name) names.add(source.configMap.name);
  }
  return names;
}

/** A container that never started: the pod fails with the kubelet's reason (a kubelet would keep it Waiting). */
async function writeStatus(core: CoreV1Api, pod: V1Pod, why: { reason: string; message: string }) {
  const container = pod.spec?.containers[0];
  const now = new Date().toISOString();
  const status = {
    phase: 'Failed',
    containerStatuses: [
      {
        name: container?.name ?? '',
        image: container?.image ?? '',
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode: 128, ...why, startedAt: now, finishedAt: now } },
      },
    ],
  };
  await core.patchNamespacedPodStatus(
    { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

const duration = (run: HostRun) => run.finishedAt.getTime() - run.startedAt.getTime();
