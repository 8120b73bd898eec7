// What the data plane's kubelet stand-in (test/cluster/data-plane.ts) makes of
// an app pod: where its server listens, what it answers with, how its
// readiness is probed, and how it is stopped. Pure, so the rules are
// unit-tested (test/unit/data-plane-pod-plan.test.ts).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { LABEL_HASH } from '../../../src/app/labels.ts';
import { REVISION_ENV } from '../../../src/app/traffic-schema.ts';
// The same reading of a preStop hook as kubectl teal lint's, which holds it against a load balancer's drain.
import { execSleepSeconds } from '../../../src/rollout/lint.ts';

/** Kubernetes' own revision label, set by the Deployment controller. */
const LABEL_DEPLOYMENT_HASH = 'pod-template-hash';
/** Argo Rollouts' revision label on the pods of a Rollout's ReplicaSets. */
const LABEL_ARGO_HASH = 'rollouts-pod-template-hash';
/** What a kubelet waits when neither the pod nor the delete request says. */
const DEFAULT_GRACE_SECONDS = 30;
/** The port a pod with no containerPort serves on. */
const DEFAULT_PORT = 8080;

export interface PodServe {
  /** namespace/name, the key every part of the data plane uses. */
  key: string;
  name: string;
  ip: string;
  port: number;
  /** Teal's revision label, else Argo Rollouts', else the Deployment's pod-template-hash, else "". */
  revision: string;
  /** The app container's TEAL_REVISION, resolved as a kubelet resolves env (Downward API included), if it has one. */
  tealRevision?: string;
}

export interface PodProbe {
  port: number;
  path: string;
}

export interface PodStop {
  /** How long the preStop hook keeps the server up, accepting, before it is told to stop. */
  preStopMs: number;
  /** From the deletion on: in-flight requests still open then are cut. */
  graceMs: number;
}

export const podKey = (pod: V1Pod): string => `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;

function appContainer(pod: V1Pod): V1Container | undefined {
  return pod.spec?.containers?.[0];
}

/** Where the pod's server listens: its first container's first TCP port. */
export function podServe(pod: V1Pod): PodServe | undefined {
  const ip = pod.status?.podIP;
  if (!ip || pod.status?.phase !== 'Running') return undefined;
  const port = appContainer(pod)?.ports?.find((p) => (p.protocol ?? 'TCP') === 'TCP')?.containerPort ?? DEFAULT_PORT;
  const labels = pod.metadata?.labels ?? {};
  const tealRevision = envValue(pod, appContainer(pod), REVISION_ENV);
  return {
    key: podKey(pod),
    name: pod.metadata?.name ?? '',
    ip,
    port,
    revision: labels[LABEL_HASH] ?? labels[LABEL_ARGO_HASH] ?? labels[LABEL_DEPLOYMENT_HASH] ?? '',
    ...(tealRevision !== undefined ? { tealRevision } : {}),
  };
}

/**
 * A container's environment variable as the kubelet gives it: its value, or
 * for the Downward API's fieldRef, the pod's field it names (name, namespace,
 * uid, a label or an annotation). Others (Secrets, resources) are not played.
 */
export function envValue(pod: V1Pod, container: V1Container | undefined, name: string): string | undefined {
  const env = container?.env?.findLast((e) => e.name === name);
  if (!env) return undefined;
  if (env.value !== undefined) return env.value;
  const path = env.valueFrom?.fieldRef?.fieldPath ?? '';
  const meta = pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(path);
  if (keyed) return (keyed[1] === 'labels' ? meta.labels : meta.annotations)?.[keyed[2] ?? ''] ?? '';
  const fields: Record<string, string | undefined> = {
    'metadata.name': meta.name,
    'metadata.namespace': meta.namespace,
    'metadata.uid': meta.uid,
  };
  return fields[path];
}

/**
 * The readiness probe's HTTP GET (path and a numeric port; a named port is
 * looked up in the container's ports), or, with no probe, a GET of / on the
 * serving port: a kubelet would call such a container ready once it runs,
 * and running here means answering.
 */
export function podProbe(pod: V1Pod, serve: Pick<PodServe, 'port'>): PodProbe {
  const container = appContainer(pod);
  const get = container?.readinessProbe?.httpGet;
  if (!get) return { port: serve.port, path: '/' };
  const port =
    typeof get.port === 'number'
      ? get.port
      : /^\d+$/.test(get.port)
        ? Number(get.port)
        : (container?.ports?.find((p) => p.name === get.port)?.containerPort ?? serve.port);
  return { port, path: get.path ?? '/' };
}

/**
 * preStop as the kubelet runs it, for the hooks the data plane can play: the
 * sleep action, or an exec of `sleep N` (directly or through `sh -c`). Any
 * other hook is run as no wait. The hook runs within the grace period, as a
 * kubelet's does.
 */
export function podStop(pod: V1Pod): PodStop {
  const graceSeconds =
    pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
  const graceMs = Math.max(0, graceSeconds) * 1000;
  const preStop = appContainer(pod)?.lifecycle?.preStop;
  const seconds = preStop?.sleep?.seconds ?? execSleepSeconds(preStop?.exec?.command) ?? 0;
  return { preStopMs: Math.min(graceMs, Math.max(0, seconds) * 1000), graceMs };
}

/** The readiness gates the pod's spec names whose condition is not True: a kubelet keeps Ready False while any is. */
export function unmetGates(pod: V1Pod): string[] {
  const conditions = pod.status?.conditions ?? [];
  return (pod.spec?.readinessGates ?? [])
    .map((g) => g.conditionType)
    .filter((type) => !conditions.some((c) => c.type === type && c.status === 'True'));
}

type PodCondition = { type: string; status: string; lastTransitionTime: string; reason: string; message?: string };

/** A condition as a kubelet writes it: its transition time moves only when its status does. */
function podCondition(
  pod: V1Pod,
  type: string,
  status: 'True' | 'False',
  reason: string,
  at: string,
  message?: string,
) {
  const before = pod.status?.conditions?.find((c) => c.type === type);
  const since = before?.status === status && before.lastTransitionTime ? before.lastTransitionTime : at;
  const condition: PodCondition = { type, status, reason, lastTransitionTime: new Date(since).toISOString() };
  return message ? { ...condition, message } : condition;
}

/**
 * Ready as the kubelet computes it (its generateAPIPodStatus): the containers
 * are ready and every readiness gate the spec names has its condition True.
 * ContainersReady is the containers' part alone.
 */
function readyCondition(pod: V1Pod, at: string): PodCondition {
  const unmet = unmetGates(pod);
  if (unmet.length === 0) return podCondition(pod, 'Ready', 'True', DATA_PLANE_READY_REASON, at);
  const message = `the status of pod readiness gates ${unmet.map((g) => JSON.stringify(g)).join(', ')} is not "True"`;
  return podCondition(pod, 'Ready', 'False', READINESS_GATES_NOT_READY, at, message);
}

/** The status a kubelet writes once the readiness probe passed (a strategic merge on conditions' type). */
export function readyStatus(pod: V1Pod, now: Date): Record<string, unknown> {
  const at = now.toISOString();
  return {
    conditions: [readyCondition(pod, at), podCondition(pod, 'ContainersReady', 'True', DATA_PLANE_READY_REASON, at)],
    containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({ ...s, ready: true, started: true })),
  };
}

/**
 * The Ready condition to write for a pod whose containers the data plane made
 * ready, once a readiness gate's condition changed (a load balancer set it);
 * undefined when Ready already says what the gates say.
 */
export function gatedReadyStatus(pod: V1Pod, now: Date): Record<string, unknown> | undefined {
  const conditions = pod.status?.conditions ?? [];
  const containers = conditions.find((c) => c.type === 'ContainersReady');
  if (containers?.status !== 'True' || containers.reason !== DATA_PLANE_READY_REASON) return undefined;
  const ready = readyCondition(pod, now.toISOString());
  const before = conditions.find((c) => c.type === 'Ready');
  if (before?.status === ready.status && before.reason === ready.reason) return undefined;
  return { conditions: [ready] };
}

/** The kubelet's reason on Ready while a readiness gate is not True. */
export const READINESS_GATES_NOT_READY = 'ReadinessGatesNotReady';
/** The reason on Ready conditions the data plane set, so a test can tell them from KWOK's. */
export const DATA_PLANE_READY_REASON = 'DataPlaneProbeAnswered';
