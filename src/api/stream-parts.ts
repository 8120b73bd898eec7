// The pure parts of the dashboard's live stream (issue #25 item 8, stream.ts):
// how changes to Apps are coalesced, kept for a resume, named by event ids,
// framed as Server-Sent Events, and written to a client that may be slow.
// Nothing here knows fastify or the informer; test/unit/stream-parts.test.ts.
import { createHash } from 'node:crypto';

// ---- the coalescer ----

/**
 * The Apps changed since the last take, each once with its latest state: ten
 * updates of one App within a window are one event. undefined is a delete.
 */
export class Coalescer<T> {
  private pending = new Map<string, T | undefined>();

  /** Records the App's latest state (undefined: deleted). */
  put(key: string, state: T | undefined): void {
    // Deleted then set again keeps its first place: the order of first change, per window.
    this.pending.set(key, state);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Whether a change of this key waits to go out. */
  has(key: string): boolean {
    return this.pending.has(key);
  }

  /** The changes recorded, in the order first seen, and a fresh start. */

  take(): [string, T | undefined][] {
    const taken = [...this.pending];
    this.pending = new Map();
    return taken;
  }
}

// ---- the replay ring ----

/** One event as the hub sent it: its sequence number, the App it is about and its frame's body. */
export interface StreamEvent {
  seq: number;
  namespace: string;
  type: 'upsert' | 'delete';
  /** The event's data, JSON on one line. */
  data: string;
}

/** The last capacity events, for a client that reconnects with the id of the last one it saw. */
export class ReplayRing {
  private readonly events: (StreamEvent | undefined)[];
  private start = 0;
  private count = 0;
  private readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0) throw new Error('the replay ring needs a positive capacity');
    this.capacity = capacity;
    this.events = new Array<StreamEvent | undefined>(capacity);
  }

  /** Events come in with increasing seq, each one more than the last. */
  push(event: StreamEvent): void {
    const last = this.newest();
    if (last !== undefined && event.seq !== last.seq + 1) throw new Error(`event ${event.seq} after ${last.seq}`);
    if (this.count < this.capacity) {
      this.events[(this.start + this.count) % this.capacity] = event;
      this.count += 1;
    } else {
      this.events[this.start] = event;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  /**
   * The events after seq, oldest first; undefined when some of them are no longer held
   * (or seq is one this ring never reached): the client needs a snapshot instead.
   * lastSeq is the hub's: with no event held yet, only a client at lastSeq resumes.
   */
  since(seq: number, lastSeq: number): StreamEvent[] | undefined {
    if (seq > lastSeq || seq < 0) return undefined;
    if (seq === lastSeq) return [];
    const oldest = this.at(0);
    if (oldest === undefined || seq < oldest.seq - 1) return undefined;
    const out: StreamEvent[] = [];
    for (let i = seq - oldest.seq + 1; i < this.count; i += 1) {
      const event = this.at(i);
      if (event) out.push(event);
    }
    return out;
  }

  private newest(): StreamEvent | undefined {
    return this.count === 0 ? undefined : this.at(this.count - 1);
  }

  private at(i: number): StreamEvent | undefined {
    return this.events[(this.start + i) % this.capacity];
  }
}

// ---- event ids ----

/**
 * An event id: the operator process's epoch (a resume needs the same process's
 * sequence), the sequence number, and a tag of the client's scope (a resume
 * needs the same namespaces: a namespace gained while away has rows the replay
 * does not carry).
 */
export interface EventId {
  epoch: string;
  seq: number;
  scope: string;
}

export const formatEventId = (id: EventId): string => `${id.epoch}.${id.seq}.${id.scope}`;

/** The id a client sent back (Last-Event-ID), or undefined when it is not one of ours. */
export function parseEventId(text: string | undefined): EventId | undefined {
  const match = text?.match(/^([0-9a-f]{1,32})\.(\d{1,15})\.([0-9a-f]{1,32})$/);
  if (!match) return undefined;
  const [, epoch = '', seq = '', scope = ''] = match;
  return { epoch, seq: Number(seq), scope };
}

/** The tag of a scope: all namespaces, or these. A hash, so the id names no namespace. */
export function scopeTag(namespaces: 'all' | readonly string[]): string {
  const text = namespaces === 'all' ? '*' : [...namespaces].sort().join(',');
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

// ---- frames ----

/** A Server-Sent Events frame; data is JSON on one line (JSON.stringify escapes newlines). */
export function frame(event: string, data: string, id?: string): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${data}\n\n`;
}

/** A comment line: keeps proxies from closing an idle stream, and the client ignores it. */
export const HEARTBEAT = ': keep-alive\n\n';

// ---- the bounded writer ----

/** What the writer needs of a socket or an http.ServerResponse. */
export interface Sink {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/**
 * Writes frames to a client with backpressure: while the socket's buffer is
 * full (write() returned false) frames wait here, up to limitBytes; past that
 * they are dropped, and once the socket drains the client gets resync()'s
 * frames instead (a reset and a fresh snapshot), made then, from fresh data.
 */
export class BoundedWriter {
  private queue: string[] = [];
  private queuedBytes = 0;
  private blocked = false;
  private overflowed = false;
  private readonly sink: Sink;
  private readonly limitBytes: number;
  private readonly resync: () => string;
  private readonly onOverflow: () => void;

  constructor(opts: { sink: Sink; limitBytes: number; resync: () => string; onOverflow: () => void }) {
    this.sink = opts.sink;
    this.limitBytes = opts.limitBytes;
    this.resync = opts.resync;
    this.onOverflow = opts.onOverflow;
  }

  /** Bytes waiting here (not the socket's own buffer). */
  get pendingBytes(): number {
    return this.queuedBytes;
  }

  /** Whether the socket's buffer is full: a heartbeat then is no use. */
  get isBlocked(): boolean {
    return this.blocked;
  }

  write(chunk: string): void {
    if (this.overflowed) return;
    if (!this.blocked) {
      if (!this.sink.write(chunk)) this.block();
      return;
    }
    this.queue.push(chunk);
    this.queuedBytes += Buffer.byteLength(chunk);
    if (this.queuedBytes > this.limitBytes) {
      this.overflowed = true;
      this.queue = [];
      this.queuedBytes = 0;
      this.onOverflow();
    }
  }

  private block(): void {
    this.blocked = true;
    this.sink.once('drain', () => this.drained());
  }

  private drained(): void {
    this.blocked = false;
    const chunk = this.overflowed ? this.resync() : this.queue.join('');
    this.overflowed = false;
    this.queue = [];
    this.queuedBytes = 0;
    if (chunk !== '' && !this.sink.write(chunk)) this.block();
  }
}
