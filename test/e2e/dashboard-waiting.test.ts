// "Waiting for me" (issue #25 item 4): a preview this user may promote and
// whose checks passed. On the real control plane: the operator (a standby,
// serving from its informer cache) says in which namespaces RBAC lets the user
// promote (GET /api/v1/permissions, reviewed for that user), each row says
// whether its preview awaits a promote (app/dashboard-row.ts), and the
// dashboard's filter shows the Apps where both hold, with its URL.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { awaitsPromotion, type DashboardRow, waitingFor } from '../../src/app/dashboard-row.ts';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { analysisRun, revisionStatus } from '../fixtures/app-status.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { clients, createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { dataOf, openSse } from '../support/sse.ts';
import { allowed, bind, serviceAccount } from '../support/users.ts';

const T = '2026-11-26T10:00:00.000Z';
const CHECKS = {
  prePromotionAnalysis: { metrics: [{ name: 'healthz', provider: { web: { url: 'http://127.0.0.1:1/healthz' } } }] },
};

let mine: { name: string; remove: () => Promise<void> };
let theirs: { name: string; remove: () => Promise<void> };
let root: string;
let operator: Operator;
let token: string;
let browser: Browser;
const pages: TestPage[] = [];

/** An App with the status a running operator would have written. */
async function appWithStatus(namespace: string, name: string, checks: boolean, status: Record<string, unknown>) {
  await createApp(namespace, e2eApp(name, checks ? { blueGreen: CHECKS } : {}));
  await clients().custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Revision 3 in preview and available beside active 2, its checks' run (if any) in this phase. */
const inPreview = (run?: 'Running' | 'Successful' | 'Failed') => ({
  phase: 'Paused',
  message: 'revision 3 is in preview',
  active: revisionStatus(2),
  preview: revisionStatus(3, { availableAt: T }),
  ...(run ? { prePromotionAnalysis: analysisRun(3, T, { phase: run }) } : {}),
});

const base = () => `http://127.0.0.1:${operator.healthPort}`;

beforeAll(async () => {
  [mine, theirs] = await Promise.all([createNamespace('wait-mine'), createNamespace('wait-theirs')]);
  root = await mkdtemp(join(tmpdir(), 'teal-dashboard-waiting-'));
  const ui = await bundleUi(join(root, 'ui'));
  await clients()
    .kc.makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: mine.name,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600 },
      },
    });
  await Promise.all([
    appWithStatus(mine.name, 'ready', true, inPreview('Successful')),
    appWithStatus(mine.name, 'no-checks', false, inPreview()),
    appWithStatus(mine.name, 'checking', true, inPreview('Running')),
    appWithStatus(mine.name, 'failed', true, inPreview('Failed')),
    appWithStatus(mine.name, 'steady', false, {
      phase: 'Healthy',
      message: 'revision 2 is active',
      active: revisionStatus(2),
    }),
    appWithStatus(theirs.name, 'ready-elsewhere', true, inPreview('Successful')),
  ]);
  // The developer may promote in its own namespace, and only read in the other.
  token = await serviceAccount(mine.name, 'dev', ['get', 'list', 'promote']);
  await clients().rbac.createNamespacedRole({
    namespace: theirs.name,
    body: {
      metadata: { name: 'reader' },
      rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['get', 'list'] }],
    },
  });
  await bind(mine.name, 'dev', 'Role', 'reader', theirs.name);
  await allowed(mine.name, 'dev', 'list', theirs.name);
  operator = await startOperator({
    namespace: `${mine.name},${theirs.name}`,
    extraArgs: ['--leader-election-namespace', mine.name, '--dashboard-dir', ui.outdir],
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await operator?.stop();
  await Promise.all([mine?.remove(), theirs?.remove()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('waiting for me', () => {
  it('GET /api/v1/permissions names the namespaces, of those the user may list, where RBAC lets it promote', async () => {
    const res = await fetch(`${base()}/api/v1/permissions`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ promote: [mine.name] });
    expect((await fetch(`${base()}/api/v1/permissions`)).status).toBe(401);
  });

  it('the rule over the live rows and the permissions: the previews whose checks passed (or that have none) where the user may promote', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const stream = await openSse(`${base()}/api/v1/stream`, auth);
    try {
      const snapshot = await stream.next('a snapshot', (e) => e.event === 'snapshot');
      const rows = dataOf<{ rows: DashboardRow[] }>(snapshot).rows;
      const key = (r: DashboardRow) => `${r.namespace}/${r.name}`;
      expect(rows.filter(awaitsPromotion).map(key).sort()).toEqual(
        [`${mine.name}/no-checks`, `${mine.name}/ready`, `${theirs.name}/ready-elsewhere`].sort(),
      );
      const { promote } = (await (await fetch(`${base()}/api/v1/permissions`, { headers: auth })).json()) as {
        promote: string[];
      };
      const waiting = rows.filter((r) =>
        waitingFor({ namespace: r.namespace, awaitsPromotion: awaitsPromotion(r) }, new Set(promote)),
      );
      expect(waiting.map(key).sort()).toEqual([`${mine.name}/no-checks`, `${mine.name}/ready`]);
    } finally {
      stream.close();
    }
  });

  it('the dashboard shows exactly those under "Waiting for me", with its URL; unticked, every App again', async () => {
    const p = await openPage(browser, { baseURL: base() });
    pages.push(p);
    expect((await p.page.request.post('/api/v1/session', { data: { token } })).status()).toBe(200);
    await p.page.goto('/apps?waiting=me');
    await p.page.getByRole('table').waitFor();
    const shown = () =>
      p.page
        .locator('tbody tr[aria-rowindex]')
        .evaluateAll((trs) => trs.map((tr) => `${tr.children[0]?.textContent}/${tr.children[1]?.textContent}`));
    await expect.poll(shown).toEqual([`${mine.name}/no-checks`, `${mine.name}/ready`]);
    const box = p.page.getByLabel('Waiting for me');
    expect(await box.isChecked()).toBe(true);
    expect(await seriousAxeViolations(p.page)).toEqual([]);
    await box.uncheck();
    await p.page.waitForURL('**/apps');
    await expect.poll(async () => (await shown()).length).toBe(6);
    await box.check();
    await p.page.waitForURL('**/apps?waiting=me');
    await expect.poll(shown).toEqual([`${mine.name}/no-checks`, `${mine.name}/ready`]);
    expect(p.cspViolations).toEqual([]);
    expect(p.consoleErrors).toEqual([]);
  });
});
