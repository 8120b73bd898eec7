// The kubectl plugin as `make cli` builds it, laid out as an install without
// the repository: bin/kubectl-teal (the launcher) and bin/kubectl_complete-teal
// (a link to it), dist/cli/ (the bundle, made afresh from the sources) and
// node_modules/.bin/node (Node 24), and no src/ or
// packages, so the launcher can only run the bundle and the bundle can only
// use what is inside it. The e2e global setup makes one per run.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Builds the install; returns its root (the plugin is root/bin/kubectl-teal). */
export async function installPlugin(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'teal-plugin-'));
  await run(process.execPath, [join(ROOT, 'scripts/bundle-cli.ts'), '--outdir', join(root, 'dist/cli')], {
    cwd: ROOT,
  });
  mkdirSync(join(root, 'bin'));
  copyFileSync(join(ROOT, 'bin/kubectl-teal'), join(root, 'bin/kubectl-teal'));
  // kubectl's plugin completion runs the launcher under this name, as in the repository.
  symlinkSync('kubectl-teal', join(root, 'bin/kubectl_complete-teal'));
  mkdirSync(join(root, 'node_modules/.bin'), { recursive: true });
  symlinkSync(realpathSync(join(ROOT, 'node_modules/.bin/node')), join(root, 'node_modules/.bin/node'));
  return root;
}
