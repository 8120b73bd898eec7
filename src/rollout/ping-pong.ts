// Ping-pong slots with a Gateway API switch (spec.strategy.blueGreen.pingPong
// and trafficRouting.gatewayAPI), as planner steps, pure like the rest.
//
// Two Services, ping and pong, select the App's pods by a slot label; each
// new revision's ReplicaSet runs in the idle slot, its pods labelled from
// creation. The switch is one write of the route's weights, then a wait for
// the route's Accepted and ResolvedRefs at its new generation; only then does
// the active Service follow (bluegreen.ts switchActive) as without slots.
//
// The cluster is the truth, as for the active Service: the slot a revision
// runs in is its ReplicaSet's pod template label, the slot that serves is the
// route's weights. A route sending traffic to the slot of the revision being
// released is Teal's own switch whose next steps were lost (a kill between the
// writes) and is carried on; any other difference is put back, and said.
import { LABEL_APP, LABEL_SLOT, type Slot } from '../app/labels.ts';
import type { ObservedReplicaSet, ObservedService } from './observed.ts';
import { emit, type Planner, type Progress, type Rollout } from './planner.ts';
import { hasServed } from './predicates.ts';
import { EventReason as ER } from './reasons.ts';
import { sizeTo } from './replicaset-writes.ts';
import { type RouteView, readRoute, routedSlot, routePatch, weightsText } from './route.ts';
import { slotServiceManifest } from './service.ts';

export const isPingPong = (p: Planner): boolean => p.app.spec.strategy.blueGreen.pingPong !== undefined;

export const otherSlot = (slot: Slot): Slot => (slot === 'ping' ? 'pong' : 'ping');

/** Why the route cannot be used (missing, wrong rule, not naming both slots, no Gateway API): an invalid spec. */
export function routeProblems(p: Pick<Planner, 'app' | 'input'>): string[] {
  if (p.app.spec.strategy.blueGreen.pingPong === undefined) return [];
  const routing = p.input.observed.routing;
  if (routing?.unavailable) return [`spec.strategy.blueGreen.trafficRouting.gatewayAPI: ${routing.unavailable}`];
  const view = readRoute(p.app, routing?.route);
  return 'problem' in view ? [view.problem] : [];
}

/** The route, read; routeProblems() already refused a plan where it cannot be. */
function route(p: Planner): RouteView | undefined {
  const view = readRoute(p.app, p.input.observed.routing?.route);
  return 'problem' in view ? undefined : view;
}

/**
 * The slot that serves: the one status recorded at the switch, written with
 * status.active; else (that status lost) the active revision's ReplicaSet's.
 * Not the template label first: an edit of it moves no running pod, and must
 * not move the route. Undefined before the first release in a slot: Teal
 * leaves the route alone until then.
 */
export function servingSlot(p: Planner, r: Rollout): Slot | undefined {
  if (p.status.stablePingPong) return p.status.stablePingPong;
  const hash = p.status.active?.podTemplateHash ?? r.activeHash;
  return hash ? r.byHash.get(hash)?.slot : undefined;
}

/**
 * The active revision's pod template keeps the serving slot's label: one
 * edited by hand would give its next pods (a replaced one) another slot, so
 * it is put back, and said.
 */
export function repairActiveSlot(p: Planner, r: Rollout): void {
  if (!isPingPong(p) || !p.status.stablePingPong) return;
  const hash = p.status.active?.podTemplateHash;
  const rs = hash ? r.byHash.get(hash) : undefined;
  const slot = p.status.stablePingPong;
  if (!rs || rs.slot === slot) return;
  p.actions.push({ kind: 'patchReplicaSet', name: rs.name, slot });
  emit(p, {
    type: 'Warning',
    reason: ER.SlotLabelEdited,
    message: `ReplicaSet ${rs.name} (revision ${rs.revision}, active) had its pod template's ${LABEL_SLOT} changed to ${rs.slot ?? '(none)'} by someone else; Teal sets it back to ${slot}`,
  });
}

/** Where a revision's new ReplicaSet goes: the serving slot for the active one, else the idle slot. */
export function slotFor(p: Planner, r: Rollout, hash: string): Slot {
  const serving = servingSlot(p, r);
  if (serving === undefined) return 'ping';
  return hash === r.activeHash ? serving : otherSlot(serving);
}

/** The slot Services, each as Teal owns it: made before any pod of the App, and a hand edit put back. */
export function reconcileSlotServices(p: Planner): void {
  if (!isPingPong(p)) return;
  for (const slot of ['ping', 'pong'] as const) {
    const want = slotServiceManifest(p.app, slot);
    const svc = p.input.observed.slotServices?.[slot];
    if (svc && slotServiceMatches(svc, want)) continue;
    if (svc && svc.appliedHash !== undefined) {
      emit(p, {
        type: 'Warning',
        reason: ER.SlotServiceEdited,
        message: `Service ${svc.name} (slot ${slot}) was changed by someone else to select ${JSON.stringify(svc.selector).slice(0, 200)}; Teal sets it back to ${LABEL_SLOT}=${slot}`,
      });
    }
    p.actions.push({ kind: 'applyService', role: slot, manifest: want });
  }
}

function slotServiceMatches(svc: ObservedService, want: ReturnType<typeof slotServiceManifest>): boolean {
  const selector = want.spec.selector;
  return (
    svc.appliedHash === want.metadata.annotations['teal.dev/applied'] &&
    Object.keys(svc.selector).length === Object.keys(selector).length &&
    svc.selector[LABEL_APP] === selector[LABEL_APP] &&
    svc.selector[LABEL_SLOT] === selector[LABEL_SLOT]
  );
}

/**
 * Makes room in a slot for a revision, as its slot Service would select any
 * other revision's pods there too. A preview that never served goes at once.
 * A revision that served stays until its scale-down as without slots (after
 * scaleDownDelaySeconds, and with `switch` only once the switch is verified:
 * bluegreen.ts scaleDownOthers), and the stable one while post-promotion
 * checks stand: the new revision waits for the slot meanwhile, and this says
 * why. Undefined once the slot is free (or being freed of a preview).
 */
export function freeSlot(p: Planner, r: Rollout, slot: Slot, hash: string, number: number): Progress | undefined {
  const { status } = p;
  const keep = new Set([status.active?.podTemplateHash, r.activeHash, status.stable?.podTemplateHash]);
  for (const rs of r.byHash.values()) {
    if (rs.hash === hash || rs.slot !== slot || (rs.specReplicas === 0 && rs.replicas === 0)) continue;
    if (keep.has(rs.hash) || hasServed(status, rs.hash, rs.revision)) {
      const until = keep.has(rs.hash) ? 'the active revision is stable' : 'it is scaled down';
      return {
        phase: 'Progressing',
        message: `revision ${number} waits for slot ${slot}: revision ${rs.revision} is kept there until ${until}`,
      };
    }
    if (rs.specReplicas > 0) sizeTo(p, rs, 0, `slot ${slot} is taken by revision ${number}`);
  }
  return undefined;
}

/**
 * The desired revision's ReplicaSet in the idle slot. One in another slot
 * (made before, an undo to it) is emptied first, then its pod template gets
 * the idle slot: its next pods are born matching that slot's Service.
 */
export function placeInSlot(p: Planner, r: Rollout, rs: ObservedReplicaSet, number: number): Progress | undefined {
  if (!isPingPong(p)) return undefined;
  const slot = slotFor(p, r, rs.hash);
  const busy = freeSlot(p, r, slot, rs.hash, number);
  if (busy) return busy;
  if (rs.slot === slot) return undefined;
  if (rs.specReplicas > 0 || rs.replicas > 0) {
    sizeTo(p, rs, 0, `revision ${number} moves to slot ${slot}`);
    return {
      phase: 'Progressing',
      message: `revision ${number} moves to slot ${slot}: waiting for its pods in slot ${rs.slot ?? '(none)'} to go`,
    };
  }
  p.actions.push({ kind: 'patchReplicaSet', name: rs.name, slot });
  // The plan goes on with the ReplicaSet as it now is.
  r.byHash.set(rs.hash, { ...rs, slot });
  return undefined;
}

/**
 * The switch to a revision's slot at the routing layer: the route's weights
 * written (once: a route already there is not written again), then waited for
 * until every parent has Accepted and ResolvedRefs at its generation, and the
 * slot holds no other revision's pods. Undefined once done: the active Service
 * follows. Otherwise where the switch stands.
 */
export function routeTo(p: Planner, r: Rollout, rs: ObservedReplicaSet, number: number): Progress | undefined {
  if (!isPingPong(p)) return undefined;
  const view = route(p);
  const slot = rs.slot;
  if (!view || !slot) return { phase: 'Progressing', message: `revision ${number} has no slot yet`, waiting: 'route' };
  p.switching = slot;
  const other = [...r.byHash.values()].find((o) => o.hash !== rs.hash && o.slot === slot && o.replicas > 0);
  if (other) {
    return {
      phase: 'Progressing',
      message: `revision ${number}: waiting for the pods of revision ${other.revision} to leave slot ${slot}`,
      waiting: 'route',
    };
  }
  if (routedSlot(view) !== slot) {
    p.actions.push({ kind: 'patchRoute', name: view.name, to: slot, ops: routePatch(p.app, view, slot) });
    emit(p, {
      type: 'Normal',
      reason: ER.RouteSwitched,
      message: `HTTPRoute ${view.name} rule ${view.rule} now sends every request to slot ${slot} (revision ${number}); was ${weightsText(view)}`,
    });
    return routeWaiting(view, slot, number, 'written');
  }
  if (!view.settled) return routeWaiting(view, slot, number, 'generation');
  return undefined;
}

function routeWaiting(view: RouteView, slot: Slot, number: number, stage: 'written' | 'generation'): Progress {
  const at = stage === 'written' ? 'its next generation' : `generation ${view.generation}`;
  return {
    phase: 'Progressing',
    message: `revision ${number}: switching HTTPRoute ${view.name} to slot ${slot}, waiting for Accepted and ResolvedRefs at ${at}`,
    waiting: 'route',
  };
}

/**
 * Keeps the route on the serving slot when no switch is under way: a hand
 * edit of the weights, or Teal's own switch to a revision since aborted, is
 * put back in one write.
 */
export function reconcileRoute(p: Planner, r: Rollout): void {
  if (!isPingPong(p) || p.switching !== undefined) return;
  const view = route(p);
  const serving = servingSlot(p, r);
  if (!view || !serving || routedSlot(view) === serving) return;
  p.actions.push({ kind: 'patchRoute', name: view.name, to: serving, ops: routePatch(p.app, view, serving) });
  const desired = r.desired ? r.byHash.get(r.desired.hash) : undefined;
  const abandoned = desired?.slot !== undefined && desired.slot === routedSlot(view) && desired.hash !== r.activeHash;
  const revision = p.status.active?.revision;
  emit(
    p,
    abandoned
      ? {
          type: 'Normal',
          reason: ER.RouteSwitched,
          message: `HTTPRoute ${view.name} rule ${view.rule} back to slot ${serving} (revision ${revision}): revision ${desired?.revision} is not being promoted`,
        }
      : {
          type: 'Warning',
          reason: ER.RouteEdited,
          message: `HTTPRoute ${view.name} rule ${view.rule} was changed by someone else (${weightsText(view)}); Teal sets it back to slot ${serving} (revision ${revision})`,
        },
  );
}
