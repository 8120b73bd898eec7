// `npm run bundle:cli` (make cli): the kubectl plugin as bin/kubectl-teal runs
// it, dist/cli/kubectl-teal.js, split at the plugin's dynamic imports into
// dist/cli/chunks/: main.ts once the compile cache is on (src/cli/kubectl-teal.ts),
// then one chunk per command (src/cli/main.ts), with what they share in chunks
// of their own. A command loads and compiles only its own code: `version` none
// of client-node's. Beside them, as for the operator (scripts/bundle.ts): the
// source maps, kubectl-teal.js.LEGAL.txt with the licenses of every package
// bundled, and the metafile (test/unit/cli-bundle.test.ts reads it).
//
//   node scripts/bundle-cli.ts [--outdir dist/cli]
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { bundledPackages, licenseSection } from './bundled-packages.ts';
import { escapeNonAscii, legalComments, NODE_BUNDLE } from './node-bundle.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { outdir: { type: 'string', default: 'dist/cli' } } });
const outdir = resolve(root, values.outdir);
// The chunks and files of an earlier build go; dist/cli/standalone (scripts/standalone-cli.ts) stays.
rmSync(join(outdir, 'chunks'), { recursive: true, force: true });
for (const file of existsSync(outdir) ? readdirSync(outdir) : []) {
  if (file.startsWith('kubectl-teal.')) rmSync(join(outdir, file));
}

const result = await build({
  absWorkingDir: root,
  entryPoints: { 'kubectl-teal': 'src/cli/kubectl-teal.ts' },
  outdir,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  ...NODE_BUNDLE,
});
writeFileSync(join(outdir, 'kubectl-teal.meta.json'), JSON.stringify(result.metafile));
const scripts = Object.keys(result.metafile.outputs)
  .filter((file) => file.endsWith('.js'))
  .map((file) => join(root, file));
for (const script of scripts) escapeNonAscii(script);
const comments = [...new Set(scripts.flatMap((script) => legalComments(`${script}.LEGAL.txt`)))].join('\n\n');
const sections = bundledPackages(result.metafile, root).map(licenseSection);
writeFileSync(
  join(outdir, 'kubectl-teal.js.LEGAL.txt'),
  `Third-party software bundled into kubectl-teal.js and its chunks, with its licenses.\n\n${sections.join('\n')}${
    comments ? `\n== Legal comments found in the bundled sources\n\n${comments}\n` : ''
  }`,
);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const total = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
console.log(`wrote ${outdir}: kubectl-teal.js and ${scripts.length - 1} chunks, ${kib(total)} with source maps`);
