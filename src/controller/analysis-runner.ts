// Takes the measurements the planner hands out (MeasureRequest), after the
// status that records them as started has landed, and reports each result
// back by its key: the planner records it at the App's next reconcile.
//
// - job checks: the Job is created under a name derived from the key, or
//   adopted when it exists (a restart, a new leader); its result is read from
//   the Job itself, through the analysis Job cache, so it survives a restart.
// - web and prometheus checks: the request runs here in the background, and
//   the conditions judge the answer in the ConditionPool's worker threads, never
//   on this thread, within the App's time budget; the
//   answer is kept in memory until the status that records it has landed. A
//   restart loses it, and the request runs once more for the same key: one
//   measurement is recorded either way (analysis/run.ts rule 2).
//
// Secrets named by arguments are read when a measurement is taken, never
// kept, and masked in whatever comes back (args.ts).
//
// The switch's traffic check (analysis/traffic.ts) goes out the same way, as
// a web request whose answer is judged by the revision it names.
import type { Logger } from 'pino';
import { bindArgs, builtinEnv, resolveCheck, secretRefs } from '../analysis/args.ts';
import { ConditionPool, type JudgeRequest } from '../analysis/condition-pool.ts';
import { type AnalysisJobRef, analysisJobManifest } from '../analysis/job.ts';
import type { MeasurementResult } from '../analysis/measurement.ts';
import { measurePrometheus } from '../analysis/prometheus.ts';
import { MEASUREMENT_WRITE_GAP_MS } from '../analysis/run.ts';
import { errorText, measureRevision, measureWeb } from '../analysis/web.ts';
import type { SecretKeyRef } from '../app/analysis-schema.ts';
import { errorMessage } from '../kube/errors.ts';
import type { MeasureRequest } from '../rollout/cluster-actions.ts';
import type { ClusterClient } from './cluster-client.ts';

export interface MeasuredApp {
  /** namespace/name, the workqueue key. */
  key: string;
  name: string;
  namespace: string;
  uid: string;
}

export interface AnalysisRunnerOptions {
  client: Pick<ClusterClient, 'apply' | 'readSecretValue'>;
  /** The analysis Job of this name in the namespace, from the cache, if any. */
  existingJob: (namespace: string, name: string) => AnalysisJobRef | undefined;
  /** Reconciles the App again: a result is in. */
  enqueue: (appKey: string) => void;
  /** Reconciles the App in this long: results that come in close together are recorded in one write. */
  enqueueAfter?: (appKey: string, delayMs: number) => void;
  /** Only the holder of the App's Lease (its shard's, if sharded) creates Jobs. */
  canWrite: (appKey: string) => boolean;
  logger: Logger;
  fetch?: typeof fetch;
  /** Where conditions are judged; a pool of its own with the default budgets unless given. */
  conditions?: ConditionPool;
}

export class AnalysisRunner {
  private readonly o: AnalysisRunnerOptions;
  /** Per App key, web and prometheus results by measurement key, until status has them. */
  private readonly results = new Map<string, Map<string, MeasurementResult>>();
  /** Measurements under way, by `<app key> <measurement key>`. */
  private readonly running = new Map<string, AbortController>();
  /** Per App key, when it was last woken (or will be) to record results: at most once per MEASUREMENT_WRITE_GAP_MS. */
  private readonly wokenAt = new Map<string, number>();
  /** Job creations sent and not yet answered, with their App key: a shard handed back waits for them. */
  private readonly creating = new Set<{ appKey: string; done: Promise<unknown> }>();
  private stopped = false;
  private readonly conditions: ConditionPool;

  constructor(options: AnalysisRunnerOptions) {
    this.o = options;
    this.conditions = options.conditions ?? new ConditionPool();
  }

  /** The answers that came in for the App and are not yet in its status. */
  resultsFor(appKey: string): ReadonlyMap<string, MeasurementResult> {
    return this.results.get(appKey) ?? new Map();
  }

  /**
   * Called once the App's status has landed. Starts the measurements not under
   * way, and lets go of what status no longer has in flight (recorded, or its
   * run ended): results it recorded, and requests it no longer waits for.
   */
  dispatch(app: MeasuredApp, requests: readonly MeasureRequest[], inFlight: ReadonlySet<string>): void {
    if (this.stopped) return;
    this.release(app.key, inFlight);
    for (const request of requests) {
      const id = `${app.key} ${request.key}`;
      if (this.running.has(id) || this.results.get(app.key)?.has(request.key)) continue;
      const controller = new AbortController();
      this.running.set(id, controller);
      void this.measure(app, request, controller.signal)
        .then((result) => this.report(app.key, request.key, id, result))
        .catch((err: unknown) => this.report(app.key, request.key, id, { phase: 'Error', message: errorText(err) }));
    }
  }

  /** The App is gone: stop its requests and forget its results. */
  forget(appKey: string): void {
    this.release(appKey, new Set());
    this.results.delete(appKey);
    this.wokenAt.delete(appKey);
  }

  /** Resolves once no Job creation for these Apps is in flight (sharded: before their shard is handed back). */
  async settled(belongs: (appKey: string) => boolean): Promise<void> {
    const pending = [...this.creating].filter((c) => belongs(c.appKey)).map((c) => c.done);
    await Promise.allSettled(pending);
  }

  stop(): void {
    this.stopped = true;
    for (const controller of this.running.values()) controller.abort();
    this.running.clear();
    void this.conditions.stop();
  }

  private release(appKey: string, inFlight: ReadonlySet<string>): void {
    const results = this.results.get(appKey);
    for (const key of results?.keys() ?? []) if (!inFlight.has(key)) results?.delete(key);
    if (results?.size === 0) this.results.delete(appKey);
    for (const [id, controller] of this.running) {
      const [owner, key = ''] = splitId(id);
      if (owner === appKey && !inFlight.has(key)) {
        controller.abort();
        this.running.delete(id);
      }
    }
  }

  /** Job results come from the Job: only web and prometheus answers are kept here. */
  private report(appKey: string, key: string, id: string, result: MeasurementResult | undefined): void {
    // Released meanwhile: status no longer waits for it.
    if (!this.running.delete(id) || this.stopped || !result) return;
    let results = this.results.get(appKey);
    if (!results) {
      results = new Map();
      this.results.set(appKey, results);
    }
    results.set(key, result);
    this.wake(appKey);
  }

  /**
   * Each result recorded is a status write: results of a run's checks that
   * come in within MEASUREMENT_WRITE_GAP_MS of the last wake wait for one
   * wake, then, so 20 checks answering apart cost one write, not 20.
   */
  private wake(appKey: string): void {
    const now = performance.now();
    const last = this.wokenAt.get(appKey);
    // A wake still to come records this result too.
    if (last !== undefined && last > now) return;
    const due = last === undefined ? now : Math.max(now, last + MEASUREMENT_WRITE_GAP_MS);
    this.wokenAt.set(appKey, due);
    if (due > now && this.o.enqueueAfter) this.o.enqueueAfter(appKey, due - now);
    else this.o.enqueue(appKey);
  }

  private async measure(app: MeasuredApp, request: MeasureRequest, signal: AbortSignal) {
    const values = await this.argValues(app.namespace, request);
    if (!values.ok) return { phase: 'Error' as const, message: values.errors.join('; ') };
    const resolved = resolveCheck(request.check, values.values, request.builtins);
    if (!resolved.ok) return { phase: 'Error' as const, message: resolved.errors.join('; ') };
    const { provider } = resolved.check;
    const judge = (judged: JudgeRequest, abort?: AbortSignal) => this.conditions.judge(app.key, judged, abort);
    const options = { signal, judge, ...(this.o.fetch ? { fetch: this.o.fetch } : {}) };
    if (request.revision) {
      const { read, expected } = request.revision;
      return measureRevision(resolved, read, expected, { signal, ...(this.o.fetch ? { fetch: this.o.fetch } : {}) });
    }
    if (provider.web) return measureWeb(resolved, options);
    if (provider.prometheus) return measurePrometheus(resolved, options);
    return this.startJob(app, request, resolved.check);
  }

  /** Creates the measurement's Job, or adopts it; undefined: the result will come from the Job. */
  private async startJob(
    app: MeasuredApp,
    request: MeasureRequest,
    check: MeasureRequest['check'],
  ): Promise<MeasurementResult | undefined> {
    const manifest = analysisJobManifest({
      app: { name: app.name, namespace: app.namespace, uid: app.uid },
      key: request.key,
      check,
      env: builtinEnv(request.builtins),
    });
    const name = manifest.metadata.name;
    const existing = this.o.existingJob(app.namespace, name);
    if (existing) {
      if (existing.app === app.name && existing.key === request.key) return undefined;
      return { phase: 'Error', message: `a Job named ${name} exists and is not this measurement's` };
    }
    if (!this.o.canWrite(app.key)) return undefined;
    try {
      this.o.logger.info({ app: app.key, job: name, check: check.name }, 'creating analysis Job');
      const creation = { appKey: app.key, done: this.o.client.apply(manifest) };
      this.creating.add(creation);
      try {
        await creation.done;
      } finally {
        this.creating.delete(creation);
      }
      return undefined;
    } catch (err) {
      return { phase: 'Error', message: `creating analysis Job ${app.namespace}/${name}: ${errorMessage(err)}` };
    }
  }

  private async argValues(namespace: string, request: MeasureRequest) {
    const refs = secretRefs(request.args);
    const read = new Map<string, string | undefined>();
    for (const ref of refs) read.set(refKey(ref), await this.o.client.readSecretValue(namespace, ref.name, ref.key));
    return bindArgs(request.args, (ref) => read.get(refKey(ref)));
  }
}

const refKey = (ref: SecretKeyRef) => `${ref.name}\u0000${ref.key}`;

function splitId(id: string): [string, string] {
  const at = id.indexOf(' ');
  return [id.slice(0, at), id.slice(at + 1)];
}
