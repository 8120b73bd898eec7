// The tools real image builds need, from the project's own scripts: Debian's
// packages (install-build-packages.sh) and the BuildKit and kaniko binaries
// built from Go modules and cached by version (build-toolchain.sh).
// Free of vitest, like the rest of test/cluster.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export interface BuildTools {
  /** The folder holding buildctl, buildkitd, buildctl-daemonless.sh and executor. */
  bin: string;
}

/** The pinned versions of test/cluster/versions.env: KEY=value lines, as bash `source` reads them (no quoting there). */
export function readVersionsEnv(): Map<string, string> {
  const versions = new Map<string, string>();
  for (const line of readFileSync(join(here, 'versions.env'), 'utf8').split('\n')) {
    const match = /^([A-Z_]+)=(\S+)$/.exec(line.trim());
    if (match?.[1] && match[2]) versions.set(match[1], match[2]);
  }
  return versions;
}

/**
 * Installs the missing packages, then builds or reuses the toolchain. Cold, the
 * build takes minutes (Go modules of BuildKit and kaniko); warm, well under a second.
 */
export async function ensureBuildTools(log: (line: string) => void = () => {}): Promise<BuildTools> {
  await runScript('install-build-packages.sh', log);
  const bin = await runScript('build-toolchain.sh', log);
  return { bin };
}

/** Runs a script of this folder; its progress lines go to log, its last stdout line is the answer. */
async function runScript(name: string, log: (line: string) => void): Promise<string> {
  const child = spawn('bash', [join(here, name)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const prefix = `${name.replace(/\.sh$/, '')}:`;
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    for (const line of chunk.toString().split('\n')) if (line.startsWith(prefix)) log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`${name} failed with exit code ${code}:\n${err.slice(-8000)}`);
  return out.trim().split('\n').at(-1) ?? '';
}
