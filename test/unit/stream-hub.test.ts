// The live stream's hub (src/api/stream.ts) with the informer's events and the
// client's socket in memory, its timers faked: what a stream is written, event
// by event, including what no e2e test can make happen on cue, such as a client
// whose socket stays full until its buffer overflows. The real informer and a
// real socket are test/e2e/dashboard-stream.test.ts's.
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { COALESCE_MS, RECHECK_MS, type Scope, type StreamCaller, StreamHub } from '../../src/api/stream.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import type { InformerHandler } from '../../src/kube/informer.ts';
import { parseSse } from '../support/sse.ts';

let version = 100;
const app = (namespace: string, name: string, message = ''): CachedApp => ({
  metadata: { namespace, name, resourceVersion: String(++version) },
  status: { phase: 'Healthy', message },
});

/** The informer as the hub sees it: its handlers, and its content. */
class Events {
  handlers = new Set<InformerHandler<CachedApp>>();
  apps = new Map<string, CachedApp>();
  addHandler(h: InformerHandler<CachedApp>) {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }
  list() {
    return [...this.apps.values()];
  }
  set(a: CachedApp) {
    const key = `${a.metadata.namespace}/${a.metadata.name}`;
    const old = this.apps.get(key);
    this.apps.set(key, a);
    for (const h of this.handlers) old ? h.onUpdate?.(old, a) : h.onAdd?.(a);
  }
  delete(namespace: string, name: string) {
    const key = `${namespace}/${name}`;
    const old = this.apps.get(key);
    this.apps.delete(key);
    if (old) for (const h of this.handlers) h.onDelete?.(old, { finalStateUnknown: false });
  }
}

/** A response whose socket takes writes until `full` is set, then drains when told. */
class Response extends EventEmitter {
  text = '';
  status = 0;
  full = false;
  ended = false;
  writeHead(status: number) {
    this.status = status;
    return this;
  }
  write(chunk: string) {
    this.text += chunk;
    return !this.full;
  }
  drain() {
    this.full = false;
    this.emit('drain');
  }
  end() {
    this.ended = true;
    this.emit('close');
  }
  events() {
    return parseSse(this.text);
  }
}

let events: Events;
let counts: Record<string, number>;
const count = (key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};
const hub = (limits = {}) =>
  new StreamHub({
    events: () => events,
    limits,
    observer: {
      open: (n) => {
        counts.open = n;
      },
      sent: (type) => count(type),
      reset: () => count('resets'),
      refused: (limit) => count(`refused-${limit}`),
    },
  });

function open(h: StreamHub, scope: Scope, review: () => Promise<Scope> = async () => scope, resumeFrom?: string) {
  const raw = new Response();
  const caller: StreamCaller = { session: 's', scope, review };
  const [epoch = '', seq = '0', tag = ''] = (resumeFrom ?? '').split('.');
  h.open(
    caller,
    raw as unknown as ServerResponse,
    resumeFrom ? { resumeFrom: { epoch, seq: Number(seq), scope: tag } } : {},
  );
  return raw;
}

const rows = (raw: Response, type = 'snapshot') =>
  raw
    .events()
    .filter((e) => e.event === type)
    .map((e) => JSON.parse(e.data) as { rows?: { name: string }[]; name?: string; message?: string });

beforeEach(() => {
  vi.useFakeTimers();
  events = new Events();
  counts = {};
  events.set(app('a', 'web'));
  events.set(app('a', 'api'));
  events.set(app('b', 'secret'));
});
afterEach(() => vi.useRealTimers());

describe('the stream hub', () => {
  it("writes a snapshot of the caller's namespaces, then one event per App per window with its latest row, and nothing of others", () => {
    const h = hub();
    const raw = open(h, ['a']);
    expect(raw.status).toBe(200);
    expect(
      rows(raw)[0]
        ?.rows?.map((r) => r.name)
        .sort(),
    ).toEqual(['api', 'web']);
    events.set(app('a', 'web', 'one'));
    events.set(app('a', 'web', 'two'));
    events.set(app('b', 'secret', 'hidden'));
    events.set(app('a', 'web', 'three'));
    vi.advanceTimersByTime(COALESCE_MS);
    expect(rows(raw, 'upsert').map((r) => r.message)).toEqual(['three']);
    events.delete('a', 'api');
    events.delete('b', 'secret');
    vi.advanceTimersByTime(COALESCE_MS);
    expect(rows(raw, 'delete').map((r) => r.name)).toEqual(['api']);
    expect(raw.text).not.toContain('secret');
    expect(raw.text).not.toContain('hidden');
    expect(raw.text).not.toMatch(/\bb\//);
    expect(counts.open).toBe(1);
  });

  it("a change of an App's detail (a ReplicaSet, an Event) sends its latest row with the detail counted; one of a namespace not allowed, nothing", () => {
    const detailHandlers = new Set<InformerHandler<{ value: { namespace: string; app: string } }>>();
    const details = {
      addHandler(h: InformerHandler<{ value: { namespace: string; app: string } }>) {
        detailHandlers.add(h);
        return () => detailHandlers.delete(h);
      },
    };
    const withGet = Object.assign(events, {
      get: (namespace: string, name: string) => events.apps.get(`${namespace}/${name}`),
    });
    const h = new StreamHub({ events: () => withGet, details: () => [details] });
    const raw = open(h, ['a']);
    const touch = (namespace: string, app: string) => {
      for (const handler of detailHandlers) handler.onAdd?.({ value: { namespace, app } });
    };
    touch('a', 'web');
    touch('a', 'web');
    touch('b', 'secret');
    touch('a', 'gone');
    vi.advanceTimersByTime(COALESCE_MS);
    const upserts = raw
      .events()
      .filter((e) => e.event === 'upsert')
      .map((e) => JSON.parse(e.data) as { name: string; detail?: number });
    expect(upserts).toEqual([expect.objectContaining({ name: 'web', detail: 2 })]);
    expect(raw.text).not.toContain('secret');
    // An App's own change keeps the count it has.
    events.set(app('a', 'web', 'moved'));
    vi.advanceTimersByTime(COALESCE_MS);
    expect(rows(raw, 'upsert').at(-1)).toMatchObject({ name: 'web', message: 'moved', detail: 2 });
    h.stop();
  });

  it('a client whose socket stays full past its buffer gets, once it drains, a reset and a snapshot of the rows as they are then', () => {
    const h = hub({ bufferBytes: 600 });
    const raw = open(h, ['a']);
    raw.full = true;
    raw.write(''); // the socket is full from now on
    for (let i = 0; i < 20; i++) {
      events.set(app('a', 'web', `change ${i}`));
      vi.advanceTimersByTime(COALESCE_MS);
    }
    expect(counts.resets).toBe(1);
    const before = raw.text;
    raw.drain();
    const after = parseSse(raw.text.slice(before.length));
    expect(after.map((e) => e.event)).toEqual(['reset', 'snapshot']);
    const snapshot = JSON.parse(after[1]?.data ?? '{}') as { rows: { name: string; message: string }[] };
    expect(snapshot.rows.find((r) => r.name === 'web')?.message).toBe('change 19');
  });

  it('reviews the caller: a namespace lost has its rows deleted, one gained has its rows sent, an ended session ends the stream', async () => {
    const h = hub();
    let scope: Scope = ['a'];
    let ended = false;
    const raw = open(h, scope, async () => {
      if (ended) throw new ApiError(401, 'the session has expired');
      return scope;
    });
    scope = ['b'];
    await vi.advanceTimersByTimeAsync(RECHECK_MS);
    expect(
      rows(raw, 'delete')
        .map((r) => r.name)
        .sort(),
    ).toEqual(['api', 'web']);
    expect(rows(raw, 'upsert').map((r) => r.name)).toEqual(['secret']);
    ended = true;
    await vi.advanceTimersByTimeAsync(RECHECK_MS);
    expect(raw.events().at(-1)).toEqual({ event: 'ended', data: '{"message":"the session ended: log in again"}' });
    expect(raw.ended).toBe(true);
    expect(counts.open).toBe(0);
  });

  it('reviews the caller soon when an App appears in a namespace it was not reviewed for', async () => {
    const h = hub();
    const review = vi.fn(async (): Promise<Scope> => ['a', 'c']);
    const raw = open(h, ['a'], review);
    events.set(app('c', 'new'));
    await vi.advanceTimersByTimeAsync(COALESCE_MS * 11);
    expect(review).toHaveBeenCalledTimes(1);
    expect(rows(raw, 'upsert').map((r) => r.name)).toEqual(['new']);
  });

  it('resumes a stream from the id of its last event with the events it missed; a snapshot when they are gone', () => {
    const h = hub({ replayEvents: 2 });
    const first = open(h, ['a']);
    const lastId = first.events().at(-1)?.id ?? '';
    first.end();
    events.set(app('a', 'web', 'missed'));
    vi.advanceTimersByTime(COALESCE_MS);
    const resumed = open(h, ['a'], undefined, lastId);
    expect(resumed.events().map((e) => e.event)).toEqual(['resumed', 'upsert']);
    // Another scope, then too many events missed: a snapshot each time.
    expect(open(h, ['a', 'b'], undefined, lastId).events()[0]?.event).toBe('snapshot');
    for (const m of ['x', 'y', 'z']) {
      events.set(app('a', 'api', m));
      vi.advanceTimersByTime(COALESCE_MS);
    }
    expect(open(h, ['a'], undefined, lastId).events()[0]?.event).toBe('snapshot');
  });

  it('refuses a stream past its limits with a 429 naming the flag', () => {
    const h = hub({ maxStreams: 2, maxStreamsPerSession: 1 });
    open(h, ['a']);
    expect(() => h.admit('s')).toThrow(/at most 1 \(--dashboard-max-streams-per-session\)/);
    h.admit('other');
    open(h, ['a']);
    expect(() => h.admit('third')).toThrow(/at most 2 in all \(--dashboard-max-streams\)/);
    expect(counts).toMatchObject({ 'refused-session': 1, 'refused-total': 1 });
  });
});
