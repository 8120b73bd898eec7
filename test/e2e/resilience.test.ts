// The operator under faults: two replicas with one leader, a leader killed
// with SIGKILL, and a kill -9 in the middle of a promotion.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { intentAnnotation } from '../../src/app/intents.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  getApp,
  intent,
  patchSpec,
  phase,
  selectorHash,
  waitForApp,
  watchActiveServices,
} from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, type OperatorOptions, startOperator } from '../support/operator.ts';

const coordination = clients().kc.makeApiClient(CoordinationV1Api);
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

function app(name: string): AppInput {
  return e2eApp(name, { replicas: 3 });
}

const WRITES =
  /"msg":"(creating ReplicaSet|updating ReplicaSet|applying Service|deleting old ReplicaSet|status written)"/;

async function holder(namespace: string): Promise<string | undefined> {
  const lease = await coordination.readNamespacedLease({ namespace, name: 'teal-controller' }).catch(() => undefined);
  return lease?.spec?.holderIdentity || undefined;
}

async function operatorIn(namespace: string, lease?: OperatorOptions['lease']): Promise<Operator> {
  const op = await startOperator({ namespace, ...(lease ? { lease } : {}) });
  cleanups.push(() => op.kill());
  return op;
}

const identity = (op: Operator) => /"identity":"([^"]+)"/.exec(op.logs())?.[1];

describe('two operator replicas', () => {
  it('only the leader writes, and killing it hands over to the standby', async () => {
    const { name: ns, remove } = await createNamespace('ha');
    cleanups.push(remove);
    const a = await operatorIn(ns);
    await waitFor('a to lead', async () => ((await holder(ns)) === identity(a) ? true : undefined));
    const b = await operatorIn(ns);

    await createApp(ns, app('ha'));
    await waitForApp(ns, 'ha', 'first release', phase('Healthy'));
    expect(a.logs()).toMatch(WRITES);
    expect(b.logs()).not.toMatch(WRITES);
    expect(b.logs()).toMatch(/"msg":"caches synced"/);
    // The standby serves health and readiness too.
    expect((await fetch(`http://127.0.0.1:${b.healthPort}/readyz`)).status).toBe(200);

    await a.kill();
    await patchSpec(ns, 'ha', { image: 'registry.example.com/team/web:2' });
    const started = Date.now();
    await waitForApp(
      ns,
      'ha',
      'preview by the new leader',
      (x) => phase('Paused')(x) && x.status?.preview?.revision === 2,
    );
    expect(await holder(ns)).toBe(identity(b));
    expect(b.logs()).toMatch(/became leader/);
    expect(b.logs()).toMatch(WRITES);
    console.log(
      `after SIGKILL of the leader, the standby released the next revision in ${Date.now() - started} ms (15 s lease)`,
    );
  });

  it('a standby takes over at once when the leader stops gracefully and releases the lease', async () => {
    const { name: ns, remove } = await createNamespace('handover');
    cleanups.push(remove);
    // A lease far longer than a busy machine's handover: only a release lets b in before it ends.
    const lease = { duration: '60s', renew: '40s', retry: '500ms' };
    const a = await operatorIn(ns, lease);
    await waitFor('a to lead', async () => ((await holder(ns)) === identity(a) ? true : undefined));
    const b = await operatorIn(ns, lease);
    const before = await coordination.readNamespacedLease({ namespace: ns, name: 'teal-controller' });
    expect(await a.stop()).toBe(0);
    await waitFor('b to lead', async () => ((await holder(ns)) === identity(b) ? true : undefined));
    // Released, not expired: b acquired it before a's last renewal plus the lease duration.
    const after = await coordination.readNamespacedLease({ namespace: ns, name: 'teal-controller' });
    const renewed = Date.parse(String(before.spec?.renewTime));
    const acquired = Date.parse(String(after.spec?.acquireTime));
    expect(acquired).toBeLessThan(renewed + (before.spec?.leaseDurationSeconds ?? 0) * 1000);
    expect(after.spec?.leaseTransitions).toBe((before.spec?.leaseTransitions ?? 0) + 1);
  });
});

describe('kill -9 during a promotion', () => {
  it('converges after restart, with the promotion recorded exactly once', async () => {
    const { name: ns, remove } = await createNamespace('crash');
    cleanups.push(remove);
    const invariant = await watchActiveServices(ns);
    cleanups.push(async () => invariant.stop());
    const first = await operatorIn(ns);
    await createApp(ns, app('crash'));
    const released = await waitForApp(ns, 'crash', 'first release', phase('Healthy'));
    const h1 = released.status?.active?.podTemplateHash;
    await patchSpec(ns, 'crash', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'crash', 'preview', phase('Paused'));

    await intent(ns, 'crash', 'promote');
    // Kill as soon as the promotion is under way: before, at or just after the switch.
    await waitFor(
      'the promotion to start',
      async () => ((await getApp(ns, 'crash')).status?.promotion ? true : undefined),
      {
        intervalMs: 20,
      },
    );
    await first.kill();
    const midway = await getApp(ns, 'crash');

    await operatorIn(ns);
    const done = await waitForApp(
      ns,
      'crash',
      'converged',
      (x) => phase('Healthy')(x) && x.status?.active?.revision === 2,
    );
    const entries = done.status?.history?.filter((h) => h.revision === 2) ?? [];
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ promotedBy: 'e2e', promotedVia: 'kubectl' });
    expect(await selectorHash(ns, 'crash')).toBe(done.status?.active?.podTemplateHash);
    expect(await selectorHash(ns, 'crash')).not.toBe(h1);
    expect(invariant.violations).toEqual([]);
    // For the record: where the kill landed.
    console.log(
      `killed with status.promotion=${JSON.stringify(midway.status?.promotion)} active=${midway.status?.active?.revision}`,
    );
  });

  it('concurrent identical promotes give one promotion', async () => {
    const { name: ns, remove } = await createNamespace('twice');
    cleanups.push(remove);
    await operatorIn(ns);
    await createApp(ns, app('twice'));
    await waitForApp(ns, 'twice', 'first release', phase('Healthy'));
    await patchSpec(ns, 'twice', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'twice', 'preview', phase('Paused'));
    await Promise.all([1, 2, 3, 4].map(() => intent(ns, 'twice', 'promote', { revision: 2 })));
    const done = await waitForApp(
      ns,
      'twice',
      'promoted',
      (x) => phase('Healthy')(x) && x.status?.active?.revision === 2,
    );
    // Each annotate overwrote the one before: once the id that stayed is handled, so is
    // every promote the operator will ever see.
    const { annotations } = (await getApp(ns, 'twice')).metadata as { annotations?: Record<string, string> };
    const last = (JSON.parse(annotations?.[intentAnnotation('promote')] ?? '{}') as { id?: string }).id;
    const after = await waitForApp(
      ns,
      'twice',
      'the last promote handled',
      (x) => x.status?.handledIntents?.promote === last,
    );
    expect(after.status?.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect(after.status?.history).toEqual(done.status?.history);
  });
});
