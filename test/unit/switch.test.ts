// The drain-verified switch (spec.strategy.blueGreen.switch, src/rollout/switch.ts):
// what keeps a switch from being verified, and the planner holding the old
// revision up until the cluster shows it, counting scaleDownDelaySeconds from
// then, and saying what is missing past timeoutSeconds.
import { describe, expect, it } from 'vitest';
import type { MeasurementResult } from '../../src/analysis/measurement.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { TrafficCheckSchema } from '../../src/app/traffic-schema.ts';
import { type ObservedEndpointSlice, observeEndpointSlice } from '../../src/rollout/observed.ts';
import type { ObservedPod } from '../../src/rollout/restart.ts';
import { switchUnverified } from '../../src/rollout/switch.ts';
import { intent, makeApp, World } from '../support/planner-world.ts';

const S = 1000;
const GATE = 'target-health.elbv2.k8s.aws/web';

function pod(name: string, hash: string, trueConditions: string[] = ['Ready']): ObservedPod {
  const base = { namespace: 'ns', name, resourceVersion: '1', app: 'web', hash, createdAt: '' };
  return { ...base, ready: trueConditions.includes('Ready'), deleting: false, trueConditions };
}

type EndpointShape = { pod: string; ready?: boolean; serving?: boolean; terminating?: boolean };

function slice(endpoints: EndpointShape[]): ObservedEndpointSlice {
  return {
    namespace: 'ns',
    name: 'web-abcde',
    resourceVersion: '1',
    service: 'web',
    endpoints: endpoints.map((e) => ({
      pod: e.pod,
      ready: e.ready ?? true,
      serving: e.serving ?? e.ready ?? true,
      terminating: e.terminating ?? false,
    })),
  };
}

describe('switchUnverified', () => {
  const pods = [pod('new-1', 'h2'), pod('new-2', 'h2'), pod('old-1', 'h1')];
  const input = (slices: ObservedEndpointSlice[], gates: string[] = [], list: ObservedPod[] = pods) => ({
    hash: 'h2',
    replicas: 2,
    gates,
    slices,
    pods: list,
  });

  it('is verified when the slices list only new-revision endpoints, as many as replicas, ready and serving', () => {
    expect(switchUnverified(input([slice([{ pod: 'new-1' }, { pod: 'new-2' }])]))).toEqual([]);
  });

  it('names old-revision endpoints still listed, and those of no pod of the App', () => {
    const missing = switchUnverified(input([slice([{ pod: 'new-1' }, { pod: 'new-2' }, { pod: 'old-1' }])]));
    expect(missing).toEqual(['endpoints of other revisions still listed: old-1']);
    expect(switchUnverified(input([slice([{ pod: 'new-1' }, { pod: 'new-2' }, { pod: 'other' }])]))).toEqual([
      'endpoints of other revisions still listed: other',
    ]);
  });

  it('names new endpoints not ready or not serving, and counts the ready ones against replicas', () => {
    const missing = switchUnverified(input([slice([{ pod: 'new-1' }, { pod: 'new-2', ready: false }])]));
    expect(missing).toEqual(['endpoints not ready and serving: new-2', '1 of 2 endpoints ready and serving']);
    expect(switchUnverified(input([slice([{ pod: 'new-1' }])]))).toEqual(['1 of 2 endpoints ready and serving']);
    expect(switchUnverified(input([]))).toEqual(['0 of 2 endpoints ready and serving']);
  });

  it('names each readiness gate not True on a live pod of the new revision', () => {
    const gated = [pod('new-1', 'h2', ['Ready', GATE]), pod('new-2', 'h2')];
    const slices = [slice([{ pod: 'new-1' }, { pod: 'new-2' }])];
    expect(switchUnverified(input(slices, [GATE], gated))).toEqual([`readiness gate ${GATE} not True on new-2`]);
    const both = [pod('new-1', 'h2', ['Ready', GATE]), pod('new-2', 'h2', ['Ready', GATE])];
    expect(switchUnverified(input(slices, [GATE], both))).toEqual([]);
  });

  it('is never verified without the pods', () => {
    expect(switchUnverified({ ...input([slice([{ pod: 'new-1' }, { pod: 'new-2' }])]), pods: undefined })).toEqual([
      'the pods are not read yet',
    ]);
  });

  it('reads an endpoint with no conditions as the API says: ready, serving as ready, not terminating', () => {
    const observed = observeEndpointSlice({
      metadata: { name: 's', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
      endpoints: [
        { addresses: ['10.0.0.1'], targetRef: { kind: 'Pod', name: 'a' } },
        { addresses: ['10.0.0.2'], targetRef: { kind: 'Pod', name: 'b' }, conditions: { ready: false } },
      ],
    });
    expect(observed?.endpoints).toEqual([
      { pod: 'a', ready: true, serving: true, terminating: false },
      { pod: 'b', ready: false, serving: false, terminating: false },
    ]);
    expect(observeEndpointSlice({ metadata: { name: 's', namespace: 'ns' } })).toBeUndefined();
  });
});

/** Revision 1 active; revision 2 in preview, ready; `switch` set unless said. */
function inPreview({ scaleDownDelaySeconds = 30, verified = true } = {}) {
  const w = new World(
    makeApp((a: AppInput) => {
      a.spec.strategy = {
        blueGreen: {
          autoPromotionEnabled: false,
          previewReplicaCount: 1,
          scaleDownDelaySeconds,
          ...(verified ? { switch: { readinessGates: [GATE], timeoutSeconds: 120 } } : {}),
        },
      };
    }),
  );
  const h1 = w.target().hash;
  w.pods = [];
  w.converge();
  // Verified for revision 1, as the cluster shows it.
  w.pods = podsOf(w, h1, true);
  w.endpointSlices = [endpointsOf(w, h1)];
  w.converge();
  const h2 = w.image('repo/app:2');
  w.converge();
  return { w, h1, h2 };
}

function podsOf(w: World, hash: string, gated: boolean): ObservedPod[] {
  const name = w.rs(hash).name;
  return [1, 2, 3].map((i) => pod(`${name}-${i}`, hash, gated ? ['Ready', GATE] : ['Ready']));
}

function endpointsOf(w: World, hash: string, ready = true): ObservedEndpointSlice {
  const name = w.rs(hash).name;
  return slice([1, 2, 3].map((i) => ({ pod: `${name}-${i}`, ready })));
}

/** Promoted and switched: the slices (the EndpointSlice controller held back) still list revision 1. */
function switched() {
  const { w, h1, h2 } = inPreview();
  w.reconcile([intent('promote')]);
  w.settle();
  w.reconcile();
  expect(w.activeHash()).toBe(h2);
  w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, false)];
  w.reconcile();
  return { w, h1, h2 };
}

const cond = (w: World) => w.status.conditions?.find((c) => c.type === 'SwitchVerified');

describe('the drain-verified switch in the planner', () => {
  it('keeps the old revision up, unmarked, while the slices still list it, and wakes at the timeout', () => {
    const { w, h1, h2 } = switched();
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    expect(w.status.switch).toMatchObject({ podTemplateHash: h2, revision: 2 });
    expect(w.status.switch?.verifiedAt).toBeUndefined();
    expect(cond(w)).toMatchObject({ status: 'False', reason: 'SwitchVerifying' });
    expect(cond(w)?.message).toContain('endpoints of other revisions still listed');
    const since = Date.parse(w.status.switch?.since ?? '');
    expect(w.requeue).toBe(since + 120 * S - w.now + 1);
    w.advance(60 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(3);
  });

  it('starts scaleDownDelaySeconds once the slices list only ready new endpoints and the gates are True', () => {
    const { w, h1, h2 } = switched();
    w.advance(10 * S);
    w.endpointSlices = [endpointsOf(w, h2)];
    w.reconcile();
    // The new pods' gate is not set yet.
    expect(cond(w)?.message).toContain(`readiness gate ${GATE} not True on`);
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    w.advance(5 * S);
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, true)];
    w.reconcile();
    expect(w.status.switch?.verifiedAt).toBe(new Date(w.now).toISOString());
    expect(cond(w)).toMatchObject({ status: 'True', reason: 'SwitchVerified' });
    expect(w.events.filter((e) => e.reason === 'SwitchVerified')).toHaveLength(2);
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
  });

  it('with scaleDownDelaySeconds 0 scales the old revision down in the plan that sees the switch verified, not before', () => {
    const { w, h1, h2 } = inPreview({ scaleDownDelaySeconds: 0 });
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.rs(h1).specReplicas).toBe(3);
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, true)];
    w.endpointSlices = [endpointsOf(w, h2, false)];
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(3);
    w.endpointSlices = [endpointsOf(w, h2)];
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
  });

  it('past timeoutSeconds says what is missing once, in a condition and a Warning Event, and keeps the old revision up', () => {
    const { w, h1, h2 } = switched();
    w.endpointSlices = [endpointsOf(w, h2)];
    w.advance(120 * S);
    w.reconcile();
    const warnings = () => w.events.filter((e) => e.reason === 'SwitchNotVerified');
    expect(cond(w)).toMatchObject({ status: 'False', reason: 'SwitchNotVerified' });
    expect(warnings()).toEqual([
      {
        type: 'Warning',
        reason: 'SwitchNotVerified',
        message: expect.stringMatching(
          new RegExp(
            `^the switch to revision 2 was not verified within timeoutSeconds \\(120s\\), the previous revision stays up: readiness gate ${GATE} not True on web-\\w+-1, web-\\w+-2, web-\\w+-3$`,
          ),
        ),
      },
    ]);
    w.advance(600 * S);
    w.reconcile();
    expect(warnings()).toHaveLength(1);
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
  });

  it('can still be undone while unverified: back to revision 1 at once, which is verified again from the slices', () => {
    const { w, h1, h2 } = switched();
    w.reconcile([intent('undo')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h1);
    // The slices never moved: they list revision 1 only, so the switch back is verified at once.
    w.reconcile();
    expect(w.status.switch).toMatchObject({ podTemplateHash: h1 });
    expect(w.status.switch?.verifiedAt).toBeDefined();
    expect(w.rs(h2).specReplicas).toBeGreaterThan(0);
  });

  it('asks to be woken at once when it waits for a switch whose pods it was not given', () => {
    // The reconciler reads the pods only when the status it holds shows a switch waiting: in the
    // reconcile that switches (or the first after a restart that missed the slices' changes) it
    // holds revision 1 verified. No change of the slices may come to wake the App again.
    const { w, h2 } = inPreview();
    w.pods = undefined;
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(cond(w)?.message).toContain('the pods are not read yet');
    expect(w.requeue).toBe(1);
  });

  it('verifies again from the cluster when the status that recorded it was lost', () => {
    const { w, h1, h2 } = switched();
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, true)];
    w.endpointSlices = [endpointsOf(w, h2)];
    w.reconcile([], { loseStatus: true });
    // The mark was written with the plan; its status was not.
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    expect(w.status.switch?.verifiedAt).toBeUndefined();
    w.advance(S);
    w.reconcile();
    expect(w.status.switch?.verifiedAt).toBe(new Date(w.now).toISOString());
    // The mark already written stands.
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now - S + 30 * S).toISOString());
  });

  it('without switch, the old revision is marked at the switch whatever the slices say, as before', () => {
    const { w, h1, h2 } = inPreview({ verified: false });
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    expect(cond(w)).toBeUndefined();
    expect(w.status.switch).toBeUndefined();
  });
});

describe('the traffic check in the switch', () => {
  const URL_WITH_TOKEN = 'http://shop.example.com/version?token=s3cret';

  /** Revision 2 switched to, its endpoints and gates all there: only the traffic check stands. */
  function trafficSwitched(consecutiveSuccessLimit = 2) {
    const { w, h1, h2 } = inPreview();
    const bg = w.app.spec.strategy.blueGreen;
    if (bg.switch) {
      bg.switch.trafficCheck = TrafficCheckSchema.parse({
        url: URL_WITH_TOKEN,
        jsonPath: '{$.revision}',
        consecutiveSuccessLimit,
      });
    }
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, true)];
    w.endpointSlices = [endpointsOf(w, h2)];
    w.reconcile();
    return { w, h1, h2 };
  }

  const traffic = (w: World) => w.measured.find((m) => m.kind === 'traffic');
  const answer = (w: World, result: MeasurementResult) => {
    const request = traffic(w);
    if (!request) throw new Error('no traffic request handed out');
    w.answer(request.key, result);
  };

  it('the switch is verified, and the old revision marked, only once the new revision answered N times in a row', () => {
    const { w, h1, h2 } = trafficSwitched(2);
    expect(traffic(w)).toMatchObject({
      kind: 'traffic',
      n: 1,
      revision: { expected: { podTemplateHash: h2, revision: 2 } },
    });
    expect(cond(w)?.message).toContain('traffic check: 0 of 2 answers in a row from revision 2 at shop.example.com');
    answer(w, { phase: 'Successful', value: h2 });
    w.reconcile();
    w.advance(S);
    w.reconcile();
    expect(w.status.trafficCheck).toMatchObject({ consecutive: 1, lastSeen: h2 });
    expect(w.status.switch?.verifiedAt).toBeUndefined();
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    answer(w, { phase: 'Successful', value: '2' });
    w.reconcile();
    expect(w.status.trafficCheck?.phase).toBe('Successful');
    expect(w.status.switch?.verifiedAt).toBe(new Date(w.now).toISOString());
    expect(cond(w)?.message).toContain('its traffic check passed');
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    expect(w.status.conditions?.find((c) => c.type === 'TrafficChecked')).toMatchObject({
      status: 'True',
      reason: 'TrafficCheckPassed',
    });
  });

  it('answers from the old revision until the bound keep it up, with TrafficChecked False and a Warning naming the host', () => {
    const { w, h1 } = trafficSwitched(2);
    for (let i = 0; i < 200 && w.status.trafficCheck?.phase === 'Running'; i++) {
      if (traffic(w)) answer(w, { phase: 'Failed', value: h1 });
      w.reconcile();
      w.advance(S);
      w.reconcile();
    }
    expect(w.status.trafficCheck).toMatchObject({ phase: 'Failed', consecutive: 0, lastSeen: h1 });
    const warnings = w.events.filter((e) => e.reason === 'TrafficCheckFailed');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.type).toBe('Warning');
    expect(warnings[0]?.message).toContain(`at shop.example.com within 120s`);
    expect(warnings[0]?.message).toContain(`last answer named ${h1}`);
    expect(JSON.stringify(w.events)).not.toContain('s3cret');
    expect(JSON.stringify(w.status)).not.toContain('s3cret');
    expect(cond(w)).toMatchObject({ status: 'False', reason: 'SwitchNotVerified' });
    expect(cond(w)?.message).toContain('traffic check: revision 2 did not answer 2 times in a row');
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    // Nothing more is asked: the check ended.
    w.reconcile();
    expect(traffic(w)).toBeUndefined();
  });
});
