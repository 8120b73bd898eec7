// What the bundles that Node runs share (the operator's, scripts/bundle.ts, and
// the kubectl plugin's, scripts/bundle-cli.ts): esbuild's options and the
// fixes made to what it writes.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { BuildOptions } from 'esbuild';

// Bundled CommonJS packages call require() for Node's own modules; an ESM
// bundle has no require, so it gets one.
const REQUIRE_SHIM =
  "import { createRequire as __tealRequire } from 'node:module'; const require = __tealRequire(import.meta.url);";

export const NODE_BUNDLE = {
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'esm',
  // Whitespace and syntax only: identifiers keep their names, so a logged
  // stack trace names the functions without a source map (which Node would
  // hold parsed in the heap: docs/memory.md). Names cost about 1.6 MiB of source.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'external',
  banner: { js: REQUIRE_SHIM },
  metafile: true,
  logLevel: 'warning',
} as const satisfies BuildOptions;

/**
 * esbuild's ascii charset leaves regular expression literals as they are, and
 * one character past U+007F (cel-js's /µs/) makes V8 hold the whole bundle's
 * source as a two-byte string: 7.6 MiB instead of 3.8. An escape means the
 * same in a regular expression; only the source map's columns after it, on
 * that one line, shift.
 */
export function escapeNonAscii(file: string): void {
  const code = readFileSync(file, 'utf8');
  const escaped = code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (escaped !== code) writeFileSync(file, escaped);
}

/** The comments esbuild extracted into one output's LEGAL file, which goes once they are read. */
export function legalComments(file: string): string[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8').trim();
  rmSync(file);
  return text ? [text] : [];
}
