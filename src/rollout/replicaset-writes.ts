// The planner's ReplicaSet writes: create, size, and scale down after a
// delay. Every change of size is an Event (from, to and why), as the
// Deployment controller records ScalingReplicaSet.

import type { Slot } from '../app/labels.ts';
import type { ObservedReplicaSet } from './observed.ts';
import { at, type Desired, emit, type Planner } from './planner.ts';
import { scaleDownDeadline } from './predicates.ts';
import { EventReason as ER } from './reasons.ts';
import { replicaSetManifest } from './replicaset.ts';

/**
 * One Event per new ReplicaSet, in the Deployment controller's words (scaled
 * up from 0), naming the revision, its image and what it is for: a second
 * Event saying "deployed" would tell the same story twice.
 */
export function createReplicaSet(p: Planner, desired: Desired, size: number, what: string, slot?: Slot): void {
  const manifest = replicaSetManifest(p.app, desired, desired.number, size, slot);
  p.actions.push({ kind: 'createReplicaSet', manifest });
  emit(p, {
    type: 'Normal',
    reason: ER.ScalingReplicaSet,
    message: `Scaled up replica set ${manifest.metadata.name} from 0 to ${size}: revision ${desired.number} (${desired.image}), ${what}${slot ? `, in slot ${slot}` : ''}`,
  });
}

/** Sizes a ReplicaSet Teal keeps up, clearing any scale-down mark; each change of size is an Event. */
export function sizeTo(p: Planner, rs: ObservedReplicaSet, replicas: number, why: string): void {
  if (rs.specReplicas !== replicas) {
    const direction = replicas > rs.specReplicas ? 'up' : 'down';
    p.actions.push({ kind: 'patchReplicaSet', name: rs.name, replicas, scaleDownAt: null });
    emit(p, {
      type: 'Normal',
      reason: ER.ScalingReplicaSet,
      message: `Scaled ${direction} replica set ${rs.name} from ${rs.specReplicas} to ${replicas}: ${why}`,
    });
  } else if (rs.scaleDownAt !== undefined) {
    markScaleDown(p, rs, null);
  }
}

export function markScaleDown(p: Planner, rs: ObservedReplicaSet, when: number | null): void {
  p.actions.push({ kind: 'patchReplicaSet', name: rs.name, scaleDownAt: when === null ? null : at(when) });
}

/**
 * Scales to zero once the ReplicaSet's scale-down time has come, marking it
 * first (an annotation, so a restart keeps the deadline) and waking then. A
 * mark that cannot be read is written again, never trusted.
 */
export function scaleDownLater(p: Planner, rs: ObservedReplicaSet, delaySeconds: number, why: string): void {
  if (rs.specReplicas === 0) return;
  const deadline = scaleDownDeadline(rs);
  if (deadline === undefined && delaySeconds > 0) {
    const when = p.nowMs + delaySeconds * 1000;
    markScaleDown(p, rs, when);
    p.wakeAt.push(when);
  } else if (deadline !== undefined && deadline > p.nowMs) {
    p.wakeAt.push(deadline);
  } else {
    sizeTo(p, rs, 0, deadline === undefined ? why : `${why}, past its scale-down delay`);
  }
}
