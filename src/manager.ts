// The operator's runnables and their order, after controller-runtime's manager.
// What every replica runs (the caches, then the HTTP server) starts first, one after
// the other in the order added; what only the leader runs (the controller)
// starts once this replica leads, and always stops before the lease is handed
// over. Losing the lease ends the process at once: the API requests in flight
// are aborted (fenced) and nothing drains, so no write of this term can land in
// the next one.
//
// Sharded (--shards N), the election is a set of shard Leases: the
// leader-only runnables start at once, writes are allowed per App (its shard
// held), a shard handed back is drained by the election itself, and losing a
// shard any other way ends the process as losing the lease does.
//
// Pure: the elector, the fence and the exit are handed in, so the order is
// unit-tested with fakes.

/** A part of the process the manager starts and stops. */
export interface Runnable {
  /** Named in logs. */
  readonly name: string;
  /** Resolves once it runs (caches: once synced); a rejection stops the start. */
  start(): Promise<void> | void;
  /** Resolves once it has stopped; a controller drains here, within the grace period. */
  stop(): Promise<void> | void;
}

/** What the manager needs of a leader elector (src/kube/leader-election.ts). */
export interface Election {
  start(): Promise<void>;
  /** With release, hands the lease over at once rather than letting it expire. */
  stop(options: { release: boolean }): Promise<void>;
  isLeader(): boolean;
  /**
   * Sharded (src/kube/shard-election.ts): whether this replica may write for
   * this App, i.e. leads its shard. Without it, the one lease covers every App.
   */
  mayWrite?(appKey: string): boolean;
}

/** The manager's side of an election, given to the elector it builds. */
export interface LeadershipCallbacks {
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
}

type LogFn = (obj: object, msg: string) => void;

export interface ManagerOptions {
  logger: { info: LogFn; warn: LogFn; error: LogFn };
  /** Builds the elector; without one this replica leads from the start (a single replica). */
  election?: (callbacks: LeadershipCallbacks) => Election;
  /** After a stop is asked for, how long stopping may take before the process exits anyway. */
  gracefulShutdownTimeoutMs: number;
  /** Aborts every API request in flight; called before exiting without a drain. */
  fence: (reason: Error) => void;
  /** Ends the process (process.exit); called at most once. */
  exit: (code: number) => void;
}

/** Where the process is: readiness and writes follow it. */
type Phase = 'starting' | 'running' | 'stopping' | 'exited';

/** Where the leader-only runnables are; while they run or drain, losing the lease is fatal. */
type LeaderPhase = 'waiting' | 'running' | 'stopped';

export class Manager {
  private readonly options: ManagerOptions;
  private readonly log: ManagerOptions['logger'];
  private readonly everyReplica: Runnable[] = [];
  private readonly leaderOnly: Runnable[] = [];
  /** Those whose start was called, in that order: stop() stops them, the last first. */
  private readonly begun = { everyReplica: [] as Runnable[], leaderOnly: [] as Runnable[] };
  private started = false;
  private phase: Phase = 'starting';
  private leaderPhase: LeaderPhase = 'waiting';
  private elector?: Election;
  private stopping?: Promise<void>;
  private graceTimer?: NodeJS.Timeout;

  constructor(options: ManagerOptions) {
    this.options = options;
    this.log = options.logger;
  }

  /** Adds a runnable after those added before; leader-only ones run only while this replica leads. */
  add(runnable: Runnable, { leaderOnly = false } = {}): this {
    if (this.started) throw new Error(`cannot add ${runnable.name}: the manager has started`);
    (leaderOnly ? this.leaderOnly : this.everyReplica).push(runnable);
    return this;
  }

  /** True once every replica's runnables run, until a stop begins: /readyz. */
  isReady(): boolean {
    return this.phase === 'running';
  }

  /** True while this replica holds the lease (always, without an election). */
  isLeader(): boolean {
    return this.options.election ? (this.elector?.isLeader() ?? false) : true;
  }

  /**
   * Whether the controller may write for this App: it leads (sharded: the
   * App's shard), and no stop has begun. Without an App: whether it leads at all.
   */
  canWrite(appKey?: string): boolean {
    if (this.phase !== 'running') return false;
    if (!this.options.election) return true;
    const elector = this.elector;
    if (appKey !== undefined && elector?.mayWrite) return elector.mayWrite(appKey);
    return elector?.isLeader() ?? false;
  }

  /**
   * Starts every replica's runnables in order, then the election (or, without
   * one, the leader-only runnables). Rejects if a runnable fails to start.
   */
  async start(): Promise<void> {
    if (this.started) throw new Error('the manager has already started');
    this.started = true;
    for (const runnable of this.everyReplica) {
      if (this.phase !== 'starting') return;
      this.begun.everyReplica.push(runnable);
      await runnable.start();
    }
    if (this.phase !== 'starting') return;
    this.phase = 'running';
    const { election } = this.options;
    if (!election) return this.lead();
    this.elector = election({
      onStartedLeading: () => void this.lead(),
      onStoppedLeading: () => this.stoppedLeading(),
    });
    await this.elector.start();
  }

  /**
   * A graceful stop (SIGTERM): readiness off, the leader-only runnables
   * stopped (drained), the lease released, then every replica's runnables in
   * reverse order, and exit 0. Past the grace period the process exits 1.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopInOrder();
    return this.stopping;
  }

  private async stopInOrder(): Promise<void> {
    if (this.phase === 'exited') return;
    this.phase = 'stopping';
    const grace = this.options.gracefulShutdownTimeoutMs;
    this.graceTimer = setTimeout(
      () => this.exitNow(`still stopping after ${grace / 1000}s (--graceful-shutdown-timeout)`),
      grace,
    );
    this.log.info(
      { gracefulShutdownTimeoutMs: grace },
      'stopping: readiness off, draining reconciles, releasing the lease',
    );
    let failed = await this.stopAll(this.begun.leaderOnly);
    this.leaderPhase = 'stopped';
    await this.elector?.stop({ release: true });
    failed = (await this.stopAll(this.begun.everyReplica)) || failed;
    clearTimeout(this.graceTimer);
    this.finish(failed ? 1 : 0);
  }

  /** Starts the leader-only runnables in order, unless a stop came first. */
  private async lead(): Promise<void> {
    if (this.phase !== 'running' || this.leaderPhase !== 'waiting') return;
    this.leaderPhase = 'running';
    const names = this.leaderOnly.map((r) => r.name);
    if (this.options.election) this.log.info({ runnables: names }, 'became leader: reconciling');
    for (const runnable of this.leaderOnly) {
      if (this.phase !== 'running') return;
      this.begun.leaderOnly.push(runnable);
      try {
        await runnable.start();
      } catch (err) {
        this.exitNow(`${runnable.name} failed to start`, err);
        return;
      }
    }
  }

  /**
   * No draining on a lost lease, as controller-runtime: a write held up in the
   * network must not land once another replica leads. Once the leader-only
   * runnables have stopped, nothing of this term can write any more: the
   * lease ending then is stop() handing it over.
   */
  private stoppedLeading(): void {
    if (this.leaderPhase === 'running') this.exitNow('lost the lease');
  }

  /** Stops runnables, the last begun first; a failure is logged and the rest still stop. */
  private async stopAll(begun: readonly Runnable[]): Promise<boolean> {
    let failed = false;
    for (const runnable of [...begun].reverse()) {
      try {
        await runnable.stop();
      } catch (err) {
        failed = true;
        this.log.error({ err }, `${runnable.name} failed to stop`);
      }
    }
    return failed;
  }

  /** Aborts what is in flight and exits 1 before anything else runs. */
  private exitNow(why: string, err?: unknown): void {
    if (this.phase === 'exited') return;
    this.options.fence(new Error(why));
    this.log.error(err ? { err } : {}, `${why}: aborted the API requests in flight, exiting without draining`);
    this.finish(1);
  }

  private finish(code: number): void {
    if (this.phase === 'exited') return;
    this.phase = 'exited';
    clearTimeout(this.graceTimer);
    this.options.exit(code);
  }
}
