// The one lenient reading of App status (src/app/status-reader.ts), on hostile
// statuses: wrong types, huge strings, nested garbage and prototype keys each
// cost only the field that holds them. Then its three readers, the HTTP API,
// the CLI and the action rules, over the same hostile status.
import { describe, expect, it } from 'vitest';
import { appView as apiView, conflictOf } from '../../src/api/actions.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import { type AppAnalysisRun, type AppStatus, AppStatusSchema, type RevisionStatus } from '../../src/app/schema.ts';
import { readAppStatus } from '../../src/app/status-reader.ts';
import { decide } from '../../src/cli/commands/actions.ts';
import { checksLine, notificationsLine, pausedWhy, settled } from '../../src/cli/commands/status.ts';
import type { Flags } from '../../src/cli/flags.ts';
import { readApp } from '../../src/cli/kube.ts';
import { appView as cliView, renderApp } from '../../src/cli/tree.ts';
import { actionVerdict, UNKNOWN, viewOfApp } from '../../src/rollout/action-rules.ts';
import { analysisRun, revisionStatus } from '../fixtures/app-status.ts';

const T0 = '2026-11-26T20:00:00.000Z';
const SHA = 'a'.repeat(40);
const actor = { by: 'bob', via: 'cli', at: T0 };

const revision = (n: number): RevisionStatus => revisionStatus(n, { commit: SHA });

const run = (n: number, kind: 'pre' | 'post'): AppAnalysisRun => analysisRun(n, T0, { id: `web-${n}-${kind}-1` });

/** A status with every field the schema has, each valid: revision 3 in preview over 2, checks running. */
const FULL: AppStatus = {
  phase: 'Paused',
  message: 'revision 3 is ready in preview',
  observedGeneration: 4,
  conditions: [
    { type: 'Promoted', status: 'False', reason: 'WaitingForPromotion', lastTransitionTime: T0 },
    { type: 'Ready', status: 'True', reason: 'Ready', lastTransitionTime: T0, observedGeneration: 4 },
  ],
  source: { ref: 'main', commit: SHA, shortCommit: 'aaaaaaa', revision: `main@sha1:${SHA}`, resolvedAt: T0 },
  build: { commit: SHA, job: 'web-build-aaaaaaa', phase: 'Succeeded', startedAt: T0, image: 'r/web@sha256:0' },
  active: revision(2),
  preview: revision(3),
  stable: revision(2),
  previews: {
    listedAt: T0,
    pullRequests: [
      {
        number: 7,
        name: 'web-pr-7',
        head: 'a'.repeat(40),
        state: 'Ready',
        url: 'https://web-pr-7.preview.example.com',
        message: 'revision 1 is active',
        expired: 'b'.repeat(40),
        reported: {
          status: {
            sha: 'a'.repeat(40),
            state: 'success',
            description: 'ready',
            targetUrl: 'https://x.example',
            at: T0,
          },
          comment: { hash: 'c'.repeat(64), at: T0 },
        },
      },
    ],
  },
  history: [
    { revision: 1, image: revision(1).image, createdAt: T0, promotedAt: T0, promotedVia: 'first-release' },
    { revision: 2, image: revision(2).image, createdAt: T0, promotedAt: T0, promotedVia: 'cli', checksSkipped: true },
    { revision: 3, image: revision(3).image, createdAt: T0 },
  ],
  promotion: { podTemplateHash: 'hash3', revision: 3, ...actor },
  abort: { podTemplateHash: 'hash9', revision: 9, ...actor },
  pin: { podTemplateHash: 'hash3', revision: 3, over: 'hash4', ...actor },
  pause: actor,
  progress: { podTemplateHash: 'hash3', since: T0 },
  switch: { podTemplateHash: 'hash2', revision: 2, since: T0, verifiedAt: T0 },
  trafficCheck: {
    podTemplateHash: 'hash2',
    revision: 2,
    phase: 'Running',
    message: '1 of 10 answers in a row from revision 2 at shop.example.com',
    startedAt: T0,
    taken: 2,
    consecutive: 1,
    lastSeen: 'hash2',
    lastAt: T0,
    inFlight: { n: 2, startedAt: T0 },
  },
  stablePingPong: 'ping',
  restart: { ...actor, revision: 2, podTemplateHash: 'hash2', startedAt: T0, finishedAt: T0, podsReplaced: 2 },
  notifications: {
    pending: [{ id: 'n1', trigger: 'preview-ready', destination: 'hook', at: T0, revision: 3 }],
    dropped: 1,
  },
  prePromotionAnalysis: run(3, 'pre'),
  postPromotionAnalysis: run(2, 'post'),
  handledIntents: { promote: 'i-1', pause: 'i-2' },
  replicas: 4,
  updatedReplicas: 2,
  readyReplicas: 2,
  availableReplicas: 2,
  HPAReplicas: 2,
  selector: 'app=web',
};

const FIELDS = Object.keys(AppStatusSchema.shape) as (keyof AppStatus)[];

/** Garbage nested a few levels, with prototype keys as JSON.parse makes them: own properties. */
const NESTED = JSON.parse(
  '{"__proto__": {"phase": "Healthy"}, "constructor": {"prototype": {"polluted": true}}, "a": [[{"b": null}], {}]}',
);

/** Objects within objects, deeper than any reader should follow. */
function deep(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i += 1) value = { a: value, b: [value] };
  return value;
}

/** Values no field of status can hold, whatever its type. */
const WRONG: Readonly<Record<string, unknown>> = {
  fraction: 1.5,
  negative: -1,
  boolean: true,
  null: null,
  nested: NESTED,
  deep: deep(5_000),
  list: [NESTED, 7, 'x', null],
};

const without = (status: AppStatus, ...fields: (keyof AppStatus)[]): AppStatus =>
  Object.fromEntries(Object.entries(status).filter(([key]) => !(fields as string[]).includes(key)));

/** Holds nothing: absent, or an empty list or object once what it held could not be read. */
const empty = (value: unknown) =>
  value === undefined || (Array.isArray(value) ? value.length === 0 : Object.keys(value as object).length === 0);

describe('readAppStatus', () => {
  it('reads a valid status, every field of the schema, as it is; reading it again changes nothing', () => {
    expect(Object.keys(FULL).sort()).toEqual([...FIELDS].sort());
    expect(AppStatusSchema.parse(FULL)).toEqual(FULL);
    expect(readAppStatus(FULL)).toEqual(FULL);
    expect(readAppStatus(readAppStatus(FULL))).toEqual(FULL);
  });

  it('reads anything but an object as an empty status', () => {
    for (const raw of [undefined, null, 'Healthy', 42, true, [], [FULL], deep(100)]) {
      expect(readAppStatus(raw)).toEqual({});
    }
  });

  it.each(FIELDS)('leaves out %s when it holds a wrong type or garbage, and only it', (field) => {
    for (const [what, wrong] of Object.entries(WRONG)) {
      const read = readAppStatus({ ...FULL, [field]: wrong });
      expect(without(read, field)).toEqual(without(FULL, field));
      expect(empty(read[field]), `${field}: ${what}`).toBe(true);
    }
  });

  it('keeps a huge string where the schema allows any, and leaves out one over its bound or not a value', () => {
    const huge = 'x'.repeat(4 << 20);
    const read = readAppStatus({
      ...FULL,
      message: huge,
      phase: huge,
      prePromotionAnalysis: { ...run(3, 'pre'), message: huge },
      source: { ...FULL.source, commit: huge },
    });
    expect(read.message).toBe(huge);
    expect(read).not.toHaveProperty('phase');
    // The run's message is bounded (1024), and optional: the run stays without it.
    const { message: _, ...unsaid } = run(3, 'pre');
    expect(read.prePromotionAnalysis).toEqual(unsaid);
    // The commit is required of a source: the source goes.
    expect(read).not.toHaveProperty('source');
    const touched = ['message', 'phase', 'prePromotionAnalysis', 'source'] as const;
    expect(without(read, ...touched)).toEqual(without(FULL, ...touched));
  });

  it('keeps the entries of a list it can read and drops the others, at every depth', () => {
    const [check] = run(3, 'pre').checks;
    const read = readAppStatus({
      ...FULL,
      history: [NESTED, FULL.history?.[0], { revision: 'two', image: 'x', createdAt: T0 }, FULL.history?.[1], null],
      conditions: [{ type: 'Promoted', status: 'Maybe', reason: 'x', lastTransitionTime: T0 }, FULL.conditions?.[1]],
      prePromotionAnalysis: {
        ...run(3, 'pre'),
        checks: [
          'healthz',
          { ...check, measurements: [{ n: 0, phase: 'Successful', startedAt: T0 }, ...(check?.measurements ?? [])] },
          { ...check, name: 42 },
        ],
      },
    });
    expect(read.history).toEqual(FULL.history?.slice(0, 2));
    expect(read.conditions).toEqual([FULL.conditions?.[1]]);
    expect(read.prePromotionAnalysis).toEqual(run(3, 'pre'));
  });

  it('leaves out an object missing a field it needs, beside its siblings', () => {
    const { revision: _, ...noNumber } = revision(2);
    const read = readAppStatus({ ...FULL, active: noNumber, stable: { ...revision(2), revision: 0 } });
    expect(read).not.toHaveProperty('active');
    expect(read).not.toHaveProperty('stable');
    expect(read.preview).toEqual(revision(3));
  });

  it('lets no prototype key through, at the top or nested, and pollutes nothing', () => {
    const raw = JSON.parse(
      JSON.stringify({ ...FULL, phase: undefined, pause: { ...actor, admin: true } })
        .replace('{', '{"__proto__": {"phase": "Healthy", "isAdmin": true}, "constructor": {"prototype": {"x": 1}},')
        .replace('"admin":true', '"__proto__": {"polluted": true}, "hasOwnProperty": 1'),
    );
    expect(Object.hasOwn(raw, '__proto__')).toBe(true);
    const read = readAppStatus(raw);
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect(Object.hasOwn(read, '__proto__')).toBe(false);
    expect(Object.hasOwn(read, 'constructor')).toBe(false);
    expect(read.phase).toBeUndefined();
    expect(read.pause).toEqual(actor);
    expect(Object.getPrototypeOf(read.pause)).toBe(Object.prototype);
    expect(without(read, 'pause')).toEqual(without(FULL, 'phase', 'pause'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });
});

// ---- its readers ----

/** FULL gone bad: wrong types, garbage and unreadable entries in most fields, readable ones left. */
const HOSTILE = {
  ...FULL,
  phase: 'Paused',
  pin: undefined,
  promotion: undefined,
  abort: undefined,
  pause: 'bob',
  stable: [revision(2)],
  history: [null, 7, FULL.history?.[0], FULL.history?.[1]],
  build: { ...FULL.build, commit: 42 },
  source: 'main',
  conditions: { Promoted: 'False' },
  notifications: { pending: 'three', dropped: -1 },
  prePromotionAnalysis: { ...run(3, 'pre'), checks: [NESTED, { name: 'healthz', measurements: 'many' }] },
  postPromotionAnalysis: deep(1_000),
  handledIntents: ['i-1'],
  replicas: '4',
  message: { text: 'hi' },
};

const cached = (status: unknown, generation = 4): CachedApp => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', resourceVersion: '9', generation },
  spec: { image: 'registry.example.com/team/web:3', strategy: { blueGreen: { prePromotionAnalysis: {} } } },
  status,
});

describe('the API, the CLI and the action rules read a hostile status alike, field by field', () => {
  it('the API shows what it can read', () => {
    const view = apiView(cached(HOSTILE));
    expect(view.revisions).toEqual({
      active: revision(2),
      preview: revision(3),
      history: FULL.history?.slice(0, 2),
    });
    expect(view.analysis).toEqual({ prePromotion: { ...run(3, 'pre'), checks: [] } });
    expect(view.status).toMatchObject({ phase: 'Paused', observedGeneration: 4, progress: FULL.progress });
    for (const gone of ['pause', 'source', 'build', 'conditions', 'replicas', 'message']) {
      expect(view.status).not.toHaveProperty(gone);
    }
  });

  it('the CLI draws the tree and decides status and actions over it, where it failed', () => {
    const app = readApp(cached(HOSTILE));
    const text = renderApp(cliView(app, [], [], []), false, Date.parse(T0));
    expect(text).toContain('revision:3');
    expect(text).toContain('pre-promotion checks');
    expect(text).toContain('registry.example.com/team/web:2 (active)');
    expect(settled(app)).toBeUndefined();
    expect(checksLine(app, false)).toBe(
      'checks: pre-promotion checks of revision 3: ◌ Running - check healthz: 1 of 3 measured',
    );
    expect(notificationsLine(app)).toBe('');
    expect(pausedWhy(app, 'web')).toBe(': revision 3 waits for "kubectl teal promote web"');
    expect(() => decide('promote', app, {} as Flags, UNKNOWN)).toThrow(/checks of revision 3/);
  });

  it('the rules lose only the unreadable history entries: undo is left to the operator, not refused', () => {
    const healthy = {
      phase: 'Healthy',
      observedGeneration: 4,
      active: revision(2),
      stable: revision(2),
      conditions: [{ type: 'Promoted', status: 'True', reason: 'Promoted', lastTransitionTime: T0 }],
      history: [null, { revision: 'one' }, FULL.history?.[0], FULL.history?.[1]],
    };
    // Revision 1 is readable in history: an earlier revision exists, whatever the entry before it holds.
    expect(actionVerdict('undo', {}, viewOfApp(cached(healthy), UNKNOWN))).toEqual({ allowed: true });
    expect(conflictOf(cached(healthy), 'undo', {})).toBeUndefined();
    expect(decide('undo', readApp(cached(healthy)), {} as Flags, UNKNOWN).done).toBe('undo requested');
  });
});
