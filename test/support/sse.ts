// A Server-Sent Events client for tests of GET /api/v1/stream: it keeps every
// byte the server wrote (to assert on the raw stream) and the events parsed
// from them, and a test waits on what it expects to arrive.
import { get, type IncomingMessage } from 'node:http';
import { waitFor } from './wait.ts';

export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** Everything the server wrote so far, as written. */
  raw: () => string;
  events: SseEvent[];
  /** Whether the server ended the stream. */
  ended: () => boolean;
  /** Waits until an event after the first `from` ones matches; returns it. */
  next: (what: string, match: (e: SseEvent) => boolean, from?: number) => Promise<SseEvent>;
  close: () => void;
}

/** Parses the complete events of a buffer; comments (heartbeats) and retry lines are no events. */
export function parseSse(text: string): SseEvent[] {
  const blocks = text.split('\n\n');
  blocks.pop(); // what follows the last blank line is not complete yet
  return blocks.flatMap((block) => {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    return data.length > 0 ? [{ event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) }] : [];
  });
}

/** Opens the stream; the answer's status is there at once, its events as they come. */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      let text = '';
      let ended = false;
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        raw: () => text,
        events: [],
        ended: () => ended,
        next: (what, match, from = 0) =>
          waitFor(what, async () => {
            const found = stream.events.slice(from).find(match);
            if (found) return found;
            if (ended) throw new Error(`the stream ended; events: ${JSON.stringify(stream.events)}`);
            return undefined;
          }),
        close: () => request.destroy(),
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        stream.events = parseSse(text);
      });
      const end = () => {
        ended = true;
      };
      res.on('end', end);
      res.on('error', end);
      resolve(stream);
    });
    request.on('error', reject);
  });
}

/** A row event's data. */
export const dataOf = <T = Record<string, unknown>>(e: SseEvent): T => JSON.parse(e.data) as T;
