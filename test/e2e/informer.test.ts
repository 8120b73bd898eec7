// The informer against the real control plane: list, watch, bookmarks,
// relist after 410 Gone, the watchdog, retries, and a clean stop.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type DeleteInfo,
  diffRelist,
  Informer,
  type InformerOptions,
  type RawObject,
} from '../../src/kube/informer.ts';
import { clients, createNamespace, kubeConfig, WAIT_MS, waitFor } from '../support/kube.ts';

const { core } = clients();
let ns: string;
let removeNs: () => Promise<void>;

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('informer'));
});
afterAll(async () => removeNs());

interface Cm {
  metadata: { namespace?: string; name?: string; resourceVersion?: string; labels?: Record<string, string> };
  color: string | undefined;
}

// Keeps one field of many (a ConfigMap's data or a Gadget's spec): the store must hold only this shape.
const trimFrom =
  (field: 'data' | 'spec') =>
  (raw: RawObject): Cm => {
    const fields = raw[field];
    const color = typeof fields === 'object' && fields !== null ? (fields as { color?: string }).color : undefined;
    const { namespace, name, resourceVersion, labels } = raw.metadata ?? {};
    return { metadata: { namespace, name, resourceVersion, labels }, color };
  };

const started: Informer<Cm>[] = [];
afterEach(() => {
  for (const informer of started.splice(0)) informer.stop();
});

function informer(testCase: string, options: Partial<InformerOptions<Cm>> = {}) {
  const inf = new Informer<Cm>({
    kubeConfig: kubeConfig(),
    path: `/api/v1/namespaces/${ns}/configmaps`,
    labelSelector: `case=${testCase}`,
    transform: trimFrom('data'),
    ...options,
  });
  const events: string[] = [];
  inf.addHandler({
    onAdd: (o) => events.push(`add ${o.metadata.name} ${o.color}`),
    onUpdate: (old, o) => events.push(`update ${o.metadata.name} ${old.color}->${o.color}`),
    onDelete: (o, info: DeleteInfo) =>
      events.push(`delete ${o.metadata.name}${info.finalStateUnknown ? ' (relist)' : ''}`),
  });
  started.push(inf);
  return { inf, events };
}

const create = async (testCase: string, name: string, color: string) =>
  core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name, labels: { case: testCase } }, data: { color, extra: 'x'.repeat(1000) } },
  });
const recolor = async (testCase: string, name: string, color: string) =>
  core.replaceNamespacedConfigMap({
    name,
    namespace: ns,
    body: { metadata: { name, labels: { case: testCase } }, data: { color, extra: 'x'.repeat(1000) } },
  });
const remove = async (name: string) => core.deleteNamespacedConfigMap({ name, namespace: ns });

const names = (items: Cm[]) => items.map((o) => o.metadata.name).sort();
const eventually = (what: string, events: string[], expected: string[]) =>
  waitFor(what, async () => (expected.every((e) => events.includes(e)) ? true : undefined));

describe('Informer', () => {
  it('lists existing objects, syncs, then delivers watch events in the trimmed shape', async () => {
    await create('basic', 'a', 'red');
    await create('basic', 'b', 'blue');
    const { inf, events } = informer('basic');
    expect(inf.hasSynced()).toBe(false);
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    expect(inf.hasSynced()).toBe(true);
    expect(names(inf.list())).toEqual(['a', 'b']);
    expect(events.sort()).toEqual(['add a red', 'add b blue']);
    const a = inf.get(ns, 'a');
    expect(a).toEqual({
      metadata: { namespace: ns, name: 'a', resourceVersion: expect.any(String), labels: { case: 'basic' } },
      color: 'red',
    });
    expect(a).not.toHaveProperty('data');
    inf.addIndex('color', (o) => (o.color ? [o.color] : []));
    expect(names(inf.byIndex('color', 'red'))).toEqual(['a']);

    events.length = 0;
    await create('basic', 'c', 'green');
    await recolor('basic', 'a', 'blue');
    await remove('b');
    await eventually('watch events', events, ['add c green', 'update a red->blue', 'delete b']);
    expect(events).toEqual(['add c green', 'update a red->blue', 'delete b']);
    expect(inf.get(ns, 'a')?.color).toBe('blue');
    expect(inf.get(ns, 'b')).toBeUndefined();
    expect(names(inf.listByNamespace(ns))).toEqual(['a', 'c']);
    expect(inf.listByNamespace('elsewhere')).toEqual([]);
    expect(names(inf.byIndex('color', 'blue'))).toEqual(['a']);
    expect(names(inf.byIndex('color', 'red'))).toEqual([]);
    expect(inf.stats()).toMatchObject({ lists: 1, watches: 1, relists: 0, events: 3 });
  });

  it('pages through the list', async () => {
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5']) await create('paged', name, 'red');
    const { inf } = informer('paged', { pageSize: 2 });
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    expect(names(inf.list())).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect(inf.stats().lists).toBe(3);
  });

  it('asks for the next page before transforming the one it has', async () => {
    for (const name of ['q1', 'q2', 'q3', 'q4', 'q5']) await create('prefetch', name, 'red');
    // The list requests sent when each object is transformed: page 1's two with page 2 already asked for.
    const sentWhenTransformed: number[] = [];
    const trim = trimFrom('data');
    const held: { inf?: Informer<Cm> } = {};
    const { inf } = informer('prefetch', {
      pageSize: 2,
      transform: (raw) => {
        sentWhenTransformed.push(held.inf?.stats().lists ?? 0);
        return trim(raw);
      },
    });
    held.inf = inf;
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    expect(names(inf.list())).toEqual(['q1', 'q2', 'q3', 'q4', 'q5']);
    expect(sentWhenTransformed).toEqual([2, 2, 3, 3, 3]);
  });

  it('advances the resourceVersion on bookmarks and re-watches without listing', async () => {
    const { inf } = informer('bookmark', { watchTimeoutSeconds: 3 });
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    // Outside the selector: no event for it, but bookmarks carry the cache's newer resourceVersion.
    const unseen = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'unseen' } } });
    const target = BigInt(unseen.metadata?.resourceVersion ?? '0');
    await waitFor('a bookmark past the unseen object', async () =>
      inf.stats().bookmarks > 0 && BigInt(inf.resourceVersion ?? '0') >= target ? true : undefined,
    );
    // Each watch ends after timeoutSeconds; the next starts from the bookmark.
    await waitFor('a second watch', async () => (inf.stats().watches >= 2 ? true : undefined));
    expect(inf.stats()).toMatchObject({ lists: 1, relists: 0, events: 0 });
  });

  it('resumes after stop() from the last resourceVersion, replaying what changed', async () => {
    await create('resume', 'ra', 'red');
    await create('resume', 'rb', 'red');
    const { inf, events } = informer('resume');
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    inf.stop();
    events.length = 0;
    await remove('ra');
    await recolor('resume', 'rb', 'blue');
    await create('resume', 'rc', 'green');
    expect(events).toEqual([]);
    inf.start();
    await eventually('the replayed events', events, ['delete ra', 'update rb red->blue', 'add rc green']);
    expect(events).toEqual(['delete ra', 'update rb red->blue', 'add rc green']);
    expect(inf.stats()).toMatchObject({ lists: 1, relists: 0 });
  });

  it('re-watches after the current watch is aborted, without listing', async () => {
    const { inf, events } = informer('restart');
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    await waitFor('the first watch', async () => (inf.stats().watches === 1 ? true : undefined));
    inf.restartWatch();
    await create('restart', 'wa', 'red');
    await eventually('an event on the new watch', events, ['add wa red']);
    expect(inf.stats()).toMatchObject({ lists: 1, watches: 2, relists: 0 });
  });

  it('restarts a silent watch after the watchdog period', async () => {
    const { inf } = informer('silent', { watchdogMs: 1_000 });
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    await waitFor('watchdog restarts', async () => (inf.stats().watches >= 3 ? true : undefined));
    expect(inf.stats()).toMatchObject({ lists: 1, relists: 0 });
  });

  it('keeps retrying a failing list with backoff until stopped', async () => {
    const { inf } = informer('missing', {
      path: `/api/v1/namespaces/${ns}/nosuchresources`,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    inf.start();
    await expect(inf.waitForSync(AbortSignal.timeout(1_000))).rejects.toThrow();
    // Three tries may take longer than that second on a busy machine.
    await waitFor('three failed lists', async () => (inf.stats().lists >= 3 ? true : undefined));
    const pending = inf.waitForSync();
    inf.stop();
    await expect(pending).rejects.toThrow(/stopped/);
    const lists = inf.stats().lists;
    // Kept: time passing is what shows that nothing happens. 500 ms is more than the
    // 200 ms longest backoff, and a retry timer due sooner always fires before this one.
    await new Promise((r) => setTimeout(r, 500));
    expect(inf.stats().lists).toBe(lists);
  });

  it('leaves nothing behind after stop(): the process exits', async () => {
    // An event seen proves the watch is up, so stop() closes an open watch.
    const script = `
      import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
      import { Informer } from ${JSON.stringify(new URL('../../src/kube/informer.ts', import.meta.url).href)};
      const kc = new KubeConfig();
      kc.loadFromFile(${JSON.stringify(inject('kubeconfig'))});
      const inf = new Informer({ kubeConfig: kc, path: '/api/v1/namespaces/${ns}/configmaps', transform: (o) => o });
      const seen = new Promise((resolve) => inf.addHandler({ onAdd: (o) => o.metadata.name === 'exit-probe' && resolve() }));
      inf.start();
      await inf.waitForSync(AbortSignal.timeout(${WAIT_MS}));
      await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: '${ns}', body: { metadata: { name: 'exit-probe' } } });
      await seen;
      inf.stop();
      const stopped = Date.now();
      process.on('exit', () => console.log('exited', Date.now() - stopped, inf.stats().watches));
    `;
    // What stop() could leave behind keeps the process for minutes: the watch (300 s or
    // more) and its watchdog (5 min). So exiting within the bound is the check; how soon
    // it exits is printed, not asserted, as a busy machine may take seconds.
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      timeout: WAIT_MS,
    });
    console.log(stdout.trim());
    const [, , watches] = stdout.match(/exited (\d+) (\d+)/) ?? [];
    expect(Number(watches)).toBe(1);
  });
});

// In a fresh cluster the ConfigMap watch cache still holds every event since
// resourceVersion 1. A CRD created now starts its watch cache at the current
// resourceVersion, so there "1" is really too old and the server answers 410.
describe('Informer after 410 Gone', () => {
  const group = 'informer.test.teal.dev';
  const crdName = `gadgets.${group}`;
  const { ext, custom } = clients();
  const ref = { group, version: 'v1', namespace: '', plural: 'gadgets' };

  beforeAll(async () => {
    ref.namespace = ns;
    await ext
      .createCustomResourceDefinition({
        body: {
          metadata: { name: crdName },
          spec: {
            group,
            scope: 'Namespaced',
            names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
              },
            ],
          },
        },
      })
      .catch((err: unknown) => {
        if ((err as { code?: number }).code !== 409) throw err;
      });
    await waitFor('the Gadget API to serve', async () => {
      await custom.listNamespacedCustomObject(ref);
      return true;
    });
  });
  afterAll(async () => {
    await ext.deleteCustomResourceDefinition({ name: crdName }).catch(() => {});
  });

  const createGadget = (name: string, color: string) =>
    custom.createNamespacedCustomObject({
      ...ref,
      body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name }, spec: { color, extra: 'x' } },
    });
  const recolorGadget = async (name: string, color: string) => {
    const current = (await custom.getNamespacedCustomObject({ ...ref, name })) as { spec: Record<string, string> };
    await custom.replaceNamespacedCustomObject({
      ...ref,
      name,
      body: { ...current, spec: { ...current.spec, color } },
    });
  };
  const deleteGadget = (name: string) => custom.deleteNamespacedCustomObject({ ...ref, name });

  it('relists and emits deletes for objects removed during the gap', async () => {
    await createGadget('a', 'red');
    await createGadget('b', 'red');
    await createGadget('c', 'red');
    const { inf, events } = informer('gone', {
      path: `/apis/${group}/v1/namespaces/${ns}/gadgets`,
      labelSelector: undefined,
      transform: trimFrom('spec'),
    });
    inf.start();
    await inf.waitForSync(AbortSignal.timeout(WAIT_MS));
    expect(events.sort()).toEqual(['add a red', 'add b red', 'add c red']);
    inf.stop();
    events.length = 0;
    await deleteGadget('b');
    await recolorGadget('c', 'blue');
    await createGadget('d', 'green');
    inf.restartWatch('1');
    inf.start();
    await eventually('the relist diff', events, ['delete b (relist)', 'update c red->blue', 'add d green']);
    expect(events.sort()).toEqual(['add d green', 'delete b (relist)', 'update c red->blue']);
    expect(names(inf.list())).toEqual(['a', 'c', 'd']);
    expect(inf.get(ns, 'c')).toEqual({
      metadata: { namespace: ns, name: 'c', resourceVersion: expect.any(String), labels: undefined },
      color: 'blue',
    });
    expect(inf.stats()).toMatchObject({ lists: 2, relists: 1 });
    expect(BigInt(inf.resourceVersion ?? '0')).toBeGreaterThan(1n);

    // And it watches again from the relist.
    events.length = 0;
    await deleteGadget('a');
    await eventually('a delete after the relist', events, ['delete a']);
    expect(inf.stats().lists).toBe(2);
  });
});

describe('diffRelist', () => {
  const cm = (name: string, resourceVersion: string): Cm => ({ metadata: { name, resourceVersion }, color: undefined });

  it('finds added, updated and deleted objects by resourceVersion', () => {
    const store = new Map([
      ['ns/a', cm('a', '1')],
      ['ns/b', cm('b', '2')],
      ['ns/c', cm('c', '3')],
    ]);
    const fresh = new Map([
      ['ns/a', cm('a', '1')],
      ['ns/c', cm('c', '7')],
      ['ns/d', cm('d', '8')],
    ]);
    const diff = diffRelist(store, fresh);
    expect(diff.added.map((d) => d.key)).toEqual(['ns/d']);
    expect(diff.updated.map((d) => [d.key, d.old.metadata.resourceVersion, d.obj.metadata.resourceVersion])).toEqual([
      ['ns/c', '3', '7'],
    ]);
    expect(diff.deleted.map((d) => d.key)).toEqual(['ns/b']);
  });
});
