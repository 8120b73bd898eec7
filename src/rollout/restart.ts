// restart: the pods of the active revision replaced in place, without a new
// revision (DESIGN §3.2). As Argo Rollouts does it (spec.restartAt): every pod
// created before the restart's second is evicted, through the Eviction API so
// PodDisruptionBudgets are honoured, a few at a time, never taking the
// available pods below replicas - maxUnavailable; the ReplicaSet replaces each.
// Unlike Argo, nothing polls: the next step comes from the pod and ReplicaSet
// events an eviction causes. The one wait with a deadline is the check that
// an eviction landed, since a refused one (a 429) changes nothing to watch.
//
// All the state is in status.restart, so a restart carries on after the
// operator is killed; planRestart is pure.

import type { PlannerEvent } from '../app/event.ts';
import { LABEL_APP, LABEL_HASH } from '../app/labels.ts';
import type { RestartStatus } from '../app/schema.ts';
import type { ObservedReplicaSet } from './observed.ts';
import { EventReason as ER } from './reasons.ts';

/** A pod of a revision, trimmed to what a restart reads. */
export interface ObservedPod {
  namespace: string;
  name: string;
  resourceVersion: string;
  app: string;
  hash: string;
  /** creationTimestamp, to the second as the API server keeps it. */
  createdAt: string;
  ready: boolean;
  deleting: boolean;
  /** The types of its conditions that are True (readiness gates among them), for a drain-verified switch. */
  trueConditions?: readonly string[];
}

type RawPod = {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date | null;
    labels?: Record<string, string>;
  };
  status?: { conditions?: { type: string; status: string }[] };
};

const time = (t: string | Date | undefined): string => (t instanceof Date ? t.toISOString() : (t ?? ''));

/** A revision's pod as the cache keeps it; undefined for anything without Teal's labels. */
export function observePod(raw: unknown): ObservedPod | undefined {
  const m = (raw as RawPod).metadata ?? {};
  const app = m.labels?.[LABEL_APP];
  const hash = m.labels?.[LABEL_HASH];
  if (!m.name || !m.namespace || !app || !hash) return undefined;
  const trueConditions = ((raw as RawPod).status?.conditions ?? [])
    .filter((c) => c.status === 'True')
    .map((c) => c.type);
  return {
    namespace: m.namespace,
    name: m.name,
    resourceVersion: m.resourceVersion ?? '',
    app,
    hash,
    createdAt: time(m.creationTimestamp),
    ready: trueConditions.includes('Ready'),
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    trueConditions,
  };
}

/**
 * The restart's time: the next whole second. The API server keeps
 * creationTimestamp to the second, so a pod created in the second the restart
 * was asked is older than it, and is replaced; and the first eviction waits
 * for that second (planRestart), so no replacement is ever taken for an old pod.
 */
export function restartStartedAt(now: string): string {
  const ms = Date.parse(now);
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString();
}

const PERCENT = /^(\d+)%$/;

/**
 * maxUnavailable in pods, as Argo Rollouts reads it: a number, or a percentage
 * of replicas rounded down; at most replicas, and at least 1, or nothing could
 * ever be restarted. Teal's default is 1: one pod at a time.
 */
export function resolveMaxUnavailable(value: number | string | undefined, replicas: number): number {
  const percent = typeof value === 'string' ? PERCENT.exec(value) : null;
  const pods =
    value === undefined ? 1 : typeof value === 'number' ? value : Math.floor((replicas * Number(percent?.[1])) / 100);
  return Math.max(1, Math.min(Number.isFinite(pods) ? pods : 1, replicas));
}

/**
 * The pods are read, not watched (a cache of every pod for a rare action): their ReplicaSet's
 * status changes wake the App, and so does this, should a replacement come and go between two
 * of them.
 */
export const RESTART_LOOK_AGAIN_MS = 10_000;
/** First check that an eviction landed; doubled for each refusal in a row, up to the cap. */
export const EVICTION_CHECK_MS = 5_000;
export const EVICTION_CHECK_MAX_MS = 60_000;
/** Evictions asked for in one plan, at most: status lists them, and the executor makes them one by one. */
export const MAX_EVICTIONS = 50;

export const checkDelayMs = (refusals: number): number =>
  Math.min(EVICTION_CHECK_MAX_MS, EVICTION_CHECK_MS * 2 ** Math.min(refusals, 10));

export interface RestartInput {
  restart: RestartStatus;
  /** The revision the active Service selects now. */
  activeHash: string | undefined;
  activeRevision: number | undefined;
  /** The active revision's ReplicaSet. */
  replicaSet: ObservedReplicaSet | undefined;
  /** spec.replicas. */
  replicas: number;
  maxUnavailable: number | string | undefined;
  /** The App's pods, of every revision. */
  pods: readonly ObservedPod[];
  now: string;
}

export interface RestartPlan {
  /** status.restart from now on. */
  restart: RestartStatus;
  /** The pods to evict, in order. */
  evict: string[];
  /** When to look again: an eviction asked for must have landed by then. */
  wakeAt?: number;
  events: PlannerEvent[];
  /** Where the restart stands, for the App's message; undefined once it is over. */
  message?: string;
}

/** The next step of a restart under way (status.restart without finishedAt). */
export function planRestart(input: RestartInput): RestartPlan {
  const { restart } = input;
  if (input.activeHash !== restart.podTemplateHash) return endedEarly(input);
  const nowMs = Date.parse(input.now);
  const pods = input.pods.filter((p) => p.hash === restart.podTemplateHash);
  const startMs = Date.parse(restart.startedAt);
  if (nowMs < startMs)
    return { restart, evict: [], wakeAt: startMs, events: [], message: progressMessage(input, 0, pods.length, []) };
  const old = pods.filter((p) => Date.parse(p.createdAt) < startMs);
  const evictions = settleEvictions(restart, pods, nowMs);
  if (old.length === 0) {
    // Over once the new pods serve in full: a replacement the cache has not shown yet still counts.
    if (!isServingInFull(input, pods)) {
      const message = progressMessage(input, pods.length, 0, []);
      return { restart, evict: [], wakeAt: nowMs + RESTART_LOOK_AGAIN_MS, events: [], message };
    }
    return finished(input, pods.length);
  }
  const floor = Math.max(0, input.replicas - resolveMaxUnavailable(input.maxUnavailable, input.replicas));
  const budget = available(input, pods, evictions.pending) - floor;
  const evict = candidates(old, evictions.pending)
    .slice(0, Math.max(0, Math.min(budget, MAX_EVICTIONS)))
    .map((p) => p.name);
  const next = nextStatus(restart, evictions, evict, input.now);
  const wakeAt =
    evict.length > 0 ? nowMs + checkDelayMs(next.refusals ?? 0) : (evictions.checkAt ?? nowMs + RESTART_LOOK_AGAIN_MS);
  return {
    restart: next,
    evict,
    ...(wakeAt !== undefined ? { wakeAt } : {}),
    events: evictions.blocked ? [blockedEvent(restart, evictions.refused)] : [],
    message: progressMessage(input, pods.length - old.length, old.filter((p) => !p.deleting).length, evictions.refused),
  };
}

interface Evictions {
  /** Asked for, not yet seen, and not yet overdue: counted as unavailable. */
  pending: Set<string>;
  /** Overdue: refused, so asked for again. */
  refused: string[];
  /** Refusals in a row, counting these. */
  refusals: number;
  /** A new run of refusals began: tell it. */
  blocked: boolean;
  /** When the pending ones are overdue. */
  checkAt?: number;
}

/**
 * The evictions of earlier plans: a pod gone or deleting was evicted; one
 * still there past the check deadline was refused (a 429 leaves no trace but
 * that); one still there before it is pending, and counted as unavailable,
 * however stale the cache that shows it ready.
 */
function settleEvictions(restart: RestartStatus, pods: readonly ObservedPod[], nowMs: number): Evictions {
  const byName = new Map(pods.map((p) => [p.name, p]));
  const still = (restart.evicting ?? []).filter((name) => {
    const pod = byName.get(name);
    return pod !== undefined && !pod.deleting;
  });
  const refusals = restart.refusals ?? 0;
  const checkAt = (Date.parse(restart.evictedAt ?? '') || nowMs) + checkDelayMs(refusals);
  if (still.length === 0) return { pending: new Set(), refused: [], refusals: 0, blocked: false };
  if (nowMs < checkAt) return { pending: new Set(still), refused: [], refusals, blocked: false, checkAt };
  return { pending: new Set(), refused: still, refusals: refusals + 1, blocked: refusals === 0 };
}

/** Every pod the revision needs is there, new, ready, and counted available by its ReplicaSet. */
function isServingInFull(input: RestartInput, pods: readonly ObservedPod[]): boolean {
  const ready = pods.filter((p) => p.ready && !p.deleting).length;
  return ready >= input.replicas && (input.replicaSet?.availableReplicas ?? 0) >= input.replicas;
}

/** Ready, not deleting, not being evicted; no more than the ReplicaSet counts, less those being evicted. */
function available(input: RestartInput, pods: readonly ObservedPod[], pending: ReadonlySet<string>): number {
  const ready = pods.filter((p) => p.ready && !p.deleting && !pending.has(p.name)).length;
  const counted = (input.replicaSet?.availableReplicas ?? 0) - pending.size;
  return Math.min(ready, counted);
}

/** Old pods to evict: not deleting, not pending; those not ready first (they serve nobody), then the oldest. */
function candidates(old: readonly ObservedPod[], pending: ReadonlySet<string>): ObservedPod[] {
  return old
    .filter((p) => !p.deleting && !pending.has(p.name))
    .sort(
      (a, b) =>
        Number(a.ready) - Number(b.ready) || a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name),
    );
}

function nextStatus(restart: RestartStatus, ev: Evictions, evict: readonly string[], now: string): RestartStatus {
  const { evicting: _e, evictedAt: _a, refusals: _r, ...rest } = restart;
  const evicting = [...ev.pending, ...evict];
  if (evicting.length === 0) return ev.refusals > 0 ? { ...rest, refusals: ev.refusals } : rest;
  return {
    ...rest,
    evicting,
    evictedAt: evict.length > 0 ? now : (restart.evictedAt ?? now),
    ...(ev.refusals > 0 ? { refusals: ev.refusals } : {}),
  };
}

function finished(input: RestartInput, replaced: number): RestartPlan {
  const { restart } = input;
  const { evicting: _e, evictedAt: _a, refusals: _r, ...rest } = restart;
  return {
    restart: { ...rest, podsReplaced: replaced, finishedAt: input.now },
    evict: [],
    events: [
      {
        type: 'Normal',
        reason: ER.Restarted,
        message: `revision ${restart.revision} restarted: ${replaced} pod${replaced === 1 ? '' : 's'} replaced (requested by ${restart.by} (${restart.via}))`,
      },
    ],
  };
}

/** The revision stopped serving before every pod was replaced: its pods are no longer the ones to restart. */
function endedEarly(input: RestartInput): RestartPlan {
  const { restart } = input;
  const { evicting: _e, evictedAt: _a, refusals: _r, ...rest } = restart;
  const why = input.activeRevision
    ? `revision ${input.activeRevision} is active now`
    : `revision ${restart.revision} is no longer active`;
  const message = `restart of revision ${restart.revision} ended early: ${why}`;
  return {
    restart: { ...rest, finishedAt: input.now, message },
    evict: [],
    events: [{ type: 'Normal', reason: ER.Restarted, message }],
  };
}

function blockedEvent(restart: RestartStatus, refused: readonly string[]): PlannerEvent {
  return {
    type: 'Warning',
    reason: ER.RestartBlocked,
    message: `restart of revision ${restart.revision}: the eviction of pod ${refused.join(', ')} was refused (a PodDisruptionBudget allows no disruption now); retrying`,
  };
}

/** Replaced out of the pods there are to be: a pod terminating counts by its replacement alone. */
function progressMessage(input: RestartInput, replaced: number, left: number, refused: readonly string[]): string {
  const blocked = refused.length > 0 ? '; an eviction was refused (a PodDisruptionBudget), retrying' : '';
  const total = Math.max(input.replicas, replaced + left);
  return `restarting revision ${input.restart.revision}: ${replaced}/${total} pods replaced${blocked}`;
}
