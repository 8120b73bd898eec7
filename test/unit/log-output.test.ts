import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BoundedLogOutput } from '../../src/log-output.ts';

const MAX = 64 * 1024;
const LINE = `${JSON.stringify({ level: 20, msg: 'x'.repeat(200) })}\n`;

/** A stdout whose reader takes nothing until release() is called. */
function stalledStdout() {
  const pending: (() => void)[] = [];
  const written: string[] = [];
  const stream = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk.toString());
      pending.push(callback);
    },
  });
  const release = () => {
    for (const callback of pending.splice(0)) callback();
  };
  return { stream, written, release };
}

describe('BoundedLogOutput', () => {
  it('keeps at most its bound waiting for a reader that does not read, and counts what it drops', () => {
    const { stream } = stalledStdout();
    const out = new BoundedLogOutput(stream, MAX);
    const lines = (10 * 1024 * 1024) / LINE.length;
    for (let i = 0; i < lines; i++) out.write(LINE);
    expect(stream.writableLength).toBeLessThanOrEqual(MAX);
    expect(out.droppedLines()).toBeGreaterThan(lines / 2);
  });

  it('says how many lines it dropped once the reader takes them again', async () => {
    const { stream, written, release } = stalledStdout();
    const out = new BoundedLogOutput(stream, MAX);
    for (let i = 0; i < 1000; i++) out.write(LINE);
    const dropped = out.droppedLines();
    expect(dropped).toBeGreaterThan(0);
    // Each callback lets the next buffered chunk through: keep releasing until the backlog is gone.
    const drain = async () => {
      while (stream.writableLength > 0) {
        release();
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await drain();
    out.write('{"msg":"after"}\n');
    await drain();
    const notice = written.find((w) => w.includes('log lines'));
    expect(JSON.parse(notice ?? '{}')).toMatchObject({ level: 40, dropped });
    expect(written.at(-1)).toBe('{"msg":"after"}\n');
    expect(out.droppedLines()).toBe(0);
  });

  it('stops writing, without throwing, once nobody reads stdout any more (EPIPE)', () => {
    const { stream, written } = stalledStdout();
    const out = new BoundedLogOutput(stream, MAX);
    stream.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    out.write(LINE);
    expect(written).toEqual([]);
  });

  // The operator's exit after a lost lease: pino's default destination retried the write to a
  // stdout whose reader was gone every 100 ms, forever, and the process never ended.
  it('lets a process whose stdout reader is gone log and exit', async () => {
    const script = `
      const { pino } = await import('pino');
      const { BoundedLogOutput } = await import(${JSON.stringify(fileURLToPath(new URL('../../src/log-output.ts', import.meta.url)))});
      const log = pino({}, new BoundedLogOutput(process.stdout));
      log.info('ready');
      process.stdin.once('data', () => {
        log.warn('lost leadership');
        log.error('exiting without draining');
        process.exit(3);
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['pipe', 'pipe', 'inherit'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    // The reader goes away (a log collector restarted, a test runner killed): writes now fail with EPIPE.
    child.stdout.destroy();
    child.stdin.write('go\n');
    expect(await exited).toBe(3);
  });
});
