// The traffic bench (make bench-traffic; docs/benchmark.md): what a client sees
// while a controller switches blue/green, side by side with Argo Rollouts in the
// same harness (issue #26 §3). One local control plane (teal-bench-traffic), the
// real data plane of test/cluster/data-plane.ts (a network namespace, a real
// kube-proxy in nftables mode, each pod's server on its pod IP, Ready once its
// probe answers, drained on deletion), and two paths to the active Service:
// - kube-proxy's ClusterIP;
// - the pod-aware load balancer model (test/cluster/lb-model.ts), as the AWS
//   Load Balancer Controller in IP mode: a new target registered 5 s after it
//   appears in the Service's EndpointSlices and while it answers, a removed one
//   draining for 10 s; requests go to registered targets only.
// A traffic loop per path (data-plane/traffic.ts: --rps requests a second, a new
// connection each, cut at --timeout-ms) runs through all the switches of a scenario.
//
// Scenarios, each on a fresh App (or Rollout), N switches (--switches):
// - promote: a new image, its preview available and waiting, promote, until the
//   new revision is active and the old one's pods are gone (after the scale-down delay);
// - undo: a promote (a set-up step, counted apart), then back to the revision it
//   replaced while that one is still up: Teal's undo intent; for Argo what `kubectl
//   argo rollouts undo` writes (the previous template), then a promote of the
//   preview it makes, if it makes one (a revision still up it makes active at
//   once); until that revision is active and the other's pods are gone;
// - abort: a new image, its preview available and waiting, abort, until the
//   controller took it and the preview's pods are gone (the abort scale-down delay);
// - kill: a promote, and SIGKILL to the controller as soon as the active Service
//   selects the new revision; a new controller is started at once; as promote.
//
// Not supposed to serve (bench/traffic-verdict.ts has the rule): a request
// belongs to the latest switch written before it was sent. Before the first
// switch only the first revision may answer; after a switch's write the old or
// the new one, until the path has answered the new one once; a request sent
// after that answer came back must be answered by the new one: an answer of the
// old one is the old revision back. An abort switches nothing: only the stable
// revision may answer, before and after; the aborted preview answering is wrong.
// Any other revision (or an answer without one) is wrong. The next write waits until every
// path answers the revision the last switch left serving (10 answers in a row), so a path still
// catching up with one switch is not counted as a flap of the next. A failed request is any
// request without a 200 answer: a refused or reset connection, a timeout, a 503
// of the load balancer with no registered target.
//
// Deterministic: every step waits on a condition (the controller's status, the
// Service's selector, the pods, the load balancer's targets, the paths' answers); the only clock is
// the loop's rate, and the 1 s of calm before each write (bench/traffic-scenario.ts).
//
//   node bench/traffic.ts [--switches 20] [--scenarios promote,undo,abort,kill] [--columns teal,drain,argo,pingpong,gateway]
//                         [--rps 200] [--timeout-ms 2000] [--scale-down-delay 30] [--teal-source]
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { kubectlApply, NODE_NAME, startCluster, stopCluster } from '../test/cluster/cluster.ts';
import { type DataPlane, dataPlaneUnavailable, startDataPlane } from '../test/cluster/data-plane.ts';
import { applyGatewayApi } from '../test/cluster/gateway-api.ts';
import { waitFor } from '../test/support/wait.ts';
import { ensureArgo } from './argo-build.ts';
import {
  argoSelectorSwap,
  type Column,
  type ColumnOptions,
  type Controller,
  type TealVariant,
  tealPlain,
} from './traffic-columns.ts';
import { runScenario, SCENARIOS, type Scenario, type ScenarioResult } from './traffic-scenario.ts';
import { renderTraffic } from './traffic-table.ts';

const log = (line: string) => console.error(`bench-traffic: ${new Date().toISOString().slice(11, 19)} ${line}`);

const COLUMN_IDS = ['teal', 'drain', 'argo', 'pingpong', 'gateway'] as const;
/** Teal's columns by id, and the way each switches (traffic-columns.ts tealPlain). */
const TEAL_VARIANTS: Record<string, TealVariant> = {
  teal: 'plain',
  drain: 'drain',
  pingpong: 'pingpong',
  gateway: 'gateway',
};
/**
 * The data plane (its kube-proxy, the pods' servers, the load balancer's listener, the loops) runs
 * before the control plane and the controllers: it stands in for other machines. On this 2-core
 * machine shared with other work, at 0 the pods' servers stalled for seconds and requests timed out
 * that no network would have lost.
 */
const DATA_PLANE_NICE = -10;
/** The load balancer model's delays: issue #26's 5 s registration and 10 s drain. */
const LB = { healthCheckDelayMs: 5_000, drainDelayMs: 10_000 };

const { values } = parseArgs({
  options: {
    switches: { type: 'string', default: '20' },
    scenarios: { type: 'string', default: SCENARIOS.join(',') },
    columns: { type: 'string', default: COLUMN_IDS.join(',') },
    rps: { type: 'string', default: '200' },
    'timeout-ms': { type: 'string', default: '2000' },
    'scale-down-delay': { type: 'string', default: '30' },
    'teal-source': { type: 'boolean', default: false },
  },
});

function positive(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag}: a positive integer, got ${value}`);
  return n;
}

function listOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T[] {
  const list = value.split(',').filter(Boolean);
  const bad = list.filter((v) => !allowed.includes(v as T));
  if (bad.length > 0 || list.length === 0) throw new Error(`--${flag}: some of ${allowed.join(', ')}; got ${value}`);
  return list as T[];
}

const switches = positive('switches', values.switches);
const scenarios = listOf('scenarios', values.scenarios, SCENARIOS);
const columnIds = listOf('columns', values.columns, COLUMN_IDS);
const rps = positive('rps', values.rps);
const timeoutMs = positive('timeout-ms', values['timeout-ms']);
const scaleDownDelaySeconds = positive('scale-down-delay', values['scale-down-delay']);

async function main(): Promise<void> {
  const argoBuild = columnIds.includes('argo') ? await ensureArgo(log) : undefined;
  const cluster = await startCluster({ name: 'teal-bench-traffic', log });
  const stop = () => stopCluster(cluster).catch(() => {});
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    const why = dataPlaneUnavailable(cluster.binDir);
    if (why) throw new Error(`the traffic bench needs the data plane: ${why}`);
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const clients = { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
    const logDir = mkdtempSync(join(tmpdir(), 'teal-bench-traffic-logs-'));
    log(`controller logs in ${logDir}`);
    let dp: DataPlane | undefined;
    const opts: ColumnOptions = {
      clients,
      kubeconfig: cluster.kubeconfig,
      logDir,
      scaleDownDelaySeconds,
      tealSource: values['teal-source'],
      dataPlane: () => dp,
      podAware: LB,
    };
    const columns = columnIds.map((id) =>
      id === 'argo'
        ? argoSelectorSwap({ ...opts, ...(argoBuild as { home: string; version: string }) }, 'traffic-argo')
        : tealPlain(opts, `traffic-${id}`, TEAL_VARIANTS[id]),
    );
    // The gateway columns' HTTPRoutes (the standard channel at the pinned version), before Teal starts.
    if (columnIds.some((id) => id === 'pingpong' || id === 'gateway')) await applyGatewayApi(cluster);
    for (const c of columns) {
      await clients.core.createNamespace({ body: { metadata: { name: c.namespace } } });
      for (const crd of c.crds()) await kubectlApply(cluster, crd);
    }
    dp = await startDataPlane({
      kc,
      binDir: cluster.binDir,
      namespaces: columns.map((c) => c.namespace),
      nodeName: NODE_NAME,
      nice: DATA_PLANE_NICE,
      log,
    });
    const results: ScenarioResult[] = [];
    try {
      for (const column of columns) results.push(...(await runColumn(column, dp)));
    } finally {
      await dp.stop();
    }
    console.log(columns.map((c) => `- ${c.title}: ${c.how}`).join('\n'));
    console.log(
      `- ${switches} switches a cell asked, ${rps} requests a second on each path, ${timeoutMs} ms timeout, ` +
        `scaleDownDelaySeconds and abortScaleDownDelaySeconds ${scaleDownDelaySeconds}\n`,
    );
    console.log(renderTraffic(results, columns, scenarios));
    console.log(JSON.stringify({ results }));
  } finally {
    await stop();
  }
}

async function runColumn(column: Column, dp: Awaited<ReturnType<typeof startDataPlane>>): Promise<ScenarioResult[]> {
  const ready = async (c: Controller) => {
    await waitFor(`${column.id} ready`, async () => ((await c.ready()) ? true : undefined), { timeoutMs: 300_000 });
    return c;
  };
  let controller = await ready(await column.start());
  const handle = {
    killAndRestart: async () => {
      await controller.kill();
      log(`${column.id}: killed -9 (pid ${controller.pid}); starting again`);
      controller = await column.start();
    },
  };
  const results: ScenarioResult[] = [];
  try {
    for (const scenario of scenarios) {
      log(
        `${column.id} ${scenario}: ${switches} switches, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
      );
      const result = await runScenario(column, scenario as Scenario, dp, handle, {
        switches,
        rps,
        timeoutMs,
        lb: LB,
        waitMs: 10 * 60_000 + scaleDownDelaySeconds * 1000,
        calmMs: 1_000,
        log,
      });
      results.push(result);
      // Each cell as soon as it ends: a long run that fails later still leaves its figures.
      log(`result ${JSON.stringify(result)}`);
    }
  } finally {
    await controller.stop();
  }
  return results;
}

await main();
