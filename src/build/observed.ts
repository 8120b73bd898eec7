// Build Jobs and their pods, trimmed to what the build planner reads.
import { LABEL_APP } from '../rollout/labels.ts';
import { LABEL_BUILD, LABEL_BUILD_SPEC, LABEL_COMMIT } from './job.ts';
import type { ObservedBuildPod, ObservedJob } from './plan.ts';

type Raw = {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
  };
  spec?: unknown;
  status?: {
    startTime?: string;
    completionTime?: string;
    active?: number;
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { name: string; state?: { terminated?: { exitCode?: number; message?: string } } }[];
  };
};

export function observeJob(raw: unknown): ObservedJob | undefined {
  const job = raw as Raw;
  const m = job.metadata;
  const app = m?.labels?.[LABEL_APP];
  const commit = m?.labels?.[LABEL_COMMIT];
  if (!m?.name || !m.namespace || !app || !commit) return undefined;
  const done = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  const failure = done?.type === 'Failed' ? [done.reason, done.message].filter(Boolean).join(': ') : undefined;
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    app,
    commit,
    buildSpec: m.labels?.[LABEL_BUILD_SPEC] ?? '',
    createdAt: m.creationTimestamp ?? '',
    ...(job.status?.startTime ? { startTime: job.status.startTime } : {}),
    ...(job.status?.completionTime ? { completionTime: job.status.completionTime } : {}),
    ...(done ? { outcome: done.type as 'Complete' | 'Failed' } : {}),
    ...(failure ? { failureMessage: failure } : {}),
    active: job.status?.active ?? 0,
    deleting: Boolean(m.deletionTimestamp),
  };
}

export function observeBuildPod(raw: unknown): ObservedBuildPod | undefined {
  const pod = raw as Raw;
  const m = pod.metadata;
  const job = m?.labels?.['job-name'];
  if (!m?.name || !m.namespace || !job || !m.labels?.[LABEL_BUILD]) return undefined;
  const terminated =
    pod.status?.containerStatuses?.find((c) => c.name === 'build')?.state?.terminated ??
    pod.status?.containerStatuses?.[0]?.state?.terminated;
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    job,
    phase: pod.status?.phase ?? 'Pending',
    ...(terminated?.message !== undefined ? { message: terminated.message } : {}),
    ...(terminated?.exitCode !== undefined ? { exitCode: terminated.exitCode } : {}),
  };
}
