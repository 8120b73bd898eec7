// --dashboard-anonymous=read (issue #25 item 2): off by default, every page but
// the login page and every /api route answer 401 without a session; with it,
// pages and read routes answer a caller without credentials as the API
// server's anonymous user (system:anonymous, group system:unauthenticated),
// each read authorized by a real SubjectAccessReview, so RBAC decides what it
// sees; no action is ever anonymous. Two standby operators on the real control
// plane, one without the flag and one with it, and a real browser.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp } from '../support/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { dataOf, openSse, type SseStream } from '../support/sse.ts';

let open: { name: string; remove: () => Promise<void> };
let closed: { name: string; remove: () => Promise<void> };
let root: string;
let plain: Operator;
let anonymous: Operator;
let browser: Browser;
const pages: TestPage[] = [];
const streams: SseStream[] = [];

const ANONYMOUS = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

async function appWithStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  await createApp(namespace, e2eApp(name));
  await clients().custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Grants the unauthenticated group these verbs on Apps of the namespace, once RBAC answers so. */
async function grantAnonymous(namespace: string, verbs: string[]): Promise<void> {
  const { rbac, authz } = clients();
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: 'anonymous-apps' }, rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs }] },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'anonymous-apps' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'anonymous-apps' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:unauthenticated' }],
    },
  });
  for (const verb of verbs) {
    await waitFor(`system:anonymous may ${verb} Apps in ${namespace}`, async () => {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            ...{ user: ANONYMOUS.username, groups: ANONYMOUS.groups },
            resourceAttributes: { group: GROUP, resource: PLURAL, verb, namespace },
          },
        },
      });
      return review.status?.allowed ? true : undefined;
    });
  }
}

const base = (o: Operator) => `http://127.0.0.1:${o.healthPort}`;
const get = (o: Operator, path: string) => fetch(`${base(o)}${path}`);

beforeAll(async () => {
  [open, closed] = await Promise.all([createNamespace('anon-open'), createNamespace('anon-closed')]);
  root = await mkdtemp(join(tmpdir(), 'teal-dashboard-anon-'));
  const ui = await bundleUi(join(root, 'ui'));
  // Another replica holds the Lease: these operators serve and never reconcile.
  await clients()
    .kc.makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: open.name,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600 },
      },
    });
  await Promise.all([
    appWithStatus(open.name, 'web', { phase: 'Healthy', message: 'revision 2 is active' }),
    appWithStatus(closed.name, 'secret-plans', { phase: 'Healthy', message: 'not for anonymous eyes' }),
  ]);
  // RBAC would even let anonymous promote here: the dashboard still refuses any anonymous action.
  await grantAnonymous(open.name, ['get', 'list', 'promote']);
  const args = ['--leader-election-namespace', open.name, '--dashboard-dir', ui.outdir];
  [plain, anonymous] = await Promise.all([
    startOperator({ namespace: `${open.name},${closed.name}`, extraArgs: args }),
    startOperator({ namespace: `${open.name},${closed.name}`, extraArgs: [...args, '--dashboard-anonymous=read'] }),
  ]);
  browser = await launchBrowser();
});

afterAll(async () => {
  for (const s of streams) s.close();
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await Promise.all([plain?.stop(), anonymous?.stop()]);
  await Promise.all([open?.remove(), closed?.remove()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('--dashboard-anonymous', () => {
  it('is off by default: without a session, every page but the login page and every /api route answer 401', async () => {
    for (const path of ['/', '/apps', '/api/v1/apps', `/api/v1/namespaces/${open.name}/apps/web`, '/api/v1/session']) {
      const res = await get(plain, path);
      expect([path, res.status]).toEqual([path, 401]);
    }
    expect((await get(plain, '/login')).status).toBe(200);
  });

  it('=read: a caller without credentials reads as system:anonymous what RBAC grants system:unauthenticated, nothing else', async () => {
    const session = await get(anonymous, '/api/v1/session');
    expect(session.status).toBe(200);
    expect(await session.json()).toEqual({ user: ANONYMOUS, via: 'anonymous' });

    const list = await get(anonymous, '/api/v1/apps');
    expect(list.status).toBe(200);
    const items = ((await list.json()) as { items: { metadata: { namespace: string; name: string } }[] }).items;
    expect(items.map((a) => `${a.metadata.namespace}/${a.metadata.name}`)).toEqual([`${open.name}/web`]);

    expect((await get(anonymous, `/api/v1/namespaces/${open.name}/apps/web`)).status).toBe(200);
    const hidden = await get(anonymous, `/api/v1/namespaces/${closed.name}/apps/secret-plans`);
    expect(hidden.status).toBe(403);
    expect(((await hidden.json()) as { message: string }).message).toContain('User "system:anonymous" cannot get');
    // A namespace RBAC keeps from anonymous is refused when asked for by name, too.
    expect((await get(anonymous, `/api/v1/apps?namespace=${closed.name}`)).status).toBe(403);

    // The live stream is a read too: its snapshot holds what anonymous may list, nothing else.
    const stream = await openSse(`${base(anonymous)}/api/v1/stream`);
    streams.push(stream);
    expect(stream.status).toBe(200);
    const snapshot = await stream.next('a snapshot', (e) => e.event === 'snapshot');
    const rows = dataOf<{ rows: { namespace: string; name: string }[] }>(snapshot).rows;
    expect(rows.map((r) => `${r.namespace}/${r.name}`)).toEqual([`${open.name}/web`]);
    expect((await openSse(`${base(plain)}/api/v1/stream`)).status).toBe(401);

    const page = await get(anonymous, '/apps');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<meta name="teal-session" content="anonymous" />');
  });

  it('=read: no action is anonymous, even one RBAC grants system:unauthenticated: 401, and the App is unchanged', async () => {
    const before = await getApp(open.name, 'web');
    for (const action of ['promote', 'pause']) {
      const res = await fetch(`${base(anonymous)}/api/v1/namespaces/${open.name}/apps/web/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base(anonymous), 'sec-fetch-site': 'same-origin' },
        body: '{}',
      });
      expect([action, res.status, res.headers.get('www-authenticate')]).toEqual([action, 401, 'Bearer']);
    }
    const after = await getApp(open.name, 'web');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('=read: the browser shows the Apps anonymous may see, read only, with a way to log in', async () => {
    const p = await openPage(browser, { baseURL: base(anonymous) });
    pages.push(p);
    await p.page.goto('/apps');
    await p.page.getByRole('table').waitFor();
    expect(await p.page.getByTestId('username').textContent()).toBe('system:anonymous');
    expect(await p.page.locator('.who').textContent()).toBe('Viewing as system:anonymous (read only)');
    expect(await p.page.locator('tbody tr td:nth-child(2)').allTextContents()).toEqual(['web']);
    expect(await p.page.content()).not.toContain(closed.name);
    expect(await p.page.getByRole('button', { name: 'Log out' }).count()).toBe(0);
    expect(await seriousAxeViolations(p.page)).toEqual([]);
    await p.page.getByRole('link', { name: 'Log in' }).click();
    await p.page.waitForURL('**/login?next=%2Fapps');
    await p.page.getByLabel('Bearer token').waitFor();
    expect(p.consoleErrors).toEqual([]);
    expect(p.cspViolations).toEqual([]);
  });
});
