// The dashboard's static files (issue #25): src/ui/ bundled by esbuild into
// index.html, app.js and app.css, which the operator serves under / from
// memory (src/api/dashboard.ts). No inline script or style (the strict CSP of
// src/api/headers.ts holds), no CDN and no web font: it works air-gapped.
// scripts/bundle.ts writes them to dist/ui beside dist/teal.js; e2e tests
// build their own copy.
//
//   node scripts/bundle-ui.ts [--outdir dist/ui]
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { bundledPackages, licenseSection } from './bundled-packages.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The most JavaScript the first page may load, gzipped (issue #25: 60 KB). */
export const UI_JS_BUDGET_GZIP = 60 * 1024;

/** The files the operator serves, by name; app.js.LEGAL.txt beside them is shipped, not served. */
export const UI_FILES = ['index.html', 'app.js', 'app.css'] as const;

export interface UiBundle {
  outdir: string;
  /** app.js's size, gzipped at the highest level, as a server or proxy would send it. */
  jsGzipBytes: number;
}

/** Bundles src/ui into outdir; throws when app.js is over the budget. */
export async function bundleUi(outdir: string): Promise<UiBundle> {
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: 'src/ui/main.tsx' },
    outdir,
    bundle: true,
    platform: 'browser',
    // Browsers of the last two years: no transform of modern syntax.
    target: ['chrome120', 'firefox121', 'safari17'],
    format: 'esm',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // The licenses go into app.js.LEGAL.txt, not into what the browser loads.
    legalComments: 'external',
    sourcemap: false,
    metafile: true,
    logLevel: 'warning',
  });
  writeLicenses(outdir, bundledPackages(result.metafile, root).map(licenseSection));
  copyFileSync(join(root, 'src/ui/index.html'), join(outdir, 'index.html'));
  const jsGzipBytes = gzipSync(readFileSync(join(outdir, 'app.js')), { level: 9 }).length;
  if (jsGzipBytes > UI_JS_BUDGET_GZIP) {
    throw new Error(`app.js is ${jsGzipBytes} bytes gzipped, over the first page's budget of ${UI_JS_BUDGET_GZIP}`);
  }
  return { outdir, jsGzipBytes };
}

/**
 * app.js.LEGAL.txt: the license of each package app.js holds, then the legal comments esbuild
 * took out of it; shipped beside it, never loaded by the browser.
 */
function writeLicenses(outdir: string, sections: string[]): void {
  const legal = join(outdir, 'app.js.LEGAL.txt');
  const comments = existsSync(legal) ? readFileSync(legal, 'utf8').trim() : '';
  rmSync(legal, { force: true });
  const tail = comments ? `\n== Legal comments found in the bundled sources\n\n${comments}\n` : '';
  writeFileSync(legal, `Third-party software bundled into app.js, with its licenses.\n\n${sections.join('\n')}${tail}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { outdir: { type: 'string', default: 'dist/ui' } } });
  const { outdir, jsGzipBytes } = await bundleUi(resolve(root, values.outdir));
  console.log(
    `wrote ${outdir}: app.js ${(jsGzipBytes / 1024).toFixed(1)} KiB gzipped (budget ${UI_JS_BUDGET_GZIP / 1024})`,
  );
}
