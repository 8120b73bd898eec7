// Checks before and after promotion, as the blue/green planner gates on them:
// plan() driven through a model of the cluster (test/support/planner-world.ts)
// in which measurement results come in by key, as the analysis runner
// reports them. Each test names the rule it holds; Argo Rollouts' bugs that a
// rule rules out are named with it.
import { describe, expect, it } from 'vitest';
import { analysisJobName } from '../../src/analysis/job.ts';
import { RESULT_GRACE_MS } from '../../src/analysis/run.ts';
import {
  type AnalysisInput,
  AnalysisSchema,
  AnalysisTemplateSpecSchema,
  type CheckInput,
  CheckSchema,
} from '../../src/app/analysis-schema.ts';
import type { AppInput } from '../../src/app/schema.ts';
import type { RolloutAction } from '../../src/rollout/cluster-actions.ts';
import { intent, makeApp, World } from '../support/planner-world.ts';

const S = 1000;
/** A web check's deadline: its timeoutSeconds (default 10) and the grace for its result. */
const WEB_DEADLINE_MS = 10 * S + RESULT_GRACE_MS;

function webCheck(name = 'smoke', over: Partial<CheckInput> = {}): CheckInput {
  return {
    name,
    successCondition: 'result.ok == true',
    provider: { web: { method: 'GET', url: 'http://127.0.0.1:9/health' } },
    ...over,
  };
}

function jobCheck(name = 'smoke'): CheckInput {
  return {
    name,
    provider: { job: { spec: { template: { spec: { containers: [{ name: 'smoke', image: 'busybox' }] } } } } },
  };
}

type BlueGreenInput = NonNullable<NonNullable<AppInput['spec']['strategy']>['blueGreen']>;

/** A world with revision 1 released (fast-tracked, no checks) under these blue/green settings. */
function released(blueGreen: Partial<BlueGreenInput>): { w: World; h1: string } {
  const w = new World(
    makeApp((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 1, ...blueGreen } };
    }),
  );
  w.converge();
  return { w, h1: w.target().hash };
}

const pre = (...metrics: CheckInput[]): { prePromotionAnalysis: AnalysisInput } => ({
  prePromotionAnalysis: { metrics },
});
const post = (...metrics: CheckInput[]): { postPromotionAnalysis: AnalysisInput } => ({
  postPromotionAnalysis: { metrics },
});

/** Revision 2 deployed and its preview available: the plan that sees it so starts the checks. */
function previewed(w: World): string {
  const h2 = w.image('repo/app:2');
  w.reconcile();
  w.settle();
  w.reconcile();
  return h2;
}

const activeSwitches = (actions: RolloutAction[]) =>
  actions.filter((a) => a.kind === 'applyService' && a.role === 'active');
const deletedJobs = (actions: RolloutAction[]) => actions.filter((a) => a.kind === 'deleteAnalysisJob');
const keyOf = (w: World, n = 1, check = 'smoke', kind: 'pre' | 'post' = 'pre') =>
  `${(kind === 'pre' ? w.status.prePromotionAnalysis : w.status.postPromotionAnalysis)?.id}/${check}/${n}`;

describe('pre-promotion checks start', () => {
  it('once the preview is fully available, not while it is deploying', () => {
    const { w } = released(pre(webCheck()));
    const h2 = w.image('repo/app:2');
    w.reconcile(); // creates the preview's ReplicaSet
    w.reconcile(); // the ReplicaSet exists, its pod is not available
    expect(w.rs(h2).availableReplicas).toBe(0);
    expect(w.status.prePromotionAnalysis).toBeUndefined();
    expect(w.measured).toEqual([]);
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisRunning' });

    w.settle();
    w.reconcile();
    expect(w.status.prePromotionAnalysis).toMatchObject({ revision: 2, podTemplateHash: h2, phase: 'Running' });
    expect(w.measured.map((m) => ({ key: m.key, kind: m.kind, n: m.n, resume: m.resume }))).toEqual([
      { key: keyOf(w), kind: 'pre', n: 1, resume: false },
    ]);
    expect(w.eventsOf('AnalysisRunStarted')).toHaveLength(1);
  });

  it('not for the first release: it goes active with no run', () => {
    const { w } = released(pre(webCheck()));
    expect(w.status.active?.revision).toBe(1);
    expect(w.status.prePromotionAnalysis).toBeUndefined();
    expect(w.eventsOf('AnalysisRunStarted')).toEqual([]);
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'NoAnalysis' });
  });

  it('not for an undo to a revision that served: it goes active without a preview or a run', () => {
    const { w, h1 } = released(pre(webCheck()));
    previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    w.reconcile([intent('promote')]);
    w.settle();
    w.converge();
    expect(w.status.active?.revision).toBe(2);
    const runOf2 = w.status.prePromotionAnalysis;
    // Revision 1 is scaled down: past its delay it is no longer an instant return.
    w.advance(31 * S);
    w.converge();
    expect(w.rs(h1).specReplicas).toBe(0);

    const started = w.eventsOf('AnalysisRunStarted').length;
    w.reconcile([intent('undo')]);
    for (let i = 0; i < 5; i++) {
      expect(w.measured).toEqual([]);
      w.settle();
      w.reconcile();
    }
    expect(w.activeHash()).toBe(h1);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 1, promotedVia: 'undo' });
    expect(w.eventsOf('AnalysisRunStarted')).toHaveLength(started);
    expect(w.status.prePromotionAnalysis).toEqual(runOf2);
  });
});

describe('auto promotion waits for the checks and for autoPromotionSeconds (Argo #3271)', () => {
  it('checks passed before autoPromotionSeconds: promotion waits for the seconds', () => {
    const { w, h1 } = released({ autoPromotionEnabled: true, autoPromotionSeconds: 60, ...pre(webCheck()) });
    const availableAt = w.now;
    const h2 = previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Successful');
    expect(w.status.promotion).toBeUndefined();
    expect(w.rs(h2).specReplicas).toBe(1);
    // Woken when the seconds are up, not before and not never.
    expect(w.now + (w.requeue ?? 0)).toBe(availableAt + 60 * S + 1);

    w.now = availableAt + 60 * S - 1;
    w.reconcile();
    expect(w.status.promotion).toBeUndefined();
    w.now = availableAt + 60 * S;
    w.reconcile();
    expect(w.status.promotion).toMatchObject({ revision: 2, via: 'auto' });
    expect(w.rs(h2).specReplicas).toBe(3);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.activeHash()).not.toBe(h1);
  });

  it('autoPromotionSeconds passed before the checks: promotion waits for the checks', () => {
    const { w, h1 } = released({ autoPromotionEnabled: true, autoPromotionSeconds: 10, ...pre(webCheck()) });
    const h2 = previewed(w);
    w.advance(20 * S);
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Running');
    expect(w.status.promotion).toBeUndefined();
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.status.phase).toBe('Progressing');
    expect(w.condition('Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForAnalysis' });

    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.promotion).toMatchObject({ revision: 2, via: 'auto' });
    expect(w.activeHash()).toBe(h1);
  });

  it('with autoPromotionEnabled false the checks run all the same (Argo #4503), and promotion stays a person’s', () => {
    const { w, h1 } = released(pre(webCheck()));
    previewed(w);
    expect(w.measured).toHaveLength(1);
    expect(w.status.phase).toBe('Paused');
    // Says where the checks stand: which measurement is under way.
    expect(w.status.message).toMatch(/pre-promotion checks: .*measuring "smoke" #1/);
    expect(w.condition('Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForAnalysis' });
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisRunning' });

    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Successful');
    expect(w.status.phase).toBe('Paused');
    expect(w.condition('Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForPromotion' });
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSuccessful' });
    w.advance(600 * S);
    w.reconcile();
    expect(w.status.promotion).toBeUndefined();
    expect(w.activeHash()).toBe(h1);
  });
});

describe('a run in progress', () => {
  it('goes on when the preview loses its pods (Argo #2931): the measurement resumes, the result counts', () => {
    const { w } = released(pre(webCheck()));
    const h2 = previewed(w);
    const run = w.status.prePromotionAnalysis;
    const key = keyOf(w);
    // The preview's pod restarts: not available for a while.
    w.stuck.add(h2);
    w.settle();
    w.advance(S);
    w.reconcile();
    expect(w.status.prePromotionAnalysis).toMatchObject({ id: run?.id, phase: 'Running' });
    expect(w.measured.map((m) => ({ key: m.key, resume: m.resume }))).toEqual([{ key, resume: true }]);
    expect(w.eventsOf('AnalysisRunCancelled')).toEqual([]);

    w.advance(S);
    w.answer(key, { phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis).toMatchObject({ id: run?.id, phase: 'Successful' });
  });

  it('a measurement in flight past its deadline is an Error, never a pass, and a late answer changes nothing', () => {
    const { w } = released(pre(webCheck('smoke', { consecutiveErrorLimit: 1 })));
    previewed(w);
    const started = w.now;
    const first = keyOf(w);
    expect(w.requeue).toBe(WEB_DEADLINE_MS + 1);

    w.now = started + WEB_DEADLINE_MS - 1;
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.checks[0]?.measurements[0]?.phase).toBe('Running');

    w.now = started + WEB_DEADLINE_MS;
    w.reconcile();
    const check = w.status.prePromotionAnalysis?.checks[0];
    expect(check?.measurements[0]).toMatchObject({ n: 1, phase: 'Error' });
    expect(check?.measurements[0]?.message).toMatch(/no result within 40s/);
    expect(check).toMatchObject({ successful: 0, error: 1 });
    expect(w.status.prePromotionAnalysis?.phase).toBe('Running');
    expect(w.eventsOf('MeasurementFailed')).toHaveLength(1);

    // The answer to measurement 1 comes in late, as a pass: it is not measurement 1's any more.
    w.answer(first, { phase: 'Successful', value: '{"ok":true}' });
    w.advance(S);
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.checks[0]).toMatchObject({ successful: 0, count: 0, error: 1 });
    expect(w.status.prePromotionAnalysis?.phase).toBe('Running');
  });

  it('records results by key: a result for another key, or for an earlier n, changes nothing', () => {
    const { w } = released(pre(webCheck()));
    previewed(w);
    w.advance(S);
    const id = w.status.prePromotionAnalysis?.id;
    const without = w.plan();
    for (const key of [`${id}/smoke/2`, `${id}/other/1`, `pre-other/smoke/1`, `${id}/smoke/0`]) {
      w.results.set(key, { phase: 'Failed', value: '{"ok":false}' });
    }
    const withStrays = w.plan();
    expect(withStrays.status).toEqual(without.status);
    expect(withStrays.events).toEqual(without.events);

    w.results.set(`${id}/smoke/1`, { phase: 'Failed', value: '{"ok":false}' });
    expect(w.plan().status.prePromotionAnalysis?.phase).toBe('Failed');
  });

  it('wakes at the exact next deadline: the measurement in flight timing out, then the next one due', () => {
    const { w } = released(pre(webCheck('smoke', { count: 2, interval: '30s' })));
    previewed(w);
    // The planner wakes a millisecond past the deadline, so the deadline has passed when it looks.
    expect(w.requeue).toBe(WEB_DEADLINE_MS + 1);
    w.advance(2 * S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.measured).toEqual([]);
    expect(w.requeue).toBe(30 * S + 1);
    w.advance(30 * S);
    w.reconcile();
    expect(w.measured.map((m) => m.n)).toEqual([2]);
    expect(w.requeue).toBe(WEB_DEADLINE_MS + 1);
  });
});

describe('verdicts', () => {
  it('a failed run aborts: by teal via analysis, Degraded, Ready and Aborted say AnalysisFailed, active stays', () => {
    const { w, h1 } = released({ autoPromotionEnabled: true, ...pre(webCheck()) });
    const h2 = previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Failed', value: '{"ok":false}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Failed');
    expect(w.status.abort).toMatchObject({ revision: 2, podTemplateHash: h2, by: 'teal', via: 'analysis' });
    expect(w.status.phase).toBe('Degraded');
    expect(w.condition('Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(w.condition('Aborted')).toMatchObject({ status: 'True', reason: 'AnalysisFailed' });
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    // The message names the check, the measured value and the condition.
    expect(w.status.message).toContain('check "smoke" failed');
    expect(w.status.message).toContain('{"ok":false}');
    expect(w.status.message).toContain('successCondition "result.ok == true" is false');
    expect(w.activeHash()).toBe(h1);
    expect(w.status.promotion).toBeUndefined();
    expect(w.eventsOf('AnalysisRunFailed')).toHaveLength(1);
    expect(w.eventsOf('MeasurementFailed')).toHaveLength(1);
    // Auto promotion does not take an aborted revision.
    w.settle();
    w.advance(S);
    w.reconcile();
    expect(w.activeHash()).toBe(h1);
    expect(w.rs(h2).specReplicas).toBe(1);
  });

  it('a run that ends in Error aborts too: AnalysisError on AnalysisPassed, AnalysisFailed on Ready', () => {
    const { w, h1 } = released(pre(webCheck('smoke', { consecutiveErrorLimit: 0 })));
    previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:9' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Error');
    expect(w.status.abort).toMatchObject({ by: 'teal', via: 'analysis' });
    expect(w.status.phase).toBe('Degraded');
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisError' });
    expect(w.condition('Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(w.condition('Aborted')).toMatchObject({ status: 'True', reason: 'AnalysisFailed' });
    expect(w.status.message).toContain('ECONNREFUSED');
    expect(w.activeHash()).toBe(h1);
  });

  it('an inconclusive run pauses, even with auto promotion; retry runs the checks again', () => {
    const check = webCheck('smoke', { failureCondition: 'result.ok == false' });
    const { w, h1 } = released({ autoPromotionEnabled: true, ...pre(check) });
    const h2 = previewed(w);
    const first = w.status.prePromotionAnalysis?.id;
    w.advance(S);
    w.answerAll({ phase: 'Inconclusive', value: '{"ok":"maybe"}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Inconclusive');
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toMatch(/retry runs the checks again/);
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisInconclusive' });
    expect(w.status.abort).toBeUndefined();
    w.advance(60 * S);
    w.reconcile();
    expect(w.status.promotion).toBeUndefined();
    expect(w.rs(h2).specReplicas).toBe(1);

    w.reconcile([intent('retry')]);
    expect(w.eventsOf('Retried')).toHaveLength(1);
    const again = w.status.prePromotionAnalysis;
    expect(again).toMatchObject({ revision: 2, phase: 'Running' });
    expect(again?.id).not.toBe(first);
    expect(w.measured.map((m) => m.key)).toEqual([`${again?.id}/smoke/1`]);

    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.promotion).toMatchObject({ revision: 2, via: 'auto' });
    expect(w.activeHash()).toBe(h1);
  });
});

describe('promote --skip-checks after an inconclusive run (issue #24 A5)', () => {
  it('pre-promotion: AnalysisPassed is True/AnalysisSkipped once active, and stays so', () => {
    const check = webCheck('smoke', { failureCondition: 'result.ok == false' });
    const { w } = released(pre(check));
    const h2 = previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Inconclusive', value: '{"ok":"maybe"}' });
    w.reconcile();
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisInconclusive' });
    w.reconcile([intent('promote', { skipChecks: true })]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, checksSkipped: true });
    // The run stays as it ended, for the record; the condition speaks of the skip.
    expect(w.status.prePromotionAnalysis?.phase).toBe('Inconclusive');
    w.advance(45 * S);
    w.reconcile();
    expect(w.status.phase).toBe('Healthy');
    expect(w.condition('AnalysisPassed')).toMatchObject({
      status: 'True',
      reason: 'AnalysisSkipped',
      message: 'the checks of revision 2 were skipped',
    });
  });

  it('post-promotion: AnalysisPassed is True/AnalysisSkipped once stable, and stays so', () => {
    const { w, h2 } = switched();
    w.advance(S);
    w.answerAll({ phase: 'Inconclusive', value: '{"ok":"maybe"}' });
    w.reconcile();
    expect(w.status.postPromotionAnalysis?.phase).toBe('Inconclusive');
    expect(w.status.phase).toBe('Paused');
    w.reconcile([intent('promote', { skipChecks: true })]);
    expect(w.status.stable?.podTemplateHash).toBe(h2);
    w.advance(45 * S);
    w.reconcile();
    expect(w.status.phase).toBe('Healthy');
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, checksSkipped: true });
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSkipped' });
  });
});

describe('promote while the checks run', () => {
  it('is refused: PromoteRejected, nothing promoted, the run goes on', () => {
    const { w, h1 } = released(pre(webCheck()));
    const h2 = previewed(w);
    const run = w.status.prePromotionAnalysis;
    w.advance(S);
    w.reconcile([intent('promote')]);
    const [rejected] = w.eventsOf('PromoteRejected');
    expect(rejected?.type).toBe('Warning');
    expect(rejected?.message).toMatch(/pre-promotion checks of revision 2 are running/);
    expect(rejected?.message).toMatch(/--skip-checks/);
    expect(w.status.promotion).toBeUndefined();
    expect(w.status.prePromotionAnalysis).toMatchObject({ id: run?.id, phase: 'Running' });
    expect(w.rs(h2).specReplicas).toBe(1);
    // Passing later does not promote on the refused request.
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h1);
  });

  it.each([
    ['--skip-checks', { skipChecks: true }],
    ['--full', { full: true }],
  ])('with %s: the run is cancelled, the revision promoted, history says checksSkipped', (_, extra) => {
    const { w } = released(pre(webCheck()));
    const h2 = previewed(w);
    w.advance(S);
    w.reconcile([intent('promote', extra)]);
    expect(w.status.prePromotionAnalysis?.phase).toBe('Cancelled');
    // Its check ends with it (issue #24 A2).
    expect(w.status.prePromotionAnalysis?.checks.map((c) => c.phase)).toEqual(['Cancelled']);
    expect(w.eventsOf('AnalysisRunCancelled')).toHaveLength(1);
    expect(w.rs(h2).specReplicas).toBe(3);
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSkipped' });
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, promotedVia: 'cli', checksSkipped: true });
    expect(w.status.phase).toBe('Healthy');
    // Still true once active, and after: `kubectl wait --for=condition=AnalysisPassed` must not hang on a skip.
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSkipped' });
    w.advance(S);
    w.reconcile();
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSkipped' });
  });
  it('--full after the checks passed skips nothing: history does not say checksSkipped', () => {
    const { w } = released(pre(webCheck()));
    const h2 = previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    w.reconcile([intent('promote', { full: true })]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, promotedVia: 'cli' });
    expect(w.status.history?.at(-1)?.checksSkipped).toBeUndefined();
    expect(w.condition('AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSuccessful' });
  });
});

describe('cancellation', () => {
  it('a new revision cancels the running run; its Jobs go only once the cancel has landed', () => {
    const { w } = released(pre(jobCheck()));
    previewed(w);
    const key = keyOf(w);
    const job = analysisJobName('web', key);
    expect(w.jobs.map((j) => j.name)).toEqual([job]);

    w.image('repo/app:3');
    w.advance(S);
    // The plan that cancels: its status has not landed, so the Job stays.
    w.reconcile([], { loseStatus: true });
    expect(deletedJobs(w.last)).toEqual([]);
    w.reconcile();
    expect(w.status.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Cancelled' });
    expect(w.eventsOf('AnalysisRunCancelled')).toHaveLength(1);
    expect(deletedJobs(w.last)).toEqual([]);
    // Woken at once to delete it.
    expect(w.requeue).toBe(1);

    w.reconcile();
    expect(deletedJobs(w.last)).toEqual([{ kind: 'deleteAnalysisJob', name: job, why: expect.any(String) }]);
    expect(w.jobs).toEqual([]);
  });

  it('keeps the Job of a finished run that is the latest, for its logs', () => {
    const { w } = released(pre(jobCheck()));
    previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Successful', message: 'the Job completed' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Successful');
    w.reconcile();
    w.reconcile();
    expect(w.jobs).toHaveLength(1);
  });

  it('checks changed during a run: it is cancelled and a new run of the new checks starts', () => {
    const { w } = released(pre(jobCheck()));
    previewed(w);
    const first = w.status.prePromotionAnalysis?.id;
    const oldJob = analysisJobName('web', keyOf(w));
    w.advance(S);
    w.edit((spec) => {
      spec.strategy.blueGreen.prePromotionAnalysis = AnalysisSchema.parse(
        pre(jobCheck(), jobCheck('load')).prePromotionAnalysis,
      );
    });
    w.reconcile();
    const run = w.status.prePromotionAnalysis;
    expect(run?.id).not.toBe(first);
    expect(run).toMatchObject({ revision: 2, phase: 'Running' });
    expect(run?.checks.map((c) => c.name)).toEqual(['smoke', 'load']);
    expect(w.eventsOf('AnalysisRunCancelled')).toHaveLength(1);
    expect(w.eventsOf('AnalysisRunStarted')).toHaveLength(2);
    expect(w.measured.map((m) => m.key).sort()).toEqual([`${run?.id}/load/1`, `${run?.id}/smoke/1`]);
    expect(deletedJobs(w.last)).toEqual([]);
    w.reconcile();
    expect(deletedJobs(w.last).map((a) => a.kind === 'deleteAnalysisJob' && a.name)).toEqual([oldJob]);
    expect(w.jobs).toHaveLength(2);
  });
});

/** Revision 2 promoted by hand and switched: its post-promotion checks start with the switch. */
function switched(blueGreen: Partial<BlueGreenInput> = {}) {
  const { w, h1 } = released({ ...post(webCheck()), ...blueGreen });
  const h2 = previewed(w);
  w.reconcile([intent('promote')]);
  w.settle();
  w.reconcile();
  return { w, h1, h2 };
}

describe('post-promotion checks', () => {
  it('start with the switch; stable stays on the old revision, whose ReplicaSet is not marked to go', () => {
    const { w, h1, h2 } = switched();
    expect(activeSwitches(w.last)).toHaveLength(1);
    expect(w.activeHash()).toBe(h2);
    expect(w.status.active?.revision).toBe(2);
    expect(w.status.stable).toMatchObject({ revision: 1, podTemplateHash: h1 });
    expect(w.status.postPromotionAnalysis).toMatchObject({ revision: 2, phase: 'Running' });
    expect(w.measured.map((m) => ({ kind: m.kind, key: m.key }))).toEqual([
      { kind: 'post', key: keyOf(w, 1, 'smoke', 'post') },
    ]);
    // Not Healthy, not Ready, from the switch on: the revision is not through its checks.
    expect(w.status.phase).toBe('Progressing');
    expect(w.condition('Ready')?.status).toBe('False');
    expect(w.eventsOf('PhaseHealthy')).toHaveLength(1); // the first release's
    w.advance(60 * S);
    w.settle();
    w.reconcile();
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    expect(w.rs(h1).specReplicas).toBe(3);
  });

  it('passing makes the new revision stable; the old one goes after scaleDownDelaySeconds', () => {
    const { w, h1, h2 } = switched();
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.stable).toMatchObject({ revision: 2, podTemplateHash: h2 });
    expect(w.eventsOf('Stable')).toHaveLength(1);
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30 * S).toISOString());
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.status.phase).toBe('Healthy');
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
    expect(w.activeHash()).toBe(h2);
  });

  it('a failure aborts in one plan without switching; the next switches back to stable, once', () => {
    const { w, h1, h2 } = switched();
    w.advance(S);
    w.answerAll({ phase: 'Failed', value: '{"ok":false}' });
    w.reconcile();
    expect(w.status.abort).toMatchObject({ revision: 2, by: 'teal', via: 'analysis' });
    expect(activeSwitches(w.last)).toEqual([]);
    expect(w.activeHash()).toBe(h2);
    expect(w.status.phase).toBe('Degraded');
    expect(w.eventsOf('RolledBack')).toEqual([]);
    // Its own status write does not wake the reconciler: the plan asks for the next one at once.
    expect(w.requeue).toBe(1);

    w.reconcile();
    expect(activeSwitches(w.last)).toHaveLength(1);
    expect(w.activeHash()).toBe(h1);
    expect(w.status.active).toMatchObject({ revision: 1, podTemplateHash: h1 });
    expect(w.status.stable).toMatchObject({ revision: 1 });
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 1, promotedBy: 'teal', promotedVia: 'abort' });
    expect(w.eventsOf('RolledBack')).toHaveLength(1);
    expect(w.condition('Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(w.condition('Aborted')).toMatchObject({ status: 'True', reason: 'AnalysisFailed' });
    const history = w.status.history?.length;

    for (let i = 0; i < 3; i++) {
      w.settle();
      w.advance(S);
      w.reconcile();
      expect(activeSwitches(w.last)).toEqual([]);
    }
    expect(w.activeHash()).toBe(h1);
    expect(w.status.history).toHaveLength(history ?? 0);
    expect(w.eventsOf('RolledBack')).toHaveLength(1);
    // Revision 1 served throughout: never marked to go, never scaled down.
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
    expect(w.rs(h1).specReplicas).toBe(3);
  });

  it('says active is switching back until the Service is seen on stable, and only then that it is back', () => {
    const { w } = switched();
    w.advance(S);
    w.answerAll({ phase: 'Failed', value: '{"ok":false}' });
    w.reconcile();
    expect(w.status.message).toMatch(/; active returns to revision 1$/);
    // The plan that writes the switch back saw the Service still selecting revision 2.
    w.reconcile();
    expect(activeSwitches(w.last)).toHaveLength(1);
    expect(w.status.active?.revision).toBe(1);
    expect(w.status.message).toMatch(/; active is switching back to revision 1$/);
    w.reconcile();
    expect(activeSwitches(w.last)).toEqual([]);
    expect(w.status.message).toMatch(/; active is back on revision 1$/);
  });

  it('the switch back replayed on a status whose write was lost: recorded once, not switched again', () => {
    const { w, h1, h2 } = switched();
    w.advance(S);
    w.answerAll({ phase: 'Failed', value: '{"ok":false}' });
    w.reconcile();
    const history = w.status.history?.length ?? 0;
    // The switch back is carried out, then the operator dies before its status lands.
    w.reconcile([], { loseStatus: true });
    expect(w.activeHash()).toBe(h1);
    expect(w.status.active?.podTemplateHash).toBe(h2);

    w.advance(S);
    w.reconcile();
    expect(activeSwitches(w.last)).toEqual([]);
    expect(w.status.active).toMatchObject({ revision: 1, podTemplateHash: h1 });
    expect(w.status.stable?.podTemplateHash).toBe(h1);
    expect(w.status.history).toHaveLength(history + 1);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 1, promotedVia: 'abort' });
    expect(w.status.phase).toBe('Degraded');
    for (let i = 0; i < 3; i++) {
      w.settle();
      w.advance(S);
      w.reconcile();
      expect(activeSwitches(w.last)).toEqual([]);
    }
    expect(w.activeHash()).toBe(h1);
    expect(w.status.history).toHaveLength(history + 1);
    expect(w.eventsOf('ActiveServiceEdited')).toEqual([]);
    // The roll back is told once, though the plan that made it lost its events with its status.
    expect(w.eventsOf('RolledBack')).toHaveLength(1);
  });

  it('abort during the checks switches back to stable at once and cancels the run', () => {
    const { w, h1 } = switched();
    w.advance(S);
    w.reconcile([intent('abort')]);
    expect(activeSwitches(w.last)).toHaveLength(1);
    expect(w.activeHash()).toBe(h1);
    expect(w.status.postPromotionAnalysis?.phase).toBe('Cancelled');
    // Its checks end with it (issue #24 A2): none left Running under a cancelled run.
    expect(w.status.postPromotionAnalysis?.checks.map((c) => c.phase)).toEqual(['Cancelled']);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 1, promotedBy: 'alice', promotedVia: 'abort' });
    expect(w.status.phase).toBe('Degraded');
    expect(w.status.message).toBe('revision 2 aborted by alice; active is switching back to revision 1');
    expect(w.condition('Aborted')).toMatchObject({ status: 'True', reason: 'Aborted' });
    expect(w.eventsOf('RolledBack')).toHaveLength(1);
    // The Aborted Event of the step that switches back says so (issue #24 A3), not that active stays.
    expect(w.eventsOf('Aborted').map((e) => e.message)).toEqual([
      'revision 2 aborted by alice (cli); active switches back to stable revision 1',
    ]);
    w.settle();
    w.reconcile();
    expect(activeSwitches(w.last)).toEqual([]);
    expect(w.rs(h1).specReplicas).toBe(3);
  });

  it('a lost switch is recorded with its post-promotion run started, stable still the old revision', () => {
    const { w, h1 } = released(post(webCheck()));
    const h2 = previewed(w);
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile([], { loseStatus: true });
    expect(w.activeHash()).toBe(h2);
    expect(w.status.active?.podTemplateHash).toBe(h1);

    w.reconcile();
    expect(w.eventsOf('SwitchRecorded')).toHaveLength(1);
    expect(w.status.active?.podTemplateHash).toBe(h2);
    expect(w.status.stable?.podTemplateHash).toBe(h1);
    expect(w.status.postPromotionAnalysis).toMatchObject({ revision: 2, phase: 'Running' });
    expect(w.rs(h1).scaleDownAt).toBeUndefined();
  });
});

describe('retry after failed checks', () => {
  it.each(['pre', 'post'] as const)(
    'retry after failed %s-promotion checks goes through preview and the checks again, even inside abortScaleDownDelaySeconds',
    (kind) => {
      const { w, h1 } = released(kind === 'pre' ? pre(webCheck()) : post(webCheck()));
      const h2 = previewed(w);
      if (kind === 'post') {
        w.reconcile([intent('promote')]);
        w.settle();
        w.reconcile();
      }
      w.advance(S);
      w.answerAll({ phase: 'Failed', value: '{"ok":false}' });
      w.reconcile();
      w.reconcile(); // post: the switch back
      w.settle();
      expect(w.activeHash()).toBe(h1);
      expect(w.rs(h2).scaleDownAt).toBeDefined();

      w.advance(5 * S); // the aborted revision is still up, inside its 30 s
      const before = w.events.length;
      w.reconcile([intent('retry')]);
      for (let i = 0; i < 4; i++) {
        w.settle();
        w.reconcile();
      }
      const since = w.events.slice(before);
      expect(since.filter((e) => /promoting|going active/.test(e.message)).map((e) => e.message)).toEqual([]);
      expect(since.map((e) => e.reason)).not.toContain('SwitchedActive');
      expect(w.activeHash()).toBe(h1);
      expect(w.status.stable?.podTemplateHash).toBe(h1);
      expect(w.status.phase).toBe('Paused');
      expect(w.rs(h2).specReplicas).toBe(1);
      if (kind === 'pre') expect(w.status.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Running' });
    },
  );
});

describe('templates', () => {
  const byTemplate = { prePromotionAnalysis: { templates: [{ templateName: 'smoke-test' }] } };

  it('a template that is not there is an invalid spec naming the field; nothing is released', () => {
    const w = new World(makeApp((a) => Object.assign(a.spec.strategy?.blueGreen ?? {}, byTemplate)));
    w.reconcile();
    expect(w.last).toEqual([]);
    expect(w.status.phase).toBe('Degraded');
    expect(w.condition('InvalidSpec')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.prePromotionAnalysis.templates[0].templateName: AnalysisTemplate "smoke-test" not found',
    );
  });

  it('an invalid template is an invalid spec saying why; once it is valid, its metrics are the checks', () => {
    const w = new World(makeApp((a) => Object.assign(a.spec.strategy?.blueGreen ?? {}, byTemplate)));
    w.invalidTemplates.set('smoke-test', 'spec.metrics[0].count: must be at least 1');
    w.reconcile();
    expect(w.last).toEqual([]);
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.prePromotionAnalysis.templates[0].templateName: AnalysisTemplate "smoke-test" is invalid: spec.metrics[0].count: must be at least 1',
    );

    w.invalidTemplates.clear();
    w.templates.set('smoke-test', { metrics: [CheckSchema.parse(webCheck('from-template'))] });
    w.converge();
    expect(w.condition('InvalidSpec')).toMatchObject({ status: 'False' });
    previewed(w);
    expect(w.status.prePromotionAnalysis?.checks.map((c) => c.name)).toEqual(['from-template']);
  });

  // As Argo's rollout-secret-withArgs.yaml: a template leaves count and interval to the App's arguments.
  const argsTemplate = () =>
    AnalysisTemplateSpecSchema.parse({
      args: [{ name: 'runs' }, { name: 'every', value: '30s' }],
      metrics: [webCheck('smoke', { count: '{{args.runs}}', interval: '{{args.every}}' })],
    });
  /** Revision 1 released, its App naming the template with `runs`. */
  const releasedWithArgs = (runs: string): World => {
    const w = new World(
      makeApp((a) => {
        a.spec.strategy = {
          blueGreen: {
            autoPromotionEnabled: false,
            previewReplicaCount: 1,
            prePromotionAnalysis: {
              templates: [{ templateName: 'smoke-test' }],
              args: [{ name: 'runs', value: runs }],
            },
          },
        };
      }),
    );
    w.templates.set('smoke-test', argsTemplate());
    w.converge();
    return w;
  };

  it("a template's count and interval from the App's arguments: the run takes that many, that far apart", () => {
    const w = releasedWithArgs('2');
    previewed(w);
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis?.phase).toBe('Running');
    expect(w.requeue).toBe(30 * S + 1);
    w.advance(30 * S);
    w.reconcile();
    expect(w.measured.map((m) => m.n)).toEqual([2]);
    w.advance(S);
    w.answerAll({ phase: 'Successful', value: '{"ok":true}' });
    w.reconcile();
    expect(w.status.prePromotionAnalysis).toMatchObject({ phase: 'Successful' });
  });

  it('an argument that gives no number is an invalid spec naming the check, the field and the argument', () => {
    const w = new World(makeApp((a) => Object.assign(a.spec.strategy?.blueGreen ?? {}, byTemplate)));
    w.edit((spec) => {
      Object.assign(spec.strategy.blueGreen.prePromotionAnalysis ?? {}, { args: [{ name: 'runs', value: 'two' }] });
    });
    w.templates.set('smoke-test', argsTemplate());
    w.reconcile();
    expect(w.last).toEqual([]);
    expect(w.status.phase).toBe('Degraded');
    expect(w.condition('InvalidSpec')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
    expect(w.condition('InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.prePromotionAnalysis.metrics "smoke".count: must be a whole number ({{args.runs}} gave "two")',
    );
  });
});
