// The operator's command line, through the real process: main.ts hands the
// flags to config.ts before anything heavy loads, prints --help on stdout and
// a flag error on stderr with exit code 2. (The rules themselves are unit
// tests: test/unit/operator-flags.test.ts.) No time is asserted: Node starts
// slowly on a busy machine.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

async function operator(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the operator process', () => {
  it('prints its usage on stdout with --help and exits 0', async () => {
    const { code, stdout, stderr } = await operator(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^teal: the Teal operator\n/);
    expect(stdout).toContain('--graceful-shutdown-timeout');
    expect(stderr).toBe('');
  });

  it('refuses a bad flag with exit code 2, naming the flag, before it touches anything', async () => {
    const { code, stdout, stderr } = await operator(['--concurrency', '0', '--kubeconfig', '/nonexistent']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(/^teal: --concurrency: /);
    // Refused before a kubeconfig is read or a port opened.
    expect(stderr).not.toMatch(/nonexistent|EADDRINUSE|ENOENT/);
  });
});
