// The memory of the operator's cache of Events about Apps (controller/cache.ts
// appKubeEvents, which the dashboard's App page reads; docs/memory.md says what
// the figures mean). One local control plane, one operator that only serves (a
// standby: another identity holds its Lease, so it reconciles nothing and
// writes no Event of its own), --apps Apps, then --events Events about them
// written as Teal's EventRecorder writes them (the API server adds their
// managedFields). The operator's heap after a forced GC, and its RSS, before and
// once its cache holds them all, read through the API's App view.
//
//   node bench/app-events.ts [--apps 100] [--events 10000]   (at least events/50 Apps)
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { MAX_PAGE_EVENTS } from '../src/api/app-page.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../src/app/schema.ts';
import { MAX_APP_EVENTS } from '../src/controller/cache.ts';
import { kubectlApply, kubectlOutput, startCluster, stopCluster, waitForOutput } from '../test/cluster/cluster.ts';
import { e2eApp } from '../test/fixtures/apps.ts';
import { freePort } from '../test/support/ports.ts';
import { waitFor } from '../test/support/wait.ts';
import { loadAverage, memory } from './proc.ts';
import { type OperatorProcess, spawnOperator } from './subjects.ts';
import { appsViewerToken } from './viewer.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => console.error(`bench-app-events: ${line}`);

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '100' },
    events: { type: 'string', default: '10000' },
  },
});
const positive = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, got ${text}`);
  return n;
};
const EVENTS = Math.min(positive('events', values.events), MAX_APP_EVENTS);
// Enough Apps that the App view, which shows MAX_PAGE_EVENTS of each, shows every Event: the bench counts them there.
const APPS = Math.max(positive('apps', values.apps), Math.ceil(EVENTS / MAX_PAGE_EVENTS));
const NS = 'bench-events';
const appName = (i: number) => `app-${String(i % APPS).padStart(4, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Runs work(i) for i in [0, n), 16 at a time. */
async function inFlight(n: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** An Event about an App as Teal's EventRecorder writes one: a reason, a message of a typical length. */
function appEvent(i: number, uid: string) {
  const now = new Date();
  const app = appName(i);
  return {
    metadata: { name: `${app}.${i.toString(16).padStart(16, '0')}`, namespace: NS },
    involvedObject: { apiVersion: API_VERSION, kind: KIND, name: app, namespace: NS, uid },
    type: i % 7 === 0 ? 'Warning' : 'Normal',
    reason: ['BuildStarted', 'BuildSucceeded', 'PreviewReady', 'AnalysisPassed', 'Promoted', 'ScaledDown'][i % 6],
    message: `revision ${i} of ${NS}/${app}: image registry.example.com/${NS}/${app}@sha256:${i.toString(16).padStart(64, '0')} is ready (3 of 3 pods available)`,
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: 'teal-controller' },
    reportingComponent: 'teal.dev/controller',
    reportingInstance: 'teal-controller-0',
  };
}

async function main(): Promise<void> {
  const cluster = await startCluster({ name: 'teal-bench-app-events', log });
  let operator: OperatorProcess | undefined;
  try {
    const work = mkdtempSync(join(tmpdir(), 'teal-bench-app-events-'));
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
    const token = await appsViewerToken(cluster, NS);
    const admin = new KubeConfig();
    admin.loadFromFile(cluster.kubeconfig);
    const custom = admin.makeApiClient(CustomObjectsApi);
    const core = admin.makeApiClient(CoreV1Api);
    // Another replica holds the Lease: the operator serves and never reconciles, so writes no Events.
    await admin.makeApiClient(CoordinationV1Api).createNamespacedLease({
      namespace: NS,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 36_000 },
      },
    });
    log(`creating ${APPS} Apps`);
    const uids: string[] = [];
    await inFlight(APPS, async (i) => {
      const name = appName(i);
      const body = { ...e2eApp(name), metadata: { name, namespace: NS } };
      const made = (await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NS,
        plural: PLURAL,
        body,
      })) as { metadata: { uid: string } };
      uids[i] = made.metadata.uid;
    });
    const port = await freePort();
    operator = spawnOperator({
      args: [
        ...['--kubeconfig', cluster.kubeconfig, '--namespace', NS, '--leader-election-namespace', NS],
        ...['--http-addr', `127.0.0.1:${port}`, '--log-level', 'warn'],
      ],
      logFile: join(work, 'teal.log'),
      heapFile: join(work, 'teal-heap.json'),
    });
    const base = `http://127.0.0.1:${port}`;
    const held = async () => {
      let n = 0;
      for (let i = 0; i < APPS; i++) {
        const res = await fetch(`${base}/api/v1/namespaces/${NS}/apps/${appName(i)}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        if (!res.ok) return -1;
        n += ((await res.json()) as { events: unknown[] }).events.length;
      }
      return n;
    };
    await waitFor(
      'the operator ready, serving every App',
      async () => ((await held().catch(() => -1)) === 0 ? true : undefined),
      {
        timeoutMs: 300_000,
      },
    );
    await sleep(10_000);
    // Read twice, 10 s apart: how much the heap after GC moves with nothing new in it.
    const heapIdle = await operator.heap();
    await sleep(10_000);
    const heapBefore = await operator.heap();
    const rssBefore = memory(operator.pid).rss;

    log(`creating ${EVENTS} Events about them`);
    const loadWhileWriting = loadAverage();
    await inFlight(EVENTS, (i) =>
      core.createNamespacedEvent({ namespace: NS, body: appEvent(i, uids[i % APPS] ?? '') }),
    );
    await waitFor(
      `the operator's cache to hold ${EVENTS} Events`,
      async () => ((await held()) === EVENTS ? true : undefined),
      {
        timeoutMs: 600_000,
        intervalMs: 2000,
      },
    );
    await sleep(10_000);
    const heapAfter = await operator.heap();
    const rssAfter = memory(operator.pid).rss;
    const load = loadAverage();
    // What one of them is as the API server serves it, managedFields and all: what an untrimmed cache would parse.
    const listed = await core.listNamespacedEvent({ namespace: NS, limit: 100 });
    const rawBytes = listed.items.reduce((n, e) => n + JSON.stringify(e).length, 0) / Math.max(1, listed.items.length);

    if (heapIdle === undefined || heapBefore === undefined || heapAfter === undefined)
      throw new Error('the operator did not report its heap');
    const perEvent = (heapAfter - heapBefore) / EVENTS;
    console.log(
      [
        `| ${EVENTS} Events about ${APPS} Apps | |`,
        '|---|---:|',
        `| heap after GC, idle 10 s apart, then with the Events | ${MiB(heapIdle)}, ${MiB(heapBefore)}, ${MiB(heapAfter)} MiB |`,
        `| **heap per Event** | **${Math.round(perEvent)} bytes** |`,
        `| RSS before / after | ${MiB(rssBefore)} / ${MiB(rssAfter)} MiB |`,
        `| at the cap (${MAX_APP_EVENTS} Events), by the heap per Event | ${MiB(perEvent * MAX_APP_EVENTS)} MiB |`,
        `| one Event as the API server serves it (JSON) | ${Math.round(rawBytes)} bytes |`,
        `| load average writing / after | ${loadWhileWriting.toFixed(1)} / ${load.toFixed(1)} |`,
      ].join('\n'),
    );
  } finally {
    await operator?.stop();
    await stopCluster(cluster).catch(() => {});
  }
}

await main();
