// A build log read as it streams: chunks cut anywhere (within a line, within a
// UTF-8 character) become whole lines, because a credential is masked only in
// a line seen whole (log-scrub.ts). Held text is bounded: a line longer than
// maxChars is never held whole, and is replaced by a notice rather than cut,
// since a cut could split a credential into two halves no mask would match.
import { StringDecoder } from 'node:string_decoder';

/** The longest line kept, in UTF-16 units: BuildKit's and kaniko's lines are far shorter. */
export const MAX_LINE_CHARS = 16 * 1024;

/** What stands for a line longer than the limit. */
export const longLineNotice = (maxChars: number) => `[a line longer than ${maxChars} characters is left out]`;

export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private readonly maxChars: number;
  private partial = '';
  /** The current line outgrew maxChars: its rest is dropped up to its end. */
  private skipping = false;

  constructor(maxChars = MAX_LINE_CHARS) {
    this.maxChars = maxChars;
  }

  /** The lines chunk completes, without their \n or \r\n. */
  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const lines: string[] = [];
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
      const line = this.take(text.slice(start, end));
      start = end + 1;
      if (line !== undefined) lines.push(line);
      this.partial = '';
      this.skipping = false;
    }
    this.hold(text.slice(start));
    return lines;
  }

  /** The last line, when the log did not end with a newline. */
  end(): string[] {
    this.hold(this.decoder.end());
    const last = this.partial !== '' || this.skipping ? this.take('') : undefined;
    this.partial = '';
    this.skipping = false;
    return last !== undefined ? [last] : [];
  }

  /** The line made of what was held and rest; the notice for one that was too long. */
  private take(rest: string): string {
    if (this.skipping || this.partial.length + rest.length > this.maxChars) return longLineNotice(this.maxChars);
    const line = this.partial + rest;
    return line.endsWith('\r') ? line.slice(0, -1) : line;
  }

  private hold(rest: string): void {
    if (this.skipping) return;
    if (this.partial.length + rest.length > this.maxChars) {
      this.partial = '';
      this.skipping = true;
      return;
    }
    this.partial += rest;
  }
}
