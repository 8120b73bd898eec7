// The outbox in status.notifications: a transition's notifications are
// written in the same status write as the transition itself (write-ahead), so
// a kill at any moment either loses both or keeps both. The sender delivers
// what the outbox holds once it has landed; what it reports back is applied
// by a later write, which takes the entry out. Pure: no I/O.
import { createHash } from 'node:crypto';
import { setCondition } from '../app/conditions.ts';
import type { PlannerEvent } from '../app/event.ts';
import type {
  AppStatus,
  NotificationDestination,
  NotificationsStatus,
  NotificationTrigger,
  PendingNotification,
} from '../app/schema.ts';
import { awaitingHealthy, MESSAGE_LIMIT, type Transition, transitionsOf } from './triggers.ts';

/** The most pending entries status holds: past it the oldest are dropped, and counted. */
export const PENDING_LIMIT = 20;

/** What the sender found, by delivery id, until status records it. */
export interface Outcome {
  result: 'delivered' | 'retrying' | 'failed';
  /** What happened, naming the destination and the HTTP status: never the URL. */
  message: string;
  at: string;
}

export interface OutboxInput {
  /** The status the write replaces (the cached App's). */
  before: AppStatus | undefined;
  /** The status about to be written. */
  after: AppStatus;
  /** The App's uid: part of every delivery id. */
  uid: string;
  destinations: readonly NotificationDestination[];
  outcomes: ReadonlyMap<string, Outcome>;
  generation: number;
  now: string;
}

export interface OutboxResult {
  status: AppStatus;
  /** Warning Events: one per notification that failed for good. */
  events: PlannerEvent[];
  /** Pending entries dropped by this write to keep within PENDING_LIMIT. */
  dropped: number;
  /** The new entries, for their count. */
  added: PendingNotification[];
}

/** Adds the write's transitions to the outbox and applies what the sender reported. */
export function withNotifications(input: OutboxInput): OutboxResult {
  const transitions = transitionsOf(input.before, input.after);
  const added = transitions.flatMap((t) => entriesFor(t, input));
  const notifications: NotificationsStatus = { ...(input.after.notifications ?? {}) };
  const marker = awaitingHealthy(input.before, transitions);
  if (marker) notifications.awaitingHealthy = marker;
  else delete notifications.awaitingHealthy;
  const applied = applyOutcomes(notifications.pending ?? [], input.outcomes);
  const pending = [...applied.pending, ...added];
  const dropped = Math.max(0, pending.length - PENDING_LIMIT);
  setList(notifications, pending.slice(dropped));
  if (dropped > 0) notifications.dropped = (notifications.dropped ?? 0) + dropped;
  if (applied.delivered) notifications.lastDelivered = applied.delivered;
  if (applied.failed.length > 0) notifications.lastFailure = applied.failed[applied.failed.length - 1];
  const status: AppStatus = { ...input.after };
  if (Object.keys(notifications).length > 0) status.notifications = notifications;
  else delete status.notifications;
  status.conditions = deliveredCondition(status, applied, dropped, input);
  if (status.conditions.length === 0) delete status.conditions;
  const events = applied.failed.map((f) => ({
    type: 'Warning' as const,
    reason: 'NotificationFailed',
    message: `notification ${f.trigger} to ${f.destination} failed: ${f.message ?? ''}`.slice(0, MESSAGE_LIMIT),
  }));
  return { status, events, dropped, added };
}

/** A delivery id: stable for this transition and destination, whoever writes or sends it. */
export function deliveryId(uid: string, trigger: NotificationTrigger, key: string, destination: string): string {
  return createHash('sha256')
    .update(`${uid}\u0000${trigger}\u0000${key}\u0000${destination}`)
    .digest('hex')
    .slice(0, 32);
}

export function wants(destination: NotificationDestination, trigger: NotificationTrigger): boolean {
  return destination.triggers === undefined || destination.triggers.includes(trigger);
}

function entriesFor(t: Transition, input: OutboxInput): PendingNotification[] {
  const { key, ...fields } = t;
  return input.destinations
    .filter((d) => wants(d, t.trigger))
    .map((d) => ({
      id: deliveryId(input.uid, t.trigger, key, d.name),
      destination: d.name,
      at: input.now,
      ...fields,
    }));
}

interface Applied {
  pending: PendingNotification[];
  delivered?: NonNullable<NotificationsStatus['lastDelivered']>;
  failed: NonNullable<NotificationsStatus['lastFailure']>[];
  retrying: Outcome[];
}

function applyOutcomes(pending: readonly PendingNotification[], outcomes: ReadonlyMap<string, Outcome>): Applied {
  const applied: Applied = { pending: [], failed: [], retrying: [] };
  for (const entry of pending) {
    const outcome = outcomes.get(entry.id);
    const record = () => ({
      id: entry.id,
      trigger: entry.trigger,
      destination: entry.destination,
      at: outcome?.at ?? '',
      ...(outcome ? { message: outcome.message.slice(0, MESSAGE_LIMIT) } : {}),
    });
    if (outcome?.result === 'delivered') applied.delivered = record();
    else if (outcome?.result === 'failed') applied.failed.push(record());
    else {
      if (outcome?.result === 'retrying') applied.retrying.push(outcome);
      applied.pending.push(entry);
    }
  }
  return applied;
}

function setList(notifications: NotificationsStatus, pending: PendingNotification[]): void {
  if (pending.length > 0) notifications.pending = pending;
  else delete notifications.pending;
}

/**
 * NotificationsDelivered: False while a delivery is retried, or when the
 * latest one failed for good or notifications were dropped; True once one is
 * delivered. Only an App that has notifications to tell of gets the condition.
 */
function deliveredCondition(status: AppStatus, applied: Applied, dropped: number, input: OutboxInput) {
  const conditions = status.conditions ?? [];
  const set = (value: 'True' | 'False', reason: string, message: string) =>
    setCondition(
      conditions,
      { type: 'NotificationsDelivered', status: value, reason, message: message.slice(0, MESSAGE_LIMIT) },
      input.generation,
      input.now,
    );
  const failed = applied.failed[applied.failed.length - 1];
  if (failed) return set('False', 'DeliveryFailed', failed.message ?? `to ${failed.destination}`);
  if (dropped > 0) {
    return set(
      'False',
      'NotificationsDropped',
      `${dropped} pending notifications dropped, oldest first (limit ${PENDING_LIMIT})`,
    );
  }
  const retrying = applied.retrying[applied.retrying.length - 1];
  if (retrying) return set('False', 'DeliveryRetrying', retrying.message);
  if (applied.delivered) return set('True', 'Delivered', applied.delivered.message ?? 'delivered');
  return conditions;
}
