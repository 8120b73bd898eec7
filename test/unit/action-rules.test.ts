// The action rules (DESIGN §3.2) in one table: every action, with its
// arguments, in every state an App can be in, as the planner sees it. Then
// the three callers: the planner's applyIntent, the API's conflictOf and the
// CLI's decide must give the rules' answer, each over the view it can build
// (the API and the CLI from the App's status, where some things are unknown
// and must not be refused). Last, an undo with a revision in preview through
// the whole planner.
import { describe, expect, it } from 'vitest';
import { conflictOf } from '../../src/api/actions.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import type { Action, ActionArgs, Intent } from '../../src/app/intents.ts';
import { LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { App, AppStatus, Condition, HistoryEntry, RevisionStatus } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { decide } from '../../src/cli/commands/actions.ts';
import { CliError } from '../../src/cli/errors.ts';
import type { Flags } from '../../src/cli/flags.ts';
import type { AppObject } from '../../src/cli/kube.ts';
import { actionVerdict, UNKNOWN, type Verdict, viewOfApp } from '../../src/rollout/action-rules.ts';
import { type ActionContext, applyIntent, plannerView } from '../../src/rollout/actions.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import type { ObservedReplicaSet, ObservedService } from '../../src/rollout/observed.ts';
import { e2eApp } from '../fixtures/apps.ts';

const T0 = '2026-11-21T10:00:00.000Z';
const NOW = '2026-11-21T11:00:00.000Z';
const hash = (n: number) => `hash${n}`;
const image = (n: number) => `registry.example.com/team/web:${n}`;

function replicaSet(n: number, replicas: number): ObservedReplicaSet {
  return {
    namespace: 'ns',
    name: `web-${hash(n)}`,
    resourceVersion: '1',
    app: 'web',
    hash: hash(n),
    revision: n,
    image: image(n),
    ownerUid: 'uid-1',
    createdAt: T0,
    generation: 1,
    specReplicas: replicas,
    observedGeneration: 1,
    replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    deleting: false,
  };
}

const revision = (n: number, extra: Partial<RevisionStatus> = {}): RevisionStatus => ({
  revision: n,
  image: image(n),
  podTemplateHash: hash(n),
  replicaSet: `web-${hash(n)}`,
  ...extra,
});
const promoted = (n: number, via: string): HistoryEntry => ({
  revision: n,
  image: image(n),
  createdAt: T0,
  promotedAt: T0,
  promotedVia: via,
});
const condition = (type: string, status: 'True' | 'False', reason: string): Condition => ({
  type,
  status,
  reason,
  lastTransitionTime: T0,
});
const actor = { by: 'bob', via: 'cli', at: T0 };

/** An App in some state: what the planner sees (ReplicaSets, desired, the Service) and the status it wrote. */
interface State {
  status: AppStatus;
  replicaSets: ObservedReplicaSet[];
  /** The revision the planner wants; undefined while nothing is wanted (a build runs). */
  desired: number | undefined;
  /** The revision the active Service selects. */
  active: number | undefined;
  specPaused?: boolean;
  deleting?: boolean;
}

const ONE_ACTIVE = { active: revision(1), stable: revision(1), history: [promoted(1, 'first-release')] };
const TWO_ACTIVE = {
  active: revision(2),
  stable: revision(2),
  history: [promoted(1, 'first-release'), promoted(2, 'cli')],
};
const settled = (phase: AppStatus['phase']): AppStatus => ({
  phase,
  ...TWO_ACTIVE,
  conditions: [condition('Promoted', 'True', 'Promoted')],
});
const waiting = (phase: AppStatus['phase'], reason: string): Condition[] => [
  condition('Promoted', 'False', reason),
  ...(phase === 'Degraded' ? [condition('Aborted', 'True', 'Aborted')] : []),
];

const STATES = {
  'no active yet': {
    status: { phase: 'Progressing', conditions: waiting('Progressing', 'Progressing') },
    replicaSets: [replicaSet(1, 0)],
    desired: 1,
    active: undefined,
  },
  Healthy: { status: settled('Healthy'), replicaSets: [replicaSet(1, 0), replicaSet(2, 2)], desired: 2, active: 2 },
  Building: {
    status: { phase: 'Building', ...TWO_ACTIVE, conditions: waiting('Building', 'Progressing') },
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: undefined,
    active: 2,
  },
  'Progressing preview': {
    status: {
      phase: 'Progressing',
      ...ONE_ACTIVE,
      preview: revision(2),
      conditions: waiting('Progressing', 'Progressing'),
    },
    replicaSets: [replicaSet(1, 2), replicaSet(2, 1)],
    desired: 2,
    active: 1,
  },
  'Paused for promotion': {
    status: {
      phase: 'Paused',
      ...ONE_ACTIVE,
      preview: revision(2, { availableAt: T0 }),
      conditions: waiting('Paused', 'WaitingForPromotion'),
    },
    replicaSets: [replicaSet(1, 2), replicaSet(2, 1)],
    desired: 2,
    active: 1,
  },
  promoting: {
    status: {
      phase: 'Progressing',
      ...ONE_ACTIVE,
      preview: revision(2, { availableAt: T0 }),
      promotion: { podTemplateHash: hash(2), revision: 2, ...actor },
      conditions: waiting('Progressing', 'Progressing'),
    },
    replicaSets: [replicaSet(1, 2), replicaSet(2, 2)],
    desired: 2,
    active: 1,
  },
  Aborted: {
    status: {
      phase: 'Degraded',
      ...ONE_ACTIVE,
      abort: { podTemplateHash: hash(2), revision: 2, ...actor },
      conditions: waiting('Degraded', 'Degraded'),
    },
    replicaSets: [replicaSet(1, 2), replicaSet(2, 1)],
    desired: 2,
    active: 1,
  },
  'paused by hand': {
    status: { ...settled('Paused'), pause: actor },
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: 2,
    active: 2,
  },
  'spec.paused': {
    status: settled('Paused'),
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: 2,
    active: 2,
    specPaused: true,
  },
  'spec.paused, revision 3 waits': {
    status: { phase: 'Paused', ...TWO_ACTIVE, conditions: waiting('Paused', 'Paused') },
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: 3,
    active: 2,
    specPaused: true,
  },
  deleting: {
    status: settled('Healthy'),
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: 2,
    active: 2,
    deleting: true,
  },
  restarting: {
    status: {
      ...settled('Progressing'),
      restart: { ...actor, revision: 2, podTemplateHash: hash(2), startedAt: T0, evicting: ['web-hash2-x'] },
    },
    replicaSets: [replicaSet(1, 0), replicaSet(2, 2)],
    desired: 2,
    active: 2,
  },
} satisfies Record<string, State>;
type StateName = keyof typeof STATES;

const CASES = {
  promote: ['promote', {}],
  'promote --revision 2': ['promote', { revision: 2 }],
  'promote --revision 9': ['promote', { revision: 9 }],
  'promote --full': ['promote', { full: true }],
  abort: ['abort', {}],
  retry: ['retry', {}],
  undo: ['undo', {}],
  'undo --preview': ['undo', { preview: true }],
  'undo --to-revision 1': ['undo', { toRevision: 1 }],
  'undo --to-revision 2': ['undo', { toRevision: 2 }],
  'undo --to-revision 9': ['undo', { toRevision: 9 }],
  'undo --to-revision 1 --preview': ['undo', { toRevision: 1, preview: true }],
  pause: ['pause', {}],
  resume: ['resume', {}],
  restart: ['restart', {}],
} satisfies Record<string, [Action, ActionArgs]>;
type CaseName = keyof typeof CASES;

/**
 * The verdicts, as the planner sees each state. "ok N": allowed, acting on
 * revision N; "back N": undo returns to the active revision N and drops the
 * one on its way; "no <code>" a refusal that is nothing to do (Normal),
 * "NO <code>" one that contradicts the App (Warning).
 */
// biome-ignore format: a table
const TABLE: Record<CaseName, Record<StateName, string>> = {
  //                                 no active yet            Healthy                  Building                 Progressing preview      Paused for promotion     promoting                Aborted                  paused by hand           spec.paused              spec.paused, 3 waits     deleting                 restarting
  promote:                         r('ok 1',                 'no nothing-in-flight',  'no nothing-in-flight',  'ok 2',                  'ok 2',                  'ok 2',                  'NO aborted',            'no nothing-in-flight',  'no nothing-in-flight',  'ok 3',                  'NO deleting', 'no nothing-in-flight'),
  'promote --revision 2':          r('NO not-in-preview',    'no nothing-in-flight',  'no nothing-in-flight',  'ok 2',                  'ok 2',                  'ok 2',                  'NO aborted',            'no nothing-in-flight',  'no nothing-in-flight',  'NO not-in-preview',     'NO deleting', 'no nothing-in-flight'),
  'promote --revision 9':          r('NO not-in-preview',    'no nothing-in-flight',  'no nothing-in-flight',  'NO not-in-preview',     'NO not-in-preview',     'NO not-in-preview',     'NO not-in-preview',     'no nothing-in-flight',  'no nothing-in-flight',  'NO not-in-preview',     'NO deleting', 'no nothing-in-flight'),
  'promote --full':                r('ok 1',                 'no nothing-in-flight',  'no nothing-in-flight',  'ok 2',                  'ok 2',                  'ok 2',                  'NO aborted',            'no nothing-in-flight',  'no nothing-in-flight',  'ok 3',                  'NO deleting', 'no nothing-in-flight'),
  abort:                           r('ok 1',                 'no nothing-in-flight',  'no nothing-in-flight',  'ok 2',                  'ok 2',                  'ok 2',                  'no already-aborted',    'no nothing-in-flight',  'no nothing-in-flight',  'ok 3',                  'NO deleting', 'no nothing-in-flight'),
  retry:                           r('no nothing-aborted',   'no nothing-aborted',    'no nothing-aborted',    'no nothing-aborted',    'no nothing-aborted',    'no nothing-aborted',    'ok 2',                  'no nothing-aborted',    'no nothing-aborted',    'no nothing-aborted',    'NO deleting', 'no nothing-aborted'),
  undo:                            r('NO no-earlier-revision','ok 1',                 'ok 1',                  'back 1',                'back 1',                'back 1',                'back 1',                'ok 1',                  'ok 1',                  'back 2',                'NO deleting', 'ok 1'),
  'undo --preview':                r('NO no-earlier-revision','ok 1',                 'ok 1',                  'back 1',                'back 1',                'back 1',                'back 1',                'ok 1',                  'ok 1',                  'back 2',                'NO deleting', 'ok 1'),
  'undo --to-revision 1':          r('ok 1',                 'ok 1',                  'ok 1',                  'back 1',                'back 1',                'back 1',                'back 1',                'ok 1',                  'ok 1',                  'ok 1',                  'NO deleting', 'ok 1'),
  'undo --to-revision 2':          r('NO no-replicaset',     'no already-active',     'no already-active',     'ok 2',                  'ok 2',                  'ok 2',                  'ok 2',                  'no already-active',     'no already-active',     'back 2',                'NO deleting', 'no already-active'),
  'undo --to-revision 9':          r('NO no-replicaset',     'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO no-replicaset',      'NO deleting', 'NO no-replicaset'),
  'undo --to-revision 1 --preview':r('ok 1',                 'ok 1',                  'ok 1',                  'back 1',                'back 1',                'back 1',                'back 1',                'ok 1',                  'ok 1',                  'ok 1',                  'NO deleting', 'ok 1'),
  pause:                           r('ok',                   'ok',                    'ok',                    'ok',                    'ok',                    'ok',                    'ok',                    'ok already-paused',     'ok',                    'ok',                    'NO deleting', 'ok'),
  resume:                          r('ok not-paused',        'ok not-paused',         'ok not-paused',         'ok not-paused',         'ok not-paused',         'ok not-paused',         'ok not-paused',         'ok',                    'NO paused-by-spec',     'NO paused-by-spec',     'NO deleting', 'ok not-paused'),
  restart:                         r('NO nothing-active',    'ok 2',                  'ok 2',                  'NO release-in-progress','NO release-in-progress','NO release-in-progress','ok 1',                  'ok 2',                  'ok 2',                  'ok 2',                  'NO deleting',           'no already-restarting'),
};

function r(...cells: string[]): Record<StateName, string> {
  const names = Object.keys(STATES) as StateName[];
  if (cells.length !== names.length) throw new Error(`a row needs ${names.length} cells`);
  return Object.fromEntries(names.map((n, i) => [n, cells[i]])) as Record<StateName, string>;
}

function summary(v: Verdict): string {
  if (!v.allowed) return `${v.conflict ? 'NO' : 'no'} ${v.code}`;
  if (v.returnsToActive) return `back ${v.revision}`;
  return ['ok', v.revision, v.note].filter((x) => x !== undefined).join(' ');
}

function app(state: State): App {
  const input = e2eApp('web', { spec: { paused: state.specPaused ?? false } });
  input.metadata = {
    name: 'web',
    namespace: 'ns',
    uid: 'uid-1',
    generation: 1,
    ...(state.deleting ? { deletionTimestamp: NOW } : {}),
  };
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return { ...result.app, status: { ...structuredClone(state.status), observedGeneration: 1 } };
}

function context(state: State): ActionContext {
  const desired = state.desired;
  return {
    app: app(state),
    status: app(state).status ?? {},
    replicaSets: state.replicaSets,
    desired: desired !== undefined ? { hash: hash(desired), image: image(desired), number: desired } : undefined,
    activeHash: state.active !== undefined ? hash(state.active) : undefined,
    specHash: desired !== undefined ? hash(desired) : undefined,
    now: NOW,
  };
}

const intentOf = (action: Action, args: ActionArgs): Intent => ({
  id: 'id-1',
  by: 'alice',
  via: 'cli',
  at: NOW,
  action,
  ...Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)),
});

const each = Object.entries(STATES).flatMap(([stateName, state]) =>
  Object.entries(CASES).map(([caseName, [action, args]]) => ({
    name: `${caseName} in ${stateName}`,
    stateName: stateName as StateName,
    caseName: caseName as CaseName,
    state: state as State,
    action,
    args: args as ActionArgs,
  })),
);

describe('the action rules, for every action in every state', () => {
  it.each(each)('$name', ({ state, stateName, caseName, action, args }) => {
    expect(summary(actionVerdict(action, args, plannerView(context(state))))).toBe(TABLE[caseName][stateName]);
  });

  it('refusals say why in words', () => {
    const paused = plannerView(context(STATES['Paused for promotion']));
    expect(actionVerdict('promote', { revision: 9 }, paused)).toMatchObject({
      reason: 'revision 9 is no longer in preview (revision 2 is); nothing changed',
    });
    const healthy = plannerView(context(STATES.Healthy));
    expect(actionVerdict('undo', { toRevision: 9 }, healthy)).toMatchObject({
      reason: 'revision 9 has no ReplicaSet left (see revisionHistoryLimit); nothing changed',
    });
    expect(actionVerdict('abort', {}, healthy)).toMatchObject({ reason: 'nothing is in progress to abort' });
  });
});

describe('the API and the CLI read the same rules from the status', () => {
  it.each(each)('$name', ({ state, action, args }) => {
    const planner = actionVerdict(action, args, plannerView(context(state)));
    const view = viewOfApp(app(state), state.replicaSets);
    const fromStatus = actionVerdict(action, args, view);
    if (view.inFlight === UNKNOWN) {
      // What the status cannot tell is never refused: the operator decides, and says so in an Event.
      if (!fromStatus.allowed) expect(summary(fromStatus)).toBe(summary(planner));
    } else {
      expect(summary(fromStatus)).toBe(summary(planner));
    }
  });

  it('knows from the status what is in flight, except a revision held before its ReplicaSet and a first release', () => {
    const unknown = Object.entries(STATES)
      .filter(([, s]) => viewOfApp(app(s), s.replicaSets).inFlight === UNKNOWN)
      .map(([name]) => name);
    expect(unknown).toEqual(['no active yet', 'spec.paused, revision 3 waits']);
  });

  it('takes a spec newer than the status as unknown', () => {
    const state = STATES.Healthy;
    const newer = { ...app(state), metadata: { ...app(state).metadata, generation: 2 } };
    expect(viewOfApp(newer, state.replicaSets).inFlight).toBe(UNKNOWN);
    expect(actionVerdict('abort', {}, viewOfApp(newer, state.replicaSets)).allowed).toBe(true);
  });

  it('without the ReplicaSets, leaves undo to a revision it cannot check to the operator', () => {
    const view = viewOfApp(app(STATES.Healthy), UNKNOWN);
    expect(actionVerdict('undo', { toRevision: 9 }, view).allowed).toBe(true);
    expect(actionVerdict('undo', {}, view).allowed).toBe(true);
    // Nothing before the active revision in history: no ReplicaSet can change that.
    const first = viewOfApp(app({ ...STATES.Healthy, status: { ...settled('Healthy'), history: [] } }), UNKNOWN);
    expect(actionVerdict('undo', {}, first)).toMatchObject({ allowed: false, code: 'no-earlier-revision' });
  });

  it('reads a status it cannot parse as one that names nothing', () => {
    const garbage = { metadata: { generation: 1 }, spec: { paused: 'yes' }, status: { active: 'two', history: 3 } };
    const view = viewOfApp(garbage, []);
    expect(view).toMatchObject({ active: undefined, inFlight: UNKNOWN, history: [], specPaused: false });
  });
});

describe('the callers ask the rules', () => {
  const cached = (state: State): CachedApp => {
    const a = app(state);
    return {
      metadata: {
        name: 'web',
        namespace: 'ns',
        resourceVersion: '1',
        generation: 1,
        ...(state.deleting ? { deletionTimestamp: NOW } : {}),
      },
      spec: a.spec,
      status: a.status,
    };
  };
  const cliApp = (state: State): AppObject => cached(state) as unknown as AppObject;
  const flags = (args: ActionArgs): Flags => args as Flags;

  it.each(each)('$name', ({ state, action, args }) => {
    const view = viewOfApp(app(state), state.replicaSets);
    const verdict = actionVerdict(action, args, view);

    // The API: a 409 exactly when the rules refuse, with their reason.
    const conflict = conflictOf(cached(state), action, args, state.replicaSets);
    if (verdict.allowed) expect(conflict).toBeUndefined();
    else expect(conflict).toBe(`App ns/web: ${verdict.reason}`);

    // The CLI: fails exactly when the rules refuse.
    let failed: unknown;
    try {
      decide(action, cliApp(state), flags(args), state.replicaSets);
    } catch (err) {
      failed = err;
    }
    if (verdict.allowed) expect(failed).toBeUndefined();
    else expect(failed).toBeInstanceOf(CliError);

    // The planner: changes status exactly when the rules allow, else an Ignored or Rejected event.
    const ctx = context(state);
    const before = structuredClone(ctx.status);
    const event = applyIntent(ctx, intentOf(action, args));
    const planned = actionVerdict(action, args, plannerView(context(state)));
    if (planned.allowed) {
      expect(event.reason).not.toMatch(/(Ignored|Rejected)$/);
    } else {
      expect(event).toMatchObject({
        type: planned.conflict ? 'Warning' : 'Normal',
        reason: expect.stringMatching(planned.conflict ? /Rejected$/ : /Ignored$/),
      });
      expect(ctx.status).toEqual(before);
    }
  });

  it('the CLI words a refusal for its reader', () => {
    const paused = STATES['Paused for promotion'];
    expect(() => decide('promote', cliApp(paused), flags({ revision: 9 }), UNKNOWN)).toThrow(
      'revision 9 is not in preview: App "web" has revision 2 in preview; nothing changed',
    );
    expect(() => decide('undo', cliApp(STATES.Healthy), flags({ toRevision: 9 }), STATES.Healthy.replicaSets)).toThrow(
      'revision 9 of App "web" has no ReplicaSet left (see revisionHistoryLimit); revisions kept: 1, 2',
    );
    expect(decide('undo', cliApp(paused), flags({}), paused.replicaSets).done).toBe(
      'undo to revision 1 requested: revision 2 leaves preview, revision 1 stays active',
    );
  });
});

describe('undo with a revision in preview', () => {
  it('pins the active revision, drops the promotion and abort, and records the undo in history', () => {
    for (const name of ['Paused for promotion', 'promoting', 'Aborted'] as const) {
      const ctx = context(STATES[name]);
      const event = applyIntent(ctx, intentOf('undo', {}));
      expect(event).toMatchObject({ type: 'Normal', reason: 'Undo' });
      expect(ctx.status.pin).toMatchObject({ revision: 1, podTemplateHash: hash(1), by: 'alice', via: 'cli' });
      expect(ctx.status.pin?.preview).toBeUndefined();
      expect(ctx.status.promotion).toBeUndefined();
      expect(ctx.status.abort).toBeUndefined();
      expect(ctx.status.history?.at(-1)).toMatchObject({
        revision: 1,
        podTemplateHash: hash(1),
        promotedVia: 'undo',
        promotedBy: 'alice',
        promotedAt: NOW,
      });
    }
  });

  it('through the planner: Healthy on the stable revision at once, the preview scaled to 0, the active Service untouched', () => {
    const state = STATES['Paused for promotion'];
    const service = (role: 'active' | 'preview', selected: string): ObservedService => ({
      namespace: 'ns',
      name: role === 'active' ? 'web' : 'web-preview',
      resourceVersion: '1',
      app: 'web',
      selector: { [LABEL_APP]: 'web', [LABEL_HASH]: selected },
      ownerUid: 'uid-1',
    });
    const input = {
      app: app(state),
      observed: {
        replicaSets: state.replicaSets,
        activeService: service('active', hash(1)),
        previewService: service('preview', hash(2)),
      },
      target: { hash: hash(2), image: image(2) },
    };
    const first = plan({ ...input, now: new Date(NOW), intents: [intentOf('undo', {})] });
    expect(first.status).toMatchObject({ phase: 'Healthy', active: { revision: 1 }, pin: { revision: 1 } });
    expect(first.status.preview).toBeUndefined();
    expect(first.status.history?.at(-1)).toMatchObject({ revision: 1, promotedVia: 'undo', promotedBy: 'alice' });
    expect(first.actions).toContainEqual({
      kind: 'patchReplicaSet',
      name: `web-${hash(2)}`,
      replicas: 0,
      scaleDownAt: null,
    });
    const activeSelections = first.actions.flatMap((a) =>
      a.kind === 'applyService' && a.role === 'active' ? [a.manifest.spec.selector[LABEL_HASH]] : [],
    );
    expect(activeSelections.every((h) => h === hash(1))).toBe(true);

    // The next reconcile, with the preview scaled down, keeps it so and records nothing more.
    const scaled = state.replicaSets.map((rs) => (rs.revision === 2 ? { ...rs, specReplicas: 0, replicas: 0 } : rs));
    const again = plan({
      ...input,
      app: { ...input.app, status: first.status },
      observed: { ...input.observed, replicaSets: scaled },
      now: new Date(Date.parse(NOW) + 60_000),
      intents: [intentOf('undo', {})],
    });
    expect(again.status.phase).toBe('Healthy');
    expect(again.status.history).toEqual(first.status.history);
    expect(again.actions.filter((a) => a.kind === 'patchReplicaSet' || a.kind === 'createReplicaSet')).toEqual([]);
  });
});
