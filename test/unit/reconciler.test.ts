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
  type ReconcilerOptions,
  type SourceView,
} from '../../src/controller/reconciler.ts';
import type { InformerHandler } from '../../src/kube/informer.ts';
import { e2eApp, previewsApp } from '../fixtures/apps.ts';
import { pullRequest } from '../fixtures/previews.ts';

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
function fakeClient(failing?: string) {
  const calls: { name: string; args: unknown[] }[] = [];
  const record =
    (name: string, answer: unknown = undefined) =>
    async (...args: unknown[]) => {
      calls.push({ name, args });
      const kind = (args[0] as { kind?: string } | undefined)?.kind;
      if (failing !== undefined && kind === failing) throw new Error(`${failing} refused: forbidden`);
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
    listExposures: record('listExposures', []),
    deleteApp: record('deleteApp'),
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

function setup(
  app: CachedApp = cachedApp('7'),
  options: { previews?: ReconcilerOptions['previews']; failing?: string } = {},
) {
  const cache = fakeCaches(app);
  const { client, calls } = fakeClient(options.failing);
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
    ...(options.previews ? { previews: options.previews } : {}),
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

/** A parent App with spec.previews, as cached. */
function cachedParent(): CachedApp {
  const input = previewsApp('web');
  return {
    apiVersion: input.apiVersion,
    kind: input.kind,
    metadata: { name: 'web', namespace: 'ns', resourceVersion: '7', uid: 'uid-1', generation: 1 },
    spec: input.spec,
  };
}

/** A previews runner that has listed this (or nothing yet), recording what it is told. */
function fakeRunner(listed: boolean) {
  const told: string[] = [];
  const runner: NonNullable<ReconcilerOptions['previews']> = {
    seen: () =>
      listed
        ? {
            listing: { ok: true, pullRequests: [pullRequest(4)], approvals: [] },
            listedAt: new Date('2026-11-21T09:59:00Z'),
          }
        : undefined,
    merged: (_key, status) => status,
    due: (_app, at) => void told.push(`due ${at === undefined ? 'now' : new Date(at).toISOString()}`),
    send: (_key, actions) => void told.push(...actions.map((a) => `send ${a.kind}`)),
    forget: (key) => void told.push(`forget ${key}`),
  };
  return { runner, told };
}

const writtenStatus = (calls: { name: string; args: unknown[] }[]) =>
  calls.findLast((c) => c.name === 'writeStatus')?.args[3] as AppStatus;
const previewsListed = (status: AppStatus) => status.conditions?.find((c) => c.type === 'PreviewsListed');

describe('Reconciler: previews', () => {
  it('before the first listing: asks the runner for it at once, plans nothing, and says it is listing', async () => {
    const { runner, told } = fakeRunner(false);
    const { reconciler, calls } = setup(cachedParent(), { previews: runner });
    await reconciler.reconcile(KEY);
    expect(told).toEqual(['due now']);
    expect(calls.filter((c) => c.name === 'apply').map((c) => (c.args[0] as { kind: string }).kind)).not.toContain(
      'App',
    );
    expect(previewsListed(writtenStatus(calls))).toMatchObject({ status: 'Unknown', reason: 'Listing' });
  });

  it('from a listing: applies the child App, hands the reports to the runner, records status.previews and the next listing', async () => {
    const { runner, told } = fakeRunner(true);
    const { reconciler, calls } = setup(cachedParent(), { previews: runner });
    await reconciler.reconcile(KEY);
    const child = calls.find((c) => c.name === 'apply' && (c.args[0] as { kind: string }).kind === 'App');
    expect(child?.args[0]).toMatchObject({
      metadata: { name: 'web-pr-4' },
      spec: { source: { git: { ref: pullRequest(4).headSha } } },
    });
    expect(told).toEqual(['send setCommitStatus', 'send editComment', 'due 2026-11-21T10:04:00.000Z']);
    const status = writtenStatus(calls);
    expect(status.previews?.pullRequests).toMatchObject([{ number: 4, name: 'web-pr-4', state: 'Building' }]);
    expect(previewsListed(status)).toMatchObject({ status: 'True', reason: 'Listed' });
  });

  it("a child write refused: PreviewsListed False naming it, nothing sent, the parent's own status not failed", async () => {
    const { runner, told } = fakeRunner(true);
    const { reconciler, calls } = setup(cachedParent(), { previews: runner, failing: 'App' });
    expect(await reconciler.reconcile(KEY)).toEqual({ requeueAfterMs: 10_000 });
    const status = writtenStatus(calls);
    expect(previewsListed(status)).toMatchObject({ status: 'False', reason: 'PreviewWriteFailed' });
    expect(previewsListed(status)?.message).toContain('creating preview App ns/web-pr-4: App refused: forbidden');
    expect(told).toEqual([]);
    expect(status.conditions?.find((c) => c.type === 'Ready')?.reason).not.toBe('ReconcileError');
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
