// The dashboard's App page in a real browser (issue #25 items 5, 6 and 10;
// tests 3, 7 and 9), from a fixture App: its status written here, its
// ReplicaSets made by hand (KWOK runs their pods) and Events recorded about
// it, read by a standby operator (another identity holds its Lease) that
// serves the page from its caches and reconciles nothing, so what is written
// stays as written. The promote path with a reconciling operator is in
// dashboard-promote.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { intentAnnotation } from '../../src/app/intents.ts';
import { ANN_REVISION, ANN_SCALE_DOWN_AT, LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import { API_VERSION, type AppStatus, GROUP, KIND, PLURAL, VERSION } from '../../src/app/schema.ts';
import { ANN_CONFIG_COPIES } from '../../src/rollout/config-refs.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp } from '../support/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount, userOf } from '../support/users.ts';

const HOSTILE = `<img src=x onerror="document.title='pwned'"></script><script>document.title='pwned'</script>`;
/** Where the screenshots go: docs/img to refresh the docs' (TEAL_SCREENSHOT_DIR=docs/img), else a temporary folder. */
const SHOTS = process.env.TEAL_SCREENSHOT_DIR;
const SHA = (c: string) => c.repeat(40);
const DIGEST = (c: string) => `sha256:${c.repeat(64)}`;
/** A revision's pod template hash, as Teal writes them: 10 hex digits. */
const hashOf = (revision: number) => `5f3c9e0a1${revision}`;
const image = (c: string) => `registry.example.com/shop/web@${DIGEST(c)}`;

let ns: { name: string; remove: () => Promise<void> };
let root: string;
let operator: Operator;
let browser: Browser;
let base: string;
const tokens = { viewer: '', releaser: '' };
const pages: TestPage[] = [];

const minutesFromNow = (m: number) => new Date(Date.now() + m * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
const minutesAgo = (m: number) => minutesFromNow(-m);

const measurement = (n: number, value: string, phase = 'Successful') => ({
  n,
  phase,
  value,
  startedAt: minutesAgo(6 - n),
  finishedAt: minutesAgo(6 - n),
});

const check = (name: string, provider: string, phase: string, values: string[], message?: string) => ({
  name,
  provider,
  phase,
  ...(message ? { message } : {}),
  taken: values.length,
  count: values.length,
  successful: phase === 'Failed' ? values.length - 1 : values.length,
  failed: phase === 'Failed' ? 1 : 0,
  inconclusive: 0,
  error: 0,
  consecutiveError: 0,
  measurements: values.map((v, i) =>
    measurement(i + 1, v, phase === 'Failed' && i === values.length - 1 ? 'Failed' : 'Successful'),
  ),
});

/** Revision 2 active, revision 3 in preview with its checks running (2 of 3 passed), revision 1 scaling down. */
function releaseStatus(subject: string, author: string, checkValue: string): AppStatus {
  return {
    phase: 'Paused',
    message: 'revision 3 is in preview: checks running, 2 of 3 passed',
    source: {
      ref: 'main',
      commit: SHA('c'),
      shortCommit: 'ccccccc',
      revision: `main@sha1:${SHA('c')}`,
      author,
      subject,
      resolvedAt: minutesAgo(9),
    },
    build: {
      commit: SHA('c'),
      job: 'web-build-ccccccc',
      phase: 'Succeeded',
      startedAt: minutesAgo(9),
      finishedAt: minutesAgo(7),
      image: image('c'),
    },
    active: {
      revision: 2,
      image: image('b'),
      podTemplateHash: hashOf(2),
      replicaSet: `web-${hashOf(2)}`,
      commit: SHA('b'),
    },
    preview: {
      revision: 3,
      image: image('c'),
      podTemplateHash: hashOf(3),
      replicaSet: `web-${hashOf(3)}`,
      commit: SHA('c'),
      availableAt: minutesAgo(6),
    },
    history: [
      {
        revision: 1,
        podTemplateHash: hashOf(1),
        commit: SHA('a'),
        image: image('a'),
        createdAt: minutesAgo(60),
        promotedAt: minutesAgo(59),
        promotedBy: 'system:serviceaccount:shop:ci',
        promotedVia: 'first-release',
      },
      {
        revision: 2,
        podTemplateHash: hashOf(2),
        commit: SHA('b'),
        image: image('b'),
        createdAt: minutesAgo(12),
        promotedAt: minutesAgo(10),
        promotedBy: 'ann@example.com',
        promotedVia: 'dashboard',
      },
    ],
    prePromotionAnalysis: {
      id: 'web-3-pre-1',
      revision: 3,
      podTemplateHash: hashOf(3),
      phase: 'Running',
      message: 'checks running, 2 of 3 passed',
      startedAt: minutesAgo(6),
      checks: [
        check('error-rate', 'prometheus', 'Successful', ['0.012', '0.009', '0.011', '0.008']),
        check('p99-latency-ms', 'prometheus', 'Successful', ['182', '176', '190', '171']),
        check('smoke', 'web', 'Running', [checkValue]),
      ],
    },
    notifications: {
      lastDelivered: { id: 'n1', trigger: 'promoted', destination: 'team-slack', at: minutesAgo(10) },
    },
  } as AppStatus;
}

/** An App of the namespace with this status, as a running operator would have written it. */
async function appWithStatus(name: string, status: AppStatus): Promise<string> {
  // Checks configured, so the rules refuse a promote until they pass.
  const smoke = { name: 'smoke', provider: { web: { url: `http://${name}-preview.${ns.name}/healthz` } } };
  const created = await createApp(ns.name, e2eApp(name, { blueGreen: { prePromotionAnalysis: { metrics: [smoke] } } }));
  await clients().custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace: ns.name, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  return created.metadata.uid;
}

/** A ReplicaSet of an App's revision as the operator labels it, its pods run by KWOK. */
async function replicaSet(app: string, revision: number, replicas: number, annotations: Record<string, string> = {}) {
  const hash = hashOf(revision);
  const labels = { [LABEL_APP]: app, [LABEL_HASH]: hash };
  await clients().apps.createNamespacedReplicaSet({
    namespace: ns.name,
    body: {
      metadata: { name: `${app}-${hash}`, labels, annotations: { [ANN_REVISION]: String(revision), ...annotations } },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: `web:${revision}` }] } },
      },
    },
  });
}

/** An Event about an App, as the operator records them. */
async function appEvent(app: string, uid: string, type: 'Normal' | 'Warning', reason: string, message: string) {
  const now = new Date();
  await clients().core.createNamespacedEvent({
    namespace: ns.name,
    body: {
      metadata: { name: `${app}.${now.getTime().toString(16)}${reason.toLowerCase()}`, namespace: ns.name },
      involvedObject: { apiVersion: API_VERSION, kind: KIND, name: app, namespace: ns.name, uid },
      type,
      reason,
      message,
      source: { component: 'teal' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    },
  });
}

async function page(colorScheme: 'light' | 'dark' = 'light'): Promise<TestPage> {
  const p = await openPage(browser, { baseURL: base, colorScheme });
  pages.push(p);
  return p;
}

/** A page logged in as this user through the API, as the login page would, then at path. */
async function appPage(who: keyof typeof tokens, app = 'web', colorScheme: 'light' | 'dark' = 'light') {
  const p = await page(colorScheme);
  const res = await p.page.request.post('/api/v1/session', { data: { token: tokens[who] } });
  expect(res.status()).toBe(200);
  await p.page.goto(`/apps/${ns.name}/${app}`);
  await p.page.getByRole('heading', { name: 'Release' }).waitFor();
  return p;
}

const shot = (p: TestPage, name: string) => p.screenshot(join(SHOTS ?? join(root, 'shots'), `${name}.png`));
const stepText = (p: TestPage, key: string) => p.page.getByTestId(`step-${key}`).innerText();

beforeAll(async () => {
  ns = await createNamespace('dash-app');
  root = await mkdtemp(join(tmpdir(), 'teal-dashboard-app-'));
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
  const [webUid, hostileUid] = await Promise.all([
    appWithStatus('web', releaseStatus('Cache the product list for 30 s', 'Ann Lee <ann@example.com>', '200 OK')),
    appWithStatus('hostile', { ...releaseStatus(HOSTILE, HOSTILE, HOSTILE), message: HOSTILE }),
  ]);
  await Promise.all([
    replicaSet('web', 1, 1, { [ANN_SCALE_DOWN_AT]: minutesFromNow(20) }),
    replicaSet('web', 2, 2, { [ANN_CONFIG_COPIES]: 'configmap/flags-1a2b3c4d5e,secret/db-9f8e7d6c5b' }),
    replicaSet('web', 3, 1, { [ANN_CONFIG_COPIES]: 'configmap/flags-77aa01bc9d,secret/db-9f8e7d6c5b' }),
    appEvent('web', webUid, 'Normal', 'Promoted', 'revision 2 promoted by ann@example.com (dashboard)'),
    appEvent('web', webUid, 'Normal', 'PreviewAvailable', 'revision 3 is available in preview (1/1 pods)'),
    appEvent('hostile', hostileUid, 'Warning', 'CheckFailed', HOSTILE),
  ]);
  tokens.viewer = await serviceAccount(ns.name, 'viewer', ['get', 'list']);
  tokens.releaser = await serviceAccount(ns.name, 'releaser', ['get', 'list', 'promote', 'abort', 'undo', 'pause']);
  operator = await startOperator({
    namespace: ns.name,
    extraArgs: ['--leader-election-namespace', ns.name, '--dashboard-dir', ui.outdir],
  });
  base = `http://127.0.0.1:${operator.healthPort}`;
  // The page reads the pods from the operator's ReplicaSet cache: wait until it sees them all available.
  await waitFor('the ReplicaSets of web available and its two Events, as the API shows them', async () => {
    const res = await fetch(`${base}/api/v1/namespaces/${ns.name}/apps/web`, {
      headers: { authorization: `Bearer ${tokens.viewer}` },
    });
    if (!res.ok) return undefined;
    const view = (await res.json()) as { replicaSets: { available: number; desired: number }[]; events: unknown[] };
    const ready = view.replicaSets.length === 3 && view.replicaSets.every((r) => r.available === r.desired);
    return ready && view.events.length === 2 ? true : undefined;
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

describe('the App page', () => {
  it('is a page of its own: 401 without a session, 200 with one', async () => {
    const path = `/apps/${ns.name}/web`;
    const without = await fetch(`${base}${path}`);
    expect(without.status).toBe(401);
    const session = await fetch(`${base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: tokens.viewer }),
    });
    const cookie = session.headers.get('set-cookie')?.split(';')[0] ?? '';
    const withSession = await fetch(`${base}${path}`, { headers: { cookie } });
    expect(withSession.status).toBe(200);
    expect(withSession.headers.get('content-type')).toContain('text/html');
  });

  it('is linked from the Apps list, and shows the release as a timeline, active and preview side by side', async () => {
    const p = await page();
    expect((await p.page.request.post('/api/v1/session', { data: { token: tokens.viewer } })).status()).toBe(200);
    await p.page.goto('/apps');
    await p.page.getByRole('link', { name: 'web' }).click();
    await p.page.waitForURL(`**/apps/${ns.name}/web`);
    await p.page.getByRole('heading', { name: 'Release' }).waitFor();

    expect(await stepText(p, 'commit')).toContain('Cache the product list for 30 s');
    expect(await stepText(p, 'commit')).toContain('ccccccc');
    expect(await stepText(p, 'commit')).toContain('Ann Lee <ann@example.com>');
    expect(await stepText(p, 'build')).toMatch(/phase\s+Succeeded/);
    expect(await stepText(p, 'preview')).toMatch(
      /revision\s+3[\s\S]*digest\s+sha256:c{12}…[\s\S]*pods available\s+1\/1/,
    );
    expect(await stepText(p, 'checks')).toContain('Running: 2 of 3 passed');
    expect(await stepText(p, 'promotion')).toBe('Promotion (not yet)');
    expect(await stepText(p, 'active')).toMatch(/revision\s+2[\s\S]*pods available\s+2\/2/);
    expect(await stepText(p, 'scale-down')).toMatch(/revision\s+1[\s\S]*scales down\s+in (19|20)m \d\ds/);

    // Side by side, each with its pods and its configuration by content hash.
    const active = await p.page.getByTestId('active').innerText();
    const preview = await p.page.getByTestId('preview').innerText();
    expect(active).toMatch(/Active: revision 2[\s\S]*configmap flags\s+1a2b3c4d5e[\s\S]*secret db\s+9f8e7d6c5b/);
    expect(preview).toMatch(/Preview: revision 3[\s\S]*configmap flags\s+77aa01bc9d/);
    const [a, b] = await Promise.all([
      p.page.getByTestId('active').boundingBox(),
      p.page.getByTestId('preview').boundingBox(),
    ]);
    expect(a && b && Math.abs(a.y - b.y) < 1 && a.x < b.x).toBe(true);

    // Each measurement of the checks, the history, and the Events from the operator's cache.
    const checks = p.page.locator('section', {
      has: p.page.getByRole('heading', { name: /Pre-promotion checks \(revision 3\)/ }),
    });
    expect(await checks.locator('tbody tr').count()).toBe(9);
    expect(await checks.getByRole('img', { name: 'p99-latency-ms: 182, 176, 190, 171' }).count()).toBe(1);
    const history = p.page.locator('section', { has: p.page.getByRole('heading', { name: 'History' }) });
    expect(await history.locator('tbody tr td:nth-child(6)').allTextContents()).toEqual(['dashboard', 'first-release']);
    const events = p.page.locator('section', { has: p.page.getByRole('heading', { name: 'Events' }) });
    expect((await events.locator('tbody tr td:nth-child(2)').allTextContents()).sort()).toEqual([
      'PreviewAvailable',
      'Promoted',
    ]);
    expect(await p.page.getByText('promoted to team-slack').count()).toBe(1);
    expect(p.cspViolations).toEqual([]);
    expect(p.consoleErrors).toEqual([]);
  });

  it('shows a viewer no enabled action, each saying why; a forged POST from the page gets 403 and records nothing', async () => {
    const p = await appPage('viewer');
    const buttons = p.page.locator('.actions button');
    expect(await buttons.count()).toBe(7);
    for (const button of await buttons.all()) expect(await button.isDisabled()).toBe(true);
    const why = await p.page.getByTestId('why-promote').textContent();
    expect(why).toContain(`not allowed:`);
    expect(why).toContain(userOf(ns.name, 'viewer'));
    // The history's undo buttons too.
    for (const undo of await p.page.getByRole('button', { name: /Undo to/ }).all())
      expect(await undo.isDisabled()).toBe(true);

    const forged = await p.page.evaluate(async (path) => {
      const res = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ revision: 3 }),
      });
      return { status: res.status, body: await res.text() };
    }, `/api/v1/namespaces/${ns.name}/apps/web/promote`);
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('cannot promote');
    expect((await getApp(ns.name, 'web')).metadata).not.toHaveProperty(['annotations', intentAnnotation('promote')]);
  });

  it('explains a refusal by the rules: a releaser may promote, but the checks still run', async () => {
    const p = await appPage('releaser');
    expect(await p.page.getByRole('button', { name: 'promote', exact: true }).isDisabled()).toBe(true);
    expect(await p.page.getByTestId('why-promote').textContent()).toBe(
      `App ${ns.name}/web: the pre-promotion checks of revision 3 are running: checks running, 2 of 3 passed; promote --skip-checks to promote without them`,
    );
    expect(await p.page.getByRole('button', { name: 'abort', exact: true }).isEnabled()).toBe(true);
    // RBAC: the releaser may not restart.
    expect(await p.page.getByTestId('why-restart').textContent()).toContain('not allowed:');
  });

  it('opens an action’s dialog by keyboard, with its kubectl command and curl call; Escape closes it and records nothing', async () => {
    const p = await appPage('releaser');
    const abort = p.page.getByRole('button', { name: 'abort', exact: true });
    await abort.focus();
    await p.page.keyboard.press('Enter');
    const dialog = p.page.getByRole('dialog', { name: 'abort web' });
    await dialog.waitFor();
    expect(await p.page.getByTestId('dialog-kubectl').textContent()).toBe(`kubectl teal abort web -n ${ns.name}`);
    expect(await p.page.getByTestId('dialog-curl').textContent()).toBe(
      `curl -sS -X POST -H "Authorization: Bearer $TOKEN" "$TEAL/api/v1/namespaces/${ns.name}/apps/web/abort"`,
    );
    // The modal dialog holds the focus: Tab goes round its own buttons.
    await p.page.keyboard.press('Tab');
    expect(await p.page.evaluate('document.activeElement?.closest("dialog") !== null')).toBe(true);
    await p.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await getApp(ns.name, 'web')).metadata).not.toHaveProperty(['annotations', intentAnnotation('abort')]);

    // An undo from the history names its revision.
    await p.page.getByRole('button', { name: 'Undo to 1' }).click();
    await p.page.getByRole('dialog', { name: 'undo web' }).waitFor();
    expect(await p.page.getByTestId('dialog-kubectl').textContent()).toBe(
      `kubectl teal undo web -n ${ns.name} --to-revision 1`,
    );
    expect(await p.page.getByTestId('dialog-curl').textContent()).toContain(`-d '{"toRevision":1}'`);
    await p.page.getByRole('button', { name: 'Cancel' }).click();
  });

  it('renders hostile commit, author, message, check result and Event as text: no element made of them, no CSP violation', async () => {
    const p = await appPage('releaser', 'hostile');
    expect(await p.page.getByText(HOSTILE, { exact: true }).count()).toBeGreaterThanOrEqual(5);
    expect(await stepText(p, 'commit')).toContain(HOSTILE);
    expect(await p.page.locator('main img, main script').count()).toBe(0);
    expect(await p.page.title()).toBe('Teal');
    expect(p.cspViolations).toEqual([]);
    expect(p.consoleErrors).toEqual([]);
  });

  for (const scheme of ['light', 'dark'] as const) {
    it(`passes axe (no serious or critical violation) on the App page and its dialog, ${scheme}; screenshots`, async () => {
      const p = await appPage('releaser', 'web', scheme);
      expect(await seriousAxeViolations(p.page)).toEqual([]);
      await shot(p, `dashboard-app-${scheme}`);
      await p.page.getByRole('button', { name: 'abort', exact: true }).click();
      await p.page.getByRole('dialog').waitFor();
      expect(await seriousAxeViolations(p.page)).toEqual([]);
      await p.page.keyboard.press('Escape');
    });
  }
});
