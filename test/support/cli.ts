// `kubectl teal ...` as a user runs it: the real kubectl, which finds the
// plugin in bin/ on PATH, against the test cluster.
import { execFile } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { WAIT_MS } from './wait.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin', import.meta.url));

export interface CliResult {
  stdout: string;
  stderr: string;
  /** The exit code; -1 when the process did not exit with one (killed at its timeout). */
  code: number;
}

/** Runs `kubectl teal <args> -n <namespace>` and never throws: a failure is its exit code and output. */
export async function tealIn(namespace: string, ...args: string[]): Promise<CliResult> {
  return tealAs(inject('kubeconfig'), namespace, ...args);
}

/** tealIn as the user of another kubeconfig (e.g. serviceAccountKubeconfig's). */
export async function tealAs(kubeconfig: string, namespace: string, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(join(inject('binDir'), 'kubectl'), ['teal', ...args, '-n', namespace], {
      env: {
        ...process.env,
        PATH: [BIN, inject('binDir'), process.env.PATH ?? ''].join(delimiter),
        KUBECONFIG: kubeconfig,
        NO_COLOR: '1',
      },
      timeout: 2 * WAIT_MS,
    });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: unknown };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : -1 };
  }
}
