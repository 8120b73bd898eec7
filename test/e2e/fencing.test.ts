// Only the Lease holder's writes land: an operator cut off from the API server
// by a network that loses packets (a TCP proxy that holds bytes, refusing
// nothing) must not have its writes land once another replica leads, and
// SIGTERM must stop it however its requests hang.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, PatchStrategy, setHeaderOptions, type V1ReplicaSet } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, phase, replicaSetsOf, waitForApp } from '../support/apps.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';
import { type Operator, type OperatorOptions, startOperator } from '../support/operator.ts';
import { apiServerAddress, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

const { custom } = clients();
// Long enough that the leader surely sends its write before its lease runs out.
const LEASE = { duration: '10s', renew: '8s', retry: '1s' };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

async function namespace(prefix: string): Promise<string> {
  const { name, remove } = await createNamespace(prefix);
  cleanups.push(remove);
  return name;
}

/** A proxy to the API server, and a kubeconfig file that reaches the API server through it. */
async function proxied(ns: string): Promise<{ proxy: TcpProxy; kubeconfig: string }> {
  const kc = kubeConfig();
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const proxy = await startTcpProxy(apiServerAddress(cluster.server));
  cleanups.push(() => proxy.close());
  const via = new KubeConfig();
  via.loadFromOptions({
    clusters: kc.clusters.map((c) =>
      c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${proxy.port}` } : c,
    ),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.getCurrentContext(),
  });
  const kubeconfig = join(tmpdir(), `teal-e2e-${ns}-proxied.kubeconfig`);
  writeFileSync(kubeconfig, via.exportConfig(), { mode: 0o600 });
  return { proxy, kubeconfig };
}

async function operator(options: OperatorOptions): Promise<Operator & { exit: Promise<number | null> }> {
  const op = await startOperator({ ...options, restartOnLeaseLoss: false });
  cleanups.push(() => op.kill());
  const exit = new Promise<number | null>((resolve) => {
    if (op.process.exitCode !== null) resolve(op.process.exitCode);
    else op.process.once('exit', (code) => resolve(code));
  });
  return Object.assign(op, { exit });
}

async function leads(op: Operator): Promise<true | undefined> {
  const res = await fetch(`http://127.0.0.1:${op.healthPort}/readyz`);
  return ((await res.json()) as { leader?: boolean }).leader === true ? true : undefined;
}

async function onlyReplicaSet(ns: string, app: string): Promise<V1ReplicaSet> {
  const [rs, ...more] = await replicaSetsOf(ns, app);
  if (!rs || more.length > 0) throw new Error(`expected one ReplicaSet of ${app}`);
  return rs;
}

/** No reconcile running or queued: a write in flight from now on comes from the next change. */
async function idle(op: Operator): Promise<true | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${op.healthPort}/metrics`)).text();
  const gauge = (name: string) => new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1];
  return gauge('controller_runtime_active_workers') === '0' && gauge('workqueue_depth') === '0' ? true : undefined;
}

/** The operator logged the ReplicaSet write it is about to send (scaling to replicas). */
const sendsScale = (op: Operator, replicas: number) =>
  new RegExp(`"spec":\\{"replicas":${replicas}\\}[^\\n]*"msg":"updating ReplicaSet"`).test(op.logs());

/** spec.replicas through the test's own client, quicker than kubectl, while the lease runs. */
async function scale(ns: string, replicas: number): Promise<void> {
  await custom.patchNamespacedCustomObject(
    { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name: 'fence', body: { spec: { replicas } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** A one-replica App released, then a held network, then a change that makes the operator write. */
async function writeIntoHeldNetwork(ns: string, proxy: TcpProxy, op: Operator): Promise<void> {
  await createApp(ns, e2eApp('fence', { replicas: 1 }));
  await waitForApp(ns, 'fence', 'first release', phase('Healthy'));
  // Else the release's last writes (its Events) could be what the network holds, and the change waits behind them.
  await waitFor('the operator to be idle', () => idle(op));
  proxy.hold();
  await scale(ns, 2);
  // Its watch still delivers, so it plans the scale-up and sends the patch, which the network holds.
  await waitFor('the operator to send its write', async () => (sendsScale(op, 2) ? true : undefined));
}

describe('fencing a leader cut off from the API server', () => {
  it('the old leader aborts what it sent and exits by itself; none of it lands once the standby leads', async () => {
    const ns = await namespace('fence');
    const { proxy, kubeconfig } = await proxied(ns);
    const a = await operator({ namespace: ns, kubeconfig, lease: LEASE });
    await waitFor('A to lead', () => leads(a));
    const b = await operator({ namespace: ns, lease: LEASE });

    await writeIntoHeldNetwork(ns, proxy, a);

    // B takes the lease once A's has expired, and acts on a later change.
    await waitFor('B to lead', () => leads(b));
    await scale(ns, 3);
    const byB = await waitFor('B to scale to 3', async () => {
      const rs = await onlyReplicaSet(ns, 'fence');
      return rs.spec?.replicas === 3 ? rs : undefined;
    });

    // The network heals once A is done: exited, with the proxy having seen its
    // sockets close, or (old behaviour) still draining what it had sent.
    await waitFor('A to have exited or to be stuck stopping', async () =>
      (a.process.exitCode !== null && proxy.connections() === 0) || a.logs().includes('draining reconciles')
        ? true
        : undefined,
    );
    proxy.release();
    const code = await a.exit;

    // Nothing A had sent changed the ReplicaSet after B's write: a landing
    // scale to 2 would have raised its generation.
    const now = await onlyReplicaSet(ns, 'fence');
    expect(now.metadata?.generation).toBe(byB.metadata?.generation);
    expect(now.spec?.replicas).toBe(3);
    expect(code).toBe(1);
    expect(a.logs()).toContain('lost the lease: aborted the API requests in flight, exiting without draining');
    expect(a.logs()).not.toContain('draining reconciles');
    expect(proxy.droppedBytes()).toBeGreaterThan(0);
    expect(await leads(b)).toBe(true);
  });
});

describe('SIGTERM while a write hangs in the network', () => {
  it('stops gracefully: the hanging write times out, so the drain ends', async () => {
    const ns = await namespace('sigterm');
    const { proxy, kubeconfig } = await proxied(ns);
    // A 3 s renew deadline, so requests time out after half of it.
    const lease = { duration: '4s', renew: '3s', retry: '500ms' };
    const op = await operator({ namespace: ns, kubeconfig, lease, extraArgs: ['--leader-elect=false'] });
    await writeIntoHeldNetwork(ns, proxy, op);

    expect(await op.stop()).toBe(0);
    expect(op.logs()).toMatch(/"err":"API request timed out after 1500 ms"[^\n]*"msg":"reconcile failed; will retry"/);
  });

  it('exits at --graceful-shutdown-timeout when the drain takes longer, saying why', async () => {
    const ns = await namespace('sigterm');
    const { proxy, kubeconfig } = await proxied(ns);
    const op = await operator({
      namespace: ns,
      kubeconfig,
      // Requests that outlast the test: only the shutdown deadline can end the drain.
      lease: { duration: '120s', renew: '100s', retry: '2s' },
      extraArgs: ['--leader-elect=false', '--request-timeout', '90s', '--graceful-shutdown-timeout', '1s'],
    });
    await writeIntoHeldNetwork(ns, proxy, op);

    expect(await op.stop()).toBe(1);
    expect(op.logs()).toContain(
      'still stopping after 1s (--graceful-shutdown-timeout): aborted the API requests in flight, exiting without draining',
    );
  });
});
