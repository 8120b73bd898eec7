// `npm run bundle`: the operator as one minified ESM file, dist/teal.js, which
// the production image runs, and beside it dist/condition-worker.js, the worker
// thread that judges checks' conditions (src/analysis/condition-pool.ts finds it
// beside teal.js): a second entry, so a worker loads the CEL library and not the
// whole operator. esbuild, because it reads TypeScript itself (no
// tsc pass first), shakes the unused generated API groups out of
// @kubernetes/client-node's barrel, and is one dev dependency with no plugins
// to configure. Beside the bundles: their source maps (no sources inside: stack
// traces need only the mappings), the licenses of every package bundled, and
// the metafile that says what went in; and the dashboard's files in dist/ui
// (scripts/bundle-ui.ts).
//
//   node scripts/bundle.ts [--outdir dist]
import { statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { bundleUi, UI_JS_BUDGET_GZIP } from './bundle-ui.ts';
import { type BundledPackage, bundledPackages, licenseSection, MODULES, packageDir } from './bundled-packages.ts';
import { escapeNonAscii, legalComments, NODE_BUNDLE } from './node-bundle.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { outdir: { type: 'string', default: 'dist' } } });
const outdir = resolve(root, values.outdir);
const outfile = join(outdir, 'teal.js');
/** Output name (without .js) to its entry; condition-pool.ts names the worker's. */
const ENTRIES = { teal: 'src/main.ts', 'condition-worker': 'src/analysis/condition-worker.ts' };
const outputs = Object.keys(ENTRIES).map((name) => join(outdir, `${name}.js`));

const result = await build({
  absWorkingDir: root,
  entryPoints: ENTRIES,
  outdir,
  ...NODE_BUNDLE,
});
writeFileSync(join(outdir, 'teal.meta.json'), JSON.stringify(result.metafile));
for (const output of outputs) escapeNonAscii(output);
appendLicenses(bundledPackages(result.metafile, root));
for (const output of outputs) printSummary(result.metafile, output);
// The dashboard's files, in ui/ beside teal.js, where the operator looks for them (src/main.ts).
const ui = await bundleUi(join(outdir, 'ui'));
console.log(
  `wrote ${ui.outdir}: app.js ${(ui.jsGzipBytes / 1024).toFixed(1)} KiB gzipped (budget ${UI_JS_BUDGET_GZIP / 1024})`,
);

/**
 * esbuild's extracted legal comments, followed by each bundled package's license file: one file
 * to ship, teal.js.LEGAL.txt, for both bundles (the worker's packages are a part of teal.js's).
 */
function appendLicenses(packages: BundledPackage[]): void {
  const legal = `${outfile}.LEGAL.txt`;
  const comments = [...new Set(outputs.flatMap((output) => legalComments(`${output}.LEGAL.txt`)))].join('\n\n');
  const sections = packages.map(licenseSection);
  const head = 'Third-party software bundled into teal.js, with its licenses.\n';
  const tail = comments ? `\n== Legal comments found in the bundled sources\n\n${comments}\n` : '';
  writeFileSync(legal, `${head}\n${sections.join('\n')}${tail}`);
}

/** A bundle's size and what takes the most room in it, by package. */
function printSummary(meta: Metafile, file: string): void {
  const name = basename(file);
  const output = meta.outputs[Object.keys(meta.outputs).find((k) => basename(k) === name) ?? ''];
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const dir = packageDir(input);
    const name = dir ? dir.slice(dir.lastIndexOf(MODULES) + MODULES.length) : 'teal (src)';
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
  }
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  const top = [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 6);
  console.log(`wrote ${file}: ${kib(statSync(file).size)}`);
  console.log(`  largest parts: ${top.map(([name, bytes]) => `${name} ${kib(bytes)}`).join(', ')}`);
}
