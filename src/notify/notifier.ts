// The reconciler's two calls into notifications: before a status write, add
// the write's notifications to the outbox and apply what the sender reported
// (prepare); once the write has landed, hand the outbox to the sender
// (landed). Destinations are resolved only when there is something to send.

import type { PlannerEvent } from '../app/event.ts';
import type { AppStatus, NotificationDestination } from '../app/schema.ts';
import { type ConfigMapRead, resolveDestinations } from './destinations.ts';
import { withNotifications } from './outbox.ts';
import type { Sender, SenderApp } from './sender.ts';
import { transitionsOf } from './triggers.ts';

export interface NotifyInput {
  app: SenderApp & { uid: string };
  spec: unknown;
  before: AppStatus | undefined;
  after: AppStatus;
  generation: number;
  now: string;
}

export interface Prepared {
  status: AppStatus;
  events: PlannerEvent[];
  /** Pending entries dropped to stay within the limit: counted once the write lands. */
  dropped: number;
  /** undefined: they could not be resolved, so nothing is sent now. */
  destinations?: readonly NotificationDestination[];
}

export interface NotifierOptions {
  sender: Pick<Sender, 'outcomesFor' | 'dispatch' | 'forget'>;
  readConfigMap: ConfigMapRead;
  /** Counts pending notifications dropped past the outbox limit. */
  onDropped?: (count: number) => void;
}

export class Notifier {
  private readonly o: NotifierOptions;

  constructor(options: NotifierOptions) {
    this.o = options;
  }

  async prepare(input: NotifyInput): Promise<Prepared> {
    const outcomes = this.o.sender.outcomesFor(input.app.key);
    const quiet =
      outcomes.size === 0 &&
      (input.after.notifications?.pending ?? []).length === 0 &&
      transitionsOf(input.before, input.after).length === 0;
    if (quiet) return { status: input.after, events: [], dropped: 0, destinations: [] };
    const resolved = await resolveDestinations(input.app.namespace, input.spec, this.o.readConfigMap);
    if ('problem' in resolved) {
      const warning = { type: 'Warning' as const, reason: 'InvalidNotifications', message: resolved.problem };
      return { status: input.after, events: [warning], dropped: 0 };
    }
    const { destinations } = resolved;
    // An App that never had a destination keeps its status free of notifications.
    if (destinations.length === 0 && outcomes.size === 0 && input.after.notifications === undefined) {
      return { status: input.after, events: [], dropped: 0, destinations };
    }
    const result = withNotifications({
      before: input.before,
      after: input.after,
      uid: input.app.uid,
      destinations,
      outcomes,
      generation: input.generation,
      now: input.now,
    });
    return { status: result.status, events: result.events, dropped: result.dropped, destinations };
  }

  /** The App is gone: its deliveries stop. */
  forget(appKey: string): void {
    this.o.sender.forget(appKey);
  }

  /** The status holding the outbox has landed (or was already so): send what it holds. */
  landed(app: SenderApp, status: AppStatus, prepared: Prepared): void {
    if (prepared.dropped > 0) this.o.onDropped?.(prepared.dropped);
    if (!prepared.destinations) return;
    this.o.sender.dispatch(app, status.notifications?.pending ?? [], prepared.destinations);
  }
}
