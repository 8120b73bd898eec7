// Promote from the dashboard's App page (issue #25 items 6 and 7, test 5), in
// a real browser against a reconciling operator on the real control plane:
// the promote moves the active Service's selector; a second tab whose dialog
// was opened on an older revision gets the 409 naming both revisions and
// changes nothing, though its page, live, shows the new one; history and the
// App's Events record the user and "via dashboard".
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { intentAnnotation } from '../../src/app/intents.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp, patchSpec, phase, selectorHash, waitForApp } from '../support/apps.ts';
import { launchBrowser, openPage, type TestPage } from '../support/browser.ts';
import { waitFor } from '../support/kube.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { serviceAccount, userOf } from '../support/users.ts';

/** How long a change may take to reach an open page (generous: CI runs on a busy machine). */
const LIVE_MS = 60_000;

let world: OperatorNamespace;
let ns: string;
let root: string;
let browser: Browser;
let token: string;
const pages: TestPage[] = [];

/** A tab logged in as the releaser, on the App page of web. */
async function tab(): Promise<TestPage> {
  const p = await openPage(browser, { baseURL: `http://127.0.0.1:${world.operator.healthPort}` });
  pages.push(p);
  expect((await p.page.request.post('/api/v1/session', { data: { token } })).status()).toBe(200);
  await p.page.goto(`/apps/${ns}/web`);
  await p.page.getByRole('heading', { name: 'Release' }).waitFor();
  return p;
}

const previewCard = (p: TestPage) => p.page.getByTestId('preview').locator('h2').textContent();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'teal-dashboard-promote-'));
  const ui = await bundleUi(join(root, 'ui'));
  world = await operatorNamespace('dash-promote', { extraArgs: ['--dashboard-dir', ui.outdir] });
  ns = world.ns;
  token = await serviceAccount(ns, 'releaser', ['get', 'list', 'promote']);
  await createApp(ns, e2eApp('web'));
  await waitForApp(ns, 'web', 'first release Healthy', phase('Healthy'));
  await patchSpec(ns, 'web', { image: 'registry.example.com/team/web:2' });
  await waitForApp(ns, 'web', 'revision 2 ready in preview', (a) => a.status?.preview?.availableAt !== undefined);
  browser = await launchBrowser();
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await world?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('promote from the App page', () => {
  it('a promote dialog opened on an older revision gets the 409 naming both while the live page moves on; another tab promotes the one it shows, moving the selector; history says via dashboard and who', async () => {
    const stale = await tab();
    expect(await previewCard(stale)).toBe('Preview: revision 2');
    await stale.page.getByRole('button', { name: 'promote', exact: true }).click();
    const staleDialog = stale.page.getByRole('dialog', { name: 'promote web' });
    await staleDialog.waitFor();
    expect(await stale.page.getByTestId('dialog-kubectl').textContent()).toBe(
      `kubectl teal promote web -n ${ns} --revision 2`,
    );

    // Meanwhile a new revision takes the preview.
    await patchSpec(ns, 'web', { image: 'registry.example.com/team/web:3' });
    const three = await waitForApp(
      ns,
      'web',
      'revision 3 ready in preview',
      (a) => a.status?.preview?.revision === 3 && a.status.preview.availableAt !== undefined,
    );
    const activeBefore = await selectorHash(ns, 'web');
    // The page is live: under the open dialog it now shows revision 3, without a reload.
    await expect.poll(() => previewCard(stale), { timeout: LIVE_MS }).toBe('Preview: revision 3');
    expect(await stale.page.getByTestId('dialog-kubectl').textContent()).toBe(
      `kubectl teal promote web -n ${ns} --revision 2`,
    );

    // The stale tab's promote names revision 2: refused, both numbers shown, nothing recorded.
    await stale.page.getByRole('button', { name: 'Confirm promote' }).click();
    await expect
      .poll(() => stale.page.getByTestId('dialog-error').textContent())
      .toBe(`Refused (409: App ${ns}/web: revision 2 is no longer in preview (revision 3 is); nothing changed)`);
    expect((await getApp(ns, 'web')).metadata).not.toHaveProperty(['annotations', intentAnnotation('promote')]);
    expect(await selectorHash(ns, 'web')).toBe(activeBefore);

    // A tab showing revision 3 promotes it.
    const fresh = await tab();
    expect(await previewCard(fresh)).toBe('Preview: revision 3');
    await fresh.page.getByRole('button', { name: 'promote', exact: true }).click();
    await fresh.page.getByRole('dialog', { name: 'promote web' }).waitFor();
    expect(await fresh.page.getByTestId('dialog-curl').textContent()).toContain(`-d '{"revision":3}'`);
    await fresh.page.getByRole('button', { name: 'Confirm promote' }).click();
    await fresh.page.getByRole('status').filter({ hasText: 'promote recorded' }).waitFor();

    const hash = three.status?.preview?.podTemplateHash;
    await waitFor('the active Service selects revision 3', async () =>
      (await selectorHash(ns, 'web')) === hash ? true : undefined,
    );
    const promoted = await waitForApp(ns, 'web', 'revision 3 Healthy', phase('Healthy'));
    const user = userOf(ns, 'releaser');
    expect(promoted.status?.history?.at(-1)).toMatchObject({ revision: 3, promotedVia: 'dashboard', promotedBy: user });

    // The page shows it, live: history with the user and via dashboard; then the operator's Event about it.
    const history = fresh.page.locator('section', { has: fresh.page.getByRole('heading', { name: 'History' }) });
    const newest = () => history.locator('tbody tr').first().locator('td').allTextContents();
    await expect
      .poll(newest, { timeout: LIVE_MS })
      .toEqual(['3', '', '3', expect.any(String), user, 'dashboard', 'active']);
    await waitFor('the Promoted Event on the page', async () => {
      await fresh.page.reload();
      await fresh.page.getByRole('heading', { name: 'Events' }).waitFor();
      const events = fresh.page.locator('section', { has: fresh.page.getByRole('heading', { name: 'Events' }) });
      const messages = await events.locator('tbody td.message').allTextContents();
      return messages.some((m) => m.includes(`${user} (dashboard)`)) ? true : undefined;
    });
    expect(fresh.cspViolations).toEqual([]);
    expect(stale.cspViolations).toEqual([]);
  });
});
