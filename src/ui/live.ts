// The live rows (issue #25 item 8), one stream per browser, not per tab: a
// browser allows six HTTP/1.1 connections per origin, and `kubectl teal
// dashboard` serves plain HTTP/1.1, so a stream per tab would hang the seventh
// tab. The tabs elect one holder of the stream with the Web Locks API; it
// relays every message to the others on a BroadcastChannel. When it closes,
// its lock is released, another tab takes it and opens the stream again from
// the last event id it saw, so the server resumes (or sends a snapshot).
// Without Web Locks (a page served over plain HTTP to another host than
// localhost is no secure context), each tab holds its own stream.
//
// The page shows how it stands (liveState): rows are marked reconnecting the
// moment the stream breaks, and only a snapshot or a resume makes them live
// again; a snapshot replaces every row, so none is kept stale.
import { batch, computed, type Signal, signal } from '@preact/signals';
import { type DashboardRow, rowKey } from '../app/dashboard-row.ts';
import { currentUser } from './api.ts';
import { apply, emptyStore, type LiveMessage, type LiveState, messageOf, welcome } from './live-store.ts';
import { user } from './session.ts';

// Per identity (a user, or anonymous viewing): tabs share a stream only with tabs of the same user.
const LOCK = 'teal-live-stream:';
const CHANNEL = 'teal-live:';
const STREAM_EVENTS = ['snapshot', 'upsert', 'delete', 'resumed', 'reset'] as const;
/** Reopening after the stream was refused or closed: from RETRY_MIN_MS, doubling up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15_000;

/** What tabs tell each other. */
type TabMessage = { kind: 'hello' } | { kind: 'message'; message: LiveMessage } | { kind: 'ended' };

const store = emptyStore();
const state = signal<LiveState>(store.state);
/** Bumped when rows changed, at most once a frame's worth of time. */
const tick = signal(0);
const rowSignals = new Map<string, Signal<DashboardRow | undefined>>();

/** How the page stands with the stream: connecting, live or reconnecting. */
export const liveState: Signal<LiveState> = state;

/** Every row the user may see, as the stream has them; undefined before the first snapshot. */
export const liveRows = computed<DashboardRow[] | undefined>(() => {
  void tick.value;
  return store.rows ? [...store.rows.values()] : undefined;
});

/**
 * The row of one App, a signal of its own: the App page reads its full view again when the row's
 * version changes. undefined while the stream has not said, or once the App is gone.
 */
export function appRow(namespace: string, name: string): Signal<DashboardRow | undefined> {
  const key = rowKey({ namespace, name });
  let row = rowSignals.get(key);
  if (!row) {
    row = signal(store.rows?.get(key));
    rowSignals.set(key, row);
  }
  return row;
}

let tickPending = false;
function scheduleTick(): void {
  if (tickPending) return;
  tickPending = true;
  setTimeout(() => {
    tickPending = false;
    tick.value += 1;
  }, 16);
}

let channel: BroadcastChannel | undefined;

/** Applies a message here; the holder of the stream also tells the other tabs. */
function receive(message: LiveMessage, relay: boolean): void {
  const changed = apply(store, message);
  const becomesLive = store.state === 'live' && state.value !== 'live';
  batch(() => {
    state.value = store.state;
    const keys = changed === 'all' ? [...rowSignals.keys()] : changed;
    for (const key of keys) {
      const row = rowSignals.get(key);
      if (row) row.value = store.rows?.get(key);
    }
    // "Live" and the rows that make it true are shown in one render, never live over stale rows.
    if (becomesLive) tick.value += 1;
  });
  if (!becomesLive && (changed === 'all' || changed.length > 0)) scheduleTick();
  if (relay) channel?.postMessage({ kind: 'message', message } satisfies TabMessage);
}

// ---- the tab that holds the stream ----

let source: EventSource | undefined;
let leading = false;
let retries = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let release: (() => void) | undefined;

function openStream(): void {
  const url = store.lastId ? `/api/v1/stream?lastEventId=${encodeURIComponent(store.lastId)}` : '/api/v1/stream';
  const es = new EventSource(url);
  source = es;
  for (const name of STREAM_EVENTS) {
    es.addEventListener(name, (event) => {
      const message = messageOf(
        name,
        (event as MessageEvent<string>).data,
        (event as MessageEvent<string>).lastEventId,
      );
      if (!message) return;
      if (message.type === 'snapshot' || message.type === 'resumed') retries = 0;
      receive(message, true);
    });
  }
  es.addEventListener('ended', () => ended());
  es.onerror = () => {
    if (source !== es) return;
    receive({ type: 'state', state: 'reconnecting' }, true);
    // CONNECTING: the browser reconnects by itself, sending Last-Event-ID. CLOSED: the answer
    // was no stream (401, 429, 503): this page tries again, if the session still holds.
    if (es.readyState === EventSource.CLOSED) {
      source = undefined;
      retryLater();
    }
  };
}

function retryLater(): void {
  const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** retries);
  retries += 1;
  retryTimer = setTimeout(async () => {
    retryTimer = undefined;
    if (!leading) return;
    try {
      if ((await currentUser()) === undefined) return ended();
    } catch {
      // The operator does not answer yet: try again later.
      return retryLater();
    }
    if (leading) openStream();
  }, delay);
}

/** The session ended: every tab goes to the login page. */
function ended(): void {
  channel?.postMessage({ kind: 'ended' } satisfies TabMessage);
  stopLive();
  user.value = null;
}

/** Holds the stream until stopLive(): resolves then, which releases the lock for another tab. */
function lead(): Promise<void> {
  leading = true;
  // A tab that takes over shows it is catching up until the server says resumed or sends a snapshot.
  if (store.rows) receive({ type: 'state', state: 'reconnecting' }, true);
  openStream();
  return new Promise((resolve) => {
    release = resolve;
  });
}

// ---- every tab ----

let started = false;
let identity: string | undefined;
/** Each start's number: a lock granted to a start since stopped leads nothing. */
let generation = 0;

/**
 * Starts following the stream for this identity (the user's name, marked when anonymous), as its
 * holder or through the tab that holds it; again for the same identity, nothing. A new identity
 * (an anonymous viewer who logged in) stops the old stream first.
 */
export function startLive(who: string): void {
  if (started && who === identity) return;
  if (started) stopLive();
  started = true;
  identity = who;
  const mine = ++generation;
  const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined;
  if (!locks || typeof BroadcastChannel === 'undefined') {
    void lead();
    return;
  }
  channel = new BroadcastChannel(CHANNEL + who);
  channel.onmessage = (event: MessageEvent<TabMessage>) => {
    const m = event.data;
    if (m.kind === 'hello') {
      if (leading) for (const message of welcome(store)) channel?.postMessage({ kind: 'message', message });
    } else if (m.kind === 'message') {
      if (!leading) receive(m.message, false);
    } else if (m.kind === 'ended') {
      stopLive();
      user.value = null;
    }
  };
  channel.postMessage({ kind: 'hello' } satisfies TabMessage);
  void locks.request(LOCK + who, () => (mine === generation && started ? lead() : undefined));
}

/** Stops following (a logout, an ended session): closes the stream, hands the lock on, forgets the rows. */
export function stopLive(): void {
  started = false;
  leading = false;
  source?.close();
  source = undefined;
  if (retryTimer) clearTimeout(retryTimer);
  channel?.close();
  channel = undefined;
  release?.();
  release = undefined;
  Object.assign(store, emptyStore());
  state.value = store.state;
  for (const row of rowSignals.values()) row.value = undefined;
  scheduleTick();
}
