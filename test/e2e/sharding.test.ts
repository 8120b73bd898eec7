// Sharding (--shards N) on the real control plane: three replicas split the
// Apps of two namespaces by shard, each shard owned through its own Lease;
// kill -9 one and its shards move to the others, whose Apps keep converging.
// Who wrote what is told by each replica's own recording proxy to the API
// server (the audit log is off, and every replica writes as field manager
// "teal", so managedFields name the manager but not the replica).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../src/app/schema.ts';
import { LeaderElector } from '../../src/kube/leader-election.ts';
import { LABEL_ELECTION, LABEL_LEASE_ROLE, LABEL_SHARDS, shardLeaseName, shardOf } from '../../src/kube/shards.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { createApp, getApp, intent, patchSpec, phase, waitForApp } from '../support/apps.ts';
import { CHART, helm, helmErrors } from '../support/helm.ts';
import { canI, clients, createNamespace, serviceAccountKubeconfig, waitFor } from '../support/kube.ts';
import { find, operatorContainer, parseManifests } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const SHARDS = 6;
const ELECTION = 'teal-controller';
// Short leases (as the other e2e files), so a dead replica's shards move within seconds.
const LEASE = { duration: '15s', renew: '10s', retry: '2s' };

const coordination = clients().kc.makeApiClient(CoordinationV1Api);
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

interface Replica {
  op: Operator;
  recorder: ApiRecorder;
  identity: string;
}

/** A replica whose every request goes through its own recorder: what it wrote is known by replica. */
async function replica(leaseNs: string, watched: string[], shards = SHARDS): Promise<Replica> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-shard-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const recorder = await startApiRecorder(dir);
  cleanups.push(() => recorder.stop());
  const op = await startOperator({
    namespace: leaseNs,
    kubeconfig: recorder.kubeconfig,
    lease: LEASE,
    extraArgs: ['--shards', String(shards), '--namespace', watched.join(',')],
  });
  cleanups.push(() => op.kill());
  const identity = await waitFor('the replica to join the election', async () => {
    return /"identity":"([^"]+)"[^\n]*"msg":"joining the sharded election"/.exec(op.logs())?.[1];
  });
  return { op, recorder, identity };
}

/** The holder of each shard Lease that is held (an empty holder is a released Lease). */
async function holders(leaseNs: string, shards = SHARDS): Promise<Map<number, string>> {
  const list = await coordination.listNamespacedLease({
    namespace: leaseNs,
    labelSelector: `${LABEL_ELECTION}=${ELECTION}`,
  });
  const held = new Map<number, string>();
  for (let shard = 0; shard < shards; shard++) {
    const lease = list.items.find((l) => l.metadata?.name === shardLeaseName(ELECTION, shard));
    const holder = lease?.spec?.holderIdentity;
    if (holder) held.set(shard, holder);
  }
  return held;
}

/** Every shard held, by exactly these replicas, each with its fair share and none handing one back. */
async function spreadOver(leaseNs: string, replicas: readonly Replica[]): Promise<Map<number, string> | undefined> {
  const held = await holders(leaseNs);
  if (held.size < SHARDS) return undefined;
  const share = Math.ceil(SHARDS / replicas.length);
  for (const r of replicas) {
    const count = [...held.values()].filter((h) => h === r.identity).length;
    if (count < 1 || count > share || (await ownedMetric(r)) !== count) return undefined;
  }
  return [...held.values()].every((h) => replicas.some((r) => r.identity === h)) ? held : undefined;
}

async function ownedMetric(r: Replica): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${r.op.healthPort}/metrics`)).text();
  const value = /^teal_shards_owned (\S+)$/m.exec(text)?.[1];
  return value === undefined ? undefined : Number(value);
}

const APP_WRITE = new RegExp(`^/apis/${GROUP.replace('.', '\\.')}/${VERSION}/namespaces/([^/]+)/apps/([^/]+)`);

/** The Apps this replica sent a write for (status, metadata) among its requests from `from` on. */
function appsWritten(r: Replica, from: number): Set<string> {
  const apps = new Set<string>();
  for (const { method, path } of r.recorder.requests.slice(from)) {
    const match = method !== 'GET' ? APP_WRITE.exec(path) : null;
    if (match) apps.add(`${match[1]}/${match[2]}`);
  }
  return apps;
}

/** Two Apps in every shard, over two namespaces: whichever replica dies, it held some. */
function appsPerShard(namespaces: readonly string[]): string[] {
  const keys: string[] = [];
  const count = new Array<number>(SHARDS).fill(0);
  for (let i = 0; keys.length < 2 * SHARDS; i++) {
    const key = `${namespaces[i % namespaces.length]}/app-${i}`;
    const shard = shardOf(key, SHARDS);
    if ((count[shard] ?? 0) < 2) {
      count[shard] = (count[shard] ?? 0) + 1;
      keys.push(key);
    }
  }
  return keys;
}

const split = (key: string): [string, string] => {
  const [ns = '', name = ''] = key.split('/');
  return [ns, name];
};

/** Each App written by exactly one of the replicas, the holder of its shard. */
function writers(replicas: readonly Replica[], keys: readonly string[], marks: ReadonlyMap<Replica, number>) {
  return Object.fromEntries(
    keys.map((key) => [key, replicas.filter((r) => appsWritten(r, marks.get(r) ?? 0).has(key)).map((r) => r.identity)]),
  );
}

const marks = (replicas: readonly Replica[]) => new Map(replicas.map((r) => [r, r.recorder.requests.length]));

describe('three replicas with --shards 6', () => {
  it('split the Apps, each written only by its shard’s holder; one joining gets shards handed back, one killed has its shards taken', async () => {
    const ops = await createNamespace('shards');
    const other = await createNamespace('shards-b');
    cleanups.push(ops.remove, other.remove);
    const namespaces = [ops.name, other.name];
    const [a, b] = (await Promise.all([0, 1].map(() => replica(ops.name, namespaces)))) as [Replica, Replica];

    // Two replicas: three shards each, whoever started first.
    const byTwo = await waitFor('the shards to spread over two replicas', () => spreadOver(ops.name, [a, b]));
    let mark = marks([a, b]);
    const keys = appsPerShard(namespaces);
    for (const key of keys) {
      const [ns, name] = split(key);
      await createApp(ns, e2eApp(name, { replicas: 1 }));
    }
    for (const key of keys) await waitForApp(...split(key), 'first release', phase('Healthy'));
    const holderOf = (held: Map<number, string>) =>
      Object.fromEntries(keys.map((key) => [key, [held.get(shardOf(key, SHARDS))]]));
    expect(await holders(ops.name)).toEqual(byTwo);
    expect(writers([a, b], keys, mark)).toEqual(holderOf(byTwo));
    // Every replica writes as the one field manager "teal": the status has one manager, whoever wrote it.
    for (const key of keys) {
      const stored = (await getApp(...split(key))) as { metadata: { managedFields?: { manager?: string }[] } };
      const managers = new Set(stored.metadata.managedFields?.map((f) => f.manager));
      expect([...managers].filter((m) => m?.startsWith('teal'))).toEqual(['teal']);
    }

    // A third replica joins: each of the two drains and hands back one shard, and it takes them.
    const c = await replica(ops.name, namespaces);
    const byThree = await waitFor('the shards to spread over three replicas', () => spreadOver(ops.name, [a, b, c]));
    // Each logs it once the Lease is released, so the new holder may be seen a moment before the line.
    const handedBack = (r: typeof a) => r.op.logs().includes('handed back a shard');
    await waitFor('both to log the shard they handed back', async () => (handedBack(a) && handedBack(b)) || undefined);
    mark = marks([a, b, c]);
    for (const key of keys) await patchSpec(...split(key), { image: 'registry.example.com/team/web:2' });
    for (const key of keys) {
      await waitForApp(
        ...split(key),
        'the new revision in preview',
        (app) => phase('Paused')(app) && app.status?.preview?.revision === 2,
      );
    }
    expect(await holders(ops.name)).toEqual(byThree);
    expect(writers([a, b, c], keys, mark)).toEqual(holderOf(byThree));

    // kill -9 one replica: its shards expire and move to the two left, and its Apps keep converging.
    const victimShards = [...byThree].filter(([, h]) => h === a.identity).map(([s]) => s);
    await a.op.kill();
    const moved = await waitFor('the dead replica’s shards to move', () => spreadOver(ops.name, [b, c]));
    for (const shard of victimShards) expect([b.identity, c.identity]).toContain(moved.get(shard));
    mark = marks([b, c]);
    for (const key of keys) await intent(...split(key), 'promote');
    for (const key of keys) {
      await waitForApp(...split(key), 'promoted', (app) => phase('Healthy')(app) && app.status?.active?.revision === 2);
    }
    expect(await holders(ops.name)).toEqual(moved);
    expect(writers([b, c], keys, mark)).toEqual(holderOf(moved));
    expect(keys.filter((key) => victimShards.includes(shardOf(key, SHARDS))).length).toBeGreaterThan(0);
    // Nobody lost a shard it did not hand back, and a dead replica's shards were no stranger's.
    for (const r of [b, c]) expect(r.op.logs()).not.toContain('lost a shard');
    for (const r of [b, c]) expect(r.op.logs()).not.toContain('a shard is held by no live member');
  });
});

describe('replicas that split the Apps otherwise', () => {
  it('a sharded replica acquires nothing while an unsharded one leads, nor while one of another --shards lives', async () => {
    const ns = await createNamespace('shards-mixed');
    cleanups.push(ns.remove);
    const plain = await startOperator({ namespace: ns.name, lease: LEASE });
    cleanups.push(() => plain.kill());
    const plainId = await waitFor('the unsharded replica to lead', async () => {
      const id = /"identity":"([^"]+)"/.exec(plain.logs())?.[1];
      const lease = await coordination
        .readNamespacedLease({ name: ELECTION, namespace: ns.name })
        .catch(() => undefined);
      return id && lease?.spec?.holderIdentity === id ? id : undefined;
    });

    const six = await replica(ns.name, [ns.name]);
    await waitFor('the sharded replica to wait for the unsharded one', async () =>
      six.op.logs().includes(`${plainId} holds the unsharded Lease ${ELECTION} (--shards 1)`) ? true : undefined,
    );
    expect(await holders(ns.name)).toEqual(new Map());

    // Stopped, the unsharded replica releases its Lease: the sharded one takes every shard.
    expect(await plain.stop()).toBe(0);
    await waitFor('the sharded replica to hold every shard', () => spreadOver(ns.name, [six]));

    // A replica of another shard count waits while this one lives, and takes over once it is gone.
    const four = await replica(ns.name, [ns.name], 4);
    await waitFor('the --shards 4 replica to wait', async () =>
      four.op.logs().includes('live replicas run --shards 6') ? true : undefined,
    );
    expect([...(await holders(ns.name)).values()].every((h) => h === six.identity)).toBe(true);
    expect(await six.op.stop()).toBe(0);
    const taken = await waitFor('the --shards 4 replica to hold its four shards', async () => {
      const held = await holders(ns.name, 4);
      return held.size === 4 && [...held.values()].every((h) => h === four.identity) ? held : undefined;
    });
    expect(taken.size).toBe(4);
    expect(four.op.logs()).not.toContain('lost a shard');
  });
});

describe('the chart with sharding.shards', () => {
  it('grants what sharding needs in the release namespace only: a replica under its token takes its shards and clears a dead member', async () => {
    const ns = await createNamespace('shards-chart');
    const apps = await createNamespace('shards-chart-apps');
    cleanups.push(ns.remove, apps.remove);
    const values = ['--set', 'sharding.shards=3', '--set', 'replicaCount=1', '--set', `watchNamespaces={${apps.name}}`];
    const installed = await helm(['install', 'shd', CHART, '--namespace', ns.name, ...values]);
    expect(helmErrors(installed.stderr)).toEqual([]);
    cleanups.push(() => helm(['uninstall', 'shd', '--namespace', ns.name]));
    const objects = parseManifests((await helm(['get', 'manifest', 'shd', '--namespace', ns.name])).stdout);
    const [sa] = find(objects, 'ServiceAccount');
    if (!sa) throw new Error('the chart made no ServiceAccount');
    const user = `system:serviceaccount:${ns.name}:${sa.metadata.name}`;
    for (const verb of ['list', 'delete']) {
      expect(`${verb}: ${await canI(verb, 'leases.coordination.k8s.io', user, ['-n', ns.name])}`).toBe(`${verb}: yes`);
      expect(`${verb}: ${await canI(verb, 'leases.coordination.k8s.io', user, ['-n', apps.name])}`).toBe(`${verb}: no`);
    }

    // A member Lease nobody renews: a replica that died without leaving.
    const election = 'shd-teal';
    const time = new V1MicroTime();
    await coordination.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: {
          name: `${election}-member-ghost`,
          labels: { [LABEL_ELECTION]: election, [LABEL_LEASE_ROLE]: 'member', [LABEL_SHARDS]: '3' },
        },
        spec: { holderIdentity: 'ghost', leaseDurationSeconds: 15, acquireTime: time, renewTime: time },
      },
    });

    const kubeconfig = await serviceAccountKubeconfig(
      ns.name,
      sa.metadata.name,
      join(tmpdir(), `${ns.name}.kubeconfig`),
    );
    const op = await startOperator({
      namespace: ns.name,
      kubeconfig,
      deployed: { args: operatorContainer(objects).args, podNamespace: ns.name },
    });
    cleanups.push(() => op.kill());
    const identity = await waitFor('the replica to join', async () => {
      return /"identity":"([^"]+)"[^\n]*"msg":"joining the sharded election"/.exec(op.logs())?.[1];
    });
    await waitFor('the dead member’s Lease to be deleted', async () => {
      const left = await coordination
        .readNamespacedLease({ name: `${election}-member-ghost`, namespace: ns.name })
        .catch(() => undefined);
      return left ? undefined : true;
    });
    await waitFor('the replica to hold all three shards', async () => {
      const list = await coordination.listNamespacedLease({
        namespace: ns.name,
        labelSelector: `${LABEL_LEASE_ROLE}=shard`,
      });
      const mine = list.items.filter((l) => l.spec?.holderIdentity === identity);
      return mine.length === 3 ? true : undefined;
    });
    await createApp(apps.name, e2eApp('sharded', { replicas: 1 }));
    await waitForApp(apps.name, 'sharded', 'first release', phase('Healthy'));
    expect(op.logs()).not.toMatch(/forbidden/i);
  });
});

describe('a shard’s elector handed what the election saw', () => {
  it('takes a Lease not renewed for longer than its duration at once, not a duration after its own first read', async () => {
    const ns = await createNamespace('shards-seen');
    cleanups.push(ns.remove);
    const time = new V1MicroTime();
    // Ten minutes: an elector that judged expiry from its own first read would wait that long.
    const dead = await coordination.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: 'seen' },
        spec: {
          holderIdentity: 'dead',
          leaseDurationSeconds: 600,
          acquireTime: time,
          renewTime: time,
          leaseTransitions: 0,
        },
      },
    });
    const elector = new LeaderElector({
      kubeConfig: clients().kc,
      namespace: ns.name,
      name: 'seen',
      identity: 'heir',
      onStartedLeading: () => {},
      onStoppedLeading: () => {},
      // Seen unchanged for longer than its duration, as the election's list would have.
      seen: { lease: dead, at: performance.now() - 601_000 },
    });
    cleanups.push(() => elector.stop());
    await elector.start();
    await waitFor('the elector to lead', async () => (elector.isLeader() ? true : undefined));
    const taken = await coordination.readNamespacedLease({ name: 'seen', namespace: ns.name });
    expect(taken.spec?.holderIdentity).toBe('heir');
    expect(taken.spec?.leaseTransitions).toBe(1);
  });
});

describe('a shard Lease held by a stranger (issue #24 S7)', () => {
  it('is told in the log, a Warning Event on the Lease, teal_shard_stranded and /readyz; once deleted, the shard is taken', async () => {
    const ns = await createNamespace('shards-stranger');
    cleanups.push(ns.remove);
    const shards = 3;
    const lease = shardLeaseName(ELECTION, 1);
    // As a hand edit leaves it: Teal's labels, a foreign holder, a day to run.
    const time = new V1MicroTime();
    await coordination.createNamespacedLease({
      namespace: ns.name,
      body: {
        metadata: { name: lease, labels: { [LABEL_ELECTION]: ELECTION, [LABEL_LEASE_ROLE]: 'shard' } },
        spec: { holderIdentity: 'stranger', leaseDurationSeconds: 86_400, acquireTime: time, renewTime: time },
      },
    });
    const r = await replica(ns.name, [ns.name], shards);
    const inShard = (shard: number) => {
      for (let i = 0; ; i++) if (shardOf(`${ns.name}/app-${i}`, shards) === shard) return `app-${i}`;
    };
    const [strandedApp, servedApp] = [inShard(1), inShard(0)];
    await createApp(ns.name, e2eApp(strandedApp, { replicas: 1 }));
    await createApp(ns.name, e2eApp(servedApp, { replicas: 1 }));
    await waitForApp(ns.name, servedApp, 'the App of a held shard released', phase('Healthy'));

    const warning = await waitFor('a warning naming the shard and its holder', async () =>
      r.op
        .logs()
        .split('\n')
        .find((line) => line.includes('"level":40') && line.includes('a shard is held by no live member')),
    );
    expect(warning).toContain('"shard":1');
    expect(warning).toContain('"holder":"stranger"');
    const events = await waitFor('a Warning Event on the Lease', async () => {
      const list = await clients().core.listNamespacedEvent({
        namespace: ns.name,
        fieldSelector: `involvedObject.kind=Lease,involvedObject.name=${lease}`,
      });
      return list.items.length > 0 ? list.items : undefined;
    });
    expect(events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'ShardStranded']]);
    expect(events[0]?.message).toContain('shard 1 is held by stranger');
    const metrics = await (await fetch(`http://127.0.0.1:${r.op.healthPort}/metrics`)).text();
    expect(metrics).toMatch(/^teal_shard_stranded\{shard="1",holder="stranger"\} 1$/m);
    const ready = await fetch(`http://127.0.0.1:${r.op.healthPort}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { shards?: unknown }).shards).toEqual({
      owned: [0, 2],
      stranded: [{ shard: 1, lease, holder: 'stranger' }],
    });
    // Its App waits: nobody reconciles it.
    expect((await getApp(ns.name, strandedApp)).status?.phase).toBeUndefined();

    // The remedy docs/sharding.md gives: delete the Lease; the replica takes the shard.
    await coordination.deleteNamespacedLease({ name: lease, namespace: ns.name });
    await waitForApp(ns.name, strandedApp, 'the stranded App released', phase('Healthy'));
    const after = await waitFor('/readyz to name no stranded shard', async () => {
      const body = (await (await fetch(`http://127.0.0.1:${r.op.healthPort}/readyz`)).json()) as {
        shards?: { stranded?: unknown[] };
      };
      return body.shards?.stranded?.length === 0 ? body : undefined;
    });
    expect(after.shards).toEqual({ owned: [0, 1, 2], stranded: [] });
    const cleared = await (await fetch(`http://127.0.0.1:${r.op.healthPort}/metrics`)).text();
    expect(cleared).not.toMatch(/^teal_shard_stranded\{/m);
    expect(r.op.logs()).toContain('a shard is no longer held by a stranger');
  });
});
