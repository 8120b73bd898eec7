// The dashboard's files as scripts/bundle-ui.ts makes them: the first page's
// JavaScript within its budget (issue #25: 60 KB gzipped), and an index.html
// the strict CSP allows, with nothing from another origin.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleUi, UI_FILES, UI_JS_BUDGET_GZIP } from '../../scripts/bundle-ui.ts';

const outdir = mkdtempSync(join(tmpdir(), 'teal-ui-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the dashboard bundle', () => {
  it('is index.html, one JS file and one CSS file, the JS within 60 KB gzipped', async () => {
    const { jsGzipBytes } = await bundleUi(outdir);
    expect(UI_JS_BUDGET_GZIP).toBe(60 * 1024);
    expect(jsGzipBytes).toBeGreaterThan(1000);
    expect(jsGzipBytes).toBeLessThanOrEqual(UI_JS_BUDGET_GZIP);
    expect(readdirSync(outdir).sort()).toEqual([...UI_FILES, 'app.js.LEGAL.txt'].sort());
  });

  it('ships the license of each package app.js holds beside it', () => {
    const legal = readFileSync(join(outdir, 'app.js.LEGAL.txt'), 'utf8');
    for (const name of ['preact', '@preact/signals', '@preact/signals-core', 'preact-iso']) {
      expect(legal).toMatch(new RegExp(`^== ${name}@[\\d.]+ \\(MIT\\)$`, 'm'));
    }
  });

  it('loads only its own files: no inline script or style, no other origin, no web font', () => {
    const html = readFileSync(join(outdir, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => [m[1]?.trim(), m[2]])).toEqual([['type="module" src="/ui/app.js"', '']]);
    expect(html).toContain('<link rel="stylesheet" href="/ui/app.css" />');
    expect(html).not.toMatch(/<style|\sstyle=|\son\w+=|https?:\/\//);
    const css = readFileSync(join(outdir, 'app.css'), 'utf8');
    expect(css).not.toMatch(/@font-face|@import|url\(/);
  });

  it('never sets HTML from its own code: Preact renders every string as text', () => {
    const dir = join(import.meta.dirname, '../../src/ui');
    for (const file of readdirSync(dir)) {
      expect(readFileSync(join(dir, file), 'utf8'), file).not.toMatch(
        /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|\beval\(|new Function/,
      );
    }
  });
});
