// The load balancer model's rules (test/cluster/data-plane/lb-plan.ts): which
// endpoints become targets, registration after the health-check delay and only
// while answering, drain for the drain delay, and which pods get the gate;
// and the gateway's: which route it serves and how, the route's status, and
// the weighted choice of a backend.
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  endpointsOf,
  GATEWAY_CONTROLLER,
  type HttpRoute,
  LB_GATE_PREFIX,
  listenerBackends,
  listenerTargets,
  namesGateway,
  pickWeighted,
  planRoute,
  planTargets,
  podsToGate,
  routeOrder,
  routeParents,
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
    // One failed check leaves a registered target in service; a second in a row takes it out: no new
    // connections, its open ones kept.
    t = planTargets(t, [e], answers(false), 8_000, delays);
    expect(listenerTargets(t)).toEqual({ registered: [e.target], draining: [] });
    t = planTargets(t, [e], answers(true), 9_000, delays);
    t = planTargets(t, [e], answers(false), 10_000, delays);
    expect(listenerTargets(t)).toEqual({ registered: [e.target], draining: [] });
    t = planTargets(t, [e], answers(false), 11_000, delays);
    expect(listenerTargets(t)).toEqual({ registered: [], draining: [e.target] });
    expect(t.get(e.target)).toMatchObject({ state: 'healthy', answering: false, failedChecks: 2 });
    t = planTargets(t, [e], answers(true), 12_000, delays);
    expect(listenerTargets(t)).toEqual({ registered: [e.target], draining: [] });
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

  it('another pod at a registered address is a new target, of that pod: seen again, registered only after the delay', () => {
    const t = new Map<string, Target>([
      [e.target, { ...e, state: 'healthy', seenAt: 0, registeredAt: 5_000, answering: true }],
    ]);
    const next = planTargets(t, [{ target: e.target, pod: 'a2' }], answers(true), 40_000, delays);
    expect(next.get(e.target)).toMatchObject({ pod: 'a2', state: 'initial', seenAt: 40_000 });
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

const GW = { namespace: 'ns', name: 'gw' };
const EVERY_PATH = [{ path: { type: 'PathPrefix', value: '/' } }];

/** An HTTPRoute as the API server stores it (defaults applied) attached to GW, of one rule. */
function route(name: string, backendRefs: Record<string, unknown>[], extra: Partial<HttpRoute['metadata']> = {}) {
  return {
    metadata: { name, namespace: 'ns', generation: 3, ...extra },
    spec: {
      parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }],
      rules: [{ matches: EVERY_PATH, backendRefs: backendRefs.map((b) => ({ group: '', kind: 'Service', ...b })) }],
    },
  } as HttpRoute;
}

describe('the gateway: namesGateway and routeOrder', () => {
  it('a parentRef names the gateway with the group, kind and namespace defaulted as the API defines them', () => {
    expect(namesGateway({ name: 'gw' }, 'ns', GW)).toBe(true);
    expect(namesGateway({ name: 'gw', namespace: 'other' }, 'ns', GW)).toBe(false);
    expect(namesGateway({ name: 'gw' }, 'other', GW)).toBe(false);
    expect(namesGateway({ name: 'gw', kind: 'Service', group: '' }, 'ns', GW)).toBe(false);
    expect(namesGateway({ name: 'other' }, 'ns', GW)).toBe(false);
  });

  it('orders attached routes oldest first, then by name', () => {
    const a = route('b', [], { creationTimestamp: '2026-01-01T00:00:00Z' });
    const b = route('a', [], { creationTimestamp: '2026-01-01T00:00:01Z' });
    const c = route('c', [], { creationTimestamp: '2026-01-01T00:00:00Z' });
    expect([b, c, a].sort(routeOrder).map((r) => r.metadata.name)).toEqual(['b', 'c', 'a']);
  });
});

describe('planRoute', () => {
  const services = new Set(['web-ping', 'web-pong']);

  it('accepts a route of one rule for every path and resolves its Service backends with their weights', () => {
    const plan = planRoute(
      route('web', [
        { name: 'web-ping', port: 80, weight: 0 },
        { name: 'web-pong', port: 80 },
      ]),
      services,
      true,
    );
    expect(plan.accepted).toMatchObject({ ok: true, reason: 'Accepted' });
    expect(plan.resolvedRefs).toMatchObject({ ok: true, reason: 'ResolvedRefs' });
    // weight defaults to 1, as the API defines it.
    expect(plan.backends).toEqual([
      { service: 'web-ping', weight: 0 },
      { service: 'web-pong', weight: 1 },
    ]);
  });

  it('a missing Service is BackendNotFound, another kind InvalidKind, another namespace RefNotPermitted', () => {
    const missing = planRoute(route('web', [{ name: 'web-gone', port: 80, weight: 1 }]), services, true);
    expect(missing.accepted.ok).toBe(true);
    expect(missing.resolvedRefs).toMatchObject({ ok: false, reason: 'BackendNotFound' });
    expect(missing.resolvedRefs.message).toContain('web-gone');
    expect(missing.backends).toEqual([{ service: 'web-gone', weight: 1, invalid: 'BackendNotFound' }]);
    const kind = planRoute(route('web', [{ name: 'x', kind: 'Bucket', group: 'example.com' }]), services, true);
    expect(kind.resolvedRefs.reason).toBe('InvalidKind');
    const ns = planRoute(route('web', [{ name: 'web-ping', namespace: 'other', port: 80 }]), services, true);
    expect(ns.resolvedRefs.reason).toBe('RefNotPermitted');
  });

  it('does not accept what its listener cannot serve: several rules, matches or filters, a second route', () => {
    const two = route('web', [{ name: 'web-ping', port: 80 }]);
    two.spec?.rules?.push({ matches: EVERY_PATH, backendRefs: [] });
    expect(planRoute(two, services, true)).toMatchObject({ accepted: { ok: false, reason: 'UnsupportedValue' } });
    expect(planRoute(two, services, true).backends).toEqual([]);
    const matched = route('web', [{ name: 'web-ping', port: 80 }]);
    if (matched.spec?.rules?.[0]) matched.spec.rules[0].matches = [{ path: { type: 'PathPrefix', value: '/api' } }];
    expect(planRoute(matched, services, true).accepted.reason).toBe('UnsupportedValue');
    const second = planRoute(route('web', [{ name: 'web-ping', port: 80 }]), services, false);
    expect(second.accepted).toMatchObject({ ok: false, reason: 'UnsupportedValue' });
    expect(second.accepted.message).toContain('one HTTPRoute');
  });
});

describe('routeParents', () => {
  const ref = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' };
  const ok = planRoute(route('web', [{ name: 'web-ping', port: 80 }]), new Set(['web-ping']), true);
  const missing = planRoute(route('web', [{ name: 'web-ping', port: 80 }]), new Set(), true);

  it('writes Accepted and ResolvedRefs at the generation, keeping other controllers entries', () => {
    const other = { parentRef: ref, controllerName: 'example.com/other', conditions: [] };
    const r = { ...route('web', []), status: { parents: [other] } };
    const parents = routeParents(r, ref, ok, 3, 'T1');
    expect(parents[0]).toBe(other);
    expect(parents[1]).toEqual({
      parentRef: ref,
      controllerName: GATEWAY_CONTROLLER,
      conditions: [
        expect.objectContaining({ type: 'Accepted', status: 'True', observedGeneration: 3, lastTransitionTime: 'T1' }),
        expect.objectContaining({ type: 'ResolvedRefs', status: 'True', observedGeneration: 3 }),
      ],
    });
  });

  it('replaces its own entry; a condition whose status holds keeps its lastTransitionTime', () => {
    const r = { ...route('web', []), status: { parents: routeParents(route('web', []), ref, ok, 3, 'T1') } };
    const parents = routeParents(r, ref, missing, 4, 'T2');
    expect(parents).toHaveLength(1);
    expect(parents[0]?.conditions).toEqual([
      expect.objectContaining({ type: 'Accepted', status: 'True', observedGeneration: 4, lastTransitionTime: 'T1' }),
      expect.objectContaining({
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'BackendNotFound',
        observedGeneration: 4,
        lastTransitionTime: 'T2',
      }),
    ]);
  });
});

describe('pickWeighted and listenerBackends', () => {
  const picks = (weights: number[], n: number) => {
    const current: number[] = [];
    return Array.from({ length: n }, () => pickWeighted(weights, current));
  };

  it('sends everything to the only weighted backend, nothing to weight 0, and -1 when all are 0', () => {
    expect(new Set(picks([100, 0], 50))).toEqual(new Set([0]));
    expect(new Set(picks([0, 100], 50))).toEqual(new Set([1]));
    expect(picks([0, 0], 3)).toEqual([-1, -1, -1]);
  });

  it('splits by weight, evenly interleaved: 3 to 1 gives 3 of every 4', () => {
    const p = picks([75, 25], 8);
    expect(p.filter((i) => i === 1)).toHaveLength(2);
    expect(p.slice(0, 4).filter((i) => i === 1)).toHaveLength(1);
  });

  it('programs each backend with its registered targets, an invalid one marked, and all groups draining', () => {
    const healthy = (ip: string): [string, Target] => [
      ip,
      { target: ip, pod: ip, state: 'healthy', seenAt: 0, registeredAt: 1, answering: true },
    ];
    const draining = (ip: string): [string, Target] => [
      ip,
      { target: ip, pod: ip, state: 'draining', seenAt: 0, drainingSince: 1, answering: true },
    ];
    const groups = new Map([
      ['a', new Map([healthy('1:80'), draining('2:80')])],
      ['b', new Map([healthy('3:80')])],
      ['old', new Map([draining('4:80')])],
    ]);
    expect(
      listenerBackends(
        [
          { service: 'a', weight: 100 },
          { service: 'b', weight: 0 },
          { service: 'gone', weight: 5, invalid: 'BackendNotFound' },
        ],
        groups,
      ),
    ).toEqual({
      backends: [
        { weight: 100, registered: ['1:80'] },
        { weight: 0, registered: ['3:80'] },
        { weight: 5, registered: [], invalid: true },
      ],
      draining: ['2:80', '4:80'],
    });
  });
});
