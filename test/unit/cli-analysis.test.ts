// The checks as `kubectl teal` shows them (src/cli): each run in the tree of
// `get` under the revision it checks, with its checks and their latest
// measurements; the line `status` prints about them and when it stops
// waiting; and `promote --skip-checks`, carried in the intent and refused
// without it in words that say where to look.
import type { V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANN_IMAGE, ANN_REVISION, LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { AppAnalysisRun, AppStatus, RevisionStatus } from '../../src/app/schema.ts';
import { parse } from '../../src/cli/args.ts';
import { decide } from '../../src/cli/commands/actions.ts';
import { checksLine, pausedWhy, settled, trafficCheckLine } from '../../src/cli/commands/status.ts';
import type { Flags } from '../../src/cli/flags.ts';
import type { AppObject } from '../../src/cli/kube.ts';
import { appView, renderApp } from '../../src/cli/tree.ts';
import { UNKNOWN } from '../../src/rollout/action-rules.ts';

const T0 = '2026-11-21T10:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString();
const NOW = Date.parse(at(600));

const revision = (n: number): RevisionStatus => ({
  revision: n,
  image: `registry.example.com/team/web:${n}`,
  podTemplateHash: `hash${n}`,
  replicaSet: `web-hash${n}`,
});

function replicaSet(n: number, replicas: number): V1ReplicaSet {
  return {
    metadata: {
      name: `web-hash${n}`,
      labels: { [LABEL_APP]: 'web', [LABEL_HASH]: `hash${n}` },
      annotations: { [ANN_REVISION]: String(n), [ANN_IMAGE]: `registry.example.com/team/web:${n}` },
      creationTimestamp: new Date(at(n * 10)),
    },
    spec: { replicas, selector: {}, template: {} },
    status: { replicas, readyReplicas: replicas, availableReplicas: replicas },
  };
}

function pod(n: number, suffix: string): V1Pod {
  return {
    metadata: {
      name: `web-hash${n}-${suffix}`,
      labels: { [LABEL_HASH]: `hash${n}` },
      creationTimestamp: new Date(at(n * 10 + 1)),
    },
    spec: { containers: [{ name: 'app' }] },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, restartCount: 0 } as never] },
  };
}

/** A pre-promotion run of revision 2: a prometheus check that passed 4 times, a web check failing now. */
const preRun = (phase: AppAnalysisRun['phase'], message?: string): AppAnalysisRun => ({
  id: 'web-2-pre-1',
  revision: 2,
  podTemplateHash: 'hash2',
  phase,
  ...(message ? { message } : {}),
  startedAt: at(300),
  checks: [
    {
      name: 'error-rate',
      provider: 'prometheus',
      phase: 'Successful',
      message: 'count 4 reached',
      taken: 4,
      count: 4,
      successful: 4,
      failed: 0,
      inconclusive: 0,
      error: 0,
      consecutiveError: 0,
      measurements: [1, 2, 3, 4].map((n) => ({
        n,
        phase: 'Successful' as const,
        value: `0.0${n}`,
        startedAt: at(300 + n * 30),
        finishedAt: at(301 + n * 30),
      })),
    },
    {
      name: 'healthz',
      provider: 'web',
      phase: 'Running',
      taken: 3,
      count: 1,
      successful: 1,
      failed: 1,
      inconclusive: 0,
      error: 1,
      consecutiveError: 0,
      measurements: [
        { n: 1, phase: 'Successful', value: '{"ok":true}', startedAt: at(330), finishedAt: at(331) },
        {
          n: 2,
          phase: 'Error',
          message: 'GET http://127.0.0.1:8080/healthz answered 500 Internal Server Error after retrying twice',
          startedAt: at(360),
          finishedAt: at(361),
        },
        { n: 3, phase: 'Failed', value: '{"ok":false}', startedAt: at(390), finishedAt: at(391) },
        { n: 4, phase: 'Running', startedAt: at(420) },
      ],
    },
  ],
});

function app(status: AppStatus, paused = false): AppObject {
  return {
    metadata: { name: 'web', namespace: 'ns', generation: 1, creationTimestamp: T0 },
    spec: {
      image: 'registry.example.com/team/web:2',
      replicas: 1,
      paused,
      strategy: { blueGreen: { prePromotionAnalysis: { metrics: [] } } },
    } as AppObject['spec'],
    status: { observedGeneration: 1, ...status },
  };
}

const paused = (run: AppAnalysisRun, extra: AppStatus = {}): AppObject =>
  app({
    phase: 'Paused',
    message: 'revision 2 is ready in preview, waiting for its checks',
    active: revision(1),
    stable: revision(1),
    preview: revision(2),
    history: [{ revision: 1, image: revision(1).image, createdAt: T0, promotedAt: T0, promotedVia: 'first-release' }],
    prePromotionAnalysis: run,
    ...extra,
  });

const tree = (a: AppObject) =>
  renderApp(appView(a, [replicaSet(2, 1), replicaSet(1, 1)], [pod(2, 'a'), pod(1, 'b')], []), false, NOW);

describe('kubectl teal get shows the runs of checks', () => {
  it('puts a run under the revision it checks, each check and its latest three measurements under it', () => {
    const text = tree(paused(preRun('Running', 'check healthz: 1 failed, 1 error')));
    const rows = text.slice(text.indexOf('NAME')).trimEnd().split('\n');
    expect(rows).toEqual([
      'NAME                           KIND          STATUS         AGE     INFO',
      '⟳ web                          App           ॥ Paused       10m',
      '├──# revision:2',
      '│  ├──⧉ web-hash2              ReplicaSet    ✔ Healthy      9m40s   preview',
      '│  │  └──□ web-hash2-a         Pod           ✔ Running      9m39s   ready:1/1',
      '│  └──⊞ pre-promotion checks   Analysis      ◌ Running      5m      ✔ 5 ✖ 1 ⚠ 1',
      '│     ├──⊡ error-rate          Check         ✔ Successful           prometheus ✔ 4 count 4 reached',
      '│     │  ├──∙ #2               Measurement   ✔ Successful   4m      value:0.02',
      '│     │  ├──∙ #3               Measurement   ✔ Successful   3m30s   value:0.03',
      '│     │  └──∙ #4               Measurement   ✔ Successful   3m      value:0.04',
      '│     └──⊡ healthz             Check         ◌ Running              web ✔ 1 ✖ 1 ⚠ 1',
      '│        ├──∙ #2               Measurement   ✖ Error        4m      GET http://127.0.0.1:8080/healthz answered 500 Internal Ser…',
      '│        ├──∙ #3               Measurement   ✖ Failed       3m30s   value:{"ok":false}',
      '│        └──∙ #4               Measurement   ◌ Running      3m',
      '└──# revision:1',
      '   └──⧉ web-hash1              ReplicaSet    ✔ Healthy      9m50s   stable,active',
      '      └──□ web-hash1-b         Pod           ✔ Running      9m49s   ready:1/1',
    ]);
    expect(text).toMatch(
      /^Checks:\s+pre-promotion checks of revision 2: ◌ Running - check healthz: 1 failed, 1 error$/m,
    );
  });

  it('keeps the runs in -o json, under their revision', () => {
    const run = preRun('Failed', 'check healthz failed');
    const view = appView(paused(run), [replicaSet(2, 1), replicaSet(1, 1)], [], []);
    expect(view.revisions.find((r) => r.revision === 2)?.analysis).toEqual([{ ...run, kind: 'pre' }]);
    expect(view.revisions.find((r) => r.revision === 1)).not.toHaveProperty('analysis');
  });

  it('shows a post-promotion run under the active revision, and one whose revision has no ReplicaSet alone', () => {
    const post: AppAnalysisRun = { ...preRun('Successful'), id: 'web-2-post-1', checks: [] };
    const a = app({
      phase: 'Progressing',
      active: revision(2),
      stable: revision(1),
      postPromotionAnalysis: post,
      prePromotionAnalysis: { ...preRun('Cancelled'), revision: 3, podTemplateHash: 'hash3', checks: [] },
    });
    const text = renderApp(appView(a, [replicaSet(2, 1), replicaSet(1, 1)], [], []), false, NOW);
    const rows = text.slice(text.indexOf('NAME')).trimEnd().split('\n');
    expect(rows.slice(1)).toEqual([
      '⟳ web                           App          ◌ Progressing   10m',
      '├──# revision:3',
      '│  └──⊞ pre-promotion checks    Analysis     ⊘ Cancelled     5m',
      '├──# revision:2',
      '│  ├──⧉ web-hash2               ReplicaSet   ✔ Healthy       9m40s   active',
      '│  └──⊞ post-promotion checks   Analysis     ✔ Successful    5m',
      '└──# revision:1',
      '   └──⧉ web-hash1               ReplicaSet   ✔ Healthy       9m50s   stable',
    ]);
  });

  it('marks a revision promoted without its checks', () => {
    const a = app({
      phase: 'Healthy',
      active: revision(2),
      stable: revision(2),
      history: [
        { revision: 1, image: revision(1).image, createdAt: T0, promotedVia: 'first-release' },
        { revision: 2, podTemplateHash: 'hash2', image: revision(2).image, createdAt: T0, checksSkipped: true },
      ],
    });
    const text = renderApp(appView(a, [replicaSet(2, 1), replicaSet(1, 0)], [], []), false, NOW);
    expect(text).toMatch(/^├──# revision:2\s+checks skipped$/m);
    expect(text).toMatch(/^└──# revision:1$/m);
  });
});

describe('kubectl teal status and the checks', () => {
  it('prints one line about the latest run, and none without one', () => {
    expect(checksLine(paused(preRun('Running', '2 of 4 measured')), false)).toBe(
      'checks: pre-promotion checks of revision 2: ◌ Running - 2 of 4 measured',
    );
    const post = { ...preRun('Failed', 'check healthz failed: value {"ok":false}'), startedAt: at(500) };
    expect(checksLine(paused(preRun('Successful'), { postPromotionAnalysis: post }), false)).toBe(
      'checks: post-promotion checks of revision 2: ✖ Failed - check healthz failed: value {"ok":false}',
    );
    expect(checksLine(app({ phase: 'Healthy', active: revision(1) }), false)).toBe('');
  });

  it('says nothing of a run left behind: revision 2 checked, then an undo made revision 1 active again', () => {
    const back = app({
      phase: 'Healthy',
      active: revision(1),
      stable: revision(1),
      prePromotionAnalysis: preRun('Successful'),
    });
    expect(checksLine(back, false)).toBe('');
  });

  it('waits while the checks run, unless a person paused the App', () => {
    expect(settled(paused(preRun('Running')))).toBeUndefined();
    expect(settled(paused(preRun('Successful')))).toBe('Paused');
    expect(settled(paused(preRun('Inconclusive')))).toBe('Paused');
    expect(settled(paused(preRun('Running'), { pause: { by: 'ann', via: 'cli', at: T0 } }))).toBe('Paused');
    expect(settled({ ...paused(preRun('Running')), spec: { paused: true } })).toBe('Paused');
  });

  it('says how to carry on after inconclusive checks', () => {
    expect(pausedWhy(paused(preRun('Inconclusive')), 'web')).toBe(
      ': the pre-promotion checks of revision 2 were inconclusive; "kubectl teal retry web" runs them again, "kubectl teal promote web --skip-checks" promotes without them',
    );
    expect(pausedWhy(paused(preRun('Successful')), 'web')).toBe(': revision 2 waits for "kubectl teal promote web"');
  });
});

describe('kubectl teal promote --skip-checks', () => {
  const flags = (argv: string[]): Flags => {
    const parsed = parse(argv);
    if (parsed.kind !== 'run') throw new Error('not a command');
    return parsed.flags;
  };

  it('is a flag of promote, carried in the intent and said in the answer', () => {
    const f = flags(['promote', 'web', '--skip-checks']);
    expect(f.skipChecks).toBe(true);
    const { extra, done } = decide('promote', paused(preRun('Running')), f, UNKNOWN);
    expect(extra).toEqual({ skipChecks: true });
    expect(done).toBe('promotion of revision 2 (checks skipped) requested');
    const both = decide(
      'promote',
      paused(preRun('Running')),
      flags(['promote', 'web', '--full', '--skip-checks']),
      UNKNOWN,
    );
    expect(both).toEqual({
      extra: { full: true, skipChecks: true },
      done: 'promotion of revision 2 (full, checks skipped) requested',
    });
    expect(flags(['promote', 'web']).skipChecks).toBe(false);
    expect(() => parse(['abort', 'web', '--skip-checks'])).toThrow(/skip-checks/);
  });

  it('without it, is refused while the checks run, naming where to see them and the ways on', () => {
    const refuse = (run: AppAnalysisRun) => () => decide('promote', paused(run), flags(['promote', 'web']), UNKNOWN);
    expect(refuse(preRun('Running', 'check healthz: 1 failed'))).toThrow(
      'App "web" cannot be promoted yet: the pre-promotion checks of revision 2 are still running (check healthz: 1 failed); see them with "kubectl teal get web"; "kubectl teal promote web --skip-checks" promotes without them (recorded in history)',
    );
    expect(refuse(preRun('Inconclusive'))).toThrow(
      'App "web" cannot be promoted yet: the pre-promotion checks of revision 2 were inconclusive; see them with "kubectl teal get web"; "kubectl teal retry web" runs them again; "kubectl teal promote web --skip-checks" promotes without them (recorded in history)',
    );
  });
});

describe('kubectl teal get and status show the traffic check', () => {
  const trafficCheck = {
    podTemplateHash: revision(2).podTemplateHash,
    revision: 2,
    phase: 'Running' as const,
    message: '3 of 10 answers in a row from revision 2 at shop.example.com; last answer named 2',
    startedAt: T0,
    taken: 4,
    consecutive: 3,
    lastSeen: '2',
  };
  const switched = app({ phase: 'Progressing', active: revision(2), stable: revision(1), trafficCheck });

  it('get: a Traffic check line in the header, with where it stands, the count, the host and the last answer', () => {
    expect(tree(switched)).toContain(
      'Traffic check: revision 2: ◌ Running - 3 of 10 answers in a row from revision 2 at shop.example.com; last answer named 2',
    );
    expect(tree(app({ phase: 'Healthy', active: revision(2) }))).not.toContain('Traffic check');
  });

  it('status: the line, only for the revision active now', () => {
    expect(trafficCheckLine(switched, false)).toBe(
      'traffic check: revision 2: ◌ Running - 3 of 10 answers in a row from revision 2 at shop.example.com; last answer named 2',
    );
    expect(trafficCheckLine(app({ active: revision(3), trafficCheck }), false)).toBe('');
  });
});
