// Lease-based leader election (coordination.k8s.io/v1), after client-go's
// leaderelection package: candidates poll one Lease, the holder renews it every
// retry period, and a holder that cannot renew within the renew deadline stops
// leading before anyone else may judge the lease expired (by the rule in
// lease-rule.ts, which the shard election follows too).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { alsoAbortedBy, withDeadline } from './client.ts';
import { errorMessage, ignoreNotFound, isConflict, isNotFound } from './errors.ts';
import { type LeaseHold, type LeaseRecord, leaseHold, type Sighting, sight } from './lease-rule.ts';

export type LeaderElectionLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface LeaderElectorOptions {
  kubeConfig: k8s.KubeConfig;
  namespace: string;
  /** Name of the Lease. */
  name: string;
  /** Unique per process; defaults to defaultIdentity(). */
  identity?: string;
  /** How long others wait after the last observed change before taking over; whole seconds. Default 15000. */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it stops leading. Default 10000. */
  renewDeadlineMs?: number;
  /** Interval between attempts to acquire or renew. Default 2000. */
  retryPeriodMs?: number;
  /** Called on becoming leader; not awaited, renewal goes on meanwhile. */
  onStartedLeading: () => void | Promise<void>;
  /**
   * Called once each time leadership ends (lost, deadline missed or stop()).
   * isLeader() is already false. stop() awaits it before releasing the lease,
   * so it must not await stop() itself: the manager exits instead (src/manager.ts).
   */
  onStoppedLeading: () => void | Promise<void>;
  /** Called when the observed holder changes to a non-empty identity, this one included. */
  onNewLeader?: (identity: string) => void;
  /** For a leader_election_master_status gauge. */
  onLeadershipChange?: (isLeader: boolean) => void;
  logger?: LeaderElectionLogger;
  /** Labels the Lease gets if this elector creates it (a sharded election lists its Leases by label). */
  labels?: Record<string, string>;
  /**
   * The Lease as someone already observed it, and when (performance.now()): if
   * it has not changed since, its expiry counts from then rather than from this
   * elector's first read, so a shard whose holder died is taken within one
   * lease duration of its last renewal being seen, not two.
   */
  seen?: { lease: k8s.V1Lease; at: number };
}

export interface StopOptions {
  /** Hand the lease over at once instead of letting it expire (client-go's ReleaseOnCancel). Default true. */
  release?: boolean;
}

/** Hostname plus a random suffix, so two processes on one host never share an identity. */
export function defaultIdentity(): string {
  return `${hostname()}_${randomBytes(4).toString('hex')}`;
}

// client-go's JitterFactor: candidates wait retryPeriod * [1, 2.2).
const JITTER_FACTOR = 1.2;

const silent: LeaderElectionLogger = { debug() {}, info() {}, warn() {}, error() {} };
const now = (): number => performance.now();

export class LeaderElector {
  readonly identity: string;
  private readonly options: LeaderElectorOptions;
  private readonly api: k8s.CoordinationV1Api;
  private readonly log: LeaderElectionLogger;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly abort = new AbortController();

  private loop?: Promise<void>;
  private stopping?: Promise<void>;
  /** The Lease as last read or written: its resourceVersion conditions the next write; expiry, lease-rule.ts. */
  private observed?: Sighting;
  private reportedLeader = '';
  private leading = false;
  /** Bumped on every change of leadership, to spot attempts that a step-down overtook. */
  private term = 0;
  private deadlineAt = Number.NEGATIVE_INFINITY;
  private deadlineTimer?: NodeJS.Timeout;
  private stoppedLeading: Promise<void> = Promise.resolve();

  constructor(options: LeaderElectorOptions) {
    this.options = options;
    this.identity = options.identity ?? defaultIdentity();
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.log = options.logger ?? silent;
    this.api = options.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    if (options.seen) this.observed = sight(options.seen.lease, options.seen.at);
    // The same checks as client-go's NewLeaderElector.
    if (this.identity === '') throw new RangeError('leader election identity must not be empty');
    if (!(this.retryPeriodMs > 0)) throw new RangeError('retryPeriodMs must be positive');
    if (!(this.leaseDurationMs >= 1000) || this.leaseDurationMs % 1000 !== 0) {
      throw new RangeError('leaseDurationMs must be a whole number of seconds, at least 1000');
    }
    if (!(this.leaseDurationMs > this.renewDeadlineMs)) {
      throw new RangeError('leaseDurationMs must be greater than renewDeadlineMs');
    }
    if (!(this.renewDeadlineMs > JITTER_FACTOR * this.retryPeriodMs)) {
      throw new RangeError(`renewDeadlineMs must be greater than ${JITTER_FACTOR} * retryPeriodMs`);
    }
  }

  /** True while this process holds the lease and its renew deadline has not passed. */
  isLeader(): boolean {
    // Also checks the clock, in case a blocked event loop delays the deadline timer.
    return this.leading && now() < this.deadlineAt;
  }

  /** Starts the election loop; resolves once it runs, not once leading. Not restartable after stop(). */
  async start(): Promise<void> {
    if (this.loop || this.stopping) throw new Error('leader elector already started or stopped');
    this.log.info({ lease: this.describe(), identity: this.identity }, 'attempting to acquire leader lease');
    const signal = this.abort.signal;
    this.loop = this.run(signal).catch((err: unknown) => {
      // stop() ends the loop by aborting its sleep, which rejects.
      if (signal.aborted) return;
      this.log.error({ err, lease: this.describe() }, 'leader election loop failed');
      this.stepDown('the election loop failed');
    });
  }

  /**
   * Stops the loop; if leading, stops leading, awaits onStoppedLeading and then
   * (unless release is false) releases the lease so a standby takes over at once.
   * Idempotent; no timer or request outlives the returned promise.
   */
  stop(options: StopOptions = {}): Promise<void> {
    if (!this.stopping) {
      // Assigned before shutdown runs, so that a stop() it leads to (from onStoppedLeading) starts no second one.
      const { promise, resolve } = Promise.withResolvers<void>();
      this.stopping = promise;
      resolve(this.shutdown(options.release ?? true));
    }
    return this.stopping;
  }

  private async shutdown(release: boolean): Promise<void> {
    this.abort.abort(new Error('leader elector stopped'));
    this.stepDown('stopping');
    await this.loop;
    // The old term's work must have ended before a standby can start a new one.
    await this.stoppedLeading;
    // Checks the server rather than our state: an aborted write may still have made us the holder.
    if (release && this.loop) await this.release();
  }

  private async run(signal: AbortSignal): Promise<void> {
    const stopped = aborted(signal);
    while (!signal.aborted) {
      if (this.leading) await this.renewOnce(signal);
      else await this.acquireOnce(signal);
      if (signal.aborted) return;
      if (this.leading) {
        await sleep(this.retryPeriodMs, undefined, { signal });
      } else {
        // Let the old term's work wind down before a new term can start.
        await Promise.race([this.stoppedLeading, stopped]);
        await sleep(this.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), undefined, { signal });
      }
    }
  }

  private async acquireOnce(signal: AbortSignal): Promise<void> {
    const sentAt = now();
    // A result later than the renew deadline would be refused below: the attempt ends there.
    const acquired = await withDeadline(this.renewDeadlineMs, signal, (attempt) => this.tryAcquireOrRenew(attempt));
    if (signal.aborted) return;
    this.maybeReportTransition();
    if (!acquired) return;
    if (now() - sentAt >= this.renewDeadlineMs) {
      // Too slow to count as holding it; the next attempt renews it quickly.
      this.log.warn({ lease: this.describe() }, 'acquired the lease too late to lead; retrying');
      return;
    }
    this.becomeLeader(sentAt);
  }

  private async renewOnce(signal: AbortSignal): Promise<void> {
    const term = this.term;
    const sentAt = now();
    // As client-go's renew: the attempt, retries within it included, ends at the renew deadline.
    const renewed = await withDeadline(Math.max(0, this.deadlineAt - sentAt), signal, (attempt) =>
      this.tryAcquireOrRenew(attempt),
    );
    // A step-down while the request was in flight makes its result stale.
    if (signal.aborted || term !== this.term) return;
    this.maybeReportTransition();
    if (renewed) {
      this.armDeadline(sentAt);
      return;
    }
    const hold = this.hold();
    if (hold.state === 'other') this.stepDown(`the lease is held by ${hold.holder}`);
    // Otherwise keep retrying until the renew deadline fires.
  }

  private becomeLeader(sentAt: number): void {
    this.leading = true;
    this.term++;
    this.armDeadline(sentAt);
    this.log.info({ lease: this.describe(), identity: this.identity }, 'successfully acquired lease');
    this.notify('onLeadershipChange', () => this.options.onLeadershipChange?.(true));
    void this.settle('onStartedLeading', () => this.options.onStartedLeading());
  }

  /** Synchronous so that isLeader() is false before anything else runs. */
  private stepDown(reason: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.term++;
    this.deadlineAt = Number.NEGATIVE_INFINITY;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    const fields = { lease: this.describe(), identity: this.identity, reason };
    if (reason === 'stopping') this.log.info(fields, 'stopped leading');
    else this.log.warn(fields, 'lost leadership');
    this.notify('onLeadershipChange', () => this.options.onLeadershipChange?.(false));
    this.stoppedLeading = this.settle('onStoppedLeading', () => this.options.onStoppedLeading());
  }

  /** The deadline runs from when the last successful write was sent: others may count from no earlier. */
  private armDeadline(sentAt: number): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineAt = sentAt + this.renewDeadlineMs;
    const remaining = this.deadlineAt - now();
    if (remaining <= 0) {
      this.stepDown('renew deadline exceeded');
      return;
    }
    this.deadlineTimer = setTimeout(() => this.stepDown('renew deadline exceeded'), remaining);
  }

  /**
   * client-go's tryAcquireOrRenew: true when this process holds the lease
   * after the call. The signal ends the attempt (stop, or its deadline).
   */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const time = new k8s.V1MicroTime();
    const desired: k8s.V1LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.leaseDurationMs / 1000,
      acquireTime: time,
      renewTime: time,
      leaseTransitions: 0,
    };
    const lease = this.describe();

    // 1. Fast path: the holder updates optimistically from the version it wrote last.
    const last = this.observed;
    if (last && this.hold().state === 'mine') {
      const renewed = await this.write(
        () => this.replace(last.lease, { ...desired, ...kept(last.record, time) }, signal),
        signal,
        (err) => this.log.debug({ err: errorMessage(err), lease }, 'optimistic renew failed, falling back'),
      );
      if (renewed || signal.aborted) return renewed;
    }

    // 2. Read the lease, or create it.
    let current: k8s.V1Lease | undefined;
    try {
      current = await ignoreNotFound(this.request((o) => this.api.readNamespacedLease(this.ref(), o), signal));
    } catch (err) {
      if (!signal.aborted) this.log.error({ err: errorMessage(err), lease }, 'error retrieving the lease');
      return false;
    }
    if (current === undefined) return this.create(desired, signal);

    // 3. Note when the record last changed, then respect an unexpired holder.
    const { record } = this.observe(current, false);
    const hold = this.hold();
    if (hold.state === 'other') {
      this.log.debug({ lease, holder: hold.holder }, 'lease is held and not yet expired');
      return false;
    }

    // 4. Take it over (or renew it), conditional on the version just read.
    const spec =
      record.holderIdentity === this.identity
        ? { ...desired, ...kept(record, time) }
        : { ...desired, leaseTransitions: record.leaseTransitions + 1 };
    return this.write(
      () => this.replace(current, spec, signal),
      signal,
      (err) => {
        if (isConflict(err)) this.log.info({ lease }, 'another candidate updated the lease first');
        else this.log.error({ err: errorMessage(err), lease }, 'failed to update the lease');
      },
    );
  }

  private create(spec: k8s.V1LeaseSpec, signal: AbortSignal): Promise<boolean> {
    const { namespace } = this.options;
    const labels = this.options.labels;
    const body = { metadata: { ...this.ref(), ...(labels ? { labels } : {}) }, spec };
    return this.write(
      () => this.request((o) => this.api.createNamespacedLease({ namespace, body }, o), signal),
      signal,
      (err) => this.log.info({ err: errorMessage(err), lease: this.describe() }, 'could not create the lease'),
    );
  }

  /** Sends one write of the lease: true when it went through, and then what was written is observed. */
  private async write(
    send: () => Promise<k8s.V1Lease>,
    signal: AbortSignal,
    failed: (err: unknown) => void,
  ): Promise<boolean> {
    try {
      this.observe(await send(), true);
      return true;
    } catch (err) {
      // An aborted write says nothing about the lease: stop() is under way, or the attempt's deadline passed.
      if (!signal.aborted) failed(err);
      return false;
    }
  }

  /** Part of stop(), so not aborted by it; held to the renew deadline as an attempt is. */
  private async release(): Promise<void> {
    try {
      await withDeadline(this.renewDeadlineMs, undefined, async (signal) => {
        const lease = await this.request((o) => this.api.readNamespacedLease(this.ref(), o), signal);
        if ((lease.spec?.holderIdentity ?? '') !== this.identity) return;
        const time = new k8s.V1MicroTime();
        // As client-go's release: no holder and a 1 s duration, keeping the transition count.
        const spec = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: time, renewTime: time };
        await this.replace(lease, { ...spec, leaseTransitions: lease.spec?.leaseTransitions ?? 0 }, signal);
        this.log.info({ lease: this.describe(), identity: this.identity }, 'released the lease');
      });
    } catch (err) {
      if (!isNotFound(err))
        this.log.warn({ err: errorMessage(err), lease: this.describe() }, 'failed to release the lease');
    }
  }

  /**
   * Replaces the spec's election fields, keeping any others. The resourceVersion
   * of the lease read (or last written) makes it conditional: a writer whose
   * view is stale gets a 409 Conflict and writes nothing.
   */
  private replace(lease: k8s.V1Lease, spec: k8s.V1LeaseSpec, signal: AbortSignal): Promise<k8s.V1Lease> {
    const body: k8s.V1Lease = { ...lease, spec: { ...lease.spec, ...spec } };
    return this.request((o) => this.api.replaceNamespacedLease({ ...this.ref(), body }, o), signal);
  }

  /**
   * Sends one request of an attempt, aborted with it. Its other bounds are the
   * KubeConfig's, as for every request of the operator (kube/client.ts): the
   * request timeout, and the fence of a replica that lost its lease.
   */
  private request<T>(send: (options: k8s.ConfigurationOptions) => Promise<T>, signal: AbortSignal): Promise<T> {
    return send(alsoAbortedBy(signal));
  }

  /** Keeps the lease for its resourceVersion; the expiry clock restarts when the record changed or we wrote it. */
  private observe(lease: k8s.V1Lease, wrote: boolean): Sighting {
    this.observed = sight(lease, now(), wrote ? undefined : this.observed);
    return this.observed;
  }

  /** Who holds the lease now, as last observed (lease-rule.ts); free before the first observation. */
  private hold(): LeaseHold {
    return this.observed ? leaseHold(this.observed, this.identity, now()) : { state: 'free' };
  }

  private maybeReportTransition(): void {
    const holder = this.observed?.record.holderIdentity ?? '';
    if (holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    if (holder === '') return;
    this.log.info({ lease: this.describe(), leader: holder }, 'new leader elected');
    this.notify('onNewLeader', () => this.options.onNewLeader?.(holder));
  }

  /** Runs a callback so that neither a throw nor a rejection escapes into the election loop. */
  private settle(name: string, fn: () => void | Promise<void>): Promise<void> {
    try {
      return Promise.resolve(fn()).catch((err: unknown) => this.log.error({ err }, `${name} failed`));
    } catch (err) {
      this.log.error({ err }, `${name} failed`);
      return Promise.resolve();
    }
  }

  private notify(name: string, fn: () => void): void {
    void this.settle(name, fn);
  }

  private ref(): { name: string; namespace: string } {
    return { name: this.options.name, namespace: this.options.namespace };
  }

  private describe(): string {
    return `${this.options.namespace}/${this.options.name}`;
  }
}

/** What a holder keeps when it renews: when it first acquired the lease, and the transition count. */
function kept(
  record: LeaseRecord,
  fallback: k8s.V1MicroTime,
): Pick<k8s.V1LeaseSpec, 'acquireTime' | 'leaseTransitions'> {
  return {
    acquireTime: record.acquireTime ? new k8s.V1MicroTime(record.acquireTime) : fallback,
    leaseTransitions: record.leaseTransitions,
  };
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
