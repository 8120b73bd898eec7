// Ping-pong slots with a Gateway API switch (src/rollout/ping-pong.ts, route.ts),
// driven through the planner's model of the cluster (test/support/planner-world.ts):
// the HTTPRoute is a trimmed route the model patches, and the "gateway" marks it
// Accepted and ResolvedRefs at its generation when the world settles.
import { describe, expect, it } from 'vitest';
import { LABEL_APP, LABEL_SLOT } from '../../src/app/labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import type { RolloutAction } from '../../src/rollout/cluster-actions.ts';
import type { ObservedEndpointSlice } from '../../src/rollout/observed.ts';
import type { ObservedPod } from '../../src/rollout/restart.ts';
import type { ObservedRoute } from '../../src/rollout/route.ts';
import { intent, makeApp, World } from '../support/planner-world.ts';

const S = 1000;

const withPingPong = (a: AppInput) => {
  a.spec.strategy = {
    blueGreen: {
      autoPromotionEnabled: false,
      previewReplicaCount: 1,
      pingPong: { pingService: 'web-ping', pongService: 'web-pong' },
      trafficRouting: { gatewayAPI: { httpRoute: 'web' } },
    },
  };
};

/** The route someone made: rule 0 names both slots (weights left to their default) and a third backend. */
function route(): ObservedRoute {
  return {
    namespace: 'ns',
    name: 'web',
    resourceVersion: '1',
    generation: 1,
    rules: [
      {
        backendRefs: [
          { name: 'web-ping', weight: 1 },
          { name: 'web-pong', weight: 1 },
          { name: 'other', weight: 7 },
        ],
      },
    ],
    parents: [{ accepted: 1, resolvedRefs: 1 }],
  };
}

function pingPongWorld(edit?: (a: AppInput) => void): World {
  const w = new World(
    makeApp((a) => {
      withPingPong(a);
      edit?.(a);
    }),
  );
  w.route = route();
  return w;
}

/** Revision 1 active in slot ping. */
function released(): { w: World; h1: string } {
  const w = pingPongWorld();
  w.converge();
  return { w, h1: w.target().hash };
}

const weights = (w: World) => w.route?.rules[0]?.backendRefs.map((b) => b.weight);
const kinds = (actions: RolloutAction[]) =>
  actions.map((a) => (a.kind === 'applyService' ? `applyService ${a.role}` : a.kind));

/** A check that stays running unless answered. */
const postChecks = () => ({
  metrics: [
    {
      name: 'smoke',
      successCondition: 'result.ok == true',
      provider: { web: { method: 'GET' as const, url: 'http://127.0.0.1:9/health' } },
    },
  ],
});

/** Revision 2 in preview in slot pong, then promoted and its pods all up (the route not yet written). */
function promotedToFull(w: World): string {
  const h2 = w.image('repo/app:2');
  w.converge();
  w.reconcile([intent('promote', { revision: 2 })]);
  w.settle();
  return h2;
}

describe('spec', () => {
  it('refuses pingPong without trafficRouting, and trafficRouting without pingPong, naming the fields', () => {
    const lone = new World(
      makeApp((a) => {
        withPingPong(a);
        delete a.spec.strategy?.blueGreen?.trafficRouting;
      }),
    );
    expect(lone.reconcile()).toEqual([]);
    expect(lone.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.pingPong: needs spec.strategy.blueGreen.trafficRouting.gatewayAPI (the switch between the slots happens there)',
    );
    const routeOnly = new World(
      makeApp((a) => {
        withPingPong(a);
        delete a.spec.strategy?.blueGreen?.pingPong;
      }),
    );
    expect(routeOnly.reconcile()).toEqual([]);
    expect(routeOnly.condition('InvalidSpec')?.message).toContain(
      'spec.strategy.blueGreen.trafficRouting.gatewayAPI: needs spec.strategy.blueGreen.pingPong',
    );
  });

  it('refuses slot Services named alike, or like the active or preview Service', () => {
    const w = pingPongWorld((a) => {
      if (a.spec.strategy?.blueGreen?.pingPong) a.spec.strategy.blueGreen.pingPong.pongService = 'web';
    });
    expect(w.reconcile()).toEqual([]);
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.pingPong.pongService: must differ from activeService and previewService',
    );
  });
});

describe('a route that cannot be used', () => {
  it('is an invalid spec naming the route, and nothing is written: missing', () => {
    const w = pingPongWorld();
    w.route = undefined;
    expect(w.reconcile()).toEqual([]);
    expect(w.condition('InvalidSpec')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.trafficRouting.gatewayAPI.httpRoute: HTTPRoute ns/web not found',
    );
  });

  it('names the rule when the route has no such rule, or its rule does not name both slot Services', () => {
    const noRule = pingPongWorld((a) => {
      if (a.spec.strategy?.blueGreen?.trafficRouting) a.spec.strategy.blueGreen.trafficRouting.gatewayAPI.rule = 2;
    });
    expect(noRule.reconcile()).toEqual([]);
    expect(noRule.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.trafficRouting.gatewayAPI.rule: HTTPRoute ns/web has no rule 2 (it has 1)',
    );
    const w = pingPongWorld();
    w.route?.rules[0]?.backendRefs.splice(1, 1);
    expect(w.reconcile()).toEqual([]);
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.trafficRouting.gatewayAPI: HTTPRoute ns/web rule 0 does not name Service web-pong in its backendRefs (it must name both the ping and the pong Service)',
    );
    expect(weights(w)).toEqual([1, 7]);
  });

  it('a ref to a Service of the same name in another namespace, or of another kind, is not a slot', () => {
    const w = pingPongWorld();
    const refs = w.route?.rules[0]?.backendRefs ?? [];
    refs[1] = { name: 'web-pong', namespace: 'elsewhere', weight: 1 };
    refs[0] = { name: 'web-ping', kind: 'ServiceImport', group: 'multicluster.x-k8s.io' };
    expect(w.reconcile()).toEqual([]);
    expect(w.condition('InvalidSpec')?.message).toContain('does not name Service web-ping nor web-pong');
  });

  it('says the Gateway API is not installed when the cluster serves no HTTPRoute', () => {
    const w = pingPongWorld();
    w.routeUnavailable = 'the Gateway API is not installed in the cluster';
    expect(w.reconcile()).toEqual([]);
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.trafficRouting.gatewayAPI: the Gateway API is not installed in the cluster',
    );
    expect(w.eventsOf('InvalidSpec')).toHaveLength(1);
  });
});

describe('the first release', () => {
  it('makes both slot Services before any ReplicaSet, each selecting its slot, and puts revision 1 in ping', () => {
    const w = pingPongWorld();
    const actions = w.reconcile();
    expect(kinds(actions).slice(0, 3)).toEqual(['applyService ping', 'applyService pong', 'createReplicaSet']);
    expect(w.services.get('web-ping')?.selector).toEqual({ [LABEL_APP]: 'web', [LABEL_SLOT]: 'ping' });
    expect(w.services.get('web-pong')?.selector).toEqual({ [LABEL_APP]: 'web', [LABEL_SLOT]: 'pong' });
    const create = actions.find((a) => a.kind === 'createReplicaSet');
    if (create?.kind !== 'createReplicaSet') throw new Error('no ReplicaSet');
    expect(create.manifest.spec.template.metadata.labels[LABEL_SLOT]).toBe('ping');
    // The slot is no part of the revision: same hash, same name, the selector without it.
    expect(create.manifest.metadata.name).toBe(`web-${w.target().hash}`);
    expect(create.manifest.spec.selector.matchLabels).not.toHaveProperty(LABEL_SLOT);
  });

  it('switches the route to ping (writing only the two weights), waits for the gateway, then the active Service', () => {
    const w = pingPongWorld();
    w.reconcile();
    w.settle();
    w.gatewayStuck = true;
    const actions = w.reconcile();
    expect(kinds(actions)).toContain('patchRoute');
    expect(kinds(actions)).not.toContain('applyService active');
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.status.phase).toBe('Progressing');
    expect(w.status.message).toContain('waiting for Accepted and ResolvedRefs');
    // The gateway still answers for the old generation: no switch yet, and no second write.
    w.reconcile();
    expect(w.activeHash()).toBeUndefined();
    expect(w.routeWrites).toEqual(['ping']);
    w.gatewayStuck = false;
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(w.target().hash);
    expect(w.status.stablePingPong).toBe('ping');
    expect(w.status.phase).toBe('Healthy');
    expect(w.reconcile()).toEqual([]);
  });

  it('counts a parent that accepted an older generation as not done', () => {
    const w = pingPongWorld();
    w.reconcile();
    w.settle();
    w.reconcile();
    if (w.route) w.route.parents = [{ accepted: 2, resolvedRefs: 1 }];
    w.reconcile();
    expect(w.activeHash()).toBeUndefined();
    if (w.route) w.route.parents = [{ accepted: 2, resolvedRefs: 2 }, { accepted: 2 }];
    w.reconcile();
    expect(w.activeHash()).toBeUndefined();
    if (w.route) w.route.parents = [];
    w.reconcile();
    expect(w.activeHash()).toBeUndefined();
  });
});

describe('a new revision', () => {
  it('runs in the idle slot: pong, previewed through the preview Service as without slots', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.rs(h2).slot).toBe('pong');
    expect(w.previewHash()).toBe(h2);
    expect(w.activeHash()).toBe(h1);
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.status.phase).toBe('Paused');
  });

  it('promotes with one route write, the active Service after the gateway took it, the old slot after the delay', () => {
    const { w, h1 } = released();
    const h2 = promotedToFull(w);
    w.gatewayStuck = true;
    w.reconcile();
    expect(weights(w)).toEqual([0, 100, 7]);
    expect(w.activeHash()).toBe(h1);
    w.gatewayStuck = false;
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.stablePingPong).toBe('pong');
    expect(w.routeWrites).toEqual(['ping', 'pong']);
    expect(w.rs(h1).specReplicas).toBe(3);
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
    expect(w.eventsOf('RouteSwitched').map((e) => e.message)).toEqual([
      expect.stringContaining('to slot ping (revision 1)'),
      'HTTPRoute web rule 0 now sends every request to slot pong (revision 2); was ping 100, pong 0',
    ]);
  });

  it('finishes exactly once when the status write after the route write is lost (kill -9)', () => {
    const { w } = released();
    const h2 = promotedToFull(w);
    w.reconcile([], { loseStatus: true });
    expect(w.routeWrites).toEqual(['ping', 'pong']);
    w.settle();
    w.converge();
    expect(w.routeWrites).toEqual(['ping', 'pong']);
    expect(w.activeHash()).toBe(h2);
    expect(w.status.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect(w.eventsOf('RouteEdited')).toEqual([]);
  });

  it('a third revision waits for ping until revision 1 there is scaled down after its delay, then takes it', () => {
    const { w, h1 } = released();
    promotedToFull(w);
    w.converge();
    expect(w.rs(h1).specReplicas).toBe(3);
    const h3 = w.image('repo/app:3');
    w.reconcile();
    // Revision 1 still serves an undo (scaleDownDelaySeconds): the two never share the slot.
    expect(w.replicaSets.has(h3)).toBe(false);
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.status.message).toBe('revision 3 waits for slot ping: revision 1 is kept there until it is scaled down');
    expect(w.requeue).toBeLessThanOrEqual(30 * S + 1);
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
    w.settle();
    w.reconcile();
    expect(w.rs(h3).slot).toBe('ping');
  });

  it('a superseded preview in the idle slot goes at once, and the next revision takes the slot', () => {
    const { w } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    const h3 = w.image('repo/app:3');
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(0);
    expect(w.rs(h3).slot).toBe('pong');
  });

  it('waits for the idle slot while the stable revision is kept there for post-promotion checks', () => {
    const w = pingPongWorld((a) => {
      if (a.spec.strategy?.blueGreen) {
        a.spec.strategy.blueGreen.postPromotionAnalysis = postChecks();
      }
    });
    w.converge();
    const h1 = w.target().hash;
    const h2 = promotedToFull(w);
    w.converge();
    // Revision 2 serves from pong, its checks still running: revision 1 is stable, kept up in ping.
    expect(w.activeHash()).toBe(h2);
    expect(w.status.stable?.podTemplateHash).toBe(h1);
    const h3 = w.image('repo/app:3');
    w.reconcile();
    expect(w.replicaSets.has(h3)).toBe(false);
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.status.message).toContain('waits for slot ping: revision 1 is kept there');
  });
});

describe('undo and abort', () => {
  it('undo goes back to the old slot while its ReplicaSet is up: one weight write', () => {
    const { w, h1 } = released();
    promotedToFull(w);
    w.converge();
    const writes = w.routeWrites.length;
    w.reconcile([intent('undo', { toRevision: 1 })]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.routeWrites.slice(writes)).toEqual(['ping']);
    expect(w.status.stablePingPong).toBe('ping');
  });

  it('undo to a revision scaled to zero in the serving slot moves its template to the idle slot before it scales up', () => {
    const { w, h1 } = released();
    promotedToFull(w);
    w.converge();
    w.advance(30 * S);
    w.converge();
    const h3 = w.image('repo/app:3');
    w.converge();
    w.reconcile([intent('promote', { revision: 3 })]);
    w.settle();
    w.converge();
    expect(w.rs(h3).slot).toBe('ping');
    w.advance(30 * S);
    w.converge();
    // Revision 1 sits at zero in ping, the serving slot; revision 2 at zero in pong.
    expect(w.rs(h1)).toMatchObject({ slot: 'ping', specReplicas: 0 });
    const actions = w.reconcile([intent('undo', { toRevision: 1 })]);
    const patches = actions.filter((a) => a.kind === 'patchReplicaSet' && a.name === `web-${h1}`);
    expect(patches[0]).toMatchObject({ slot: 'pong' });
    expect(w.rs(h1).slot).toBe('pong');
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(weights(w)).toEqual([0, 100, 7]);
  });

  it('abort during the post-promotion checks moves the weights back to the stable slot before the active Service', () => {
    const w = pingPongWorld((a) => {
      if (a.spec.strategy?.blueGreen) a.spec.strategy.blueGreen.postPromotionAnalysis = postChecks();
    });
    w.converge();
    const h1 = w.target().hash;
    const h2 = promotedToFull(w);
    w.converge();
    expect(w.activeHash()).toBe(h2);
    w.reconcile([intent('abort', { revision: 2 })]);
    w.gatewayStuck = true;
    w.reconcile();
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.activeHash()).toBe(h2);
    expect(w.status.message).toContain('switching HTTPRoute web to slot ping');
    w.gatewayStuck = false;
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.status.stablePingPong).toBe('ping');
    expect(w.routeWrites).toEqual(['ping', 'pong', 'ping']);
  });

  it('abort while the gateway has not taken the switch puts the weights back on the stable slot', () => {
    const { w, h1 } = released();
    promotedToFull(w);
    w.gatewayStuck = true;
    w.reconcile();
    expect(weights(w)).toEqual([0, 100, 7]);
    w.reconcile([intent('abort', { revision: 2 })]);
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.activeHash()).toBe(h1);
    expect(w.eventsOf('RouteSwitched').at(-1)?.message).toBe(
      'HTTPRoute web rule 0 back to slot ping (revision 1): revision 2 is not being promoted',
    );
    expect(w.eventsOf('RouteEdited')).toEqual([]);
  });
});

describe('with a drain-verified switch (blueGreen.switch)', () => {
  const GATE = 'target-health.elbv2.k8s.aws/web';
  const podsOf = (w: World, hash: string, gated: boolean): ObservedPod[] =>
    [1, 2, 3].map((i) => ({
      namespace: 'ns',
      name: `${w.rs(hash).name}-${i}`,
      resourceVersion: '1',
      app: 'web',
      hash,
      createdAt: '',
      ready: true,
      deleting: false,
      trueConditions: gated ? ['Ready', GATE] : ['Ready'],
    }));
  const slicesOf = (w: World, hash: string): ObservedEndpointSlice => ({
    namespace: 'ns',
    name: 'web-abcde',
    resourceVersion: '1',
    service: 'web',
    endpoints: [1, 2, 3].map((i) => ({
      pod: `${w.rs(hash).name}-${i}`,
      ready: true,
      serving: true,
      terminating: false,
    })),
  });

  it('after the route and the active Service, the old slot stays up until the switch is verified, then for its delay', () => {
    const w = pingPongWorld((a) => {
      if (a.spec.strategy?.blueGreen)
        a.spec.strategy.blueGreen.switch = { readinessGates: [GATE], timeoutSeconds: 120 };
    });
    const h1 = w.target().hash;
    w.pods = [];
    w.converge();
    w.pods = podsOf(w, h1, true);
    w.endpointSlices = [slicesOf(w, h1)];
    w.converge();
    const h2 = promotedToFull(w);
    w.reconcile();
    expect(weights(w)).toEqual([0, 100, 7]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    // The active Service's slices still list revision 1, and the gates of revision 2's pods are not set.
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, false)];
    w.reconcile();
    w.advance(60 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    expect(w.condition('SwitchVerified')).toMatchObject({ status: 'False', reason: 'SwitchVerifying' });
    // A new revision meanwhile waits for ping: revision 1 is not let go before its switch is verified.
    const h3 = w.image('repo/app:3');
    w.reconcile();
    expect(w.replicaSets.has(h3)).toBe(false);
    expect(w.rs(h1).specReplicas).toBe(3);
    w.endpointSlices = [slicesOf(w, h2)];
    w.pods = [...podsOf(w, h1, true), ...podsOf(w, h2, true)];
    w.reconcile();
    expect(w.condition('SwitchVerified')?.status).toBe('True');
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
    w.settle();
    w.reconcile();
    expect(w.rs(h3).slot).toBe('ping');
  });
});

describe('the cluster is the truth', () => {
  it('puts back weights someone edited, and says so', () => {
    const { w } = released();
    const refs = w.route?.rules[0]?.backendRefs ?? [];
    if (refs[0]) refs[0].weight = 50;
    if (refs[1]) refs[1].weight = 50;
    w.reconcile();
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.eventsOf('RouteEdited').map((e) => e.message)).toEqual([
      'HTTPRoute web rule 0 was changed by someone else (ping 50, pong 50); Teal sets it back to slot ping (revision 1)',
    ]);
  });

  it('puts back weights moved to the slot of a revision in preview that nobody promoted', () => {
    const { w, h1 } = released();
    w.image('repo/app:2');
    w.converge();
    const refs = w.route?.rules[0]?.backendRefs ?? [];
    if (refs[0]) refs[0].weight = 0;
    if (refs[1]) refs[1].weight = 100;
    w.converge();
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.activeHash()).toBe(h1);
  });

  it("puts back the active revision's slot label someone edited, and leaves the route where it serves", () => {
    const { w, h1 } = released();
    w.rs(h1).slot = 'pong';
    w.reconcile();
    expect(w.rs(h1).slot).toBe('ping');
    expect(weights(w)).toEqual([100, 0, 7]);
    expect(w.eventsOf('SlotLabelEdited')).toHaveLength(1);
    expect(w.eventsOf('RouteEdited')).toEqual([]);
  });

  it("puts back a slot Service's selector someone edited, and says so", () => {
    const { w } = released();
    const ping = w.services.get('web-ping');
    if (ping) ping.selector = { [LABEL_APP]: 'web' };
    w.reconcile();
    expect(w.services.get('web-ping')?.selector).toEqual({ [LABEL_APP]: 'web', [LABEL_SLOT]: 'ping' });
    expect(w.eventsOf('SlotServiceEdited')).toHaveLength(1);
  });
});
