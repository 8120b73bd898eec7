// The load balancer model's rules (test/cluster/data-plane/lb-plan.ts): which
// endpoints become targets, registration after the health-check delay and only
// while answering, drain for the drain delay, and which pods get the gate.
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  endpointsOf,
  LB_GATE_PREFIX,
  listenerTargets,
  planTargets,
  podsToGate,
  type Target,
} from '../cluster/data-plane/lb-plan.ts';

const GATE = `${LB_GATE_PREFIX}web`;
const delays = { healthCheckDelayMs: 5_000, drainDelayMs: 10_000 };

function pod(name: string, gated: boolean, conditions: { type: string; status: string }[] = []): V1Pod {
  return {
    metadata: { name },
    spec: { containers: [], ...(gated ? { readinessGates: [{ conditionType: GATE }] } : {}) },
    status: { conditions },
  };
}

function slice(endpoints: { ip: string; pod: string; ready?: boolean; serving?: boolean; terminating?: boolean }[]) {
  return {
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      targetRef: { kind: 'Pod', name: e.pod },
      conditions: { ready: e.ready, serving: e.serving, terminating: e.terminating },
    })),
  } as V1EndpointSlice;
}

describe('endpointsOf', () => {
  it('targets ready endpoints, and not-ready ones only of pods that name the gate and whose containers are ready', () => {
    const containersReady = [{ type: 'ContainersReady', status: 'True' }];
    const pods = new Map([
      ['a', pod('a', false)],
      ['b', pod('b', true, containersReady)],
      ['c', pod('c', false, containersReady)],
      ['d', pod('d', true, containersReady)],
      ['e', pod('e', true)],
    ]);
    // The EndpointSlice controller writes serving as Ready for a pod not terminating: false while its gate waits.
    const s = slice([
      { ip: '10.244.0.1', pod: 'a', ready: true },
      { ip: '10.244.0.2', pod: 'b', ready: false, serving: false },
      { ip: '10.244.0.3', pod: 'c', ready: false, serving: false },
      { ip: '10.244.0.4', pod: 'd', ready: false, serving: false, terminating: true },
      { ip: '10.244.0.5', pod: 'e', ready: false, serving: false },
    ]);
    expect(endpointsOf([s], pods, GATE)).toEqual([
      { target: '10.244.0.1:8080', pod: 'a' },
      { target: '10.244.0.2:8080', pod: 'b' },
    ]);
  });
});

describe('planTargets', () => {
  const e = { target: '10.244.0.1:8080', pod: 'a' };
  const answers = (ok: boolean) => new Map([[e.target, ok]]);

  it('registers a target once the delay has passed since it was seen, and only while it answers', () => {
    let t = planTargets(new Map(), [e], answers(true), 0, delays);
    expect(t.get(e.target)).toMatchObject({ state: 'initial', seenAt: 0 });
    t = planTargets(t, [e], answers(true), 4_999, delays);
    expect(t.get(e.target)?.state).toBe('initial');
    t = planTargets(t, [e], answers(false), 6_000, delays);
    expect(t.get(e.target)?.state).toBe('initial');
    t = planTargets(t, [e], answers(true), 7_000, delays);
    expect(t.get(e.target)).toMatchObject({ state: 'healthy', registeredAt: 7_000 });
    expect(listenerTargets(t)).toEqual({ registered: [e.target], draining: [] });
    // A registered target that stops answering gets no new connections.
    t = planTargets(t, [e], answers(false), 8_000, delays);
    expect(listenerTargets(t)).toEqual({ registered: [], draining: [] });
  });

  it('drains a deregistered target for the drain delay, then drops it; one never registered is dropped at once', () => {
    const other = { target: '10.244.0.2:8080', pod: 'b' };
    let t = new Map<string, Target>([
      [e.target, { ...e, state: 'healthy', seenAt: 0, registeredAt: 5_000, answering: true }],
      [other.target, { ...other, state: 'initial', seenAt: 0, answering: true }],
    ]);
    t = planTargets(t, [], new Map(), 20_000, delays);
    expect([...t.keys()]).toEqual([e.target]);
    expect(t.get(e.target)).toMatchObject({ state: 'draining', drainingSince: 20_000 });
    expect(listenerTargets(t)).toEqual({ registered: [], draining: [e.target] });
    t = planTargets(t, [], new Map(), 29_999, delays);
    expect(t.get(e.target)?.state).toBe('draining');
    t = planTargets(t, [], new Map(), 30_000, delays);
    expect(t.size).toBe(0);
  });

  it('a draining target that comes back starts over: seen again, registered after the delay', () => {
    const t = new Map<string, Target>([
      [e.target, { ...e, state: 'draining', seenAt: 0, drainingSince: 1_000, answering: true }],
    ]);
    expect(planTargets(t, [e], answers(true), 2_000, delays).get(e.target)).toMatchObject({
      state: 'initial',
      seenAt: 2_000,
    });
  });
});

describe('podsToGate', () => {
  it('gates registered, answering pods that name the gate and do not have it True yet', () => {
    const registered = (name: string, ip: string): [string, Target] => [
      `${ip}:8080`,
      { target: `${ip}:8080`, pod: name, state: 'healthy', seenAt: 0, registeredAt: 5_000, answering: true },
    ];
    const targets = new Map<string, Target>([
      registered('a', '10.244.0.1'),
      registered('b', '10.244.0.2'),
      registered('c', '10.244.0.3'),
      ['10.244.0.4:8080', { target: '10.244.0.4:8080', pod: 'd', state: 'initial', seenAt: 0, answering: true }],
    ]);
    const pods = new Map([
      ['a', pod('a', true)],
      ['b', pod('b', false)],
      ['c', pod('c', true, [{ type: GATE, status: 'True' }])],
      ['d', pod('d', true)],
    ]);
    expect(podsToGate(targets, pods, GATE).map((p) => p.metadata?.name)).toEqual(['a']);
  });
});
