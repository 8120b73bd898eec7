// `kubectl teal logs APP [-f] [--commit SHA | --check NAME]`: the logs of a
// build Job's pod, or of a job check's, read through the API server with
// client-node's Log. When the node cannot
// give logs (a pod gone from its node, or a simulated one), the container's
// termination message is the next best thing: failed builds keep the tail
// of their log there (FallbackToLogsOnError). Every line is masked of the
// credentials the pod was given, by the rule the dashboard's build log applies
// too (build/log-scrub.ts): those of the Secrets the caller may read, and any
// URL's userinfo and Authorization header whatever they are.
import { STATUS_CODES } from 'node:http';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Log, type V1Pod } from '@kubernetes/client-node';
import { analysisJobName } from '../../analysis/job.ts';
import { measurementKey } from '../../analysis/run.ts';
import type { AppAnalysisRun } from '../../app/schema.ts';
import { LABEL_COMMIT } from '../../build/job.ts';
import { LineSplitter } from '../../build/log-lines.ts';
import { credentialsOf, logScrubber, podProxyCredentials, podSecretNames } from '../../build/log-scrub.ts';
import { apiStatusOf, ignoreNotFound } from '../../kube/errors.ts';
import { CliError, EXIT, UsageError } from '../errors.ts';
import { explain } from '../explain.ts';
import type { Flags } from '../flags.ts';
import { type AppObject, Session } from '../kube.ts';

const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
/** How long a one-shot read may wait for the node, through the API server. */
const READ_TIMEOUT_MS = 30_000;

const newest = <T extends { metadata?: { creationTimestamp?: Date | string } }>(items: T[]): T | undefined =>
  [...items].sort((a, b) => time(b) - time(a))[0];
const time = (o: { metadata?: { creationTimestamp?: Date | string } }) =>
  new Date(o.metadata?.creationTimestamp ?? 0).getTime();

/** A build Job, and where: the App's namespace, or the operator's build namespace (status.build.namespace). */
interface JobAt {
  name: string;
  namespace: string;
}

async function buildJob(session: Session, app: AppObject, commit: string | undefined): Promise<JobAt> {
  const namespace = app.status?.build?.namespace ?? session.namespace;
  const name = app.metadata.name;
  if (commit !== undefined) {
    if (!/^[0-9a-f]{4,40}$/i.test(commit))
      throw new UsageError('--commit must be a commit SHA or a prefix of it', 'logs');
    const jobs = (await session.jobs(app)).filter((j) =>
      (j.metadata?.labels?.[LABEL_COMMIT] ?? '').startsWith(commit.toLowerCase()),
    );
    const commits = new Set(jobs.map((j) => j.metadata?.labels?.[LABEL_COMMIT]));
    if (commits.size > 1) {
      throw new CliError(`commit ${commit} is ambiguous: builds of ${[...commits].join(', ')}; give more digits`);
    }
    const job = newest(jobs);
    if (!job?.metadata?.name) {
      throw new CliError(`App "${name}" has no build of commit ${commit} (Teal keeps only recent build Jobs)`);
    }
    return { name: job.metadata.name, namespace };
  }
  const job = app.status?.build?.job;
  if (job) return { name: job, namespace };
  if (app.spec.image) throw new CliError(`App "${name}" deploys a ready image (spec.image): it has no builds`);
  throw new CliError(`App "${name}" has no build yet (phase ${app.status?.phase ?? 'unknown'})`);
}

/** The Job of the check's latest measurement, in the latest run that has the check (post-promotion first). */
function checkJob(app: AppObject, check: string): string {
  const name = app.metadata.name;
  const { prePromotionAnalysis: pre, postPromotionAnalysis: post } = app.status ?? {};
  const runs = [post, pre].filter((r): r is AppAnalysisRun => r !== undefined);
  const run = runs.find((r) => r.checks.some((c) => c.name === check));
  if (!run) {
    const known = [...new Set(runs.flatMap((r) => r.checks.map((c) => c.name)))];
    throw new CliError(
      `App "${name}" has no run with a check "${check}"${known.length > 0 ? ` (its checks: ${known.join(', ')})` : ''}`,
    );
  }
  const checkStatus = run.checks.find((c) => c.name === check);
  if (checkStatus?.provider !== undefined && checkStatus.provider !== 'job') {
    throw new CliError(
      `check "${check}" is a ${checkStatus.provider} check: its measurements are in "kubectl teal get ${name}"`,
    );
  }
  const last = checkStatus?.measurements.at(-1);
  if (!last) throw new CliError(`check "${check}" of App "${name}" has not been measured yet`);
  return analysisJobName(name, measurementKey(run, check, last.n));
}

const started = (pod: V1Pod) =>
  (pod.status?.containerStatuses ?? []).some((c) => c.state?.running || c.state?.terminated);

type What = 'build' | 'analysis';

export async function logs(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  if (flags.check !== undefined && flags.commit !== undefined) {
    throw new UsageError('--check and --commit name different Jobs: give one', 'logs');
  }
  const session = new Session(flags);
  const app = await session.getApp(name);
  const what: What = flags.check !== undefined ? 'analysis' : 'build';
  const at =
    flags.check !== undefined
      ? { name: checkJob(app, flags.check), namespace: session.namespace }
      : await buildJob(session, app, flags.commit);
  await existingJob(session, at, what, name);
  const pod = await startedPod(session, at, what, flags.follow);
  const scrub = logScrubber(await podCredentials(session, at.namespace, pod));
  return showLogs(session, pod, at.namespace, what, flags.follow, scrub);
}

/** Fails, saying why, when the Job is gone (Teal keeps only the recent ones). */
async function existingJob(session: Session, at: JobAt, what: What, app: string): Promise<void> {
  const { name, namespace } = at;
  const job = await session.call({ verb: 'get', resource: 'jobs.batch', shown: `${what} Job`, name, namespace }, () =>
    ignoreNotFound(session.batch.readNamespacedJob({ namespace, name })),
  );
  if (!job) {
    const kept = what === 'build' ? 'Teal keeps only recent build Jobs' : 'Teal keeps only the latest run of each kind';
    throw new CliError(`${what} Job "${name}" of App "${app}" is gone (${kept})`);
  }
}

/** The Job's newest pod once its container started; with -f it waits for that, as kubectl logs -f does. */
async function startedPod(session: Session, at: JobAt, what: What, follow: boolean): Promise<V1Pod> {
  const { name: jobName, namespace } = at;
  for (;;) {
    const pods = await session.call({ verb: 'list', resource: 'pods', namespace }, () =>
      session.core.listNamespacedPod({ namespace, labelSelector: `${JOB_NAME_LABEL}=${jobName}` }),
    );
    const pod = newest(pods.items);
    if (pod && started(pod)) return pod;
    if (!follow) {
      throw new CliError(
        pod
          ? `${what} pod "${pod.metadata?.name}" has not started yet (${pod.status?.phase ?? 'Pending'}): use -f to wait for it`
          : `${what} Job "${jobName}" has no pod yet: use -f to wait for it`,
      );
    }
    await sleep(1_000);
  }
}

/**
 * Writes the pod's log, line by line and masked, to stdout; without -f a node
 * that does not answer within READ_TIMEOUT_MS is an error. A node that cannot
 * give logs leaves the termination message (noLogs).
 */
async function showLogs(
  session: Session,
  pod: V1Pod,
  ns: string,
  what: What,
  follow: boolean,
  scrub: (line: string) => string,
): Promise<number> {
  const podName = pod.metadata?.name ?? '';
  const container = pod.spec?.containers[0]?.name ?? what;
  const splitter = new LineSplitter();
  const show = (lines: string[]) => {
    if (lines.length > 0) process.stdout.write(`${lines.map(scrub).join('\n')}\n`);
  };
  const sink = new PassThrough();
  let bytes = 0;
  sink.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    show(splitter.push(chunk));
  });
  const ended = new Promise<void>((resolve) =>
    sink.once('end', () => {
      show(splitter.end());
      resolve();
    }),
  );
  const op = { verb: 'read the logs of', rbacVerb: 'get', resource: 'pods/log', shown: `${what} pod`, name: podName };
  try {
    const request = new Log(session.kc).log(ns, podName, container, sink, { follow });
    await (follow
      ? request
      : Promise.race([
          request,
          // Unref'd: once the logs are read, the timer keeps no process alive.
          sleep(READ_TIMEOUT_MS, undefined, { ref: false }).then(() => {
            throw new CliError(`the node of ${what} pod "${podName}" did not answer within 30 s`);
          }),
        ]));
  } catch (err) {
    const status = apiStatusOf(err);
    if (status && status.code !== 403 && status.code !== 401 && status.code !== 404) {
      // client-node keeps the Status message of a 500 only; name the others by their HTTP status.
      const said = status.message || `HTTP ${status.code} ${STATUS_CODES[status.code] ?? ''}`.trimEnd();
      return noLogs(pod, what, `its node did not serve them (${said})`, EXIT.error, scrub);
    }
    throw explain(err, { user: session.kubeconfigUser, ...op, namespace: ns }, session.server);
  }
  await ended;
  if (bytes === 0) {
    return noLogs(pod, what, 'its container wrote nothing, or the node no longer has them', EXIT.ok, scrub);
  }
  return EXIT.ok;
}

/** The credentials of the Secrets the pod reads, those the caller may read: a Secret it may not read is skipped. */
async function podCredentials(session: Session, ns: string, pod: V1Pod): Promise<string[]> {
  const secrets = await Promise.all(
    podSecretNames(pod).map((name) =>
      session.core.readNamespacedSecret({ namespace: ns, name }).then(
        (secret) => secret.data,
        () => undefined,
      ),
    ),
  );
  return [...credentialsOf(secrets), ...podProxyCredentials(pod)];
}

/** Says why there are no logs, and shows the termination message when there is one. */
function noLogs(pod: V1Pod, what: string, why: string, code: number, scrub: (line: string) => string): number {
  const name = pod.metadata?.name ?? '';
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  process.stderr.write(`${code === EXIT.ok ? '' : 'error: '}${what} pod "${name}" has no logs to show: ${why}\n`);
  if (terminated?.message) {
    process.stderr.write(
      `its container ended (${terminated.reason ?? 'Terminated'}, exit code ${terminated.exitCode}) with this termination message:\n`,
    );
    process.stdout.write(`${terminated.message.trimEnd().split('\n').map(scrub).join('\n')}\n`);
  }
  return code;
}
