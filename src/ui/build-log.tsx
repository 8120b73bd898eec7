// A build's log as it streams (issue #25 item 9), a component of its own that
// the App page mounts under its release timeline. It reads the
// operator's Server-Sent Events with fetch, not EventSource, so a 403 or a 404
// shows the API's own message; a stream that breaks off is asked again with
// Last-Event-ID, and only the lines after the last one shown come. Lines are
// rendered as text by Preact, never as HTML. The view stays at the bottom as
// lines come, unless the user scrolled up to read.
import { type Signal, useSignal } from '@preact/signals';
import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import { type BuildLogEvent, BuildLogReader, buildLogPath } from '../app/build-log-events.ts';
import { user } from './session.ts';

/** Lines kept in the page: a longer log shows its last ones. */
export const MAX_SHOWN_LINES = 5000;
/** Waits between reconnections, growing to the last. */
const RETRY_MS = [500, 1000, 2000, 5000, 10_000];

export type LogState =
  | { kind: 'connecting' }
  | { kind: 'waiting'; message: string }
  | { kind: 'live' }
  | { kind: 'reconnecting'; why: string }
  | { kind: 'ended'; outcome: 'Succeeded' | 'Failed' | 'Unknown'; message?: string }
  | { kind: 'refused'; message: string };

interface Line {
  id: number;
  text: string;
}

export function stateText(state: LogState): string {
  switch (state.kind) {
    case 'connecting':
      return 'Connecting to the build log…';
    case 'waiting':
      return `Waiting for the build to start: ${state.message}`;
    case 'live':
      return 'Live: lines appear as the build writes them';
    case 'reconnecting':
      return `Reconnecting (${state.why})…`;
    case 'ended':
      if (state.outcome === 'Succeeded') return 'The build succeeded';
      if (state.outcome === 'Failed') return `The build failed${state.message ? `: ${state.message}` : ''}`;
      return `The log ended${state.message ? `: ${state.message}` : ''}`;
    case 'refused':
      return `The build log cannot be shown: ${state.message}`;
  }
}

/** Where the lines go, and the state the stream is in. */
interface Sink {
  add(lines: Line[]): void;
  notice(text: string): void;
  state(next: LogState): void;
}

/** Reads one response's events into the sink; true when the log ended. */
async function readEvents(body: ReadableStream<Uint8Array>, sink: Sink, last: { id: number }): Promise<boolean> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const events = new BuildLogReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    const lines: Line[] = [];
    for (const event of events.push(decoder.decode(value, { stream: true }))) {
      if (event.kind === 'line') {
        lines.push({ id: event.id, text: event.text });
        last.id = event.id;
      } else if (handle(event, sink)) {
        sink.add(lines);
        return true;
      }
    }
    sink.add(lines);
  }
}

/** An event other than a line; true for the end. */
function handle(event: Exclude<BuildLogEvent, { kind: 'line' }>, sink: Sink): boolean {
  if (event.kind === 'waiting') sink.state({ kind: 'waiting', message: event.message });
  else if (event.kind === 'problem') sink.notice(event.message);
  else {
    sink.state({ kind: 'ended', outcome: event.outcome, ...(event.message ? { message: event.message } : {}) });
    return true;
  }
  return false;
}

/** Follows the log until it ends, the operator refuses it, or signal stops it. */
async function follow(path: string, sink: Sink, signal: AbortSignal): Promise<void> {
  const last = { id: 0 };
  for (let attempt = 0; !signal.aborted; attempt++) {
    let why = 'the stream broke off';
    try {
      const res = await fetch(path, {
        credentials: 'same-origin',
        headers: { accept: 'text/event-stream', ...(last.id > 0 ? { 'last-event-id': String(last.id) } : {}) },
        signal,
      });
      if (res.status === 401) {
        user.value = null;
        return;
      }
      if (res.ok && res.body) {
        attempt = 0;
        sink.state({ kind: 'live' });
        if (await readEvents(res.body, sink, last)) return;
      } else if (res.status === 503 || res.status === 429) {
        why = await messageOf(res);
      } else {
        sink.state({ kind: 'refused', message: await messageOf(res) });
        return;
      }
    } catch (err) {
      if (signal.aborted) return;
      why = (err as Error).message || why;
    }
    sink.state({ kind: 'reconnecting', why });
    await delay(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)] ?? 10_000, signal);
  }
}

async function messageOf(res: Response): Promise<string> {
  const body = (await res.json().catch(() => undefined)) as { message?: unknown } | undefined;
  return typeof body?.message === 'string' ? body.message : `${res.status} ${res.statusText}`;
}

const delay = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

type LogProps = { ns: string; name: string; commit?: string | undefined };

/**
 * The build log behind a button: the stream costs the operator a pod read, its
 * Secrets' and a log stream, and the user a 403 without get pods/log, so a
 * page opens it only when asked.
 */
export function BuildLog(props: LogProps) {
  const shown = useSignal(false);
  return (
    <section class="build-log" aria-labelledby="build-log-title">
      <h2 id="build-log-title">Build log</h2>
      <button type="button" aria-expanded={shown.value} onClick={() => (shown.value = !shown.value)}>
        {shown.value ? 'Hide the build log' : 'Show the build log'}
      </button>
      {shown.value ? <LogStream {...props} /> : null}
    </section>
  );
}

/** The log itself, streamed for as long as it is shown. */
export function LogStream({ ns, name, commit }: LogProps) {
  const log = useLogStream(ns, name, commit);
  const lines = log.lines.value;
  const dropped = log.dropped.value;
  const { view, onScroll } = useStickToBottom(lines.length + dropped);
  return (
    <>
      <LogStateLine state={log.state.value} />
      <LogNotices notices={log.notices.value} />
      <LogLines label={`Build log of ${ns}/${name}`} view={view} onScroll={onScroll} lines={lines} dropped={dropped} />
    </>
  );
}

/** What the page keeps of a log: its last lines, how many earlier ones it dropped, the notices, the state. */
interface ShownLog {
  lines: Signal<Line[]>;
  dropped: Signal<number>;
  notices: Signal<string[]>;
  state: Signal<LogState>;
}

/** Follows the build's log into a ShownLog, from the start again when the build changes. */
function useLogStream(ns: string, name: string, commit: string | undefined): ShownLog {
  const lines = useSignal<Line[]>([]);
  const dropped = useSignal(0);
  const notices = useSignal<string[]>([]);
  const state = useSignal<LogState>({ kind: 'connecting' });
  useEffect(() => {
    const stop = new AbortController();
    lines.value = [];
    dropped.value = 0;
    notices.value = [];
    void follow(buildLogPath(ns, name, commit), sinkInto({ lines, dropped, notices, state }), stop.signal);
    return () => stop.abort();
  }, [ns, name, commit]);
  return { lines, dropped, notices, state };
}

/** A sink that keeps the last MAX_SHOWN_LINES lines in the log, counting those it drops. */
function sinkInto(log: ShownLog): Sink {
  const { lines, dropped, notices, state } = log;
  return {
    add: (more) => {
      if (more.length === 0) return;
      // Lines coming: whatever was awaited (the pod, the node) is there.
      if (state.value.kind === 'waiting') state.value = { kind: 'live' };
      const all = [...lines.value, ...more];
      const over = Math.max(0, all.length - MAX_SHOWN_LINES);
      dropped.value += over;
      lines.value = over > 0 ? all.slice(over) : all;
    },
    notice: (text) => {
      notices.value = [...notices.value, text];
    },
    state: (next) => {
      state.value = next;
    },
  };
}

/** After new lines (count changes): the view to the bottom, unless the user had scrolled up. */
function useStickToBottom(count: number): { view: RefObject<HTMLDivElement | null>; onScroll: () => void } {
  const view = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  useLayoutEffect(() => {
    const el = view.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [count]);
  const onScroll = () => {
    const el = view.current;
    if (el) atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
  };
  return { view, onScroll };
}

function LogStateLine({ state }: { state: LogState }) {
  const tone = state.kind === 'ended' ? (state.outcome === 'Succeeded' ? 'ok' : 'failed') : state.kind;
  return (
    <p class={`log-state ${tone}`} role="status" data-state={state.kind}>
      {stateText(state)}
    </p>
  );
}

function LogNotices({ notices }: { notices: string[] }) {
  return (
    <>
      {notices.map((text) => (
        <p class="log-notice" key={text}>
          {text}
        </p>
      ))}
    </>
  );
}

/** The lines in their scroll box, after a note of how many earlier ones were dropped. */
function LogLines(props: {
  label: string;
  view: RefObject<HTMLDivElement | null>;
  onScroll: () => void;
  lines: Line[];
  dropped: number;
}) {
  const { dropped } = props;
  return (
    <div
      class="log-lines"
      role="log"
      aria-live="polite"
      aria-label={props.label}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls, so the keyboard must reach it
      tabIndex={0}
      ref={props.view}
      onScroll={props.onScroll}
    >
      {dropped > 0 ? <div class="log-dropped">{`${dropped} earlier lines are not shown`}</div> : null}
      {props.lines.map((line) => (
        <div class="log-line" key={line.id}>
          {line.text}
        </div>
      ))}
    </div>
  );
}
