// Job checks: one Job per measurement, named from the measurement's key, so an
// executor that restarts mid-measurement (kill -9, leader handover) finds the
// Job it created and adopts it instead of starting a second (run.ts, rule 2).
// Pure: the executor creates, reads and deletes the Jobs.

import { type Check, MAX_MESSAGE_LENGTH } from '../app/analysis-schema.ts';
import { jobNamePrefix, sha } from '../app/hash.ts';
import { LABEL_APP, LABEL_MANAGED_BY, MANAGED_BY } from '../app/labels.ts';
import type { OwnerReference } from '../app/owner.ts';
import { API_VERSION, KIND } from '../app/schema.ts';
import { bounded, type MeasurementResult } from './measurement.ts';

/** The run a Job measures for (see analysisRunLabel): deleting a cancelled run's Jobs selects on it. */
export const LABEL_ANALYSIS = 'teal.dev/analysis';
/** The check a Job measures for: a check name is a DNS-1123 label, so a valid label value as it is. */
export const LABEL_ANALYSIS_CHECK = 'teal.dev/analysis-check';
/** The whole measurement key, which is no label value (it holds "/"): adoption compares it. */
export const ANN_ANALYSIS_KEY = 'teal.dev/analysis-key';

export interface AnalysisJobOwner {
  name: string;
  namespace: string;
  /** The App's uid, for the owner reference that lets deleting the App collect its Jobs. */
  uid: string;
}

export interface AnalysisJobInput {
  app: AnalysisJobOwner;
  /** MeasureAction.key, `<run id>/<check>/<n>`. */
  key: string;
  /** The check with its placeholders resolved (args.ts resolveCheck's `check`); its provider must be job. */
  check: Check;
  /** builtinEnv (args.ts): added to every container. */
  env: readonly { name: string; value: string }[];
}

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Deterministic per (App, measurement key), so the same measurement always
 * finds the same Job; a DNS-1123 label of at most 62 characters (the Job
 * controller puts it in its pods' job-name label). The App name is shortened
 * as build Job names shorten it.
 */
export function analysisJobName(appName: string, key: string): string {
  return `${jobNamePrefix(appName)}-analysis-${sha(key).slice(0, 12)}`;
}

/** The run id out of a key: check names hold no "/", so the run id is all before the last two. */
export function runIdOf(key: string): string {
  return key.split('/').slice(0, -2).join('/');
}

/** LABEL_ANALYSIS for a run: the run id itself when it is a label value, else a hash of it. */
export function analysisRunLabel(runId: string): string {
  return runId.length <= 63 && LABEL_VALUE.test(runId) ? runId : `run-${sha(runId).slice(0, 16)}`;
}

/** Selects every Job of one run of one App, to delete them when the run is cancelled. */
export function analysisRunSelector(appName: string, runId: string): string {
  return `${LABEL_APP}=${appName},${LABEL_ANALYSIS}=${analysisRunLabel(runId)}`;
}

function ownerOf(app: AnalysisJobOwner): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: app.name,
    uid: app.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

type JobProvider = NonNullable<Check['provider']['job']>;
type Container = JobProvider['spec']['template']['spec']['containers'][number];

/**
 * The built-ins go last, and a user variable of the same name is dropped: a
 * check reads Teal's TEAL_PREVIEW_SERVICE, never one it was handed by mistake,
 * and the pod spec holds each name once.
 */
function withBuiltins(container: Container, env: AnalysisJobInput['env']) {
  const ours = new Set(env.map((e) => e.name));
  const theirs = (container.env ?? []).filter((e) => !ours.has(e.name));
  return {
    name: container.name,
    image: container.image,
    ...(container.command ? { command: container.command } : {}),
    ...(container.args ? { args: container.args } : {}),
    env: [...theirs, ...env.map((e) => ({ name: e.name, value: e.value }))],
  };
}

export function analysisJobManifest(input: AnalysisJobInput) {
  const { app, key, check, env } = input;
  const job = check.provider.job;
  if (!job) throw new Error(`analysisJobManifest: check "${check.name}" has no job provider`);
  // Teal's labels win over the user's: they are what selection and adoption rely on.
  const ours = {
    [LABEL_APP]: app.name,
    [LABEL_ANALYSIS]: analysisRunLabel(runIdOf(key)),
    [LABEL_ANALYSIS_CHECK]: check.name,
    [LABEL_MANAGED_BY]: MANAGED_BY,
  };
  const template = job.spec.template;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: analysisJobName(app.name, key),
      namespace: app.namespace,
      labels: { ...job.metadata?.labels, ...ours },
      annotations: { ...job.metadata?.annotations, [ANN_ANALYSIS_KEY]: key },
      ownerReferences: [ownerOf(app)],
    },
    spec: {
      ...(job.spec.backoffLimit !== undefined ? { backoffLimit: job.spec.backoffLimit } : {}),
      activeDeadlineSeconds: job.spec.activeDeadlineSeconds,
      template: {
        metadata: {
          labels: { ...template.metadata?.labels, ...ours },
          ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        },
        spec: {
          restartPolicy: template.spec.restartPolicy,
          ...(template.spec.serviceAccountName ? { serviceAccountName: template.spec.serviceAccountName } : {}),
          containers: template.spec.containers.map((c) => withBuiltins(c, env)),
        },
      },
    },
  };
}

export type AnalysisJobManifest = ReturnType<typeof analysisJobManifest>;

/** What jobMeasurement and isAnalysisJobFor read of a Job: a raw object and a client V1Job both fit. */
export interface ObservedAnalysisJob {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/**
 * True when the Job was made for this measurement of this App: a Job that only
 * shares the name (someone else's, or a hash collision) is not adopted.
 */
export function isAnalysisJobFor(job: ObservedAnalysisJob, appName: string, key: string): boolean {
  return job.metadata?.labels?.[LABEL_APP] === appName && job.metadata?.annotations?.[ANN_ANALYSIS_KEY] === key;
}

/**
 * The measurement a finished Job gives: Complete is Successful, Failed is
 * Failed with the Job's reason and message (BackoffLimitExceeded,
 * DeadlineExceeded, ...). Undefined while the Job runs.
 */
export function jobMeasurement(job: ObservedAnalysisJob): MeasurementResult | undefined {
  const done = job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
  if (!done) return undefined;
  if (done.type === 'Complete') return { phase: 'Successful', message: 'the Job completed' };
  const why = [done.reason, done.message].filter(Boolean).join(': ');
  return { phase: 'Failed', message: bounded(why ? `the Job failed: ${why}` : 'the Job failed', MAX_MESSAGE_LENGTH) };
}

/** An analysis Job as the cache keeps it: what the planner and the runner read. */
export interface AnalysisJobRef {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** LABEL_APP. */
  app: string;
  /** ANN_ANALYSIS_KEY; '' when missing (not a Job Teal made for a measurement). */
  key: string;
  /** The measurement the finished Job gives; undefined while it runs. */
  result?: MeasurementResult;
  deleting: boolean;
}

type RawJob = ObservedAnalysisJob & {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; deletionTimestamp?: unknown };
};

/** The cache's view of an analysis Job; undefined for an object that is not one. */
export function observeAnalysisJob(raw: RawJob): AnalysisJobRef | undefined {
  const m = raw.metadata;
  const app = m?.labels?.[LABEL_APP];
  if (!m?.name || !m.namespace || !app || m.labels?.[LABEL_ANALYSIS] === undefined) return undefined;
  const key = m.annotations?.[ANN_ANALYSIS_KEY] ?? '';
  const result = jobMeasurement(raw);
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    app,
    // A key that does not name this very Job is no key: the Job was not made for it (or was edited).
    key: key.length <= 1024 && analysisJobName(app, key) === m.name ? key : '',
    ...(result ? { result } : {}),
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
  };
}
