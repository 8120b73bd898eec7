// Build Jobs and their pods, trimmed to what the build planner reads. Each
// label read is checked against the shape Teal writes; a bad one is treated
// as absent and listed in `problems`.
import { commitSha, matching, objectName, objectRef, ValueReader } from '../app/cluster-values.ts';
import { LABEL_APP, LABEL_APP_NAMESPACE, LABEL_APP_UID } from '../app/labels.ts';
import { DNS1123_LABEL } from '../app/patterns.ts';
import { BUILD_CONTAINER, LABEL_BUILD, LABEL_BUILD_SPEC, LABEL_COMMIT } from './job.ts';
import type { ObservedBuildPod, ObservedJob } from './plan.ts';

type Raw = {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  /** A Job's pod template, which cannot change after creation. */
  spec?: { suspend?: boolean; template?: { metadata?: { labels?: Record<string, string> } } };
  status?: {
    startTime?: string;
    completionTime?: string;
    active?: number;
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { name: string; state?: { terminated?: { exitCode?: number; message?: string } } }[];
  };
};

/** LABEL_BUILD_SPEC: the 5 hex digits of buildSpecHash (job.ts). */
const namespaceLabel = matching(DNS1123_LABEL, 'a namespace name (a DNS label)', 63);
const uidLabel = matching(/^[0-9a-f-]{1,63}$/, 'an object uid', 63);

const buildSpecLabel = matching(/^[0-9a-f]{5}$/, 'a build settings hash of 5 lowercase hex digits', 5);

/** The kubelet keeps at most this much of a termination message; anything longer was not written by one. */
const MESSAGE_MAX = 4096;

export function observeJob(raw: unknown): ObservedJob | undefined {
  const job = raw as Raw;
  const m = job.metadata ?? {};
  const ref = objectRef(m);
  if (!ref) return undefined;
  const read = new ValueReader(`Job ${ref.name}`);
  // A Job's pod template cannot change after creation: it holds the labels Teal gave the Job.
  const template = job.spec?.template?.metadata?.labels;
  const app = read.fixedLabel(m.labels, template, 'pod template', LABEL_APP, objectName);
  const commit = read.fixedLabel(m.labels, template, 'pod template', LABEL_COMMIT, commitSha);
  if (!app || !commit) return undefined;
  const buildSpec = read.fixedLabel(m.labels, template, 'pod template', LABEL_BUILD_SPEC, buildSpecLabel) ?? '';
  // In the build namespace: the App's namespace and uid, as labels (nothing there for a Job beside its App).
  const awayNamespace = m.labels?.[LABEL_APP_NAMESPACE];
  const appNamespace =
    awayNamespace === undefined
      ? ref.namespace
      : read.fixedLabel(m.labels, template, 'pod template', LABEL_APP_NAMESPACE, namespaceLabel);
  if (!appNamespace) return undefined;
  const appUid =
    awayNamespace === undefined
      ? undefined
      : read.fixedLabel(m.labels, template, 'pod template', LABEL_APP_UID, uidLabel);
  const done = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  const failure = done?.type === 'Failed' ? [done.reason, done.message].filter(Boolean).join(': ') : undefined;
  return {
    ...ref,
    uid: m.uid ?? '',
    app,
    appNamespace,
    ...(appUid !== undefined ? { appUid } : {}),
    suspended: job.spec?.suspend === true,
    commit,
    buildSpec,
    createdAt: m.creationTimestamp ?? '',
    ...(job.status?.startTime ? { startTime: job.status.startTime } : {}),
    ...(job.status?.completionTime ? { completionTime: job.status.completionTime } : {}),
    ...(done ? { outcome: done.type as 'Complete' | 'Failed' } : {}),
    ...(failure ? { failureMessage: failure } : {}),
    active: job.status?.active ?? 0,
    deleting: Boolean(m.deletionTimestamp),
    ...read.found(),
  };
}

export function observeBuildPod(raw: unknown): ObservedBuildPod | undefined {
  const pod = raw as Raw;
  const m = pod.metadata ?? {};
  const ref = objectRef(m);
  if (!ref || !m.labels?.[LABEL_BUILD]) return undefined;
  const read = new ValueReader(`Pod ${ref.name}`);
  // The Job controller names the pod's Job twice: in the job-name label and in its controller reference.
  const owner = m.ownerReferences?.find((o) => o.controller && o.kind === 'Job')?.name;
  const job = read.fixedLabel(
    m.labels,
    owner ? { 'job-name': owner } : undefined,
    'owner reference',
    'job-name',
    objectName,
  );
  if (!job) return undefined;
  const terminated =
    pod.status?.containerStatuses?.find((c) => c.name === BUILD_CONTAINER)?.state?.terminated ??
    pod.status?.containerStatuses?.[0]?.state?.terminated;
  const message = terminated?.message;
  return {
    ...ref,
    job,
    phase: pod.status?.phase ?? 'Pending',
    // Its tail, as the planner reads it: the digest, or the last lines of the log.
    ...(message !== undefined ? { message: message.slice(-MESSAGE_MAX) } : {}),
    ...(terminated?.exitCode !== undefined ? { exitCode: terminated.exitCode } : {}),
    ...read.found(),
  };
}
