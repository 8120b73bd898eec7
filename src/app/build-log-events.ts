// The build log's wire format (issue #25 item 9), one place for the operator
// that writes it (api/build-log.ts) and the dashboard that reads it
// (ui/build-log.tsx): Server-Sent Events over one GET. Each log line is a
// message whose id is its number (from 1), so a client that lost the stream
// asks again with Last-Event-ID and gets only the lines after it. Other events
// carry JSON: waiting (the build pod has not started), problem (its node did
// not serve the log; the pod's termination message follows, when it has one),
// end (the log is whole: the build's outcome).

/** The path of an App's build log: its current build, or that of a commit (a SHA or a prefix of 4 or more digits). */
export const buildLogPath = (ns: string, name: string, commit?: string) =>
  `/api/v1/namespaces/${encodeURIComponent(ns)}/apps/${encodeURIComponent(name)}/${
    commit === undefined ? 'build' : `builds/${encodeURIComponent(commit)}`
  }/log`;

export type BuildOutcome = 'Succeeded' | 'Failed' | 'Unknown';

export type BuildLogEvent =
  | { kind: 'line'; id: number; text: string }
  | { kind: 'waiting'; message: string }
  | { kind: 'problem'; message: string }
  | { kind: 'end'; outcome: BuildOutcome; message?: string };

/** One event as SSE text. A line holds no CR or LF (the splitter took them), so one data field carries it. */
export function sseText(event: BuildLogEvent): string {
  if (event.kind === 'line') return `id: ${event.id}\ndata: ${event.text.replace(/[\r\n]/g, ' ')}\n\n`;
  const { kind, ...data } = event;
  return `event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A keep-alive, which SSE readers ignore: proxies close a connection that says nothing for long. */
export const SSE_COMMENT = ': keep-alive\n\n';

/**
 * Reads SSE text as it arrives, in pieces cut anywhere: each whole event
 * becomes a BuildLogEvent; one of another kind, or whose data does not parse,
 * is dropped.
 */
export class BuildLogReader {
  private buffer = '';

  push(text: string): BuildLogEvent[] {
    this.buffer += text.replace(/\r\n?/g, '\n');
    const events: BuildLogEvent[] = [];
    for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const event = parseBlock(block);
      if (event) events.push(event);
    }
    return events;
  }
}

function parseBlock(block: string): BuildLogEvent | undefined {
  let kind = 'message';
  let id: number | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') kind = value;
    else if (field === 'id') id = Number(value);
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  const text = data.join('\n');
  if (kind === 'message') return id !== undefined && Number.isSafeInteger(id) ? { kind: 'line', id, text } : undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const fields = (parsed ?? {}) as { message?: unknown; outcome?: unknown };
  const message = typeof fields.message === 'string' ? fields.message : undefined;
  if (kind === 'end') {
    const outcome = fields.outcome === 'Succeeded' || fields.outcome === 'Failed' ? fields.outcome : 'Unknown';
    return { kind, outcome, ...(message !== undefined ? { message } : {}) };
  }
  if ((kind === 'waiting' || kind === 'problem') && message !== undefined) return { kind, message };
  return undefined;
}
