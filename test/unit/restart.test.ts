// restart's planner (src/rollout/restart.ts): which pods go, when, and never
// below replicas - maxUnavailable, however stale the cache; then the same
// through the blue/green planner, from the intent to the last pod.
import { describe, expect, it } from 'vitest';
import type { RestartStatus } from '../../src/app/schema.ts';
import { type ActionView, actionVerdict } from '../../src/rollout/action-rules.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import type { ObservedReplicaSet } from '../../src/rollout/observed.ts';
import {
  type ObservedPod,
  observePod,
  planRestart,
  RESTART_LOOK_AGAIN_MS,
  type RestartInput,
  resolveMaxUnavailable,
  restartStartedAt,
} from '../../src/rollout/restart.ts';
import { intent, makeApp, T0, World } from '../support/planner-world.ts';

const HASH = 'aaaaaaaaaa';
const START = '2026-11-21T10:00:00.000Z';
const BEFORE = '2026-11-21T09:00:00Z';
const AFTER = '2026-11-21T10:00:00Z';
const at = (s: number) => new Date(Date.parse(START) + s * 1000).toISOString();

const pod = (name: string, extra: Partial<ObservedPod> = {}): ObservedPod => ({
  namespace: 'ns',
  name,
  resourceVersion: '1',
  app: 'web',
  hash: HASH,
  createdAt: BEFORE,
  ready: true,
  deleting: false,
  ...extra,
});

const replicaSet = (available: number): ObservedReplicaSet => ({
  namespace: 'ns',
  name: `web-${HASH}`,
  resourceVersion: '1',
  app: 'web',
  hash: HASH,
  revision: 2,
  image: 'registry.example.com/team/web:2',
  createdAt: BEFORE,
  generation: 1,
  specReplicas: 3,
  observedGeneration: 1,
  replicas: 3,
  readyReplicas: available,
  availableReplicas: available,
  deleting: false,
});

const restart = (extra: Partial<RestartStatus> = {}): RestartStatus => ({
  by: 'alice',
  via: 'cli',
  at: START,
  revision: 2,
  podTemplateHash: HASH,
  startedAt: START,
  ...extra,
});

function input(extra: Partial<RestartInput> = {}): RestartInput {
  return {
    restart: restart(),
    activeHash: HASH,
    activeRevision: 2,
    replicaSet: replicaSet(3),
    replicas: 3,
    maxUnavailable: undefined,
    pods: [pod('a'), pod('b'), pod('c')],
    now: at(1),
    ...extra,
  };
}

describe('maxUnavailable, as Argo Rollouts reads it', () => {
  it.each([
    [undefined, 3, 1],
    [2, 3, 2],
    [0, 3, 1],
    [5, 3, 3],
    ['50%', 3, 1],
    ['10%', 3, 1],
    ['100%', 3, 3],
    ['50%', 10, 5],
  ] as const)('%s of %i replicas is %i pods', (value, replicas, pods) => {
    expect(resolveMaxUnavailable(value, replicas)).toBe(pods);
  });
});

describe('the pods a restart reads', () => {
  it('keeps name, age, readiness, deletion and its True conditions; ignores pods without both of Teal’s labels', () => {
    const raw = {
      metadata: {
        name: 'web-aaaaaaaaaa-x1',
        namespace: 'ns',
        resourceVersion: '7',
        creationTimestamp: BEFORE,
        deletionTimestamp: AFTER,
        labels: { 'teal.dev/app': 'web', 'teal.dev/pod-template-hash': HASH },
      },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    };
    expect(observePod(raw)).toEqual({
      namespace: 'ns',
      name: 'web-aaaaaaaaaa-x1',
      resourceVersion: '7',
      app: 'web',
      hash: HASH,
      createdAt: BEFORE,
      ready: true,
      deleting: true,
      trueConditions: ['Ready'],
    });
    expect(observePod({ metadata: { ...raw.metadata, labels: { 'teal.dev/app': 'web' } } })).toBeUndefined();
  });

  it('starts at the next second: a pod created in the second it was asked is an old one, and nothing goes before', () => {
    expect(restartStartedAt('2026-11-21T09:59:59.734Z')).toBe(START);
    expect(restartStartedAt(START)).toBe(START);
    // Pods created in the second the restart was asked (their timestamps cut to it) are old.
    const sameSecond = ['a', 'b', 'c'].map((n) => pod(n, { createdAt: '2026-11-21T09:59:59Z' }));
    const early = planRestart(input({ pods: sameSecond, now: '2026-11-21T09:59:59.900Z' }));
    expect(early.evict).toEqual([]);
    expect(early.restart.finishedAt).toBeUndefined();
    expect(early.wakeAt).toBe(Date.parse(START));
    expect(planRestart(input({ pods: sameSecond, now: START })).evict).toEqual(['a']);
  });
});

describe('planRestart', () => {
  it('evicts one pod at a time by default, and looks again once it must have landed', () => {
    const planned = planRestart(input());
    expect(planned.evict).toEqual(['a']);
    expect(planned.restart).toMatchObject({ evicting: ['a'], evictedAt: at(1) });
    expect(planned.wakeAt).toBe(Date.parse(at(1)) + 5_000);
    expect(planned.message).toBe('restarting revision 2: 0/3 pods replaced');
  });

  it('evicts maxUnavailable pods at once, not-ready ones first', () => {
    const pods = [pod('a'), pod('b'), pod('c', { ready: false })];
    const planned = planRestart(input({ maxUnavailable: 2, pods, replicaSet: replicaSet(2) }));
    // 2 available, floor 1: one more may go, and the one that serves nobody goes first.
    expect(planned.evict).toEqual(['c']);
    expect(planRestart(input({ maxUnavailable: 2 })).evict).toEqual(['a', 'b']);
  });

  it('counts an eviction not yet seen as unavailable, however ready the cache shows the pod', () => {
    const planned = planRestart(input({ restart: restart({ evicting: ['a'], evictedAt: at(1) }), now: at(2) }));
    expect(planned.evict).toEqual([]);
    expect(planned.restart.evicting).toEqual(['a']);
    expect(planned.wakeAt).toBe(Date.parse(at(1)) + 5_000);
  });

  it('never goes below the floor when the ReplicaSet counts fewer available pods than the pod cache', () => {
    expect(planRestart(input({ replicaSet: replicaSet(2) })).evict).toEqual([]);
  });

  it('waits while the replacement is not ready, and goes on once it is', () => {
    const evicted = restart({ evicting: ['a'], evictedAt: at(1) });
    const fresh = pod('d', { createdAt: AFTER, ready: false });
    const waiting = planRestart(
      input({ restart: evicted, pods: [pod('a', { deleting: true }), pod('b'), pod('c'), fresh], now: at(2) }),
    );
    expect(waiting.evict).toEqual([]);
    expect(waiting.restart.evicting).toBeUndefined();
    // Pods are read, not watched: a look again in case no ReplicaSet change comes first.
    expect(waiting.wakeAt).toBe(Date.parse(at(2)) + RESTART_LOOK_AGAIN_MS);
    // The terminating pod counts by its replacement alone.
    expect(waiting.message).toBe('restarting revision 2: 1/3 pods replaced');
    const ready = planRestart(
      input({ restart: waiting.restart, pods: [pod('b'), pod('c'), { ...fresh, ready: true }], now: at(3) }),
    );
    expect(ready.evict).toEqual(['b']);
    expect(ready.message).toBe('restarting revision 2: 1/3 pods replaced');
  });

  it('takes an eviction still not landed at its deadline as refused: told once, asked again, later each time', () => {
    const refused = planRestart(input({ restart: restart({ evicting: ['a'], evictedAt: at(1) }), now: at(6) }));
    expect(refused.evict).toEqual(['a']);
    expect(refused.restart).toMatchObject({ evicting: ['a'], evictedAt: at(6), refusals: 1 });
    expect(refused.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'RestartBlocked' })]);
    expect(refused.wakeAt).toBe(Date.parse(at(6)) + 10_000);
    const again = planRestart(input({ restart: refused.restart, now: at(16) }));
    expect(again.restart.refusals).toBe(2);
    expect(again.events).toEqual([]);
    expect(again.wakeAt).toBe(Date.parse(at(16)) + 20_000);
  });

  it('finishes once no pod older than the restart remains, deleting ones included', () => {
    const terminating = [pod('a', { deleting: true }), pod('d', { createdAt: AFTER }), pod('e', { createdAt: AFTER })];
    expect(planRestart(input({ pods: terminating })).restart.finishedAt).toBeUndefined();
    const fresh = ['d', 'e', 'f'].map((n) => pod(n, { createdAt: AFTER }));
    const done = planRestart(input({ restart: restart({ evicting: ['c'], evictedAt: at(1) }), pods: fresh }));
    expect(done.restart).toEqual({ ...restart(), podsReplaced: 3, finishedAt: at(1) });
    expect(done.events).toEqual([
      expect.objectContaining({ reason: 'Restarted', message: expect.stringContaining('3 pods replaced') }),
    ]);
    expect(done.message).toBeUndefined();
  });

  it('is not over while the last replacement is yet to show or to be ready: every new pod is counted', () => {
    const done = restart({ evicting: ['c'], evictedAt: at(1) });
    const twoNew = ['d', 'e'].map((n) => pod(n, { createdAt: AFTER }));
    expect(planRestart(input({ restart: done, pods: twoNew, replicaSet: replicaSet(2) })).restart.finishedAt).toBe(
      undefined,
    );
    const notReady = [...twoNew, pod('f', { createdAt: AFTER, ready: false })];
    expect(planRestart(input({ restart: done, pods: notReady, replicaSet: replicaSet(2) })).restart.finishedAt).toBe(
      undefined,
    );
    const serving = [...twoNew, pod('f', { createdAt: AFTER })];
    expect(planRestart(input({ restart: done, pods: serving })).restart).toMatchObject({ podsReplaced: 3 });
  });

  it('ends early when another revision serves', () => {
    const ended = planRestart(input({ activeHash: 'bbbbbbbbbb', activeRevision: 3 }));
    expect(ended.evict).toEqual([]);
    expect(ended.restart).toMatchObject({
      finishedAt: at(1),
      message: 'restart of revision 2 ended early: revision 3 is active now',
    });
  });
});

describe('restart through the blue/green planner', () => {
  function released(): World {
    const w = new World(makeApp());
    w.converge();
    return w;
  }
  const podsOf = (hash: string, createdAt: string): ObservedPod[] =>
    ['x', 'y', 'z'].map((n) => pod(`web-${hash}-${n}`, { hash, createdAt }));

  it('takes the intent: status.restart, RestartRequested, the first eviction; no revision, history unchanged', () => {
    const w = released();
    const hash = w.activeHash() ?? '';
    const before = structuredClone(w.status);
    w.now = T0 + 60_000;
    const planned = plan({
      app: w.app,
      observed: w.observed(),
      now: new Date(w.now),
      target: w.target(),
      intents: [intent('restart')],
      pods: podsOf(hash, new Date(T0).toISOString()),
    });
    expect(planned.actions).toEqual([{ kind: 'evictPod', name: `web-${hash}-x`, why: 'restart of revision 1' }]);
    expect(planned.events.map((e) => e.reason)).toEqual(['RestartRequested', 'PhaseProgressing']);
    expect(planned.status.restart).toMatchObject({ revision: 1, podTemplateHash: hash, evicting: [`web-${hash}-x`] });
    expect(planned.status.history).toEqual(before.history);
    expect(planned.status.active).toEqual(before.active);
    expect(planned.status).toMatchObject({ phase: 'Progressing', message: 'restarting revision 1: 0/3 pods replaced' });
    expect(planned.requeueAfterMs).toBe(5_001);
  });

  it('waits without the pods (a caller that does not pass them) rather than finish with none replaced', () => {
    const w = released();
    w.reconcile([intent('restart')]);
    expect(w.status.restart?.finishedAt).toBeUndefined();
    expect(w.last).toEqual([]);
  });
});

describe('the restart rule, in words', () => {
  const view = (extra: Partial<ActionView>): ActionView => ({
    deleting: false,
    specPaused: false,
    pausedByHand: false,
    active: { revision: 2, hash: HASH },
    inFlight: undefined,
    aborted: undefined,
    history: [1, 2],
    replicaSets: [{ revision: 2, hash: HASH }],
    checks: undefined,
    restarting: undefined,
    ...extra,
  });

  it('refuses while the active revision is not yet stable: its post-promotion checks hold the old one up', () => {
    const checks = { stage: 'post' as const, revision: { revision: 2, hash: HASH }, phase: 'Running' as const };
    expect(actionVerdict('restart', {}, view({ checks }))).toMatchObject({
      allowed: false,
      code: 'release-in-progress',
      conflict: true,
      reason: 'revision 2 is active but not yet stable: its post-promotion checks are running; restart once they pass',
    });
  });

  it('refuses a second restart as nothing to do, naming the first', () => {
    const restarting = { revision: 2, by: 'bob', startedAt: START };
    expect(actionVerdict('restart', {}, view({ restarting }))).toMatchObject({
      allowed: false,
      conflict: false,
      reason: `revision 2 is being restarted already (since ${START}, by bob)`,
    });
  });
});
