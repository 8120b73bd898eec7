// Reading the API server's audit log by windows: a window is the byte range
// between two marks, and only whole lines are read, so a line the API server
// is still writing at a mark belongs to the next window.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { type AuditEvent, parseAuditLine } from './audit.ts';

const CHUNK = 8 << 20;

export class AuditLog {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  /** The end of the last whole line written so far. */
  mark(): number {
    const size = statSync(this.path, { throwIfNoEntry: false })?.size ?? 0;
    if (size === 0) return 0;
    const fd = openSync(this.path, 'r');
    try {
      // A line is a few KiB at most (Metadata level): look back for its newline.
      const tail = Buffer.alloc(Math.min(size, 1 << 20));
      readSync(fd, tail, 0, tail.length, size - tail.length);
      const nl = tail.lastIndexOf(10);
      return nl < 0 ? size - tail.length : size - tail.length + nl + 1;
    } finally {
      closeSync(fd);
    }
  }

  /** Calls onEvent for every event in [from, to), in chunks, so that a window of gigabytes is not held at once. */
  scan(from: number, to: number, onEvent: (e: AuditEvent) => void): void {
    const fd = openSync(this.path, 'r');
    try {
      let pos = from;
      let rest = '';
      const buf = Buffer.alloc(CHUNK);
      // A chunk may end inside a multi-byte character: the decoder keeps it for the next.
      const decoder = new StringDecoder('utf8');
      while (pos < to) {
        const n = readSync(fd, buf, 0, Math.min(CHUNK, to - pos), pos);
        if (n === 0) break;
        pos += n;
        const lines = (rest + decoder.write(buf.subarray(0, n))).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          const e = parseAuditLine(line);
          if (e) onEvent(e);
        }
      }
    } finally {
      closeSync(fd);
    }
  }
}
