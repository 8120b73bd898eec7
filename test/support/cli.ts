// `kubectl teal ...` as a user runs it: the real kubectl, which finds the
// plugin on PATH, against the test cluster. The plugin runs from the bundle
// (`make cli`, as users install it: support/plugin.ts), from the sources
// (bin/kubectl-teal of the repository, TEAL_CLI_FROM=source), or as the single
// executable (scripts/standalone-cli.ts) with no Node on PATH; test/e2e/cli.test.ts
// runs every test with all three.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { WAIT_MS } from './wait.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin', import.meta.url));

/** Where the plugin runs from. */
export type CliFrom = 'bundle' | 'source' | 'standalone';
export const CLI_FROM: readonly CliFrom[] = ['bundle', 'source', 'standalone'];

/** This machine's architecture as krew and the executables' folders name it. */
export const ARCH = process.arch === 'arm64' ? 'arm64' : 'amd64';

let standaloneBin: string | undefined;

/**
 * Builds the single executable for this machine (scripts/standalone-cli.ts), once per
 * test file, with the link kubectl's completion runs (as docs/cli.md tells users to make);
 * cliEnv's 'standalone' runs it.
 */
export async function buildStandalone(): Promise<string> {
  if (standaloneBin) return standaloneBin;
  const out = await mkdtemp(join(tmpdir(), 'teal-standalone-'));
  const script = fileURLToPath(new URL('../../scripts/standalone-cli.ts', import.meta.url));
  await run(process.execPath, [script, '--outdir', out, '--arch', ARCH, '--executable-only'], { timeout: WAIT_MS });
  const bin = join(out, `kubectl-teal-linux-${ARCH}`);
  await symlink('kubectl-teal', join(bin, 'kubectl_complete-teal'));
  standaloneBin = bin;
  return bin;
}

/** The folder the plugin of `from` is found in. */
function pluginBin(from: CliFrom): string {
  if (from === 'source') return BIN;
  if (from === 'bundle') return join(inject('pluginRoot'), 'bin');
  if (!standaloneBin) throw new Error('the standalone plugin is not built: await buildStandalone() first');
  return standaloneBin;
}

export interface CliResult {
  stdout: string;
  stderr: string;
  /** The exit code; -1 when the process did not exit with one (killed at its timeout). */
  code: number;
}

/**
 * The environment kubectl runs with: the plugin of `from` first on PATH, kubeconfig, no colour.
 * (test/e2e/cli-standalone.test.ts runs the standalone plugin with no Node on PATH at all.)
 */
export function cliEnv(kubeconfig: string, from: CliFrom = 'bundle'): NodeJS.ProcessEnv {
  const { TEAL_CLI_FROM: _from, ...env } = process.env;
  const path = [pluginBin(from), inject('binDir'), process.env.PATH ?? ''];
  return {
    ...env,
    ...(from === 'source' ? { TEAL_CLI_FROM: 'source' } : {}),
    PATH: path.join(delimiter),
    KUBECONFIG: kubeconfig,
    // NO_COLOR keeps the output plain even if a terminal is attached.
    NO_COLOR: '1',
  };
}

/** The real kubectl with `args`; never throws: a failure is its exit code and output. */
async function kubectl(args: string[], kubeconfig: string, from: CliFrom): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(join(inject('binDir'), 'kubectl'), args, {
      env: cliEnv(kubeconfig, from),
      // A bound against hangs, above the longest --timeout a test gives.
      timeout: 2 * WAIT_MS,
    });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: unknown };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : -1 };
  }
}

/** `kubectl teal <args>` through the real kubectl; never throws: a failure is its exit code and output. */
export function teal(args: string[], kubeconfig: string, from: CliFrom = 'bundle'): Promise<CliResult> {
  return kubectl(['teal', ...args], kubeconfig, from);
}

/** What `kubectl teal <words><TAB>` offers: the candidates' values and cobra's directive. */
export interface Offered {
  values: string[];
  directive: number | undefined;
  stderr: string;
  code: number;
}

/**
 * Asks the real kubectl what completes `kubectl teal <words>` (the last word the
 * one being typed), as its shell script does: `kubectl __complete teal ...`,
 * which runs kubectl_complete-teal from PATH.
 */
export async function completeTeal(words: string[], kubeconfig: string, from: CliFrom = 'bundle'): Promise<Offered> {
  const result = await kubectl(['__complete', 'teal', ...words], kubeconfig, from);
  const lines = result.stdout.split('\n').filter((line) => line !== '');
  const last = lines.at(-1);
  const directive = last?.startsWith(':') ? Number(last.slice(1)) : undefined;
  const values = (directive === undefined ? lines : lines.slice(0, -1)).map((line) => line.split('\t')[0] ?? '');
  return { values, directive, stderr: result.stderr, code: result.code };
}

/** Runs `kubectl teal <args> -n <namespace>`. */
export async function tealIn(namespace: string, ...args: string[]): Promise<CliResult> {
  return tealAs(inject('kubeconfig'), namespace, ...args);
}

/** tealIn as the user of another kubeconfig (e.g. serviceAccountKubeconfig's). */
export async function tealAs(kubeconfig: string, namespace: string, ...args: string[]): Promise<CliResult> {
  return teal([...args, '-n', namespace], kubeconfig);
}

/** A `kubectl teal` that runs until stopped (dashboard), its output collected. */
export interface RunningTeal {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (-1 for a signal) once it exits. */
  exited: Promise<number>;
  /** SIGINT, as Ctrl-C sends, and its exit code. */
  interrupt: () => Promise<number>;
}

/** Starts `kubectl teal <args>` through the real kubectl, with env added to its environment. */
export function startTeal(
  args: string[],
  kubeconfig: string,
  from: CliFrom = 'bundle',
  env: NodeJS.ProcessEnv = {},
): RunningTeal {
  const child = spawn(join(inject('binDir'), 'kubectl'), ['teal', ...args], {
    env: { ...cliEnv(kubeconfig, from), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    interrupt: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}
