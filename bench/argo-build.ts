// Argo Rollouts as the benches run it: built from Go modules by
// test/cluster/build-argo.sh on first use, cached by version.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Builds Argo (test/cluster/build-argo.sh) on first use; its folder and version. */
export async function ensureArgo(log: (line: string) => void): Promise<{ home: string; version: string }> {
  const child = execFile('bash', [join(here, '../test/cluster/build-argo.sh')], { maxBuffer: 64 << 20 });
  child.stderr?.on('data', (c: Buffer) => {
    for (const line of c.toString().split('\n')) if (line.startsWith('build-argo:')) log(line);
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0) throw new Error(`build-argo.sh failed with exit code ${code}`);
  const home = out.trim().split('\n').at(-1) as string;
  return { home, version: home.split('/').at(-1) as string };
}
