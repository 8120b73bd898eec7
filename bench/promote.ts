// Promote-to-switch latency and operator memory, on a fresh local control
// plane: N Apps released, then M of them previewed and promoted one by one.
// Latency runs from the promote intent accepted by the API server to the
// active Service selector switched, as seen by a watch.
//
//   node bench/promote.ts [--apps 100] [--promotions 50]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { intentAnnotation } from '../src/app/intents.ts';
import { GROUP, PLURAL, VERSION } from '../src/app/schema.ts';
import { kubectlApply, startCluster, stopCluster } from '../test/cluster/cluster.ts';

const { values } = parseArgs({
  options: { apps: { type: 'string', default: '100' }, promotions: { type: 'string', default: '50' } },
});
const APPS = Number(values.apps);
const PROMOTIONS = Math.min(Number(values.promotions), APPS);
const NS = 'bench';

const cluster = await startCluster({ name: 'teal-bench', log: (l) => console.error(l) });
try {
  for (const crd of ['teal.dev_apps.yaml', 'teal.dev_analysistemplates.yaml']) {
    await kubectlApply(cluster, readFileSync(new URL(`../config/crd/${crd}`, import.meta.url), 'utf8'));
  }
  await new Promise((r) => setTimeout(r, 1000));
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await core.createNamespace({ body: { metadata: { name: NS } } });

  // TEAL_OPERATOR_NODE_ARGS adds node flags to the operator, e.g. --max-semi-space-size=2.
  const nodeArgs = (process.env.TEAL_OPERATOR_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const operator = spawn(
    process.execPath,
    [
      ...nodeArgs,
      new URL('../src/main.ts', import.meta.url).pathname,
      '--kubeconfig',
      cluster.kubeconfig,
      '--leader-elect=false',
      '--http-addr',
      '127.0.0.1:0',
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );

  const names = Array.from({ length: APPS }, (_, i) => `app-${String(i).padStart(5, '0')}`);
  const getApp = async (name: string) =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: PLURAL,
      name,
    })) as {
      status?: { phase?: string; preview?: unknown; active?: { revision: number } };
      metadata: { generation: number };
    };
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const patch = (name: string, body: object) =>
    custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name, body },
      merge,
    );
  const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 600_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const t0 = Date.now();
  for (const name of names) {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'App',
        metadata: { name },
        spec: {
          image: 'registry.example.com/bench/web:1',
          replicas: 2,
          template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
          strategy: { blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 2, scaleDownDelaySeconds: 0 } },
        },
      },
    });
  }
  const healthy = async () => {
    const list = (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NS,
      plural: PLURAL,
    })) as {
      items: { status?: { phase?: string } }[];
    };
    return list.items.filter((a) => a.status?.phase === 'Healthy').length;
  };
  await until(`${APPS} Apps Healthy`, async () => (await healthy()) === APPS);
  console.error(`${APPS} Apps released in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // Watch selectors: the moment each active Service switches.
  const switchedAt = new Map<string, number>();
  const watch = await new Watch(kc).watch(
    `/api/v1/namespaces/${NS}/services`,
    { labelSelector: 'teal.dev/role=active' },
    (type, obj: { metadata: { name: string }; spec: { selector: Record<string, string> } }) => {
      if (type === 'MODIFIED')
        switchedAt.set(`${obj.metadata.name}/${obj.spec.selector['teal.dev/pod-template-hash']}`, performance.now());
    },
    () => {},
  );

  const latencies: number[] = [];
  for (const name of names.slice(0, PROMOTIONS)) {
    await patch(name, { spec: { image: 'registry.example.com/bench/web:2' } });
    await until(`${name} preview`, async () => {
      const a = await getApp(name);
      return a.status?.phase === 'Paused' && a.status.preview !== undefined;
    });
    const before = await core.readNamespacedService({ namespace: NS, name });
    const oldHash = before.spec?.selector?.['teal.dev/pod-template-hash'];
    const value = JSON.stringify({ id: `bench-${name}`, by: 'bench', via: 'api', at: new Date().toISOString() });
    await patch(name, { metadata: { annotations: { [intentAnnotation('promote')]: value } } });
    const accepted = performance.now();
    await until(`${name} switch`, async () =>
      [...switchedAt.keys()].some((k) => k.startsWith(`${name}/`) && !k.endsWith(`/${oldHash}`)),
    );
    const at =
      [...switchedAt.entries()].find(([k]) => k.startsWith(`${name}/`) && !k.endsWith(`/${oldHash}`))?.[1] ?? accepted;
    latencies.push(at - accepted);
  }
  watch.abort();

  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${operator.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]?.toFixed(1);
  console.log(
    JSON.stringify({
      apps: APPS,
      promotions: latencies.length,
      promoteToSwitchMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: q(1) },
      operatorRssMiB: Math.round(rss),
    }),
  );
  operator.kill('SIGTERM');
  await new Promise((r) => operator.once('exit', r));
} finally {
  await stopCluster(cluster);
}
