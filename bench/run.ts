// The side-by-side benchmark of Teal and the Argo Rollouts controller (make
// bench; docs/benchmark.md says what each figure means). One local control
// plane with the API server's audit log on; for each size, Teal then Argo,
// each in its own namespace and never both at once.
//
//   node bench/run.ts [--apps 100,1000] [--promotions 50] [--idle 60] [--quiet 10] [--promote-after 1000]
//                     [--only teal|argo] [--teal-source]
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { type Cluster, kubectlApply, startCluster, stopCluster } from '../test/cluster/cluster.ts';
import { WAIT_MS, waitFor } from '../test/support/wait.ts';
import { ensureArgo } from './argo-build.ts';
import { AUDIT_POLICY, DRIVER_USER } from './audit.ts';
import { AuditLog } from './audit-log.ts';
import { type RunResult, runScenario, type ScenarioOptions } from './scenario.ts';
import { argo, type Clients, killControllers, type Subject, teal } from './subjects.ts';
import { renderTable } from './table.ts';

const log = (line: string) => console.error(`bench: ${line}`);

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '1000' },
    promotions: { type: 'string', default: '50' },
    idle: { type: 'string', default: '60' },
    quiet: { type: 'string', default: '10' },
    'promote-after': { type: 'string', default: '1000' },
    only: { type: 'string' },
    'teal-source': { type: 'boolean', default: false },
  },
});
const sizes = values.apps.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--apps: positive integers, got ${values.apps}`);
const controllers = values.only === undefined ? ['teal', 'argo'] : [values.only];
if (controllers.some((c) => c !== 'teal' && c !== 'argo')) throw new Error(`--only: teal or argo, got ${values.only}`);

/**
 * The bench's own client impersonates a user of its own, so that the audit
 * log tells its requests from Teal's: both are undici's fetch by user agent.
 */
async function driverClients(cluster: Cluster): Promise<{ kc: KubeConfig; clients: Clients }> {
  const admin = new KubeConfig();
  admin.loadFromFile(cluster.kubeconfig);
  await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
    body: {
      metadata: { name: DRIVER_USER },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: DRIVER_USER }],
    },
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: admin.clusters,
    contexts: admin.contexts,
    currentContext: admin.currentContext,
    users: admin.users.map((u) => ({ ...u, impersonateUser: DRIVER_USER })),
  });
  return { kc, clients: { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) } };
}

async function main(): Promise<void> {
  const argoBuild = controllers.includes('argo') ? await ensureArgo(log) : undefined;
  const cluster = await startCluster({
    name: 'teal-bench',
    log,
    auditPolicy: AUDIT_POLICY,
    // Two Services per App and controller: 40,000 at 10,000 Apps.
    serviceClusterIPRange: '10.96.0.0/16',
  });
  const stop = () => stopCluster(cluster).catch(() => {});
  process.once('exit', killControllers);
  process.once('SIGINT', () => {
    killControllers();
    void stop().then(() => process.exit(130));
  });
  try {
    const results = await runAll(cluster, argoBuild);
    console.log(renderTable(results));
    console.log(JSON.stringify({ results }));
  } finally {
    await stop();
  }
}

async function runAll(cluster: Cluster, argoBuild: { home: string; version: string } | undefined) {
  const { kc, clients } = await driverClients(cluster);
  const audit = new AuditLog(cluster.auditLog as string);
  const logDir = mkdtempSync(join(tmpdir(), 'teal-bench-logs-'));
  mkdirSync(logDir, { recursive: true });
  log(`controller logs in ${logDir}`);
  const common = { clients, kubeconfig: cluster.kubeconfig, logDir, apply: (m: string) => kubectlApply(cluster, m) };
  const subjectFor = (id: string, apps: number): Subject =>
    id === 'teal'
      ? teal(
          {
            ...common,
            source: values['teal-source'],
            nodeArgs: (process.env.TEAL_OPERATOR_NODE_ARGS ?? '').split(' ').filter(Boolean),
          },
          `bench-teal-${apps}`,
        )
      : argo({ ...common, ...(argoBuild as { home: string; version: string }) }, `bench-argo-${apps}`);
  for (const id of controllers) {
    const subject = subjectFor(id, 1);
    await subject.install();
    // A CRD is served a moment after it is created.
    await waitFor(`${id}'s CRDs to be served`, () => subject.list().then(() => true), { timeoutMs: WAIT_MS });
  }
  const results: RunResult[] = [];
  for (const apps of sizes) {
    const opts: ScenarioOptions = {
      apps,
      promotions: Number(values.promotions),
      idleSeconds: Number(values.idle),
      quietMs: Number(values.quiet) * 1000,
      createConcurrency: 8,
      promoteAfterMs: Number(values['promote-after']),
      log,
    };
    for (const id of controllers) {
      const result = await runScenario(subjectFor(id, apps), kc, clients, audit, opts);
      results.push(result);
      // Each run as it ends, so that a long run that fails later still leaves its figures.
      log(`result ${JSON.stringify(result)}`);
    }
  }
  return results;
}

await main();
