// A server the test harness starts as a child process (Prometheus, the
// registry): its output kept for failure reports, a stop that waits for the
// exit, and a kill should the test process end without stopping it.
import type { ChildProcess } from 'node:child_process';

export interface Supervised {
  child: ChildProcess;
  /** Everything it wrote to stdout and stderr, and why it could not start. */
  logs: () => string;
  /** SIGTERM, then wait for it to exit. */
  stop: () => Promise<void>;
}

export function supervise(child: ChildProcess): Supervised {
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  // A binary that cannot start emits error (its exitCode set), then close.
  child.once('error', (err) => {
    output += `${err.message}\n`;
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  // A test process that ends without afterAll (a crash, Ctrl-C) must not leave the server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  return {
    child,
    logs: () => output,
    stop: async () => {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
