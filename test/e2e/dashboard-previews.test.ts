// The Previews tab of a parent App's page in a real browser (issue #28 item
// 10): a parent App with spec.previews, its status.previews written here
// through the status subresource as the previews controller writes it, and
// child Apps labelled as the planner makes them (src/app/preview-labels.ts),
// read by a standby operator (another identity holds its Lease) that serves
// the page from its caches and reconciles nothing: no git host is involved and
// what is written stays as written. The rows are those kubectl teal previews
// draws (app/previews-view.ts; test/e2e/cli-previews.test.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from '../../src/app/preview-labels.ts';
import type { PreviewStatus } from '../../src/app/previews-schema.ts';
import { API_VERSION, type AppStatus, GROUP, KIND, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp, previewsApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount } from '../support/users.ts';

/** Where the screenshots go: docs/img to refresh the docs' (TEAL_SCREENSHOT_DIR=docs/img), else a temporary folder. */
const SHOTS = process.env.TEAL_SCREENSHOT_DIR;
const SHA = (c: string) => c.repeat(40);
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * A pull request title of 200 characters, as a git host lets anyone write it: markup that would
 * run if it were HTML, a mention, a right-to-left override, and a long run without a space.
 */
const HOSTILE_START = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script> @everyone \u202Egnp.exe `;
const HOSTILE_TITLE = HOSTILE_START + 'W'.repeat(200 - HOSTILE_START.length);

const PAGE_12 = 'https://git.example.com/shop/web/pulls/12';
const URL_12 = 'https://pr-12.preview.example.com';

const ready12: PreviewStatus = {
  number: 12,
  title: 'Cache the product list for 30 s',
  webUrl: PAGE_12,
  name: 'web-pr-12',
  head: SHA('a'),
  state: 'Ready',
  url: URL_12,
};

/** #12 ready, #7 building with a hostile title and page, #3 waiting for approval, #15 failed with its child gone. */
const RECORDS: PreviewStatus[] = [
  ready12,
  {
    number: 7,
    title: HOSTILE_TITLE,
    webUrl: 'javascript:document.title="pwned"',
    name: 'web-pr-7',
    head: SHA('b'),
    state: 'Building',
    url: 'https://pr-7.preview.example.com',
  },
  {
    number: 3,
    title: 'From a fork',
    webUrl: 'https://git.example.com/shop/web/pulls/3',
    head: SHA('d'),
    state: 'AwaitingApproval',
    message: 'a fork: waits for the label preview-approved',
  },
  { number: 15, title: 'Try a new font', name: 'web-pr-15', head: SHA('e'), state: 'Failed', message: 'build failed' },
];

let ns: { name: string; remove: () => Promise<void> };
let root: string;
let operator: Operator;
let browser: Browser;
let base: string;
let viewer = '';
const pages: TestPage[] = [];

/** Writes an App's status through the status subresource, as the operator does (a merge patch). */
async function writeStatus(name: string, status: AppStatus): Promise<void> {
  await clients().custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace: ns.name, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** A child App as the planner makes it: labelled with its parent and pull request, owned by the parent. */
async function childApp(parentUid: string, number: number, phase: 'Healthy' | 'Progressing'): Promise<void> {
  const name = `web-pr-${number}`;
  const body = e2eApp(name);
  body.metadata = {
    name,
    labels: { [LABEL_PREVIEW_OF]: 'web', [LABEL_PULL_REQUEST]: String(number) },
    ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: 'web', uid: parentUid, controller: true }],
  };
  await createApp(ns.name, body);
  await writeStatus(name, { phase });
}

/** A page logged in as the viewer through the API, as the login page would, then at path. */
async function open(path: string, colorScheme: 'light' | 'dark' = 'light'): Promise<TestPage> {
  const p = await openPage(browser, { baseURL: base, colorScheme });
  pages.push(p);
  expect((await p.page.request.post('/api/v1/session', { data: { token: viewer } })).status()).toBe(200);
  await p.page.goto(path);
  return p;
}

/** The web App's page on its Previews tab, reached by the tab's link. */
async function previewsTab(colorScheme: 'light' | 'dark' = 'light'): Promise<TestPage> {
  const p = await open(`/apps/${ns.name}/web`, colorScheme);
  await p.page.getByRole('link', { name: /^Previews/ }).click();
  await p.page.waitForURL(`**/apps/${ns.name}/web?tab=previews`);
  await p.page.getByRole('heading', { name: 'Previews' }).waitFor();
  return p;
}

const cells = (p: TestPage, number: number | string) =>
  p.page.getByTestId(`preview-${number}`).locator('td').allInnerTexts();

const shot = (p: TestPage, name: string) => p.screenshot(join(SHOTS ?? join(root, 'shots'), `${name}.png`));

beforeAll(async () => {
  ns = await createNamespace('dash-previews');
  root = await mkdtemp(join(tmpdir(), 'teal-dashboard-previews-'));
  const ui = await bundleUi(join(root, 'ui'));
  await clients()
    .kc.makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600 },
      },
    });
  const parent = await createApp(ns.name, previewsApp('web'));
  await writeStatus('web', {
    phase: 'Healthy',
    previews: { listedAt: minutesAgo(2), pullRequests: RECORDS },
    conditions: [
      {
        type: 'PreviewsListed',
        status: 'False',
        reason: 'RateLimited',
        message: 'github answered 403: rate limited until 08:12:00Z',
        lastTransitionTime: minutesAgo(1),
      },
    ],
  });
  await Promise.all([
    childApp(parent.metadata.uid, 12, 'Healthy'),
    childApp(parent.metadata.uid, 7, 'Progressing'),
    // A child the parent's status does not record (made after its last write, say).
    childApp(parent.metadata.uid, 20, 'Progressing'),
    createApp(ns.name, e2eApp('plain')),
  ]);
  viewer = await serviceAccount(ns.name, 'viewer', ['get', 'list']);
  operator = await startOperator({
    namespace: ns.name,
    extraArgs: ['--leader-election-namespace', ns.name, '--dashboard-dir', ui.outdir],
  });
  base = `http://127.0.0.1:${operator.healthPort}`;
  // Every App was written before the operator started: once its cache lists them all, it holds what the page shows.
  await waitFor("the five Apps in the operator's cache, as the API lists them", async () => {
    const res = await fetch(`${base}/api/v1/apps`, { headers: { authorization: `Bearer ${viewer}` } });
    if (!res.ok) return undefined;
    return ((await res.json()) as { items: unknown[] }).items.length === 5 ? true : undefined;
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await operator?.stop();
  await ns?.remove();
  if (root && !SHOTS) await rm(root, { recursive: true, force: true });
});

describe('the Previews tab', () => {
  it("lists the pull requests of the App's status.previews, each linked to its page, its preview and its child App", async () => {
    const p = await previewsTab();
    const rows = p.page.locator('[data-testid=previews] tbody tr');
    expect(await rows.count()).toBe(5);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-testid')))).toEqual([
      'preview-3',
      'preview-7',
      'preview-12',
      'preview-15',
      'preview-20',
    ]);
    expect(await cells(p, 12)).toEqual([
      '#12',
      'Cache the product list for 30 s',
      'aaaaaaa',
      'Ready',
      URL_12,
      'web-pr-12 Healthy',
      '',
    ]);
    const row12 = p.page.getByTestId('preview-12');
    expect(await row12.getByRole('link', { name: '#12' }).getAttribute('href')).toBe(PAGE_12);
    expect(await row12.getByRole('link', { name: URL_12 }).getAttribute('href')).toBe(URL_12);
    expect(await cells(p, 3)).toEqual([
      '#3',
      'From a fork',
      'ddddddd',
      'AwaitingApproval',
      '—',
      '—',
      'a fork: waits for the label preview-approved',
    ]);
    // Building: its URL does not answer yet, so it is text; its child App is a link.
    const row7 = p.page.getByTestId('preview-7');
    expect(await row7.getByRole('link').allInnerTexts()).toEqual(['web-pr-7']);
    expect((await cells(p, 7))[3]).toBe('Building');
    expect(await cells(p, 15)).toEqual([
      '#15',
      'Try a new font',
      'eeeeeee',
      'Failed',
      '—',
      'web-pr-15 (not found)',
      'child App web-pr-15 not found; build failed',
    ]);
    expect(await cells(p, 20)).toEqual([
      '#20',
      '',
      '—',
      'not recorded',
      '—',
      'web-pr-20 Progressing',
      'a child App that status.previews does not record',
    ]);
    // When the pull requests were last listed, and why the listing may be stale.
    expect(await p.page.getByTestId('previews-listed').innerText()).toMatch(
      /^5 previews, pull requests last listed \d{4}-\d\d-\d\dT/,
    );
    expect(await p.page.getByTestId('previews-not-listed').innerText()).toBe(
      'PreviewsListed: False (RateLimited): github answered 403: rate limited until 08:12:00Z',
    );

    // The child App's link opens its own page, which links back to the parent's Previews tab.
    await row12.getByRole('link', { name: 'web-pr-12' }).click();
    await p.page.waitForURL(`**/apps/${ns.name}/web-pr-12`);
    await p.page.getByRole('heading', { name: 'Release' }).waitFor();
    expect(await p.page.getByTestId('preview-of').innerText()).toBe('preview of web #12');
    expect(await p.page.getByRole('link', { name: /^Previews/ }).count()).toBe(0);
    await p.page.getByTestId('preview-of').getByRole('link', { name: 'web' }).click();
    await p.page.waitForURL(`**/apps/${ns.name}/web?tab=previews`);
    await p.page.getByTestId('preview-12').waitFor();
    expect(p.cspViolations).toEqual([]);
    expect(p.consoleErrors).toEqual([]);
  });

  it('shows no tab on an App without spec.previews', async () => {
    const p = await open(`/apps/${ns.name}/plain?tab=previews`);
    await p.page.getByRole('heading', { name: 'Release' }).waitFor();
    expect(await p.page.getByRole('link', { name: /^Previews/ }).count()).toBe(0);
    expect(await p.page.getByTestId('preview-of').count()).toBe(0);
  });

  it('shows a hostile 200-character title as text, isolated, within the page width; an unsafe page is no link', async () => {
    const p = await previewsTab();
    const row7 = p.page.getByTestId('preview-7');
    expect(await row7.locator('bdi').innerText()).toBe(HOSTILE_TITLE);
    expect(await p.page.locator('main img, main script').count()).toBe(0);
    expect(await p.page.title()).toBe('Teal');
    // The javascript: page is shown as the number alone; the right-to-left override stays in its <bdi>.
    expect(await row7.locator('td').first().innerText()).toBe('#7');
    expect(await row7.locator('a[href^="javascript"]').count()).toBe(0);
    expect((await cells(p, 7))[2]).toBe('bbbbbbb');
    // The long title wraps within its cell: the page does not scroll sideways.
    const [scrollWidth, clientWidth] = (await p.page.evaluate(
      '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
    )) as [number, number];
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    expect(p.cspViolations).toEqual([]);
    expect(p.consoleErrors).toEqual([]);
  });

  it('updates live when status.previews changes, and when a child App changes, without a reload', async () => {
    const p = await previewsTab();
    // Gone after a reload: the page must change in place.
    await p.page.evaluate('window.notReloaded = true');
    await writeStatus('web', {
      previews: {
        listedAt: minutesAgo(0),
        pullRequests: [
          { ...ready12, state: 'Asleep' },
          { number: 21, title: 'Add a dark theme', name: 'web-pr-21', head: SHA('f'), state: 'Deploying' },
        ],
      },
    });
    await p.page.getByTestId('preview-21').waitFor();
    expect(await cells(p, 21)).toEqual([
      '#21',
      'Add a dark theme',
      'fffffff',
      'Deploying',
      '—',
      'web-pr-21 (not found)',
      'child App web-pr-21 not found',
    ]);
    // Asleep: its URL no longer a link.
    await waitFor('#12 asleep on the page', async () => ((await cells(p, 12))[3] === 'Asleep' ? true : undefined));
    expect(await p.page.getByTestId('preview-12').getByRole('link', { name: URL_12 }).count()).toBe(0);
    expect(await p.page.getByTestId('preview-3').count()).toBe(0);

    // A child's phase is its live row's.
    await writeStatus('web-pr-12', { phase: 'Degraded' });
    await waitFor('web-pr-12 Degraded on the parent page', async () =>
      (await cells(p, 12))[5] === 'web-pr-12 Degraded' ? true : undefined,
    );
    expect(await p.page.evaluate('window.notReloaded')).toBe(true);
    expect(p.consoleErrors).toEqual([]);

    await writeStatus('web', { previews: { listedAt: minutesAgo(2), pullRequests: RECORDS } });
    await writeStatus('web-pr-12', { phase: 'Healthy' });
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`passes axe (no serious or critical violation) on the Previews tab, ${scheme}; screenshots`, async () => {
      await writeStatus('web', { previews: { listedAt: minutesAgo(2), pullRequests: RECORDS } });
      const p = await previewsTab(scheme);
      await p.page.getByTestId('preview-15').waitFor();
      await waitFor('web-pr-12 Healthy', async () =>
        (await cells(p, 12))[5] === 'web-pr-12 Healthy' ? true : undefined,
      );
      expect(await seriousAxeViolations(p.page)).toEqual([]);
      await shot(p, `dashboard-previews-${scheme}`);
    });
  }
});
