// The Reconciler on fakes of its caches and its client: what it writes for an
// App in the cache, how it awaits its own status write, and the one forget()
// of everything this replica keeps of an App (controller/app-memory.ts).
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { CachedApp } from '../../src/app/cached.ts';
import type { AppStatus } from '../../src/app/schema.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { AppMemory } from '../../src/controller/app-memory.ts';
import {
  Reconciler,
  type ReconcilerCaches,
  type ReconcilerClient,
  type SourceView,
} from '../../src/controller/reconciler.ts';
import type { InformerHandler } from '../../src/kube/informer.ts';
import { e2eApp } from '../fixtures/apps.ts';

const KEY = 'ns/web';

/** One App in a cache that is otherwise empty; its handlers are kept to tell of updates. */
function fakeCaches(app: CachedApp) {
  const world = { app: app as CachedApp | undefined, handlers: [] as InformerHandler<CachedApp>[] };
  const none = { byIndex: () => [], get: () => undefined, listByNamespace: () => [] };
  const caches: ReconcilerCaches = {
    apps: {
      get: (namespace, name) => {
        const meta = world.app?.metadata;
        return meta && meta.namespace === namespace && meta.name === name ? world.app : undefined;
      },
      addHandler: (handler) => {
        world.handlers.push(handler);
        return () => {};
      },
      byIndex: () => [],
    },
    replicaSets: none,
    services: none,
    endpointSlices: none,
    jobs: none,
    buildPods: none,
    analysisJobs: none,
    templates: none,
    configMaps: none,
    configCopies: none,
  };
  /** The watch brings a new version of the App. */
  const update = (next: CachedApp) => {
    const old = world.app;
    world.app = next;
    for (const h of world.handlers) if (old) h.onUpdate?.(old, next);
  };
  return { caches, world, update };
}

/** A client recording every call by name; writeStatus answers the next resourceVersion. */
function fakeClient() {
  const calls: { name: string; args: unknown[] }[] = [];
  const record =
    (name: string, answer: unknown = undefined) =>
    async (...args: unknown[]) => {
      calls.push({ name, args });
      return answer;
    };
  const client = {
    apply: record('apply'),
    patchReplicaSet: record('patchReplicaSet'),
    deleteReplicaSet: record('deleteReplicaSet'),
    readConfigSource: record('readConfigSource'),
    createOnce: record('createOnce', true),
    deleteConfigCopy: record('deleteConfigCopy'),
    deleteJob: record('deleteJob'),
    evictPod: record('evictPod', true),
    patchAppMetadata: record('patchAppMetadata'),
    writeStatus: record('writeStatus', '8'),
    readSecretKeys: record('readSecretKeys'),
    listPods: record('listPods', []),
  } as ReconcilerClient;
  return { client, calls };
}

function cachedApp(resourceVersion: string, status?: AppStatus): CachedApp {
  const input = e2eApp('web');
  return {
    apiVersion: input.apiVersion,
    kind: input.kind,
    metadata: { name: 'web', namespace: 'ns', resourceVersion, uid: 'uid-1', generation: 1 },
    spec: input.spec,
    ...(status ? { status } : {}),
  };
}

function setup() {
  const cache = fakeCaches(cachedApp('7'));
  const { client, calls } = fakeClient();
  const forgotten: string[] = [];
  const sources: SourceView = {
    follow: () => {},
    forget: (key) => forgotten.push(`sources ${key}`),
    state: () => undefined,
    refresh: () => {},
  };
  const memory = new AppMemory([
    sources,
    { forget: (key) => forgotten.push(`analysis ${key}`) },
    { forget: (key) => forgotten.push(`notifications ${key}`) },
  ]);
  const events: string[] = [];
  const reconciler = new Reconciler({
    caches: cache.caches,
    client,
    sources,
    memory,
    analysis: { resultsFor: () => new Map(), dispatch: () => {} },
    recorder: { record: async (_target, _type, reason) => void events.push(reason) },
    logger: pino({ level: 'silent' }),
    canWrite: () => true,
    buildImages: DEFAULT_BUILD_IMAGES,
    checkGitUrl: () => undefined,
    now: () => new Date('2026-11-21T10:00:00Z'),
  });
  return { reconciler, cache, calls, forgotten, events };
}

describe('Reconciler', () => {
  it('plans an App from the cache and writes through its one client: its first ReplicaSet, then status', async () => {
    const { reconciler, calls, events } = setup();
    await reconciler.reconcile(KEY);
    const applied = calls
      .filter((c) => c.name === 'apply')
      .map((c) => (c.args[0] as { kind: string; metadata: { name: string } }).kind);
    expect(applied).toEqual(['ReplicaSet']);
    const status = calls.find((c) => c.name === 'writeStatus');
    expect(status?.args.slice(0, 3)).toEqual(['ns', 'web', '7']);
    expect(calls.at(-1)?.name).toBe('writeStatus');
    expect(events.length).toBeGreaterThan(0);
  });

  it('plans nothing from the App its own status write replaced, until the cache shows the written one', async () => {
    const { reconciler, cache, calls } = setup();
    await reconciler.reconcile(KEY);
    const written = calls.find((c) => c.name === 'writeStatus')?.args[3] as AppStatus;
    const before = calls.length;

    expect(await reconciler.reconcile(KEY)).toEqual({ requeueAfterMs: 50 });
    expect(calls.length).toBe(before);

    cache.update(cachedApp('8', written));
    expect(await reconciler.reconcile(KEY)).not.toEqual({ requeueAfterMs: 50 });
    // Nothing new to write: the cached status is the one written.
    expect(calls.slice(before).filter((c) => c.name === 'writeStatus')).toEqual([]);
  });

  it('forgets everything kept of an App that is gone, the sources, analysis and notifications included', async () => {
    const { reconciler, cache, calls, forgotten } = setup();
    await reconciler.reconcile(KEY);
    cache.world.app = undefined;
    forgotten.length = 0;
    expect(await reconciler.reconcile(KEY)).toEqual({});
    expect(forgotten).toEqual([`sources ${KEY}`, `analysis ${KEY}`, `notifications ${KEY}`]);

    // Back at the resourceVersion its last status write replaced, it is planned at once: that write is forgotten.
    cache.world.app = cachedApp('7');
    const before = calls.length;
    expect(await reconciler.reconcile(KEY)).not.toEqual({ requeueAfterMs: 50 });
    expect(calls.length).toBeGreaterThan(before);
  });
});

describe('AppMemory', () => {
  it('tells a problem once, and again once it came back after a repair', () => {
    const memory = new AppMemory();
    expect(memory.untold(KEY, ['a', 'b'])).toEqual(['a', 'b']);
    memory.tell(KEY, ['a', 'b']);
    expect(memory.untold(KEY, ['a', 'b'])).toEqual([]);
    memory.tell(KEY, ['b']);
    expect(memory.untold(KEY, ['a', 'b'])).toEqual(['a']);
  });

  it('awaits its own write until the cache moves past it or it is too old, and forget() drops it', () => {
    const memory = new AppMemory();
    memory.wrote(KEY, '7', 1000);
    expect(memory.awaitsOwnWrite(KEY, '7', 1001, 5000)).toBe(true);
    expect(memory.awaitsOwnWrite(KEY, '7', 7000, 5000)).toBe(false);
    memory.wrote(KEY, '7', 1000);
    memory.seen(KEY, '8');
    expect(memory.awaitsOwnWrite(KEY, '7', 1001, 5000)).toBe(false);
    memory.wrote(KEY, '7', 1000);
    memory.readSecrets(KEY, { readAt: 1, digests: new Map(), copies: new Map() });
    memory.tell(KEY, ['a']);
    memory.forget(KEY);
    expect(memory.awaitsOwnWrite(KEY, '7', 1001, 5000)).toBe(false);
    expect(memory.secretDigests(KEY)).toBeUndefined();
    expect(memory.untold(KEY, ['a'])).toEqual(['a']);
  });
});
