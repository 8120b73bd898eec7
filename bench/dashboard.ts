// The dashboard's costs and speed (issue #25's Performance section; make
// bench-dashboard; docs/benchmark.md says what each figure means). One local
// control plane with the API server's audit log on, one operator serving the
// dashboard from its informer caches (a standby: another identity holds its
// Lease, so it reconciles nothing and every request it makes is the
// dashboard's or its election's), and Debian's chromium-headless-shell:
//   (a) API-server requests the operator makes while 1, then N tabs are open,
//       beside a window with none, from the audit log: watches and lists must
//       stay 0, TokenReviews and SubjectAccessReviews cached;
//   (b) an App's change (a status patch) to the change painted in an open page,
//       p50/p99, on --latency-apps Apps;
//   (c) at --apps Apps: the snapshot's size gzipped, the first screen after the
//       snapshot arrived, the rows in the DOM while scrolling to the end, and
//       the operator's heap per idle stream (after a forced GC).
//
//   node bench/dashboard.ts [--apps 10000] [--latency-apps 1000] [--tabs 1,50] [--period 60]
//                           [--samples 100] [--streams 100]
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import {
  CoordinationV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Browser, Page } from 'playwright-core';
import { bundleUi } from '../scripts/bundle-ui.ts';
import { GROUP, PLURAL, VERSION } from '../src/app/schema.ts';
import { kubectlApply, kubectlOutput, startCluster, stopCluster, waitForOutput } from '../test/cluster/cluster.ts';
import { e2eApp } from '../test/fixtures/apps.ts';
import { launchBrowser, openPage } from '../test/support/browser.ts';
import { freePort } from '../test/support/ports.ts';
import { openSse, type SseStream } from '../test/support/sse.ts';
import { waitFor } from '../test/support/wait.ts';
import { AUDIT_POLICY, addEvent, type Counts, counted } from './audit.ts';
import { AuditLog } from './audit-log.ts';
import {
  type DashboardFigures,
  dashboardTable,
  type RequestWindow,
  renderDashboardJson,
  renewalKey,
} from './dashboard-figures.ts';
import { loadAverage, memory } from './proc.ts';
import { percentile } from './stats.ts';
import { type OperatorProcess, spawnOperator } from './subjects.ts';
import { appsViewerToken } from './viewer.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => console.error(`bench-dashboard: ${line}`);

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '10000' },
    'latency-apps': { type: 'string', default: '1000' },
    tabs: { type: 'string', default: '1,50' },
    period: { type: 'string', default: '60' },
    samples: { type: 'string', default: '100' },
    streams: { type: 'string', default: '100' },
  },
});
const positive = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, got ${text}`);
  return n;
};
const APPS = positive('apps', values.apps);
const LATENCY_APPS = Math.min(positive('latency-apps', values['latency-apps']), APPS);
const TABS = values.tabs.split(',').map((t) => positive('tabs', t));
const PERIOD_S = positive('period', values.period);
const SAMPLES = positive('samples', values.samples);
const STREAMS = positive('streams', values.streams);

const NS = 'bench-dash';
const OPERATOR_SA = 'teal-operator';
const OPERATOR_USER = `system:serviceaccount:${NS}:${OPERATOR_SA}`;
/** The Apps whose changes the latency samples make: few enough that the page shows them all. */
const LAT_PREFIX = 'lat-';
const LAT_SHOWN = 10;
const nameOf = (i: number) =>
  i < LAT_SHOWN ? `${LAT_PREFIX}${String(i).padStart(4, '0')}` : `app-${String(i).padStart(5, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates Apps [from, to) of the namespace, 16 in flight. */
async function createApps(custom: CustomObjectsApi, from: number, to: number): Promise<void> {
  let next = from;
  const worker = async () => {
    while (next < to) {
      const name = nameOf(next++);
      const body = { ...e2eApp(name), metadata: { name, namespace: NS } };
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: PLURAL,
        body,
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** A kubeconfig of the cluster acting with this token. */
function tokenKubeconfig(admin: KubeConfig, token: string, path: string): string {
  const kc = new KubeConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('no cluster in the kubeconfig');
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: 'sa' }],
    currentContext: 'sa',
  });
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/** Counts the operator's requests in the audit log between two marks. */
function requestsBetween(audit: AuditLog, from: number, to: number): Counts {
  const counts: Counts = {};
  audit.scan(from, to, (e) => {
    if (!counted(e) || e.user?.username !== OPERATOR_USER) return;
    const renewal = renewalKey(e.verb, e.objectRef?.resource, e.requestURI);
    if (renewal !== undefined) counts[renewal] = (counts[renewal] ?? 0) + 1;
    else addEvent(counts, e);
  });
  return counts;
}

/** The mark after the API server has written what it was writing: a second of quiet on the file. */
async function settledMark(audit: AuditLog): Promise<number> {
  await sleep(2000);
  return audit.mark();
}

// ---- in the page ----

/**
 * Runs before the page's scripts: the time the live stream's snapshot arrived (the first
 * EventSource 'snapshot' event, listened to before the page's own listener), the time rows were
 * first painted (the frame after the first App row entered the DOM), the most App rows the DOM
 * held, and when a marked message first painted.
 */
const PAGE_PROBE = `(() => {
  const probe = { snapshotAt: undefined, rowsAt: undefined, mostRows: 0, painted: {} };
  window.tealBench = probe;
  const Source = window.EventSource;
  if (Source) {
    window.EventSource = class extends Source {
      constructor(...args) {
        super(...args);
        this.addEventListener('snapshot', () => { if (probe.snapshotAt === undefined) probe.snapshotAt = performance.now(); });
      }
    };
  }
  const seen = () => {
    const rows = document.querySelectorAll('tbody tr[aria-rowindex]');
    probe.mostRows = Math.max(probe.mostRows, rows.length);
    if (rows.length > 0 && probe.rowsAt === undefined) {
      probe.rowsAt = -1;
      requestAnimationFrame(() => { probe.rowsAt = performance.now(); });
    }
    for (const cell of document.querySelectorAll('td.message')) {
      const m = /bench-sample-(\\d+)/.exec(cell.textContent || '');
      if (m && probe.painted[m[1]] === undefined) {
        probe.painted[m[1]] = -1;
        requestAnimationFrame(() => { probe.painted[m[1]] = Date.now(); });
      }
    }
  };
  new MutationObserver(seen).observe(document, { childList: true, subtree: true, characterData: true });
})()`;

interface Probe {
  snapshotAt?: number;
  rowsAt?: number;
  mostRows: number;
  painted: Record<string, number>;
}

const probeOf = (page: Page) => page.evaluate('window.tealBench') as Promise<Probe>;

/** When the page's data came: the stream's snapshot, or else the list's answer (before the page was live). */
async function dataArrivedAt(page: Page, probe: Probe): Promise<{ at: number; via: string } | undefined> {
  if (probe.snapshotAt !== undefined) return { at: probe.snapshotAt, via: 'stream snapshot' };
  const list = (await page.evaluate(
    `performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/apps')).map((e) => e.responseEnd)`,
  )) as number[];
  return list[0] !== undefined ? { at: list[0], via: 'GET /api/v1/apps' } : undefined;
}

// ---- the runs ----

interface Setup {
  base: string;
  token: string;
  browser: Browser;
  custom: CustomObjectsApi;
  audit: AuditLog;
}

async function loggedInPage(s: Setup, path: string): Promise<Page> {
  const p = await openPage(s.browser, { baseURL: s.base });
  await p.page.addInitScript(PAGE_PROBE);
  const res = await p.page.request.post('/api/v1/session', { data: { token: s.token } });
  if (res.status() !== 200) throw new Error(`login: ${res.status()}`);
  await p.page.goto(path);
  await p.page.getByRole('table').waitFor({ timeout: 120_000 });
  return p.page;
}

/** (a) The operator's requests in a window of PERIOD_S with `tabs` tabs open (one browser, one login). */
async function requestWindow(s: Setup, tabs: number): Promise<RequestWindow> {
  const context = tabs > 0 ? await s.browser.newContext({ baseURL: s.base }) : undefined;
  const opened: Page[] = [];
  if (context) {
    const res = await context.request.post('/api/v1/session', { data: { token: s.token } });
    if (res.status() !== 200) throw new Error(`login: ${res.status()}`);
    for (let i = 0; i < tabs; i++) {
      const page = await context.newPage();
      await page.goto('/apps');
      await page.getByRole('table').waitFor({ timeout: 120_000 });
      opened.push(page);
    }
  }
  // The window starts once every tab shows its table: what opening cost is counted apart.
  const from = await settledMark(s.audit);
  const load = loadAverage();
  await sleep(PERIOD_S * 1000);
  const to = await settledMark(s.audit);
  await context?.close();
  return { tabs, seconds: PERIOD_S, load, requests: requestsBetween(s.audit, from, to) };
}

/** (a) What opening the tabs cost, from the first request to all tables shown. */
async function openingCost(s: Setup, tabs: number): Promise<Counts> {
  const from = await settledMark(s.audit);
  const context = await s.browser.newContext({ baseURL: s.base });
  await context.request.post('/api/v1/session', { data: { token: s.token } });
  for (let i = 0; i < tabs; i++) {
    const page = await context.newPage();
    await page.goto('/apps');
    await page.getByRole('table').waitFor({ timeout: 120_000 });
  }
  const to = await settledMark(s.audit);
  await context.close();
  return requestsBetween(s.audit, from, to);
}

/** (b) SAMPLES status patches of the shown Apps, each timed to its paint in an open page. */
async function paintLatency(s: Setup): Promise<DashboardFigures['latency']> {
  const page = await loggedInPage(s, `/apps?q=${LAT_PREFIX}`);
  const fromSent: number[] = [];
  const fromAnswer: number[] = [];
  let missed = 0;
  const loads: number[] = [];
  for (let k = 0; k < SAMPLES; k++) {
    const name = nameOf(k % LAT_SHOWN);
    const sent = Date.now();
    await s.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: PLURAL,
        name,
        body: { status: { phase: 'Healthy', message: `bench-sample-${k}` } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const answered = Date.now();
    const painted = await waitFor(
      `sample ${k} painted`,
      async () => {
        const at = (await probeOf(page)).painted[String(k)];
        return at !== undefined && at > 0 ? at : undefined;
      },
      { timeoutMs: 10_000 },
    ).catch(() => undefined);
    loads.push(loadAverage());
    if (painted === undefined) {
      missed++;
      if (missed >= 3 && fromSent.length === 0) break; // the page is not live: no use waiting for more
      continue;
    }
    fromSent.push(painted - sent);
    fromAnswer.push(painted - answered);
    await sleep(200);
  }
  await page.context().close();
  return {
    apps: LATENCY_APPS,
    samples: fromSent.length,
    missed,
    p50: percentile(fromAnswer, 0.5),
    p99: percentile(fromAnswer, 0.99),
    p99FromSent: percentile(fromSent, 0.99),
    load: percentile(loads, 0.5),
  };
}

/** (c) The snapshot a user who may list every App gets, its size raw and gzipped; and GET /api/v1/apps's. */
async function snapshotSize(s: Setup): Promise<DashboardFigures['snapshot']> {
  const stream = await openSse(`${s.base}/api/v1/stream`, { authorization: `Bearer ${s.token}` });
  let bytes: number | undefined;
  let gzipped: number | undefined;
  if (stream.status === 200) {
    const snapshot = await stream.next('the snapshot', (e) => e.event === 'snapshot');
    const text = `event: snapshot\ndata: ${snapshot.data}\n\n`;
    bytes = Buffer.byteLength(text);
    gzipped = gzipSync(text).length;
  }
  stream.close();
  const list = Buffer.from(
    await (await fetch(`${s.base}/api/v1/apps`, { headers: { authorization: `Bearer ${s.token}` } })).arrayBuffer(),
  );
  return { bytes, gzipped, listBytes: list.length, listGzipped: gzipSync(list).length };
}

/** (c) A fresh page at APPS Apps: the first screen after the data came, then the rows while the wheel scrolls to the end. */
async function firstScreenAndScroll(s: Setup): Promise<DashboardFigures['page']> {
  const load = loadAverage();
  const page = await loggedInPage(s, '/apps');
  await waitFor('the first rows painted', async () => {
    const at = (await probeOf(page)).rowsAt;
    return at !== undefined && at > 0 ? true : undefined;
  });
  const probe = await probeOf(page);
  const arrived = await dataArrivedAt(page, probe);
  const box = page.getByRole('region', { name: 'Apps table' });
  await box.hover();
  const { scrollHeight, clientHeight } = await box.evaluate((el) => ({
    scrollHeight: el.scrollHeight,
    clientHeight: el.clientHeight,
  }));
  for (let top = 0; top < scrollHeight; top += clientHeight * 20) await page.mouse.wheel(0, clientHeight * 20);
  const last = page.locator(`tbody tr[aria-rowindex="${APPS + 1}"]`);
  await waitFor('the last App shown', async () => ((await last.isVisible()) ? true : undefined));
  const mostRows = (await probeOf(page)).mostRows;
  await page.context().close();
  return {
    apps: APPS,
    firstScreenMs: arrived && probe.rowsAt !== undefined ? probe.rowsAt - arrived.at : undefined,
    dataVia: arrived?.via,
    mostRows,
    load,
  };
}

/** (c) The operator's heap after GC, before and with STREAMS idle streams of every App open. */
async function memoryPerStream(s: Setup, operator: OperatorProcess): Promise<DashboardFigures['streams']> {
  const before = await operator.heap();
  const rssBefore = memory(operator.pid).rss;
  const open: SseStream[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const stream = await openSse(`${s.base}/api/v1/stream`, { authorization: `Bearer ${s.token}` });
    if (stream.status !== 200) {
      stream.close();
      break;
    }
    open.push(stream);
    await stream.next('the snapshot', (e) => e.event === 'snapshot');
  }
  // Idle: the snapshots written and their buffers drained.
  await sleep(5000);
  const load = loadAverage();
  const during = await operator.heap();
  const rssWith = memory(operator.pid).rss;
  for (const stream of open) stream.close();
  return {
    open: open.length,
    heapBefore: before,
    heapWith: during,
    rssPerStream: open.length > 0 ? (rssWith - rssBefore) / open.length : undefined,
    perStream:
      before !== undefined && during !== undefined && open.length > 0 ? (during - before) / open.length : undefined,
    load,
  };
}

// ---- main ----

async function main(): Promise<void> {
  const cluster = await startCluster({ name: 'teal-bench-dashboard', log, auditPolicy: AUDIT_POLICY });
  const stop = () => stopCluster(cluster).catch(() => {});
  let operator: OperatorProcess | undefined;
  let browser: Browser | undefined;
  process.once('SIGINT', () => {
    operator?.kill();
    void stop().then(() => process.exit(130));
  });
  try {
    const work = mkdtempSync(join(tmpdir(), 'teal-bench-dashboard-'));
    log(`logs and files in ${work}`);
    for (const file of ['teal.dev_apps.yaml', 'teal.dev_analysistemplates.yaml']) {
      await kubectlApply(cluster, readFileSync(join(root, 'config/crd', file), 'utf8'));
    }
    await waitForOutput(
      cluster,
      'the App CRD to be established',
      ['get', 'crd', 'apps.teal.dev', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'],
      'True',
    );
    await kubectlOutput(cluster, ['create', 'namespace', NS]);
    // The operator acts as a ServiceAccount of its own, so the audit log names its requests.
    await kubectlOutput(cluster, ['create', 'serviceaccount', OPERATOR_SA, '-n', NS]);
    await kubectlOutput(cluster, [
      'create',
      'clusterrolebinding',
      OPERATOR_SA,
      '--clusterrole=cluster-admin',
      `--serviceaccount=${NS}:${OPERATOR_SA}`,
    ]);
    // The dashboard's user: may read the Apps of the namespace.
    const token = await appsViewerToken(cluster, NS);
    const operatorToken = (
      await kubectlOutput(cluster, ['create', 'token', OPERATOR_SA, '-n', NS, '--duration=4h'])
    ).trim();
    const admin = new KubeConfig();
    admin.loadFromFile(cluster.kubeconfig);
    const custom = admin.makeApiClient(CustomObjectsApi);
    // Another replica holds the Lease: the operator serves and never reconciles.
    await admin.makeApiClient(CoordinationV1Api).createNamespacedLease({
      namespace: NS,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 36_000 },
      },
    });
    const ui = await bundleUi(join(work, 'ui'));
    log(`creating ${LATENCY_APPS} Apps`);
    await createApps(custom, 0, LATENCY_APPS);
    const port = await freePort();
    operator = spawnOperator({
      args: [
        ...['--kubeconfig', tokenKubeconfig(admin, operatorToken, join(work, 'operator.kubeconfig'))],
        ...['--namespace', NS, '--leader-election-namespace', NS, '--http-addr', `127.0.0.1:${port}`],
        ...['--dashboard-dir', ui.outdir, '--dashboard-max-streams-per-session', String(Math.max(STREAMS, 4))],
        ...['--dashboard-max-streams', String(Math.max(STREAMS + 100, 1000)), '--log-level', 'warn'],
      ],
      logFile: join(work, 'teal.log'),
      heapFile: join(work, 'teal-heap.json'),
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(
      'the operator ready',
      async () => ((await fetch(`${base}/readyz`).catch(() => undefined))?.ok ? true : undefined),
      {
        timeoutMs: 300_000,
      },
    );
    browser = await launchBrowser();
    const audit = new AuditLog(cluster.auditLog as string);
    const setup: Setup = { base, token, browser, custom, audit };

    log(`(b) ${SAMPLES} changes to the painted page, ${LATENCY_APPS} Apps`);
    const latency = await paintLatency(setup);
    log(`(a) requests: a window of ${PERIOD_S} s with no tab, then with ${TABS.join(', ')}`);
    const windows = [await requestWindow(setup, 0)];
    const opening: Record<number, Counts> = {};
    for (const tabs of TABS) {
      opening[tabs] = await openingCost(setup, tabs);
      windows.push(await requestWindow(setup, tabs));
    }
    log(`creating Apps up to ${APPS}`);
    await createApps(custom, LATENCY_APPS, APPS);
    await waitFor(
      `the operator's cache to hold ${APPS} Apps`,
      async () => {
        const res = await fetch(`${base}/api/v1/apps`, { headers: { authorization: `Bearer ${token}` } });
        return ((await res.json()) as { items: unknown[] }).items.length === APPS ? true : undefined;
      },
      { timeoutMs: 600_000 },
    );
    log(`(c) ${APPS} Apps: the snapshot, the first screen, the scroll, ${STREAMS} idle streams`);
    const snapshot = await snapshotSize(setup);
    const page = await firstScreenAndScroll(setup);
    const streams = await memoryPerStream(setup, operator);
    const figures: DashboardFigures = {
      latency,
      windows,
      opening,
      snapshot,
      page,
      streams,
      operatorRss: memory(operator.pid).rss,
    };
    console.log(dashboardTable(figures));
    console.log(renderDashboardJson(figures));
  } finally {
    await browser?.close().catch(() => {});
    await operator?.stop();
    await stop();
  }
}

await main();
