// `npm run bundle`: the operator as one minified ESM file, dist/teal.js, which
// the production image runs. esbuild, because it reads TypeScript itself (no
// tsc pass first), shakes the unused generated API groups out of
// @kubernetes/client-node's barrel, and is one dev dependency with no plugins
// to configure. Beside the bundle: its source map (no sources inside: stack
// traces need only the mappings), the licenses of every package bundled, and
// the metafile that says what went in.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outfile = join(root, 'dist/teal.js');

// Bundled CommonJS packages call require() for Node's own modules; an ESM
// bundle has no require, so it gets one.
const REQUIRE_SHIM =
  "import { createRequire as __tealRequire } from 'node:module'; const require = __tealRequire(import.meta.url);";

const MODULES = 'node_modules/';

/** One package that went into the bundle, and the license text it ships. */
interface BundledPackage {
  name: string;
  version: string;
  license: string;
  text: string;
}

const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/main.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'external',
  banner: { js: REQUIRE_SHIM },
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(join(root, 'dist/teal.meta.json'), JSON.stringify(result.metafile));
appendLicenses(bundledPackages(result.metafile));
printSummary(result.metafile);

/** The packages whose files the bundle holds, from the metafile's inputs. */
function bundledPackages(meta: Metafile): BundledPackage[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(meta.inputs)) {
    const dir = packageDir(input);
    if (dir) dirs.add(dir);
  }
  return [...dirs].map((dir) => readPackage(join(root, dir))).sort((a, b) => a.name.localeCompare(b.name));
}

/** node_modules/a/node_modules/@b/c/lib/x.js -> node_modules/a/node_modules/@b/c */
function packageDir(input: string): string | undefined {
  const at = input.lastIndexOf(MODULES);
  if (at < 0) return undefined;
  const parts = input.slice(at + MODULES.length).split('/');
  const length = parts[0]?.startsWith('@') ? 2 : 1;
  return input.slice(0, at + MODULES.length) + parts.slice(0, length).join('/');
}

function readPackage(dir: string): BundledPackage {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    license?: string;
  };
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  const text = file ? readFileSync(join(dir, file), 'utf8').trim() : '(no license file in the package)';
  return { name: pkg.name, version: pkg.version, license: pkg.license ?? 'UNKNOWN', text };
}

/** esbuild's extracted legal comments, followed by each bundled package's license file: one file to ship. */
function appendLicenses(packages: BundledPackage[]): void {
  const legal = `${outfile}.LEGAL.txt`;
  const comments = existsSync(legal) ? readFileSync(legal, 'utf8').trim() : '';
  const sections = packages.map((p) => `== ${p.name}@${p.version} (${p.license})\n\n${p.text}\n`);
  const head = 'Third-party software bundled into teal.js, with its licenses.\n';
  const tail = comments ? `\n== Legal comments found in the bundled sources\n\n${comments}\n` : '';
  writeFileSync(legal, `${head}\n${sections.join('\n')}${tail}`);
}

/** The bundle's size and what takes the most room in it, by package. */
function printSummary(meta: Metafile): void {
  const output = meta.outputs[Object.keys(meta.outputs).find((k) => k.endsWith('teal.js')) ?? ''];
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const dir = packageDir(input);
    const name = dir ? dir.slice(dir.lastIndexOf(MODULES) + MODULES.length) : 'teal (src)';
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
  }
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  const top = [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 6);
  console.log(`wrote ${join(dirname(outfile), 'teal.js')}: ${kib(statSync(outfile).size)}`);
  console.log(`  largest parts: ${top.map(([name, bytes]) => `${name} ${kib(bytes)}`).join(', ')}`);
}
