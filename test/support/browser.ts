// A real browser for the dashboard's tests (issue #25): Debian's
// chromium-headless-shell (installed by test/cluster/install-browser.sh, a
// part of make test) driven by playwright-core from vitest, with no browser
// download and no second test runner. Each page gets a context of its own
// (its own cookies), and records what must stay empty: console errors, page
// errors and Content-Security-Policy violations, the latter from the page's
// own securitypolicyviolation events.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, chromium, type Page } from 'playwright-core';

const BINARY = 'chromium-headless-shell';

/** The browser's path: $TEAL_CHROMIUM, or chromium-headless-shell on PATH. */
export function chromiumPath(): string {
  if (process.env.TEAL_CHROMIUM) return process.env.TEAL_CHROMIUM;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const path = join(dir || '.', BINARY);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  throw new Error(`${BINARY} is not on PATH: make test installs it (test/cluster/install-browser.sh)`);
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true });
}

/** A CSP violation as the page's securitypolicyviolation event told it. */
export interface CspViolation {
  directive: string;
  blockedURI: string;
  sample: string;
}

export interface TestPage {
  page: Page;
  /** console.error messages and uncaught page errors, in order. */
  consoleErrors: string[];
  cspViolations: CspViolation[];
  /** A PNG of the whole page at path (its folders made). */
  screenshot(path: string): Promise<void>;
  close(): Promise<void>;
}

// Runs before the page's own scripts, in its main world; the binding reaches node whatever the page's CSP.
const REPORT_CSP = `document.addEventListener('securitypolicyviolation', (e) => {
  window.tealCspViolation({ directive: e.effectiveDirective, blockedURI: e.blockedURI, sample: e.sample });
});`;

/** A page in a fresh context (no cookies), in the colour scheme asked, its requests relative to baseURL. */
export async function openPage(
  browser: Browser,
  options: {
    baseURL: string;
    colorScheme?: 'light' | 'dark';
    /**
     * Accept HTTPS certificates of a test's own CA (an OIDC provider's): the operator and the
     * API server are given that CA and check it; the browser has no way to be given it.
     */
    ignoreHTTPSErrors?: boolean;
  },
): Promise<TestPage> {
  const context = await browser.newContext({
    baseURL: options.baseURL,
    colorScheme: options.colorScheme ?? 'light',
    viewport: { width: 1200, height: 720 },
    ignoreHTTPSErrors: options.ignoreHTTPSErrors ?? false,
  });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  const cspViolations: CspViolation[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (err) => consoleErrors.push(`uncaught: ${err.message}`));
  await page.exposeFunction('tealCspViolation', (v: CspViolation) => cspViolations.push(v));
  await page.addInitScript(REPORT_CSP);
  return {
    page,
    consoleErrors,
    cspViolations,
    screenshot: async (path) => {
      mkdirSync(dirname(path), { recursive: true });
      await page.screenshot({ path, fullPage: true });
    },
    close: () => context.close(),
  };
}

/** axe-core's violations of impact serious or critical on the page as it is, as "rule: help (n nodes)". */
export async function seriousAxeViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.length} nodes: ${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}
