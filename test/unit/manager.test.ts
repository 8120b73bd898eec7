// The operator's manager (src/manager.ts) with fake runnables and a fake
// elector: the order things start and stop in, leader-only runnables only
// while leading, and a lost lease ending the process at once, without a drain.
import { describe, expect, it } from 'vitest';
import { type Election, type LeadershipCallbacks, Manager, type Runnable } from '../../src/manager.ts';

/** Everything the fakes saw, in order: "start:caches", "stop:election", "release", "fence: …", "exit 1". */
type Trace = string[];

const silent = { info() {}, warn() {}, error() {} };

/** How a fake's start or stop ends: at once (undefined), when a promise settles, or by throwing an error. */
type Outcome = Promise<void> | Error | undefined;

async function end(outcome: Outcome): Promise<void> {
  if (outcome instanceof Error) throw outcome;
  await outcome;
}

/** A runnable that records its calls. */
function runnable(trace: Trace, name: string, hold: { start?: Outcome; stop?: Outcome } = {}): Runnable {
  return {
    name,
    start: async () => {
      trace.push(`start:${name}`);
      await end(hold.start);
    },
    stop: async () => {
      trace.push(`stop:${name}`);
      await end(hold.stop);
    },
  };
}

/** An elector the test drives: win() and lose() the lease; stop() hands it over as LeaderElector does. */
class FakeElection implements Election {
  leading = false;
  callbacks?: LeadershipCallbacks;
  private readonly trace: Trace;
  constructor(trace: Trace) {
    this.trace = trace;
  }
  async start(): Promise<void> {
    this.trace.push('election');
  }
  async stop({ release }: { release: boolean }): Promise<void> {
    this.trace.push('stop:election');
    const held = this.leading;
    if (held) this.lose();
    if (held && release) this.trace.push('release');
  }
  isLeader(): boolean {
    return this.leading;
  }
  win(): void {
    this.leading = true;
    this.callbacks?.onStartedLeading();
  }
  lose(): void {
    this.leading = false;
    this.callbacks?.onStoppedLeading();
  }
}

/** A manager over caches and an HTTP server (every replica) and a controller (leader-only). */
function setup(
  options: { election?: boolean; graceMs?: number; hold?: Record<string, Parameters<typeof runnable>[2]> } = {},
) {
  const trace: Trace = [];
  const election = new FakeElection(trace);
  const exited = Promise.withResolvers<number>();
  const manager = new Manager({
    logger: silent,
    gracefulShutdownTimeoutMs: options.graceMs ?? 60_000,
    fence: (reason) => trace.push(`fence: ${reason.message}`),
    exit: (code) => {
      trace.push(`exit ${code}`);
      exited.resolve(code);
    },
    ...(options.election === false
      ? {}
      : {
          election: (callbacks: LeadershipCallbacks) => {
            election.callbacks = callbacks;
            return election;
          },
        }),
  });
  const hold = options.hold ?? {};
  manager.add(runnable(trace, 'http', hold.http));
  manager.add(runnable(trace, 'caches', hold.caches));
  manager.add(runnable(trace, 'sources', hold.sources), { leaderOnly: true });
  manager.add(runnable(trace, 'controller', hold.controller), { leaderOnly: true });
  return { trace, election, manager, exited: exited.promise };
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('starting', () => {
  it('starts every replica’s runnables in order, each once the one before has started, then the election', async () => {
    const caches = Promise.withResolvers<void>();
    const { trace, manager } = setup({ hold: { caches: { start: caches.promise } } });
    const started = manager.start();
    await settle();
    expect(trace).toEqual(['start:http', 'start:caches']);
    expect(manager.isReady()).toBe(false);

    caches.resolve();
    await started;
    expect(trace).toEqual(['start:http', 'start:caches', 'election']);
    expect(manager.isReady()).toBe(true);
  });

  it('starts the leader-only runnables, in order, only once this replica leads', async () => {
    const { trace, election, manager } = setup();
    await manager.start();
    await settle();
    expect(trace).not.toContain('start:sources');
    expect(manager.isLeader()).toBe(false);
    expect(manager.canWrite()).toBe(false);

    election.win();
    await settle();
    expect(trace).toEqual(['start:http', 'start:caches', 'election', 'start:sources', 'start:controller']);
    expect(manager.isLeader()).toBe(true);
    expect(manager.canWrite()).toBe(true);
  });

  it('without leader election, starts the leader-only runnables right after the others', async () => {
    const { trace, manager } = setup({ election: false });
    await manager.start();
    expect(trace).toEqual(['start:http', 'start:caches', 'start:sources', 'start:controller']);
    expect(manager.isLeader()).toBe(true);
    expect(manager.canWrite()).toBe(true);
  });

  it('rejects when a runnable fails to start, and starts nothing after it', async () => {
    const { trace, manager } = setup({ hold: { http: { start: new Error('address in use') } } });
    await expect(manager.start()).rejects.toThrow('address in use');
    expect(trace).toEqual(['start:http']);
    expect(manager.isReady()).toBe(false);
  });

  it('exits 1, fenced, when a leader-only runnable fails to start', async () => {
    const { trace, election, manager, exited } = setup({
      hold: { controller: { start: new Error('boom') } },
    });
    await manager.start();
    election.win();
    expect(await exited).toBe(1);
    expect(trace.slice(-2)).toEqual(['fence: controller failed to start', 'exit 1']);
  });

  it('refuses runnables added once started', async () => {
    const { manager } = setup();
    await manager.start();
    expect(() => manager.add(runnable([], 'late'))).toThrow('cannot add late');
  });
});

describe('a graceful stop', () => {
  it('turns readiness off, stops the leader-only runnables, releases the lease, then stops the rest, and exits 0', async () => {
    const drain = Promise.withResolvers<void>();
    const { trace, election, manager, exited } = setup({ hold: { controller: { stop: drain.promise } } });
    await manager.start();
    election.win();
    await settle();
    trace.length = 0;

    const stopped = manager.stop();
    expect(manager.isReady()).toBe(false);
    expect(manager.canWrite()).toBe(false);
    await settle();
    // The drain holds the rest back: the lease is kept while reconciles finish.
    expect(trace).toEqual(['stop:controller']);

    drain.resolve();
    await stopped;
    expect(await exited).toBe(0);
    expect(trace).toEqual([
      'stop:controller',
      'stop:sources',
      'stop:election',
      'release',
      'stop:caches',
      'stop:http',
      'exit 0',
    ]);
  });

  it('of a standby stops what it started and releases nothing it does not hold', async () => {
    const { trace, manager, exited } = setup();
    await manager.start();
    trace.length = 0;
    await manager.stop();
    expect(await exited).toBe(0);
    expect(trace).toEqual(['stop:election', 'stop:caches', 'stop:http', 'exit 0']);
  });

  it('while the caches sync stops what has begun and never starts the election', async () => {
    const caches = Promise.withResolvers<void>();
    const { trace, manager, exited } = setup({ hold: { caches: { start: caches.promise } } });
    const started = manager.start();
    await settle();
    await manager.stop();
    caches.resolve();
    await started;
    expect(await exited).toBe(0);
    expect(trace).toEqual(['start:http', 'start:caches', 'stop:caches', 'stop:http', 'exit 0']);
  });

  it('does not start the leader-only runnables when the lease is won after it began', async () => {
    const { trace, election, manager, exited } = setup();
    await manager.start();
    const stopped = manager.stop();
    election.win();
    await stopped;
    expect(await exited).toBe(0);
    expect(trace).not.toContain('start:controller');
  });

  it('exits 1, fenced, once --graceful-shutdown-timeout has passed, and only once', async () => {
    const never = new Promise<void>(() => {});
    const { trace, election, manager, exited } = setup({ graceMs: 10, hold: { controller: { stop: never } } });
    await manager.start();
    election.win();
    await settle();
    void manager.stop();
    expect(await exited).toBe(1);
    expect(trace.slice(-2)).toEqual(['fence: still stopping after 0.01s (--graceful-shutdown-timeout)', 'exit 1']);
    expect(trace).not.toContain('release');
  });

  it('exits 1 when something fails to stop, after stopping the rest', async () => {
    const { trace, manager, exited } = setup({ hold: { caches: { stop: new Error('stuck') } } });
    await manager.start();
    await manager.stop();
    expect(await exited).toBe(1);
    expect(trace.slice(-2)).toEqual(['stop:http', 'exit 1']);
  });
});

describe('losing the lease', () => {
  it('aborts what is in flight and exits 1 at once: nothing drains, nothing more runs', async () => {
    const { trace, election, manager, exited } = setup();
    await manager.start();
    election.win();
    await settle();
    trace.length = 0;

    election.lose();
    expect(trace).toEqual(['fence: lost the lease', 'exit 1']);
    expect(await exited).toBe(1);
    expect(manager.canWrite()).toBe(false);
  });

  it('while draining after SIGTERM exits 1 at once too: a drain’s writes must not outlive the lease', async () => {
    const drain = Promise.withResolvers<void>();
    const { trace, election, manager, exited } = setup({ hold: { controller: { stop: drain.promise } } });
    await manager.start();
    election.win();
    await settle();
    void manager.stop();
    await settle();
    trace.length = 0;

    election.lose();
    expect(await exited).toBe(1);
    expect(trace).toEqual(['fence: lost the lease', 'exit 1']);
    // Where process.exit returns (here), the stop under way does not exit a second time.
    drain.resolve();
    await settle();
    expect(trace.filter((t) => t.startsWith('exit'))).toEqual(['exit 1']);
  });
});

/** A sharded election (src/kube/shard-election.ts): it leads from the start and says per App whether it may write. */
class FakeShards extends FakeElection {
  readonly held = new Set<string>();
  override async start(): Promise<void> {
    await super.start();
    this.win();
  }
  override isLeader(): boolean {
    return this.leading && this.held.size > 0;
  }
  mayWrite(appKey: string): boolean {
    return this.leading && this.held.has(appKey);
  }
}

function shardedSetup() {
  const trace: Trace = [];
  const shards = new FakeShards(trace);
  const exited = Promise.withResolvers<number>();
  const manager = new Manager({
    logger: silent,
    gracefulShutdownTimeoutMs: 60_000,
    fence: (reason) => trace.push(`fence: ${reason.message}`),
    exit: (code) => {
      trace.push(`exit ${code}`);
      exited.resolve(code);
    },
    election: (callbacks) => {
      shards.callbacks = callbacks;
      return shards;
    },
  });
  manager.add(runnable(trace, 'caches'));
  manager.add(runnable(trace, 'controller'), { leaderOnly: true });
  return { trace, shards, manager, exited: exited.promise };
}

describe('sharded', () => {
  it('runs the controller at once and allows writes only for the Apps of the shards held', async () => {
    const { trace, shards, manager } = shardedSetup();
    await manager.start();
    await settle();
    expect(trace).toEqual(['start:caches', 'election', 'start:controller']);
    expect(manager.isLeader()).toBe(false);
    expect(manager.canWrite('team/web')).toBe(false);

    shards.held.add('team/web');
    expect(manager.isLeader()).toBe(true);
    expect(manager.canWrite('team/web')).toBe(true);
    expect(manager.canWrite('team/api')).toBe(false);

    void manager.stop();
    expect(manager.canWrite('team/web')).toBe(false);
  });

  it('exits 1, fenced, when a shard is lost other than by handing it back', async () => {
    const { trace, shards, manager, exited } = shardedSetup();
    await manager.start();
    await settle();
    shards.held.add('team/web');
    trace.length = 0;

    shards.lose();
    expect(await exited).toBe(1);
    expect(trace).toEqual(['fence: lost the lease', 'exit 1']);
  });
});
