// The pure parts of the dashboard's live stream (src/api/stream-parts.ts): the
// coalescer, the replay ring, event ids, and the bounded writer that handles a
// slow client's backpressure (issue #25 item 8).
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  BoundedWriter,
  Coalescer,
  formatEventId,
  frame,
  parseEventId,
  ReplayRing,
  type StreamEvent,
  scopeTag,
} from '../../src/api/stream-parts.ts';

const event = (seq: number, namespace = 'a'): StreamEvent => ({ seq, namespace, type: 'upsert', data: `{"n":${seq}}` });

describe('the coalescer', () => {
  it('keeps one change per App, its latest, in the order first changed; a delete is one too', () => {
    const c = new Coalescer<number>();
    c.put('a/x', 1);
    c.put('a/y', 1);
    c.put('a/x', 2);
    c.put('a/x', 3);
    c.put('a/y', undefined);
    expect(c.take()).toEqual([
      ['a/x', 3],
      ['a/y', undefined],
    ]);
    expect(c.size).toBe(0);
    expect(c.take()).toEqual([]);
  });
});

describe('the replay ring', () => {
  it('gives the events after an id it still holds, and nothing when the client is up to date', () => {
    const ring = new ReplayRing(4);
    for (let seq = 1; seq <= 3; seq++) ring.push(event(seq));
    expect(ring.since(1, 3)?.map((e) => e.seq)).toEqual([2, 3]);
    expect(ring.since(0, 3)?.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(ring.since(3, 3)).toEqual([]);
  });

  it('gives nothing to resume from (a snapshot is due) once the events after the id are dropped, or for an id it never reached', () => {
    const ring = new ReplayRing(3);
    for (let seq = 1; seq <= 6; seq++) ring.push(event(seq));
    // Holds 4, 5, 6: a client at 3 misses nothing, one at 2 missed 3.
    expect(ring.since(3, 6)?.map((e) => e.seq)).toEqual([4, 5, 6]);
    expect(ring.since(2, 6)).toBeUndefined();
    expect(ring.since(7, 6)).toBeUndefined();
    expect(ring.since(-1, 6)).toBeUndefined();
  });

  it('an empty ring resumes only a client at the current sequence', () => {
    const ring = new ReplayRing(3);
    expect(ring.since(0, 0)).toEqual([]);
    expect(ring.since(5, 0)).toBeUndefined();
  });

  it('refuses an event out of sequence', () => {
    const ring = new ReplayRing(3);
    ring.push(event(1));
    expect(() => ring.push(event(3))).toThrow('event 3 after 1');
  });
});

describe('event ids', () => {
  it('round-trip; anything else is no id', () => {
    const id = { epoch: '0123abcd', seq: 42, scope: scopeTag(['b', 'a']) };
    expect(parseEventId(formatEventId(id))).toEqual(id);
    for (const bad of [undefined, '', '42', 'x.1.ab', '0a.1', '0a.-1.ab', `0a.1.ab\nevent: x`]) {
      expect(parseEventId(bad)).toBeUndefined();
    }
  });

  it('tags a scope without naming its namespaces, the same for any order, another for another scope', () => {
    expect(scopeTag(['a', 'b'])).toBe(scopeTag(['b', 'a']));
    expect(scopeTag(['a'])).not.toBe(scopeTag(['a', 'b']));
    expect(scopeTag('all')).not.toBe(scopeTag([]));
    expect(scopeTag(['team-secret'])).not.toContain('secret');
  });
});

/** A socket whose buffer holds `room` bytes until drained. */
class SlowSink extends EventEmitter {
  written: string[] = [];
  buffered = 0;
  private readonly room: number;
  constructor(room: number) {
    super();
    this.room = room;
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    this.buffered += chunk.length;
    return this.buffered < this.room;
  }
  drain(): void {
    this.buffered = 0;
    this.emit('drain');
  }
}

describe('the bounded writer', () => {
  const setup = (room: number, limitBytes: number) => {
    const sink = new SlowSink(room);
    let overflows = 0;
    const writer = new BoundedWriter({
      sink,
      limitBytes,
      resync: () => 'RESET+SNAPSHOT',
      onOverflow: () => overflows++,
    });
    return { sink, writer, overflows: () => overflows };
  };

  it('writes while the socket takes it, holds frames while it is full, and sends them in order once it drains', () => {
    const { sink, writer } = setup(10, 100);
    writer.write('aaaa');
    writer.write('bbbbbbb'); // the socket is full now
    expect(writer.isBlocked).toBe(true);
    writer.write('cc');
    writer.write('dd');
    expect(sink.written).toEqual(['aaaa', 'bbbbbbb']);
    expect(writer.pendingBytes).toBe(4);
    sink.drain();
    expect(sink.written).toEqual(['aaaa', 'bbbbbbb', 'ccdd']);
    expect(writer.isBlocked).toBe(false);
    expect(writer.pendingBytes).toBe(0);
  });

  it('past its limit, drops what it holds and, once the socket drains, sends a reset and a snapshot made then', () => {
    const { sink, writer, overflows } = setup(1, 10);
    writer.write('first');
    writer.write('123456');
    expect(overflows()).toBe(0);
    writer.write('789012'); // 12 bytes held: over 10
    expect(overflows()).toBe(1);
    expect(writer.pendingBytes).toBe(0);
    writer.write('dropped too: the snapshot will carry it');
    expect(overflows()).toBe(1);
    sink.drain();
    expect(sink.written).toEqual(['first', 'RESET+SNAPSHOT']);
    // The snapshot filled the socket again: what follows waits for the next drain.
    writer.write('next');
    sink.drain();
    expect(sink.written).toEqual(['first', 'RESET+SNAPSHOT', 'next']);
  });

  it('frames an event as Server-Sent Events', () => {
    expect(frame('upsert', '{"a":1}', 'e.1.t')).toBe('id: e.1.t\nevent: upsert\ndata: {"a":1}\n\n');
    expect(frame('reset', '{}')).toBe('event: reset\ndata: {}\n\n');
  });
});
