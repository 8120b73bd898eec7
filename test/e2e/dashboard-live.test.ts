// The dashboard live in a real browser (issue #25 item 8, tests 4, 6 and 8):
// Debian's chromium-headless-shell (test/support/browser.ts) against a real,
// reconciling operator on the real control plane, serving plain HTTP/1.1 on
// 127.0.0.1 as `kubectl teal dashboard` does. A push to a loopback git
// repository builds (KWOK runs the build Job) and its preview appears in the
// open page; eight tabs of one browser stay live on one stream; a kill -9 of
// the operator shows "Reconnecting…", then "Live" with no stale row.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, intent, phase, waitForApp } from '../support/apps.ts';
import { launchBrowser } from '../support/browser.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, type OperatorOptions, startOperator } from '../support/operator.ts';
import { serviceAccount } from '../support/users.ts';

let ns: string;
let removeNs: () => Promise<void>;
let root: string;
let server: GitHttpsServer;
let repo: TestRepo;
let operatorOptions: OperatorOptions;
let operator: Operator;
let browser: Browser;
let base: string;
let token: string;
const contexts: BrowserContext[] = [];

function gitApp(name: string): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: { url: server.url('weather'), ref: 'main', secretRef: { name: 'weather-git' }, pollInterval: '1s' },
      },
      build: { image: 'registry.example.com/team/weather' },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      strategy: { blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 1 } },
    },
  };
}

/** A browser context logged in through the API, as the login page would. */
async function loggedIn(): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: base, viewport: { width: 1200, height: 720 } });
  contexts.push(context);
  const res = await context.request.post('/api/v1/session', { data: { token } });
  expect(res.status()).toBe(200);
  return context;
}

async function appsPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto('/apps');
  await page.getByRole('table').waitFor();
  return page;
}

const liveState = (page: Page) => page.getByTestId('live-state').getAttribute('data-state');
const waitState = (page: Page, state: string) =>
  waitFor(`the page ${state}`, async () => ((await liveState(page)) === state ? true : undefined));

/** The cells of an App's row, or undefined when the page shows no such row. */
async function rowOf(page: Page, name: string): Promise<string[] | undefined> {
  for (const tr of await page.locator('tbody tr').all()) {
    const cells = await tr.locator('td').allTextContents();
    if (cells[1] === name) return cells;
  }
  return undefined;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

const openStreams = () => metric('teal_dashboard_streams');

async function closeContexts(): Promise<void> {
  await Promise.all(contexts.splice(0).map((c) => c.close()));
  await waitFor('no stream open', async () => ((await openStreams()) === 0 ? true : undefined));
}

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('live'));
  root = await mkdtemp(join(tmpdir(), 'teal-live-'));
  repo = await createRepo(join(root, 'weather'));
  await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
  server = await startGitHttpsServer({ root, username: 'teal', password: 's3cret-token' });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  await clients().core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'weather-git' },
      data: { username: b64('teal'), password: b64('s3cret-token'), 'ca.crt': b64(server.caPem) },
    },
  });
  // One key for the operator and the one started after its kill -9: the session holds across.
  const keyFile = join(root, 'session-key');
  await writeFile(keyFile, randomBytes(32).toString('base64'));
  const ui = await bundleUi(join(root, 'ui'));
  token = await serviceAccount(ns, 'viewer', ['get', 'list']);
  operatorOptions = {
    namespace: ns,
    extraArgs: ['--leader-election-namespace', ns, '--dashboard-dir', ui.outdir, '--session-key-file', keyFile],
  };
  operator = await startOperator(operatorOptions);
  base = `http://127.0.0.1:${operator.healthPort}`;
  browser = await launchBrowser();
});

// Each test's pages closed, and their stream with them, whatever the test's outcome: the next counts streams.
afterEach(closeContexts);

afterAll(async () => {
  await Promise.all(contexts.map((c) => c.close()));
  await browser?.close();
  await operator?.stop();
  await server?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the dashboard, live', () => {
  it('a push to the git repository builds, and the preview appears in the open page without a reload', async () => {
    await clients().custom.createNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      body: gitApp('weather'),
    });
    await waitForApp(ns, 'weather', 'first release', phase('Healthy'));
    const page = await appsPage(await loggedIn());
    await waitState(page, 'live');
    await waitFor('weather active, no preview', async () => {
      const row = await rowOf(page, 'weather');
      return row?.[3] === '1' && row[4] === '—' ? true : undefined;
    });
    // A mark of this very document: a reload would lose it.
    await page.evaluate("document.body.setAttribute('data-test-mark', 'same-document')");
    let navigations = 0;
    page.on('framenavigated', (frame) => void (frame === page.mainFrame() && navigations++));

    await repo.commit('new forecast', { 'app.py': 'print("sunny")\n' });
    await waitFor('the preview of the pushed commit in the page', async () => {
      const row = await rowOf(page, 'weather');
      return row?.[2] === 'Paused' && row[3] === '1' && row[4] === '2' ? true : undefined;
    });
    expect(await page.evaluate("document.body.getAttribute('data-test-mark')")).toBe('same-document');
    expect(navigations).toBe(0);
    expect(await liveState(page)).toBe('live');
  });

  it("the App page reads its App again when the App's row changes: a promote shows without a reload", async () => {
    const page = await (await loggedIn()).newPage();
    await page.goto(`/apps/${ns}/weather`);
    const heading = (card: string) => page.getByTestId(card).getByRole('heading').textContent();
    await waitFor('the preview on the App page', async () =>
      (await heading('preview')) === 'Preview: revision 2' ? true : undefined,
    );
    expect(await heading('active')).toBe('Active: revision 1');
    await page.evaluate("document.body.setAttribute('data-test-mark', 'same-document')");

    await intent(ns, 'weather', 'promote');
    await waitFor('revision 2 active on the open App page', async () =>
      (await heading('active')) === 'Active: revision 2' ? true : undefined,
    );
    expect(await page.evaluate("document.body.getAttribute('data-test-mark')")).toBe('same-document');
  });

  it('the App page shows a new Event about its App without a reload, though the App itself did not change', async () => {
    const page = await (await loggedIn()).newPage();
    await page.goto(`/apps/${ns}/weather`);
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    await page.evaluate("document.body.setAttribute('data-test-mark', 'same-document')");
    const app = await clients().custom.getNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'weather',
    });
    const { uid, resourceVersion } = (app as { metadata: { uid: string; resourceVersion: string } }).metadata;
    const message = `a note from the test at ${randomBytes(4).toString('hex')}`;
    // An Event as a person or another controller records one about the App: the App is not written.
    await clients().core.createNamespacedEvent({
      namespace: ns,
      body: {
        metadata: { generateName: 'weather.' },
        involvedObject: { apiVersion: 'teal.dev/v1alpha1', kind: 'App', name: 'weather', namespace: ns, uid },
        reason: 'TestNote',
        message,
        type: 'Normal',
        count: 1,
        firstTimestamp: new Date(),
        lastTimestamp: new Date(),
        source: { component: 'test' },
      },
    });
    await waitFor('the Event on the open App page', async () =>
      (await page.getByText(message).count()) > 0 ? true : undefined,
    );
    expect(await page.evaluate("document.body.getAttribute('data-test-mark')")).toBe('same-document');
    const after = await clients().custom.getNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'weather',
    });
    expect((after as { metadata: { resourceVersion: string } }).metadata.resourceVersion).toBe(resourceVersion);
  });

  it('eight tabs of one browser, over plain HTTP/1.1, all stay live while the operator holds one stream; closing the tab that holds it hands it on', async () => {
    const context = await loggedIn();
    const tabs: Page[] = [];
    for (let i = 0; i < 8; i++) tabs.push(await appsPage(context));
    for (const tab of tabs) await waitState(tab, 'live');
    expect(await openStreams()).toBe(1);

    await createApp(ns, e2eApp('eighth'));
    for (const tab of tabs)
      await waitFor('the new App in every tab', async () => (await rowOf(tab, 'eighth')) ?? undefined);
    expect(await openStreams()).toBe(1);

    // The holder is the first tab (it took the lock first); closed, another takes over and resumes.
    await tabs[0]?.close();
    const rest = tabs.slice(1);
    await clients().custom.deleteNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'eighth',
    });
    for (const tab of rest) {
      await waitFor('the App gone from every tab left', async () =>
        (await rowOf(tab, 'eighth')) === undefined ? true : undefined,
      );
      await waitState(tab, 'live');
    }
    await waitFor('one stream again', async () => ((await openStreams()) === 1 ? true : undefined));
  });

  it('kill -9 of the operator serving the stream: the page shows reconnecting, then live, with no stale row', async () => {
    await createApp(ns, e2eApp('doomed'));
    const page = await appsPage(await loggedIn());
    await waitState(page, 'live');
    await waitFor('doomed shown', async () => (await rowOf(page, 'doomed')) ?? undefined);

    const port = operator.healthPort;
    await operator.kill();
    await waitState(page, 'reconnecting');
    expect(await page.getByTestId('live-state').textContent()).toBe('Reconnecting…');
    // While no operator serves, the cluster changes: the page cannot know, and says so.
    await clients().custom.deleteNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'doomed',
    });
    await createApp(ns, e2eApp('newcomer'));
    expect(await liveState(page)).toBe('reconnecting');

    operator = await startOperator({ ...operatorOptions, healthPort: port });
    await waitState(page, 'live');
    // Live again means the snapshot of the new operator replaced every row.
    expect(await rowOf(page, 'newcomer')).toBeDefined();
    await waitFor('doomed gone', async () => ((await rowOf(page, 'doomed')) === undefined ? true : undefined));
    expect(await rowOf(page, 'weather')).toBeDefined();
  });
});
