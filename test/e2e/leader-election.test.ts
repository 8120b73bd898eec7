// Lease-based leader election against the real API server, with short timings:
// one leader at a time, fast hand-over on release, expiry when a leader dies,
// and stepping down when the lease is stolen or the API server is unreachable.
import * as k8s from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { LeaderElector, type LeaderElectorOptions } from '../../src/kube/leader-election.ts';
import { createNamespace, kubeConfig, waitFor } from '../support/kube.ts';
import { apiServerAddress, startTcpProxy } from '../support/tcp-proxy.ts';

const TIMINGS = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

const kc = kubeConfig();
const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
let ns: string;
let removeNs: () => Promise<void>;
let leaseSeq = 0;
const running: LeaderElector[] = [];

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('leader'));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((e) => e.stop({ release: false })));
});
afterAll(async () => removeNs());

interface Candidate {
  id: string;
  elector: LeaderElector;
  started: number;
  /** performance.now() of each onStartedLeading call. */
  startedAt: number[];
  /** performance.now() of each onStoppedLeading call. */
  stoppedAt: number[];
  /** What isLeader() said inside onStoppedLeading. */
  leaderDuringStop: boolean[];
  newLeaders: string[];
  changes: boolean[];
}

function candidate(lease: string, id: string, overrides: Partial<LeaderElectorOptions> = {}): Candidate {
  const seen = {
    id,
    started: 0,
    startedAt: [] as number[],
    stoppedAt: [] as number[],
    leaderDuringStop: [] as boolean[],
  };
  const newLeaders: string[] = [];
  const changes: boolean[] = [];
  const elector: LeaderElector = new LeaderElector({
    kubeConfig: kc,
    namespace: ns,
    name: lease,
    identity: id,
    ...TIMINGS,
    onStartedLeading: () => {
      seen.started++;
      seen.startedAt.push(performance.now());
    },
    onStoppedLeading: () => {
      seen.stoppedAt.push(performance.now());
      seen.leaderDuringStop.push(elector.isLeader());
    },
    onNewLeader: (identity) => newLeaders.push(identity),
    onLeadershipChange: (isLeader) => changes.push(isLeader),
    ...overrides,
  });
  running.push(elector);
  return Object.assign(seen, { elector, newLeaders, changes });
}

function newLease(): string {
  return `lease-${++leaseSeq}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const readLease = (name: string) => coordination.readNamespacedLease({ name, namespace: ns });

/**
 * When the Lease was last renewed, on the clock of this process (the electors
 * run in it) as performance.now() counts it: a bound measured from the
 * renewal that landed, not from a guess of when it was sent.
 */
async function lastRenewal(name: string): Promise<number> {
  const renewTime = (await readLease(name)).spec?.renewTime;
  return new Date(String(renewTime)).getTime() - performance.timeOrigin;
}

/** Waits for the Lease to be renewed after `after` (a lastRenewal value); returns when it was. */
async function renewedAfter(name: string, after: number): Promise<number> {
  return waitFor(`lease ${name} renewed`, async () => {
    const at = await lastRenewal(name);
    return at > after ? at : undefined;
  });
}

/** Counts the leaders among candidates at every turn until stopped: the most seen at once. */
function watchLeaders(candidates: Candidate[]): { most: () => number; stop: () => void } {
  let most = 0;
  const timer = setInterval(() => {
    most = Math.max(most, candidates.filter((c) => c.elector.isLeader()).length);
  }, 20);
  return { most: () => most, stop: () => clearInterval(timer) };
}

async function electOne(lease: string): Promise<[leader: Candidate, standby: Candidate]> {
  const a = candidate(lease, 'candidate-a');
  const b = candidate(lease, 'candidate-b');
  await Promise.all([a.elector.start(), b.elector.start()]);
  const leader = await waitFor('a leader', async () => [a, b].find((c) => c.elector.isLeader()), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const standby = leader === a ? b : a;
  // A candidate that lost the race to create the Lease has not read it yet.
  await waitFor(
    'the standby to see the leader',
    async () => (standby.newLeaders.includes(leader.id) ? true : undefined),
    {
      timeoutMs: 5_000,
      intervalMs: 20,
    },
  );
  return [leader, standby];
}

/** Writes the Lease as another identity would, with a 30 s duration; returns when. */
async function steal(lease: string): Promise<number> {
  // Conditional on the version read, so retry if the leader renewed in between.
  return waitFor(
    'the lease to be stolen',
    async () => {
      const current = await readLease(lease);
      const time = new k8s.V1MicroTime();
      await coordination.replaceNamespacedLease({
        name: lease,
        namespace: ns,
        body: {
          ...current,
          spec: {
            holderIdentity: 'thief',
            leaseDurationSeconds: 30,
            acquireTime: time,
            renewTime: time,
            leaseTransitions: (current.spec?.leaseTransitions ?? 0) + 1,
          },
        },
      });
      return performance.now();
    },
    { timeoutMs: 5_000, intervalMs: 10 },
  );
}

/** Polls isLeader() for the given time; returns the number of leaders seen at each sample. */
async function sampleLeaders(candidates: Candidate[], ms: number): Promise<number[]> {
  const counts: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    counts.push(candidates.filter((c) => c.elector.isLeader()).length);
    await sleep(20);
  }
  return counts;
}

describe('Lease leader election', () => {
  it('elects exactly one of two candidates and keeps renewing the lease', async () => {
    const lease = newLease();
    const [leader, standby] = await electOne(lease);

    // Two renewals: never two leaders meanwhile, and the same one throughout.
    const leaders = watchLeaders([leader, standby]);
    await renewedAfter(lease, await renewedAfter(lease, await lastRenewal(lease)));
    leaders.stop();
    expect(leaders.most()).toBe(1);
    expect(leader.elector.isLeader()).toBe(true);
    expect(standby.elector.isLeader()).toBe(false);
    expect(leader.started).toBe(1);
    expect(standby.started).toBe(0);
    expect(leader.changes).toEqual([true]);
    expect(standby.changes).toEqual([]);
    expect(standby.newLeaders).toEqual([leader.id]);
    expect(leader.newLeaders).toEqual([leader.id]);

    const first = await readLease(lease);
    expect(first.spec?.holderIdentity).toBe(leader.id);
    expect(first.spec?.leaseDurationSeconds).toBe(3);
    expect(first.spec?.leaseTransitions).toBe(0);
    // MicroTime fields arrive as strings with microsecond precision.
    expect(String(first.spec?.renewTime)).toMatch(/\.\d{6}Z$/);
    expect(String(first.spec?.acquireTime)).toMatch(/\.\d{6}Z$/);
    await renewedAfter(lease, await lastRenewal(lease));
    const later = await readLease(lease);
    expect(later.spec?.holderIdentity).toBe(leader.id);
    expect(String(later.spec?.acquireTime)).toBe(String(first.spec?.acquireTime));
    expect(new Date(String(later.spec?.renewTime)).getTime()).toBeGreaterThan(
      new Date(String(first.spec?.renewTime)).getTime(),
    );
  });

  it('hands over quickly when the leader stops and releases the lease', async () => {
    const lease = newLease();
    const [leader, standby] = await electOne(lease);

    const stoppedAt = performance.now();
    await leader.elector.stop({ release: true });
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.stoppedAt).toHaveLength(1);
    expect(leader.leaderDuringStop).toEqual([false]);
    expect(leader.changes).toEqual([true, false]);

    await waitFor('the standby to lead', async () => (standby.elector.isLeader() ? true : undefined), {
      timeoutMs: 5_000,
      intervalMs: 20,
    });
    const handover = performance.now() - stoppedAt;
    // Expiry would take at least ~2.5 s here; a release is picked up on the next poll (at most 1.1 s).
    expect(handover).toBeLessThan(2_000);
    expect(standby.started).toBe(1);
    expect(standby.newLeaders).toEqual([leader.id, standby.id]);

    const after = await readLease(lease);
    expect(after.spec?.holderIdentity).toBe(standby.id);
    expect(after.spec?.leaseDurationSeconds).toBe(3);
    expect(after.spec?.leaseTransitions).toBe(1);
  });

  it('takes over from a leader that stopped renewing only once the lease has expired', async () => {
    const lease = newLease();
    const [leader, standby] = await electOne(lease);

    // A dead process: it stops renewing and does not release.
    await leader.elector.stop({ release: false });
    expect(leader.elector.isLeader()).toBe(false);
    expect((await readLease(lease)).spec?.holderIdentity).toBe(leader.id);
    const renewed = await lastRenewal(lease);

    await waitFor('the standby to lead', async () => (standby.elector.isLeader() ? true : undefined), {
      intervalMs: 20,
    });
    // Not before the lease, as last renewed, had run its whole duration.
    expect((standby.startedAt[0] ?? 0) - renewed).toBeGreaterThanOrEqual(TIMINGS.leaseDurationMs);
    const after = await readLease(lease);
    expect(after.spec?.holderIdentity).toBe(standby.id);
    expect(after.spec?.leaseTransitions).toBe(1);
  });

  it('stops leading within the renew deadline when another identity takes the lease', async () => {
    const lease = newLease();
    const [leader, standby] = await electOne(lease);

    const stolenAt = await steal(lease);

    await waitFor('the leader to step down', async () => (leader.stoppedAt.length > 0 ? true : undefined), {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    const [stepDown] = leader.stoppedAt;
    expect((stepDown ?? Number.POSITIVE_INFINITY) - stolenAt).toBeLessThan(TIMINGS.renewDeadlineMs);
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.leaderDuringStop).toEqual([false]);
    expect(leader.changes).toEqual([true, false]);

    // The thief's 30 s lease is respected by both, and nobody overwrote it.
    const counts = await sampleLeaders([leader, standby], 1_500);
    expect(Math.max(...counts)).toBe(0);
    expect(leader.stoppedAt).toHaveLength(1);
    expect(leader.newLeaders.at(-1)).toBe('thief');
    expect(standby.newLeaders.at(-1)).toBe('thief');
    expect((await readLease(lease)).spec?.holderIdentity).toBe('thief');
  });

  it('stops leading at the renew deadline when the API server becomes unreachable', async () => {
    const lease = newLease();
    const proxy = await startTcpProxy(apiServerAddress(kc.getCurrentCluster()?.server ?? ''));
    try {
      const leader = candidate(lease, 'partitioned', { kubeConfig: viaServer(kc, `https://127.0.0.1:${proxy.port}`) });
      await leader.elector.start();
      await waitFor('it to lead', async () => (leader.elector.isLeader() ? true : undefined), { intervalMs: 20 });
      // A renewal succeeds first.
      await renewedAfter(lease, await lastRenewal(lease));
      expect(leader.elector.isLeader()).toBe(true);

      // Packets lost, not refused: its requests hang until they time out. Answers still come back, so the
      // last renewal the Lease shows (read here directly, not through the proxy) is the last it counted.
      proxy.hold();
      await waitFor('it to step down', async () => (leader.stoppedAt.length > 0 ? true : undefined), {
        intervalMs: 10,
      });
      const sinceRenewal = (leader.stoppedAt[0] ?? Number.POSITIVE_INFINITY) - (await lastRenewal(lease));
      // At the renew deadline counted from that renewal (sent a moment before its renewTime was taken; the
      // two clocks may part by a few ms), and before the lease could expire for anyone else.
      expect(sinceRenewal).toBeGreaterThanOrEqual(TIMINGS.renewDeadlineMs - 20);
      expect(sinceRenewal).toBeLessThan(TIMINGS.leaseDurationMs);
      expect(leader.leaderDuringStop).toEqual([false]);
      expect(leader.changes).toEqual([true, false]);
      // It never released the lease, so others must wait for it to expire.
      expect((await readLease(lease)).spec?.holderIdentity).toBe('partitioned');
      await leader.elector.stop({ release: false });
    } finally {
      await proxy.close();
    }
  });

  it('sends its Lease requests under the fence, as every request of the operator: once fenced, it renews no more and steps down', async () => {
    const lease = newLease();
    // As src/main.ts builds it: the fence is aborted when the replica must write no more.
    const fence = new AbortController();
    const kubeConfig = loadKubeConfig(inject('kubeconfig'), { fence: fence.signal });
    const leader = candidate(lease, 'fenced', { kubeConfig });
    await leader.elector.start();
    await waitFor('it to lead', async () => (leader.elector.isLeader() ? true : undefined), { intervalMs: 20 });
    await renewedAfter(lease, await lastRenewal(lease));

    // renewTime is taken from this process's clock when a renewal is built: one built later was never sent.
    const fencedAt = Date.now();
    fence.abort(new Error('lost the lease'));
    await waitFor('it to step down', async () => (leader.stoppedAt.length > 0 ? true : undefined), {
      intervalMs: 10,
    });
    const after = await readLease(lease);
    expect(new Date(String(after.spec?.renewTime)).getTime()).toBeLessThanOrEqual(fencedAt);
    expect(after.spec?.holderIdentity).toBe('fenced');
    expect(leader.changes).toEqual([true, false]);
  });

  it('stop() lets onStoppedLeading finish before it releases the lease, and leaves a lease it lost alone', async () => {
    const windsDown = (lease = newLease()) => {
      // What the callback saw of the Lease after an API round trip, as the old term's work winding down.
      const holders: string[] = [];
      const elector = new LeaderElector({
        kubeConfig: kc,
        namespace: ns,
        name: lease,
        identity: `winds-down-${lease}`,
        ...TIMINGS,
        onStartedLeading: () => {},
        onStoppedLeading: async () => {
          holders.push((await readLease(lease)).spec?.holderIdentity ?? '');
        },
      });
      running.push(elector);
      return { lease, elector, holders };
    };
    const lost = windsDown();
    const graceful = windsDown();
    await Promise.all([lost.elector.start(), graceful.elector.start()]);
    await waitFor('both to lead', async () =>
      lost.elector.isLeader() && graceful.elector.isLeader() ? true : undefined,
    );

    await steal(lost.lease);
    await waitFor('the callback to run', async () => (lost.holders.length ? true : undefined));
    await lost.elector.stop();
    expect(lost.holders).toEqual(['thief']);
    // Nothing to release: the lease is the thief's.
    expect((await readLease(lost.lease)).spec?.holderIdentity).toBe('thief');

    await graceful.elector.stop();
    // The callback ran to its end while the lease was still held; stop() released it after.
    expect(graceful.holders).toEqual([graceful.elector.identity]);
    expect((await readLease(graceful.lease)).spec?.holderIdentity).toBe('');
  });

  it('leaves no timers behind after stop', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const lease = newLease();
    const [leader, standby] = await electOne(lease);
    expect(timers()).toBeGreaterThan(before);
    await Promise.all([leader.elector.stop(), standby.elector.stop()]);
    // Other timers (the HTTP client's) may have ended meanwhile, so at most as many as before.
    expect(timers()).toBeLessThanOrEqual(before);
  });
});

/** A kubeconfig like kc but reaching the API server at server. */
function viaServer(kc: k8s.KubeConfig, server: string): k8s.KubeConfig {
  const current = kc.getCurrentCluster();
  if (!current) throw new Error('kubeconfig has no current cluster');
  const copy = new k8s.KubeConfig();
  copy.loadFromOptions({
    clusters: kc.clusters.map((c) => (c.name === current.name ? { ...c, server } : c)),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return copy;
}
