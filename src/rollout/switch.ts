// The drain-verified switch (spec.strategy.blueGreen.switch, issue #26 item
// 2.1). A selector swap is done for Kubernetes when the Service is written,
// but not for its clients: until the EndpointSlice controller has rewritten
// the Service's slices (and kube-proxy, or a load balancer following them, its
// rules), traffic still goes to the old pods. So with `switch` set, the old
// revision's scaleDownDelaySeconds starts only once the cluster shows the
// switch done: the active Service's EndpointSlices list only pods of the new
// revision, at least as many as it has replicas, all ready and serving, and
// every readiness gate the switch names is True on the new pods.
//
// The one place that says what is still missing is switchUnverified (pure);
// verifySwitch records in status.switch when nothing was, and
// isSwitchVerified (predicates.ts) is the one place that says whether an old
// revision may go. Everything is read from the cluster at each reconcile, so
// an operator killed at any point verifies again from what it sees.

import type { SwitchStatus } from '../app/schema.ts';
import type { ObservedEndpointSlice, ObservedReplicaSet } from './observed.ts';
import { condition, emit, type Planner } from './planner.ts';
import { isSwitchVerified, parseTime, scaleDownDeadline } from './predicates.ts';
import { ConditionReason as CR, EventReason as ER } from './reasons.ts';
import { scaleDownLater } from './replicaset-writes.ts';
import type { ObservedPod } from './restart.ts';
import { forgetTrafficCheck, trafficCheckOf, trafficGate } from './traffic-check.ts';

export interface SwitchInput {
  /** The revision the active Service selects. */
  hash: string;
  /** spec.replicas: the endpoints the new revision must have, at least. */
  replicas: number;
  /** spec.strategy.blueGreen.switch.readinessGates. */
  gates: readonly string[];
  /** The active Service's EndpointSlices. */
  slices: readonly ObservedEndpointSlice[];
  /** The App's pods, of every revision; undefined when they were not read. */
  pods: readonly ObservedPod[] | undefined;
}

/** Names listed in a message, at most this many, then how many more. */
const MAX_NAMES = 5;

function names(list: readonly string[]): string {
  const shown = list.slice(0, MAX_NAMES).join(', ');
  return list.length > MAX_NAMES ? `${shown} and ${list.length - MAX_NAMES} more` : shown;
}

/**
 * What keeps the switch from being verified, each in words for the condition
 * and the Event; empty when it is verified. Every rule is here: a check added
 * to the switch (a traffic check) adds its own line.
 */
export function switchUnverified(input: SwitchInput): string[] {
  if (!input.pods) return ['the pods are not read yet'];
  const hashOf = new Map(input.pods.map((pod) => [pod.name, pod.hash]));
  const endpoints = input.slices.flatMap((slice) => slice.endpoints);
  const isNew = (pod: string | undefined) => pod !== undefined && hashOf.get(pod) === input.hash;
  const foreign = endpoints.filter((e) => !isNew(e.pod)).map((e) => e.pod ?? '(no pod)');
  const fresh = endpoints.filter((e) => isNew(e.pod));
  const serving = new Set(fresh.filter((e) => e.ready && e.serving && !e.terminating).map((e) => e.pod));
  const notServing = [...new Set(fresh.map((e) => e.pod ?? ''))].filter((pod) => !serving.has(pod));
  const missing: string[] = [];
  if (foreign.length > 0) missing.push(`endpoints of other revisions still listed: ${names(foreign)}`);
  if (notServing.length > 0) missing.push(`endpoints not ready and serving: ${names(notServing)}`);
  if (serving.size < input.replicas) missing.push(`${serving.size} of ${input.replicas} endpoints ready and serving`);
  missing.push(...unmetGates(input));
  return missing;
}

/** Each named gate not True on every live pod of the new revision, with those pods. */
function unmetGates(input: SwitchInput): string[] {
  const pods = (input.pods ?? []).filter((pod) => pod.hash === input.hash && !pod.deleting);
  return input.gates.flatMap((gate) => {
    const unmet = pods.filter((pod) => !(pod.trueConditions ?? []).includes(gate)).map((pod) => pod.name);
    return unmet.length > 0 ? [`readiness gate ${gate} not True on ${names(unmet)}`] : [];
  });
}

/**
 * Records where the active revision's switch stands: since when it waits, and
 * when it was verified (the start of the old revision's scaleDownDelaySeconds).
 * Past timeoutSeconds unverified, the App says what is missing and the old
 * revision stays up; it waits on, woken by the slices' changes.
 */
export function verifySwitch(p: Planner, pods: readonly ObservedPod[] | undefined): void {
  const spec = p.app.spec.strategy.blueGreen.switch;
  const active = p.status.active;
  if (!spec || !active) {
    delete p.status.switch;
    p.status.conditions = p.status.conditions?.filter((c) => c.type !== 'SwitchVerified');
    if (!spec) forgetTrafficCheck(p);
    return;
  }
  const current = switchOf(p, active.podTemplateHash, active.revision);
  p.status.switch = current;
  if (isSwitchVerified(p.status, active.podTemplateHash)) {
    condition(p, 'SwitchVerified', 'True', CR.SwitchVerified, verifiedMessage(p, current));
    return;
  }
  // The reconciler reads the pods only when the status it held showed a switch waiting: not in
  // the reconcile that switches, nor in the first after a restart whose slices changed while no
  // operator ran. Nothing else may wake the App before the timeout, so it asks to come back now,
  // when the status written with this plan makes the reconciler read them.
  if (!pods) p.wakeAt.push(p.nowMs);
  const missing = switchUnverified({
    hash: active.podTemplateHash,
    replicas: p.app.spec.replicas,
    gates: spec.readinessGates,
    slices: p.input.observed.activeEndpointSlices ?? [],
    pods,
  });
  // What clients reach, beside what the cluster's objects say: the traffic check's own line.
  const expected = { podTemplateHash: active.podTemplateHash, revision: active.revision };
  const traffic = trafficGate(p, expected, spec.timeoutSeconds * 1000);
  if (traffic.state === 'waiting' || traffic.state === 'failed') missing.push(traffic.message);
  if (missing.length === 0) verified(p, current);
  else unverified(p, current, missing, spec.timeoutSeconds);
}

/** The active revision's switch as recorded, or one starting now (a new switch, or a record that cannot be read). */
function switchOf(p: Planner, hash: string, revision: number): SwitchStatus {
  const before = p.status.switch;
  if (before?.podTemplateHash === hash && parseTime(before.since) !== undefined) {
    // A verification time that cannot be read is no verification: it is made again.
    if (before.verifiedAt === undefined || parseTime(before.verifiedAt) !== undefined) return { ...before };
    const { verifiedAt: _, ...rest } = before;
    return rest;
  }
  return { podTemplateHash: hash, revision, since: p.now };
}

function verified(p: Planner, current: SwitchStatus): void {
  current.verifiedAt = p.now;
  const message = verifiedMessage(p, current);
  emit(p, { type: 'Normal', reason: ER.SwitchVerified, message });
  condition(p, 'SwitchVerified', 'True', CR.SwitchVerified, message);
}

function verifiedMessage(p: Planner, current: SwitchStatus): string {
  const gates = p.app.spec.strategy.blueGreen.switch?.readinessGates ?? [];
  const gated = gates.length > 0 ? ` and readiness gates ${gates.join(', ')} True` : '';
  const checked = trafficCheckOf(p) ? ', and its traffic check passed' : '';
  return `the active Service sends traffic only to revision ${current.revision} (its endpoints ready and serving${gated}${checked}) since ${current.verifiedAt}`;
}

function unverified(p: Planner, current: SwitchStatus, missing: string[], timeoutSeconds: number): void {
  const deadline = (parseTime(current.since) ?? p.nowMs) + timeoutSeconds * 1000;
  const what = missing.join('; ');
  if (p.nowMs < deadline) {
    p.wakeAt.push(deadline);
    const message = `verifying the switch to revision ${current.revision}, the previous revision stays up: ${what}`;
    condition(p, 'SwitchVerified', 'False', CR.SwitchVerifying, message);
    return;
  }
  const message = `the switch to revision ${current.revision} was not verified within timeoutSeconds (${timeoutSeconds}s), the previous revision stays up: ${what}`;
  const before = p.status.conditions?.find((c) => c.type === 'SwitchVerified');
  // Told once when the bound passes, and again only if what is missing changes.
  if (before?.reason !== CR.SwitchNotVerified || before.message !== message) {
    emit(p, { type: 'Warning', reason: ER.SwitchNotVerified, message });
  }
  condition(p, 'SwitchVerified', 'False', CR.SwitchNotVerified, message);
}

/**
 * Scales down a revision that served after `delaySeconds`: counted from now
 * without `switch` (from the switch, as Argo Rollouts does), and with it only
 * once the switch is verified, in the plan that sees it verified, so from
 * then; unverified, it stays up. A scale-down time already marked (before
 * this switch) is kept: it was set once its own switch was done.
 */
export function retire(
  p: Planner,
  rs: ObservedReplicaSet,
  activeHash: string | undefined,
  delaySeconds: number,
  why: string,
): void {
  const held = p.app.spec.strategy.blueGreen.switch !== undefined && !isSwitchVerified(p.status, activeHash);
  if (held && scaleDownDeadline(rs) === undefined) return;
  scaleDownLater(p, rs, delaySeconds, why);
}
