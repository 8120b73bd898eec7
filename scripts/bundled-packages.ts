// The npm packages an esbuild bundle holds, read from its metafile, with the
// license each ships: the operator's bundle (scripts/bundle.ts) and the
// dashboard's (scripts/bundle-ui.ts) each ship them beside their JavaScript.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Metafile } from 'esbuild';

export const MODULES = 'node_modules/';

/** One package that went into the bundle, and the license text it ships. */
export interface BundledPackage {
  name: string;
  version: string;
  license: string;
  text: string;
}

/** The packages whose files the bundle holds, from the metafile's inputs. */
export function bundledPackages(meta: Metafile, root: string): BundledPackage[] {
  const dirs = new Set<string>();
  for (const input of Object.keys(meta.inputs)) {
    const dir = packageDir(input);
    if (dir) dirs.add(dir);
  }
  return [...dirs].map((dir) => readPackage(join(root, dir))).sort((a, b) => a.name.localeCompare(b.name));
}

/** node_modules/a/node_modules/@b/c/lib/x.js -> node_modules/a/node_modules/@b/c */
export function packageDir(input: string): string | undefined {
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

/** A package's part of a LEGAL.txt file. */
export const licenseSection = (p: BundledPackage): string => `== ${p.name}@${p.version} (${p.license})\n\n${p.text}\n`;
