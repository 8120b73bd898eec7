// GET /api/v1/stream: the dashboard's live rows (issue #25 item 8), as
// Server-Sent Events fed from the App informer the operator already holds, so
// an open stream adds no watch and no list on the API server (only the cached
// TokenReviews and SubjectAccessReviews of its caller).
//
// One hub per operator: it follows the informer, keeps each App's row
// (app/dashboard-row.ts) serialized once, and every COALESCE_MS turns the Apps
// changed meanwhile into one event each, numbered, kept in a replay ring, and
// written to every stream whose caller may list the App's namespace. A stream
// starts with a snapshot of those rows (or, given the id of its last event
// (Last-Event-ID) from this process and scope, with the events it missed), then
// gets upserts and deletes. A client too slow to take them (stream-parts.ts,
// BoundedWriter) gets a reset and a snapshot once it catches up. Every
// RECHECK_MS the caller is identified again (an ended session ends the stream)
// and its namespaces reviewed again: a namespace lost has its rows deleted, one
// gained has its rows sent. Nothing of a namespace the caller may not list is
// ever written, not even its name.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { CachedApp } from '../app/cached.ts';
import { type DashboardRow, dashboardRow, rowKey } from '../app/dashboard-row.ts';
import { readAppStatus } from '../app/status-reader.ts';
import type { InformerHandler } from '../kube/informer.ts';
import { ACCESS_CACHE_TTL_MS } from './auth.ts';
import { ApiError } from './errors.ts';
import {
  BoundedWriter,
  Coalescer,
  type EventId,
  formatEventId,
  frame,
  HEARTBEAT,
  parseEventId,
  ReplayRing,
  type StreamEvent,
  scopeTag,
} from './stream-parts.ts';

/** Changes to Apps within this window go out as one event per App. */
export const COALESCE_MS = 100;
/**
 * How often an open stream's caller is identified and reviewed again: with the
 * list reviews cached ACCESS_CACHE_TTL_MS (auth.ts), an RBAC change reaches
 * open streams within 30 s, as issue #25 asks.
 */
export const RECHECK_MS = 30_000 - ACCESS_CACHE_TTL_MS;
/** A comment this often keeps proxies (and kubectl port-forward) from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;
/** What the browser waits before it reconnects, as the stream's retry field tells it. */
export const RETRY_MS = 2_000;

/** The defaults of the flags --dashboard-max-streams and --dashboard-max-streams-per-session. */
export const DEFAULT_MAX_STREAMS = 1000;
export const DEFAULT_MAX_STREAMS_PER_SESSION = 4;
/** Events kept for resumes: a client away for up to this many events resumes without a snapshot. */
export const DEFAULT_REPLAY_EVENTS = 4096;
/** Bytes of events a stream may hold while its client does not read; past it, a reset and a snapshot. */
export const DEFAULT_STREAM_BUFFER_BYTES = 1024 * 1024;

export interface StreamLimits {
  maxStreams: number;
  maxStreamsPerSession: number;
  replayEvents: number;
  bufferBytes: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxStreams: DEFAULT_MAX_STREAMS,
  maxStreamsPerSession: DEFAULT_MAX_STREAMS_PER_SESSION,
  replayEvents: DEFAULT_REPLAY_EVENTS,
  bufferBytes: DEFAULT_STREAM_BUFFER_BYTES,
};

/** What the metrics count (controller/metrics.ts): no user, no namespace. */
export interface StreamObserver {
  /** Open streams, after each open and close. */
  open(count: number): void;
  /** An event written to one stream: snapshot, upsert, delete, resumed, reset, ended. */
  sent(type: string): void;
  /** A slow client's buffer overflowed: it gets a reset and a snapshot. */
  reset(): void;
  /** A stream refused (429) by this limit: total or session. */
  refused(limit: 'total' | 'session'): void;
}

export const NO_OBSERVER: StreamObserver = { open: () => {}, sent: () => {}, reset: () => {}, refused: () => {} };

/** The namespaces a caller may list: all, or these. */
export type Scope = 'all' | readonly string[];

/** The part of the App informer the hub reads: its events and, once, its content. */
export interface AppEvents {
  addHandler(handler: InformerHandler<CachedApp>): () => void;
  list(): CachedApp[];
  /** One App as the cache holds it now: a detail's change is sent with the App's latest row. */
  get?(namespace: string, name: string): CachedApp | undefined;
}

/**
 * An informer of objects that belong to an App and that the App page shows beside it (its
 * ReplicaSets' pods, its Events): a change of one changes no App, so without it an open App page
 * would not know to read its view again.
 */
export interface AppDetailEvents {
  addHandler(handler: InformerHandler<{ value: { namespace: string; app: string } }>): () => void;
}

/** A stream's caller, as the route found it, and how to find it again. */
export interface StreamCaller {
  /** Counts this caller's streams against maxStreamsPerSession: a hash of its token and login. */
  session: string;
  scope: Scope;
  /** The caller identified and reviewed again: its scope, or throws (401: the session ended). */
  review: () => Promise<Scope>;
}

/** What a stream's first event is to be: a resume from this id, or a snapshot. */
export type Start = { resumeFrom?: EventId };

/** Why a stream ended, told to the client (event "ended") before the server closes it. */
const ENDED_SESSION = 'the session ended: log in again';
const ENDED_STOPPING = 'the operator is stopping';

interface Row {
  namespace: string;
  json: string;
}

/** One open stream. */
class Client {
  scope: Scope;
  tag: string;
  readonly writer: BoundedWriter;
  readonly caller: StreamCaller;
  readonly raw: ServerResponse;
  /** The namespaces holding Apps when the caller was last reviewed: one not among them is reviewed soon. */
  reviewed: ReadonlySet<string>;
  /** An event came from a namespace not reviewed for this caller: a review is due. */
  unreviewed = false;
  reviewing = false;

  constructor(
    caller: StreamCaller,
    raw: ServerResponse,
    reviewed: ReadonlySet<string>,
    writer: (client: Client) => BoundedWriter,
  ) {
    this.caller = caller;
    this.reviewed = reviewed;
    this.raw = raw;
    this.scope = caller.scope;
    this.tag = scopeTag(caller.scope);
    this.writer = writer(this);
  }

  allows(namespace: string): boolean {
    return this.scope === 'all' || this.scope.includes(namespace);
  }
}

export class StreamHub {
  private readonly epoch = randomBytes(8).toString('hex');
  private seq = 0;
  private readonly rows = new Map<string, Row>();
  private readonly ring: ReplayRing;
  private readonly pending = new Coalescer<CachedApp>();
  private readonly clients = new Set<Client>();
  private readonly perSession = new Map<string, number>();
  private readonly limits: StreamLimits;
  private readonly observer: StreamObserver;
  private readonly events: () => AppEvents;
  private readonly details: () => readonly AppDetailEvents[];
  /** Per App, how many times its details changed since the hub began following: the row's detail. */
  private readonly detailCounts = new Map<string, number>();
  private detach: (() => void) | undefined;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(opts: {
    events: () => AppEvents;
    details?: () => readonly AppDetailEvents[];
    limits?: Partial<StreamLimits>;
    observer?: StreamObserver;
  }) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...opts.limits };
    for (const [name, value] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`stream: ${name} must be a positive integer`);
    }
    this.observer = opts.observer ?? NO_OBSERVER;
    this.events = opts.events;
    this.details = opts.details ?? (() => []);
    this.ring = new ReplayRing(this.limits.replayEvents);
  }

  /** Open streams. */
  get size(): number {
    return this.clients.size;
  }

  /** Throws the 429 of the limit a new stream of this session would pass. */
  admit(session: string): void {
    if (this.clients.size >= this.limits.maxStreams) {
      this.observer.refused('total');
      throw new ApiError(
        429,
        `too many open streams: at most ${this.limits.maxStreams} in all (--dashboard-max-streams); try again later`,
        { 'retry-after': String(RETRY_MS / 1000) },
      );
    }
    if ((this.perSession.get(session) ?? 0) >= this.limits.maxStreamsPerSession) {
      this.observer.refused('session');
      throw new ApiError(
        429,
        `too many open streams for this session: at most ${this.limits.maxStreamsPerSession} (--dashboard-max-streams-per-session); close another tab's stream`,
        { 'retry-after': String(RETRY_MS / 1000) },
      );
    }
  }

  /** Serves a stream on raw, whose headers are not sent yet, until the client or the hub ends it; admit() first. */
  open(caller: StreamCaller, raw: ServerResponse, start: Start): void {
    this.attach();
    const client = new Client(
      caller,
      raw,
      this.namespaces(),
      (c) =>
        new BoundedWriter({
          sink: raw,
          limitBytes: this.limits.bufferBytes,
          resync: () => {
            this.observer.sent('reset');
            return frame('reset', '{}') + this.snapshot(c);
          },
          onOverflow: () => this.observer.reset(),
        }),
    );
    this.clients.add(client);
    this.perSession.set(caller.session, (this.perSession.get(caller.session) ?? 0) + 1);
    this.observer.open(this.clients.size);
    raw.on('close', () => this.close(client));
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // Tells nginx-style proxies not to buffer the stream.
      'x-accel-buffering': 'no',
    });
    client.writer.write(`retry: ${RETRY_MS}\n\n${this.first(client, start)}`);
    this.keepReviewing(client);
  }

  /** Ends every stream, telling each why: the server is stopping. */
  stop(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const client of [...this.clients]) this.end(client, ENDED_STOPPING);
    this.detach?.();
    this.detach = undefined;
  }

  // ---- following the informer ----

  /** Follows the informer from the first stream on: its handler first, then its content, so no change falls between. */
  private attach(): void {
    if (this.detach) return;
    const events = this.events();
    const changed = (app: CachedApp) => this.changed(app, app);
    const handler: InformerHandler<CachedApp> = {
      onAdd: changed,
      onUpdate: (_old, app) => changed(app),
      onDelete: (app) => this.changed(app, undefined),
    };
    const detaches = [events.addHandler(handler)];
    const touched = (detail: { value: { namespace: string; app: string } }) =>
      this.touched(`${detail.value.namespace}/${detail.value.app}`, detail.value.namespace, detail.value.app);
    for (const source of this.details()) {
      detaches.push(source.addHandler({ onAdd: touched, onUpdate: (_old, d) => touched(d), onDelete: touched }));
    }
    this.detach = () => {
      for (const detach of detaches) detach();
    };
    for (const app of events.list()) this.rows.set(keyOf(app), rowOf(app, 0));
  }

  /** A detail of an App changed (a ReplicaSet, an Event): its row's detail counts one more. */
  private touched(key: string, namespace: string, name: string): void {
    if (!this.rows.has(key)) return;
    if (this.pending.has(key)) {
      // The App's own change is already waiting: it goes out with the new count.
      this.detailCounts.set(key, (this.detailCounts.get(key) ?? 0) + 1);
      return;
    }
    const app = this.events().get?.(namespace, name);
    if (!app) return;
    this.detailCounts.set(key, (this.detailCounts.get(key) ?? 0) + 1);
    this.changed(app, app);
  }

  private changed(app: CachedApp, state: CachedApp | undefined): void {
    this.pending.put(keyOf(app), state);
    this.flushTimer ??= setTimeout(() => this.flush(), COALESCE_MS);
  }

  /** The Apps changed in the window, one event each, to every stream that may see it. */
  private flush(): void {
    this.flushTimer = undefined;
    for (const [key, app] of this.pending.take()) {
      const event = this.apply(key, app);
      if (!event) continue;
      this.ring.push(event);
      for (const client of this.clients) this.deliver(client, event);
    }
  }

  /** The hub's row of the App updated; the event, or nothing when the row did not change. */
  private apply(key: string, app: CachedApp | undefined): StreamEvent | undefined {
    const old = this.rows.get(key);
    if (app === undefined) {
      if (!old) return undefined;
      this.rows.delete(key);
      this.detailCounts.delete(key);
      return { seq: ++this.seq, namespace: old.namespace, type: 'delete', data: deleteData(key) };
    }
    const row = rowOf(app, this.detailCounts.get(key) ?? 0);
    if (old?.json === row.json) return undefined;
    this.rows.set(key, row);
    return { seq: ++this.seq, namespace: row.namespace, type: 'upsert', data: row.json };
  }

  private deliver(client: Client, event: StreamEvent): void {
    if (client.allows(event.namespace)) {
      client.writer.write(frame(event.type, event.data, this.idOf(client, event.seq)));
      this.observer.sent(event.type);
    } else if (!client.reviewed.has(event.namespace)) {
      // A namespace this caller was not reviewed for (it had no Apps then): review it soon.
      client.unreviewed = true;
    }
  }

  // ---- what a stream is sent ----

  /** The namespaces holding Apps, as the hub's rows have them. */
  private namespaces(): Set<string> {
    return new Set([...this.rows.values()].map((r) => r.namespace));
  }

  private idOf(client: Client, seq = this.seq): string {
    return formatEventId({ epoch: this.epoch, seq, scope: client.tag });
  }

  /** The first event: what the client missed, when its last id is of this process and scope and still held; else a snapshot. */
  private first(client: Client, start: Start): string {
    const from = start.resumeFrom;
    if (from && from.epoch === this.epoch && from.scope === client.tag) {
      const missed = this.ring.since(from.seq, this.seq);
      if (missed) {
        this.observer.sent('resumed');
        const frames = missed
          .filter((e) => client.allows(e.namespace))
          .map((e) => frame(e.type, e.data, this.idOf(client, e.seq)));
        return frame('resumed', '{}', this.idOf(client)) + frames.join('');
      }
    }
    return this.snapshot(client);
  }

  /** Every row the client may see, as of the latest event; replaces everything the client holds. */
  private snapshot(client: Client): string {
    const rows: string[] = [];
    for (const row of this.rows.values()) if (client.allows(row.namespace)) rows.push(row.json);
    this.observer.sent('snapshot');
    return frame('snapshot', `{"rows":[${rows.join(',')}]}`, this.idOf(client));
  }

  // ---- reviews, heartbeats and the end ----

  private keepReviewing(client: Client): void {
    const review = setInterval(() => void this.review(client), RECHECK_MS);
    // A namespace new to the caller is reviewed within a coalescing window or two, not RECHECK_MS.
    const soon = setInterval(() => {
      if (client.unreviewed) void this.review(client);
    }, COALESCE_MS * 10);
    const heartbeat = setInterval(() => {
      if (!client.writer.isBlocked) client.writer.write(HEARTBEAT);
    }, HEARTBEAT_MS);
    for (const timer of [review, soon, heartbeat]) timer.unref();
    client.raw.on('close', () => {
      for (const timer of [review, soon, heartbeat]) clearInterval(timer);
    });
  }

  /** The caller again: an ended session ends the stream; a scope changed deletes and sends rows. */
  private async review(client: Client): Promise<void> {
    if (client.reviewing || !this.clients.has(client)) return;
    client.reviewing = true;
    client.unreviewed = false;
    const reviewed = this.namespaces();
    try {
      const scope = await client.caller.review();
      client.reviewed = reviewed;
      if (this.clients.has(client)) this.rescope(client, scope);
    } catch (err) {
      // A failed review (503) keeps the stream as it is until the next one; a 401 ends it.
      if (err instanceof ApiError && err.status === 401) this.end(client, ENDED_SESSION);
    } finally {
      client.reviewing = false;
    }
  }

  /** Deletes the rows of namespaces lost, sends those of namespaces gained, and takes the new scope. */
  private rescope(client: Client, scope: Scope): void {
    const before = client.scope;
    const tag = scopeTag(scope);
    if (tag === client.tag) return;
    const was = (ns: string) => before === 'all' || before.includes(ns);
    const is = (ns: string) => scope === 'all' || scope.includes(ns);
    client.scope = scope;
    client.tag = tag;
    const id = this.idOf(client);
    for (const [key, row] of this.rows) {
      if (was(row.namespace) && !is(row.namespace)) {
        client.writer.write(frame('delete', deleteData(key), id));
        this.observer.sent('delete');
      } else if (!was(row.namespace) && is(row.namespace)) {
        client.writer.write(frame('upsert', row.json, id));
        this.observer.sent('upsert');
      }
    }
  }

  private end(client: Client, why: string): void {
    client.writer.write(frame('ended', JSON.stringify({ message: why })));
    this.observer.sent('ended');
    client.raw.end();
    this.close(client);
  }

  private close(client: Client): void {
    if (!this.clients.delete(client)) return;
    const left = (this.perSession.get(client.caller.session) ?? 1) - 1;
    if (left > 0) this.perSession.set(client.caller.session, left);
    else this.perSession.delete(client.caller.session);
    this.observer.open(this.clients.size);
  }
}

const keyOf = (app: CachedApp) => `${app.metadata.namespace}/${app.metadata.name}`;

function rowOf(app: CachedApp, detail: number): Row {
  const row: DashboardRow = {
    ...dashboardRow({ metadata: app.metadata, status: readAppStatus(app.status), spec: app.spec }),
    ...(detail > 0 ? { detail } : {}),
  };
  return { namespace: row.namespace, json: JSON.stringify(row) };
}

/** A delete's data: the row's namespace and name. */
function deleteData(key: string): string {
  const slash = key.indexOf('/');
  const [namespace, name] = [key.slice(0, slash), key.slice(slash + 1)];
  return JSON.stringify({ namespace, name, key: rowKey({ namespace, name }) });
}

/** The id a client resumes from: the Last-Event-ID header (the browser's own reconnect), else ?lastEventId (a page's). */
export function resumeOf(header: string | string[] | undefined, query: unknown): Start {
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const fromQuery = (query as { lastEventId?: unknown } | undefined)?.lastEventId;
  const id = parseEventId(fromHeader ?? (typeof fromQuery === 'string' ? fromQuery : undefined));
  return id ? { resumeFrom: id } : {};
}
