// The rows a page holds from the live stream (GET /api/v1/stream,
// docs/dashboard.md#live-updates), and what each message does to them: pure,
// so test/unit/ui-live-store.test.ts checks it without a browser. The stream's
// events and the messages one tab relays to the others (live.ts) are the same
// messages.
import { type DashboardRow, rowKey } from '../app/dashboard-row.ts';

/** How the page stands with the stream: it shows this, so stale rows are never shown silently. */
export type LiveState = 'connecting' | 'live' | 'reconnecting';

export type LiveMessage =
  | { type: 'snapshot'; rows: DashboardRow[]; id?: string }
  | { type: 'upsert'; row: DashboardRow; id?: string }
  | { type: 'delete'; key: string; id?: string }
  /** The stream resumed: what is held stays, the events missed follow. */
  | { type: 'resumed'; id?: string }
  /** The client fell behind: a snapshot follows. */
  | { type: 'reset' }
  | { type: 'state'; state: LiveState };

export interface LiveStore {
  /** undefined until the first snapshot. */
  rows: Map<string, DashboardRow> | undefined;
  state: LiveState;
  /** The id of the last event applied: where a stream opened anew resumes from. */
  lastId: string | undefined;
}

export const emptyStore = (): LiveStore => ({ rows: undefined, state: 'connecting', lastId: undefined });

/** The keys whose rows a message changed (all: the whole set was replaced). */
export type Changed = 'all' | string[];

/**
 * Applies a message to the store, in place; the keys it changed. A snapshot
 * replaces every row (a row no longer there is gone); only a snapshot or a
 * resume makes the store live.
 */
export function apply(store: LiveStore, message: LiveMessage): Changed {
  if ('id' in message && message.id !== undefined) store.lastId = message.id;
  switch (message.type) {
    case 'snapshot':
      store.rows = new Map(message.rows.map((row) => [rowKey(row), row]));
      store.state = 'live';
      return 'all';
    case 'resumed':
      store.state = 'live';
      return [];
    case 'upsert': {
      const key = rowKey(message.row);
      store.rows?.set(key, message.row);
      return [key];
    }
    case 'delete':
      store.rows?.delete(message.key);
      return [message.key];
    case 'reset':
      store.state = 'reconnecting';
      return [];
    case 'state':
      store.state = message.state;
      return [];
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** A row as the stream sent it; anything else (an operator of another version) is dropped rather than shown wrong. */
function readRow(v: unknown): DashboardRow | undefined {
  if (!isRecord(v) || typeof v.namespace !== 'string' || typeof v.name !== 'string') return undefined;
  if (typeof v.version !== 'string' || typeof v.phase !== 'string' || typeof v.message !== 'string') return undefined;
  return v as unknown as DashboardRow;
}

/** The message of one stream event (its name, data and id), or undefined for an event this page does not know. */
export function messageOf(event: string, data: string, id: string | undefined): LiveMessage | undefined {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return undefined;
  }
  const withId = id ? { id } : {};
  switch (event) {
    case 'snapshot': {
      const rows = isRecord(body) && Array.isArray(body.rows) ? body.rows : [];
      return { type: 'snapshot', rows: rows.flatMap((r) => readRow(r) ?? []), ...withId };
    }
    case 'upsert': {
      const row = readRow(body);
      return row ? { type: 'upsert', row, ...withId } : undefined;
    }
    case 'delete':
      return isRecord(body) && typeof body.namespace === 'string' && typeof body.name === 'string'
        ? { type: 'delete', key: rowKey({ namespace: body.namespace, name: body.name }), ...withId }
        : undefined;
    case 'resumed':
      return { type: 'resumed', ...withId };
    case 'reset':
      return { type: 'reset' };
    default:
      return undefined;
  }
}

/** What a tab that leads tells a tab that joins: everything it holds, as one snapshot, and how it stands. */
export function welcome(store: LiveStore): LiveMessage[] {
  const state: LiveMessage = { type: 'state', state: store.state };
  if (!store.rows) return [state];
  const snapshot: LiveMessage = {
    type: 'snapshot',
    rows: [...store.rows.values()],
    ...(store.lastId ? { id: store.lastId } : {}),
  };
  return [snapshot, state];
}
