// What to do about builds, as a pure function of the App, its resolved
// source and the build Jobs seen: create the one for the current commit,
// supersede running older ones, keep a short history, and report status.

import type { ValueProblem } from '../app/cluster-values.ts';
import { masker } from '../app/mask.ts';
import type { App, AppStatus } from '../app/schema.ts';
import { parseGitUrl } from '../git/url.ts';
import type { BuildImages } from './images.ts';
import {
  type BuildJobManifest,
  type BuildSecretCopy,
  buildJobManifest,
  buildSecretCopies,
  buildSpecHash,
} from './job.ts';
import { type BuildNetwork, proxyCredentials } from './network.ts';
import { type BuildDefaults, imageRepository, pushSecretName } from './registry.ts';

/** Build Jobs: what the build planner asks of the cluster (the controller's executor writes them). */
export type BuildAction =
  | { kind: 'createJob'; manifest: BuildJobManifest }
  | { kind: 'startJob'; namespace: string; name: string; uid: string; appNamespace: string; copies: BuildSecretCopy[] }
  | { kind: 'deleteJob'; namespace: string; name: string; why: string };

export interface ObservedJob {
  namespace: string;
  name: string;
  resourceVersion: string;
  uid: string;
  app: string;
  /** The App's namespace: the Job's own, or LABEL_APP_NAMESPACE for a Job in the build namespace. */
  appNamespace: string;
  /** LABEL_APP_UID, on a Job in the build namespace: the App it was made for. */
  appUid?: string;
  /** spec.suspend: a Job in the build namespace waits so until its Secret copies are made. */
  suspended: boolean;
  commit: string;
  /** LABEL_BUILD_SPEC: the build settings the Job was made with. */
  buildSpec: string;
  createdAt: string;
  startTime?: string;
  completionTime?: string;
  /** Complete or Failed, from the Job's conditions. */
  outcome?: 'Complete' | 'Failed';
  failureMessage?: string;
  active: number;
  deleting: boolean;
  /** Labels that were ignored, and why (see build/observed.ts). */
  problems?: ValueProblem[];
}

export interface ObservedBuildPod {
  namespace: string;
  name: string;
  resourceVersion: string;
  job: string;
  phase: string;
  /** The build container's termination message: the digest, or the last log lines on error. */
  message?: string;
  exitCode?: number;
  /** Labels that were ignored, and why (see build/observed.ts). */
  problems?: ValueProblem[];
}

export interface BuildPlan {
  actions: BuildAction[];
  build: AppStatus['build'];
  /** A build of the current commit is under way. */
  running: boolean;
  /** Why the current commit has no image, when its build failed. */
  failure?: string;
}

/** status.build.namespace: said only of a Job away from its App. */
const awayIn = (buildNamespace: string | undefined) =>
  buildNamespace !== undefined ? { namespace: buildNamespace } : {};

/** Finished build Jobs kept per App, for their logs. */
export const BUILD_HISTORY = 3;

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export interface BuildPlanInput {
  app: App;
  jobs: readonly ObservedJob[];
  pods: readonly ObservedBuildPod[];
  images: BuildImages;
  gitSecretKeys?: readonly string[];
  /** The operator's registry defaults, for Apps that name no image or push Secret. */
  defaults?: BuildDefaults;
  /** --build-namespace: where build Jobs run. */
  buildNamespace?: string;
  /** The operator's CA ConfigMap and proxy for every build. */
  network?: BuildNetwork;
  /** Why a CA the build is to trust cannot be (caSourceProblem), read when a Job is to be made. */
  caProblem?: string;
}

const gitProtocol = (url: string): string | undefined => {
  try {
    return parseGitUrl(url).protocol;
  } catch {
    return undefined; // the URL check reports it
  }
};

/** What a build needs that the schema cannot check; each names the field. */
export function buildSpecProblems(app: App, defaults: BuildDefaults = {}): string[] {
  const problems: string[] = [];
  if (app.spec.build && imageRepository(app, defaults) === undefined) {
    problems.push('spec.build.image: required, since the operator has no --default-registry');
  }
  if (app.spec.build?.engine === 'kaniko' && app.spec.source && gitProtocol(app.spec.source.git.url) === 'ssh') {
    problems.push('spec.build.engine: kaniko fetches the git context over https only; use buildkit for an ssh url');
  }
  return problems;
}

/**
 * Credentials the engine cannot send: kaniko takes git credentials as a user
 * and password only, so a Secret with just a bearerToken (which the operator's
 * ls-remote accepts) would build without any and fail on the server's refusal.
 */
function credentialProblem(app: App, keys: readonly string[] | undefined): string | undefined {
  if (app.spec.build?.engine !== 'kaniko' || !keys?.includes('bearerToken') || keys.includes('password'))
    return undefined;
  const secret = app.spec.source?.git.secretRef?.name;
  return `spec.build.engine: kaniko sends git credentials as "username" and "password", and Secret "${secret}" has only a "bearerToken": use engine buildkit, or give the Secret a username and password`;
}

const deleteJob = (job: ObservedJob, why: string): BuildAction => ({
  kind: 'deleteJob',
  namespace: job.namespace,
  name: job.name,
  why,
});

/** Why a build Job is left of an App no longer there, if it is: what GC does for a Job the App owns. */
function orphaned(job: ObservedJob, appUid: string | undefined): string | undefined {
  if (appUid === undefined) return 'its App was deleted';
  if (job.appUid !== undefined && job.appUid !== appUid) return 'its App was deleted and made again';
  return undefined;
}

/**
 * The build Jobs in the build namespace whose App is gone (appUid undefined) or was made again:
 * no ownerReference can reach across namespaces, so the operator deletes them itself.
 */
export function orphanedJobs(jobs: readonly ObservedJob[], appUid: string | undefined): BuildAction[] {
  return jobs.flatMap((job) => {
    const why = job.deleting ? undefined : orphaned(job, appUid);
    return why ? [deleteJob(job, why)] : [];
  });
}

/** Builds of other commits or settings: a running one is superseded; finished ones are kept up to BUILD_HISTORY. */
function retiredJobs(others: readonly ObservedJob[], commit: string): BuildAction[] {
  const actions: BuildAction[] = [];
  for (const job of others) {
    if (job.outcome === undefined) {
      actions.push(deleteJob(job, `superseded by ${commit.slice(0, 12)}`));
    }
  }
  const finished = others.filter((j) => j.outcome !== undefined).sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  for (const job of finished.slice(BUILD_HISTORY)) {
    actions.push(deleteJob(job, 'build history limit'));
  }
  return actions;
}

/**
 * What to do about builds, as named steps: nothing without a repository and a
 * resolved commit; else sort the Jobs seen, then make the current commit's Job
 * when there is none, start it when it waits, and read its outcome.
 */
export function planBuild(input: BuildPlanInput): BuildPlan {
  const { app, defaults = {} } = input;
  const source = app.status?.source;
  // No repository: an InvalidSpec (see buildSpecProblems), nothing to build.
  const repository = imageRepository(app, defaults);
  if (!repository || !source) return { actions: [], build: app.status?.build, running: false };
  const { current, actions } = sortJobs(input, source.commit);
  if (!current) return newBuild(input, source, actions);
  if (current.suspended) actions.push(startJob(input, current));
  return { actions, ...jobOutcome(input, current, repository) };
}

/** A build's status and whether it runs: the plan but its actions. */
type BuildOutcome = Omit<BuildPlan, 'actions'>;

/**
 * The Jobs seen, sorted: the one of this commit and these build settings, if any; and the deletions
 * of the others (a Job left of a deleted App, a superseded or surplus one), which come first in the plan.
 */
function sortJobs(input: BuildPlanInput, commit: string): { current?: ObservedJob; actions: BuildAction[] } {
  const { app, jobs, defaults = {} } = input;
  const spec = buildSpecHash(app, defaults);
  const stale = orphanedJobs(jobs, app.metadata.uid ?? '');
  const live = jobs.filter((j) => !j.deleting && !stale.some((a) => a.kind === 'deleteJob' && a.name === j.name));
  const isCurrent = (j: ObservedJob) => j.commit === commit && j.buildSpec === spec;
  const current = live.find(isCurrent);
  const actions = [
    ...stale,
    ...retiredJobs(
      live.filter((j) => !isCurrent(j)),
      commit,
    ),
  ];
  return current ? { current, actions } : { actions };
}

/**
 * No Job for the current commit yet: make it, unless the build cannot succeed as set
 * (a CA it cannot trust, credentials the engine cannot send), which fails it at once.
 */
function newBuild(input: BuildPlanInput, source: { commit: string; ref: string }, actions: BuildAction[]): BuildPlan {
  const { app, defaults = {} } = input;
  const { commit } = source;
  const refused = input.caProblem ?? credentialProblem(app, input.gitSecretKeys);
  if (refused) {
    return {
      actions,
      build: { commit, job: '', phase: 'Failed', message: refused },
      running: false,
      failure: refused,
    };
  }
  const manifest = buildJobManifest({
    app,
    commit,
    ref: source.ref,
    images: input.images,
    defaults,
    ...(input.gitSecretKeys ? { gitSecretKeys: input.gitSecretKeys } : {}),
    ...(input.buildNamespace !== undefined ? { buildNamespace: input.buildNamespace } : {}),
    ...(input.network ? { network: input.network } : {}),
  });
  return {
    actions: [...actions, { kind: 'createJob', manifest }],
    build: { commit, job: manifest.metadata.name, ...awayIn(input.buildNamespace), phase: 'Pending' },
    running: true,
  };
}

/** Made in the build namespace, a Job waits for its Secret copies (a restart may come between the two). */
function startJob(input: BuildPlanInput, job: ObservedJob): BuildAction {
  const { app, defaults = {} } = input;
  const copies = buildSecretCopies(
    job.name,
    app.spec.source?.git.secretRef?.name,
    pushSecretName(app, defaults),
    app.spec.build?.caSecretRef,
  );
  return {
    kind: 'startJob',
    namespace: job.namespace,
    name: job.name,
    uid: job.uid,
    appNamespace: job.appNamespace,
    copies,
  };
}

/** The current commit's Job as status: the image when it succeeded, why when it failed, else its phase. */
function jobOutcome(input: BuildPlanInput, current: ObservedJob, repository: string): BuildOutcome {
  const pod = input.pods.find((p) => p.job === current.name);
  const base = {
    commit: current.commit,
    job: current.name,
    ...(current.namespace !== input.app.metadata.namespace ? { namespace: current.namespace } : {}),
    ...(current.startTime ? { startedAt: current.startTime } : {}),
    ...(current.completionTime ? { finishedAt: current.completionTime } : {}),
  };
  if (current.outcome === 'Complete') {
    // The engine writes the pushed image's digest as the termination message; without one there is no image.
    const digest = pod?.message?.trim();
    if (digest && DIGEST.test(digest)) {
      return { build: { ...base, phase: 'Succeeded', image: `${repository}@${digest}` }, running: false };
    }
    const failure = 'the build finished without an image digest in its termination message';
    return { build: { ...base, phase: 'Failed', message: failure }, running: false, failure };
  }
  if (current.outcome === 'Failed') {
    const failure = failureMessage(current, pod, input.network);
    return { build: { ...base, phase: 'Failed', message: failure }, running: false, failure };
  }
  const phase = pod?.phase === 'Running' ? 'Running' : 'Pending';
  return { build: { ...base, phase }, running: true };
}

/** Why a build Job failed: the Job's reason and the log's error or tail. */
function failureMessage(
  job: ObservedJob,
  pod: ObservedBuildPod | undefined,
  network: BuildNetwork | undefined,
): string {
  const logs = usageError(pod?.message ?? '') ?? lastLines(pod?.message ?? '');
  // The log's tail goes to status and Events: a proxy's password (or any URL's userinfo) never does.
  const mask = masker(proxyCredentials([network?.proxy?.http, network?.proxy?.https]));
  return mask([job.failureMessage, logs].filter(Boolean).join(': ') || 'the build Job failed');
}

/**
 * A command that fails before it builds (kaniko, cobra-style) prints its error
 * and then its whole usage: the tail would be flags. The error line is the news.
 */
export function usageError(text: string, max = 1024): string | undefined {
  const lines = text.split('\n');
  const usage = lines.findIndex((l) => l.startsWith('Usage:'));
  if (usage < 0) return undefined;
  const error = lines
    .slice(0, usage)
    .reverse()
    .find((l) => l.startsWith('Error:'));
  return error ? error.trim().slice(0, max) : undefined;
}

/**
 * A command that stopped before it built and printed its usage after its error (kaniko's is
 * about 8 KB): the kubelet's tail of its log, the termination message, then holds usage only,
 * and its error is at the top of the log, which the caller reads to put before the tail.
 */
export function stoppedAtUsage(text: string): boolean {
  return usageError(text) === undefined && /^Use ".*--help" for more information/m.test(text);
}

/** The tail of a build log for status: a few lines, bounded. */
export function lastLines(text: string, lines = 10, max = 1024): string {
  const tail = text.trimEnd().split('\n').slice(-lines).join('\n');
  return tail.length > max ? tail.slice(-max) : tail;
}
