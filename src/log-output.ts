// Where the operator's log lines go: stdout, with a bound on what waits in
// memory for a reader. pino's own destination (sonic-boom) buffers without
// limit while stdout is not read (a stalled log collector, a test runner
// starved of CPU), and at exit it retries a write to a stdout nobody reads any
// more every 100 ms, forever: a replica that lost its lease then never exits.
// process.stdout on a pipe writes without blocking (libuv), holds what the
// pipe cannot take yet, and exits without waiting for it; here lines are
// dropped, and counted, once that backlog reaches the bound.

/** What may wait in memory for a slow reader of stdout; beyond it lines are dropped. */
export const LOG_BACKLOG_MAX_BYTES = 4 * 1024 * 1024;

/** The part of process.stdout used here. */
export interface LogStream {
  write(chunk: string): boolean;
  readonly writableLength: number;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export class BoundedLogOutput {
  private readonly stream: LogStream;
  private readonly maxBacklogBytes: number;
  /** Lines dropped since the last one written. */
  private dropped = 0;
  /** Nobody reads stdout any more (EPIPE): every line is dropped. */
  private broken = false;

  constructor(stream: LogStream, maxBacklogBytes = LOG_BACKLOG_MAX_BYTES) {
    this.stream = stream;
    this.maxBacklogBytes = maxBacklogBytes;
    // Without a listener a broken pipe would be an uncaught exception; with one, logging just stops.
    stream.on('error', () => {
      this.broken = true;
    });
  }

  /** pino's destination: one JSON line at a time. */
  write(line: string): void {
    if (this.broken) return;
    const backlog = this.stream.writableLength;
    // One line always fits an empty backlog, however long.
    if (backlog > 0 && backlog + Buffer.byteLength(line) > this.maxBacklogBytes) {
      this.dropped++;
      return;
    }
    if (this.dropped > 0) {
      this.stream.write(droppedLine(this.dropped));
      this.dropped = 0;
    }
    this.stream.write(line);
  }

  /** Lines dropped since the last one written (0 once a line went out). */
  droppedLines(): number {
    return this.dropped;
  }
}

/** Said in the log itself, as a pino warning, once lines flow again. */
function droppedLine(count: number): string {
  const msg = `dropped ${count} log lines: stdout was not read fast enough (more than ${LOG_BACKLOG_MAX_BYTES} bytes waited)`;
  return `${JSON.stringify({ level: 40, time: Date.now(), component: 'teal', dropped: count, msg })}\n`;
}
