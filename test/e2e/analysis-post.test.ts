import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnalysisInput, CheckInput } from '../../src/app/analysis-schema.ts';
import { LABEL_HASH } from '../../src/app/labels.ts';
import type { AppAnalysisRun, AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { activeRevision, appSteps, checkServers, conditionOf, webCheck } from '../support/analysis.ts';
import { intent, patchSpec, phase, replicaSetOf, type StoredApp, selectorHash, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { clients, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import {
  makeReady,
  notReadyTemplate,
  recordReplicaSets,
  waitForAppEvent,
  waitForNewReplicaSet,
} from '../support/parity.ts';
import { watchChanges } from '../support/watch.ts';

const { core } = clients();
let ns: string;
let world: OperatorNamespace;
let operator: Operator;
let invariant: Invariant;
const { serve, closeAll: closeServers } = checkServers();
const { released, newImage } = appSteps(() => ns);
const stops: (() => void)[] = [];

beforeAll(async () => {
  world = await operatorNamespace('analysis-post');
  ({ ns, operator, invariant } = world);
});

afterAll(async () => {
  for (const stop of stops) stop();
  // The operator first: a measurement it still has in flight may not hang on a closed server.
  await world?.stop();
  await closeServers();
});

// ---- helpers ----

function app(name: string, blueGreen: Record<string, unknown>): AppInput {
  return e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 2, abortScaleDownDelaySeconds: 2, ...blueGreen } });
}

/** Every selector the named Service went through, from its current one on: a switch a poll would miss counts. */
async function recordSelectors(name: string): Promise<string[]> {
  const seen: string[] = [];
  const stop = await watchChanges(
    `/api/v1/namespaces/${ns}/services`,
    { fieldSelector: `metadata.name=${name}` },
    (type, obj: { spec?: { selector?: Record<string, string> } }) => {
      const hash = obj.spec?.selector?.[LABEL_HASH];
      if ((type === 'ADDED' || type === 'MODIFIED') && hash && seen.at(-1) !== hash) seen.push(hash);
    },
  );
  stops.push(stop);
  await waitFor(`the first state of Service ${name}`, async () => seen.length > 0 || undefined);
  return seen;
}

/** How many times an Event of this reason was recorded on the App (an Event counts its repeats). */
async function eventCount(name: string, reason: string): Promise<number> {
  const list = await core.listNamespacedEvent({
    namespace: ns,
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=App,reason=${reason}`,
  });
  return list.items.reduce((sum, e) => sum + (e.count ?? 1), 0);
}

const teal = (...args: string[]) => tealIn(ns, ...args);

const measurement = (a: StoredApp, kind: 'pre' | 'post', n: number) =>
  (kind === 'pre' ? a.status?.prePromotionAnalysis : a.status?.postPromotionAnalysis)?.checks[0]?.measurements.find(
    (m) => m.n === n,
  );

// ---- the scenarios ----

describe('post-promotion checks', () => {
  it('a failure returns active to stable once and exactly once, across a kill -9 mid-run', async () => {
    // Measurement 1 passes; measurement 2 is held in flight until the test has killed the operator, then fails.
    let failing = false;
    const server = await serve((req) => {
      if (req.n === 1) return { status: 200, body: { ok: true } };
      return failing ? { status: 200, body: { ok: false } } : 'hold';
    });
    // A generous timeout: the next operator takes over only once the dead one's lease has expired.
    const check = webCheck('health', `${server.url}/health`, {
      interval: '2s',
      count: 3,
      failureLimit: 0,
      provider: { web: { method: 'GET', url: `${server.url}/health`, timeoutSeconds: 120 } },
    });
    const postPromotionAnalysis: AnalysisInput = { metrics: [check] };
    await released(app('post', { autoPromotionEnabled: true, postPromotionAnalysis }));
    const h1 = await selectorHash(ns, 'post');
    const selectors = await recordSelectors('post');
    const replicaSets = await recordReplicaSets(ns, 'post');
    stops.push(replicaSets.stop);

    await newImage('post', '2');
    const midRun = await waitForApp(
      ns,
      'post',
      'revision 2 active, its post-promotion measurement 2 in flight',
      (a) => measurement(a, 'post', 2)?.phase === 'Running',
    );
    await waitFor('measurement 2 asked of the server', async () => server.requests.length >= 2 || undefined);
    expect(midRun.status?.active?.revision).toBe(2);
    expect(midRun.status?.stable?.revision).toBe(1);
    expect(measurement(midRun, 'post', 1)?.phase).toBe('Successful');
    const h2 = midRun.status?.active?.podTemplateHash;

    await operator.kill();
    failing = true;
    operator = await world.startOperator();

    const back = await waitForApp(
      ns,
      'post',
      'back on revision 1 after the failed check',
      (a) => a.status?.active?.revision === 1 && a.status.history?.at(-1)?.promotedVia === 'abort',
    );
    // A later reconcile has run: the aborted revision went after abortScaleDownDelaySeconds.
    await waitFor('revision 2 scaled down', async () =>
      h2 && (await replicaSetOf(ns, 'post', h2))?.spec?.replicas === 0 ? true : undefined,
    );
    // Status says active is back only once the operator has seen the Service select revision 1 again.
    const settled = await waitForApp(
      ns,
      'post',
      'Degraded, active back on revision 1',
      (a) => phase('Degraded')(a) && (a.status?.message ?? '').endsWith('; active is back on revision 1'),
    );
    // The test's own watch is another stream: it may bring the switch back a moment after the operator's did.
    await waitFor(
      'the watch to see the switch back',
      async () => (selectors.length > 1 && selectors.at(-1) === h1) || undefined,
    );
    expect(selectors).toEqual([h1, h2, h1]);
    expect(await selectorHash(ns, 'post')).toBe(h1);
    // Stable served throughout: never scaled down, never marked to be.
    const stableStates = replicaSets.of(h1 ?? '');
    expect(stableStates.length).toBeGreaterThan(0);
    expect(stableStates.filter((s) => s.replicas !== 2 || s.scaleDownAt !== undefined)).toEqual([]);

    expect(back.status?.abort).toMatchObject({ revision: 2, by: 'teal', via: 'analysis' });
    expect(settled.status?.stable?.revision).toBe(1);
    expect(settled.status?.history?.at(-1)).toMatchObject({ revision: 1, promotedBy: 'teal', promotedVia: 'abort' });
    expect(settled.status?.history?.filter((h) => h.promotedVia === 'abort')).toHaveLength(1);
    expect(conditionOf(settled, 'Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
    expect(conditionOf(settled, 'Aborted')).toMatchObject({ status: 'True', reason: 'AnalysisFailed' });
    // Across the kill, each measurement was taken once: none repeated, none lost.
    const run = settled.status?.postPromotionAnalysis;
    expect(run).toMatchObject({ revision: 2, phase: 'Failed' });
    expect(run?.checks[0]).toMatchObject({ taken: 2, successful: 1, failed: 1 });
    expect(settled.status?.message).toContain('check "health" failed');
    expect(await eventCount('post', 'RolledBack')).toBe(1);
  });
});

describe('promote --skip-checks', () => {
  it('promotes while the checks run, cancels them, and history says checksSkipped', async () => {
    // Never answered: the check runs until the test skips it.
    const server = await serve(() => 'hold');
    const check = webCheck('smoke', `${server.url}/smoke`, {
      provider: { web: { method: 'GET', url: `${server.url}/smoke`, timeoutSeconds: 300 } },
    });
    await released(app('skip', { prePromotionAnalysis: { metrics: [check] } }));
    await newImage('skip', '2');
    await waitForApp(ns, 'skip', 'checks running', (a) => measurement(a, 'pre', 1)?.phase === 'Running');
    await waitFor('the check asked of the server', async () => server.requests[0]);

    const refused = await teal('promote', 'skip');
    expect(refused.code, refused.stdout).not.toBe(0);
    expect(refused.stderr).toMatch(/--skip-checks/);

    const promoted = await teal('promote', 'skip', '--skip-checks');
    expect(promoted.code, promoted.stderr).toBe(0);
    const done = await waitForApp(ns, 'skip', 'revision 2 active', activeRevision(2));
    expect(done.status?.history?.at(-1)).toMatchObject({ revision: 2, checksSkipped: true });
    expect(done.status?.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Cancelled' });
    // Its check ended with it (issue #24 A2).
    expect(done.status?.prePromotionAnalysis?.checks.map((c) => c.phase)).toEqual(['Cancelled']);
    // The request in flight was let go of, not left hanging.
    await waitFor('the held request abandoned', async () => server.requests[0]?.aborted || undefined);
    expect(conditionOf(done, 'AnalysisPassed')).toMatchObject({ status: 'True', reason: 'AnalysisSkipped' });
  });
});

describe('inconclusive checks', () => {
  it('pause the release for a person; retry runs the checks again', async () => {
    let score = 70;
    const server = await serve(() => ({ status: 200, body: { score } }));
    const check = webCheck('score', `${server.url}/score`, {
      successCondition: 'result.score >= 90',
      failureCondition: 'result.score < 50',
    });
    const first = await released(
      app('unsure', { autoPromotionEnabled: true, prePromotionAnalysis: { metrics: [check] } }),
    );
    await newImage('unsure', '2');
    const paused = await waitForApp(
      ns,
      'unsure',
      'inconclusive, Paused',
      (a) => a.status?.prePromotionAnalysis?.phase === 'Inconclusive' && phase('Paused')(a),
    );
    expect(conditionOf(paused, 'AnalysisPassed')).toMatchObject({ status: 'False', reason: 'AnalysisInconclusive' });
    expect(paused.status?.abort).toBeUndefined();
    expect(paused.status?.active?.revision).toBe(1);
    expect(await selectorHash(ns, 'unsure')).toBe(first.status?.active?.podTemplateHash);
    // Recorded once the status that ends the run has landed: it may follow that status.
    const inconclusiveEvents = await waitFor('the AnalysisRunInconclusive Event', async () => {
      const count = await eventCount('unsure', 'AnalysisRunInconclusive');
      return count > 0 ? count : undefined;
    });
    expect(inconclusiveEvents).toBe(1);
    const inconclusiveRun = paused.status?.prePromotionAnalysis?.id;

    score = 95;
    await intent(ns, 'unsure', 'retry');
    const done = await waitForApp(ns, 'unsure', 'revision 2 active', activeRevision(2));
    expect(done.status?.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Successful' });
    expect(done.status?.prePromotionAnalysis?.id).not.toBe(inconclusiveRun);
    expect(done.status?.history?.at(-1)).toMatchObject({ revision: 2, promotedVia: 'auto' });
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
  });
});

/** A web check whose requests the server holds until the test ends: it measures until something ends its run. */
const heldCheck = (name: string, url: string, more: Partial<CheckInput> = {}) =>
  webCheck(name, url, { provider: { web: { method: 'GET', url, timeoutSeconds: 300 } }, ...more });

const checkPhases = (run: AppAnalysisRun | undefined) => run?.checks.map((c) => c.phase);

describe('a run that ends ends every check (issue #24 A2)', () => {
  it('a new revision during pre-promotion checks, then an abort: each cancelled run leaves no check Running', async () => {
    const server = await serve(() => 'hold');
    // One check measuring, one not yet started (its initialDelay far off).
    const metrics = [
      heldCheck('held', `${server.url}/held`),
      heldCheck('later', `${server.url}/later`, { initialDelay: '10m' }),
    ];
    const first = await released(app('cancel', { prePromotionAnalysis: { metrics } }));
    const h1 = first.status?.active?.podTemplateHash ?? '';
    await newImage('cancel', '2');
    const running = await waitForApp(
      ns,
      'cancel',
      'revision 2 measuring',
      (a) => a.status?.prePromotionAnalysis?.revision === 2 && measurement(a, 'pre', 1)?.phase === 'Running',
    );
    expect(checkPhases(running.status?.prePromotionAnalysis)).toEqual(['Running', 'Pending']);
    const h2 = running.status?.prePromotionAnalysis?.podTemplateHash ?? '';

    // Revision 3's pods are Ready only when the test says so: until then the cancelled run stays in status.
    await patchSpec(ns, 'cancel', { image: 'registry.example.com/team/web:3', template: notReadyTemplate });
    const replaced = await waitForApp(
      ns,
      'cancel',
      "revision 2's run cancelled",
      (a) => a.status?.prePromotionAnalysis?.revision === 2 && a.status.prePromotionAnalysis.phase === 'Cancelled',
    );
    expect(checkPhases(replaced.status?.prePromotionAnalysis)).toEqual(['Cancelled', 'Cancelled']);
    for (const check of replaced.status?.prePromotionAnalysis?.checks ?? []) {
      expect(check.message).toBe('terminated: cancelled: revision 3 replaced revision 2');
    }

    const h3 = await waitForNewReplicaSet(ns, 'cancel', [h1, h2]);
    await makeReady(ns, 'cancel', h3, 1);
    await waitForApp(
      ns,
      'cancel',
      'revision 3 measuring',
      (a) => a.status?.prePromotionAnalysis?.revision === 3 && measurement(a, 'pre', 1)?.phase === 'Running',
    );
    const aborted = await teal('abort', 'cancel');
    expect(aborted.code, aborted.stderr).toBe(0);
    const done = await waitForApp(
      ns,
      'cancel',
      "revision 3's run cancelled by the abort",
      (a) => phase('Degraded')(a) && a.status?.prePromotionAnalysis?.phase === 'Cancelled',
    );
    expect(done.status?.prePromotionAnalysis?.revision).toBe(3);
    expect(checkPhases(done.status?.prePromotionAnalysis)).toEqual(['Cancelled', 'Cancelled']);
    // What `kubectl teal get` shows: each check Cancelled under its Cancelled run, none Running.
    const tree = await teal('get', 'cancel');
    expect(tree.code, tree.stderr).toBe(0);
    expect(tree.stdout).toMatch(/pre-promotion checks\s+Analysis\s+⊘ Cancelled/);
    expect(tree.stdout).toMatch(/held\s+Check\s+⊘ Cancelled/);
    expect(tree.stdout).toMatch(/later\s+Check\s+⊘ Cancelled/);
    expect(tree.stdout).not.toContain('◌ Running');
  });

  it('an abort during post-promotion checks: back to stable, its checks ended, and the Aborted Event says so (issue #24 A3)', async () => {
    const server = await serve(() => 'hold');
    const postPromotionAnalysis = { metrics: [heldCheck('after', `${server.url}/after`)] };
    await released(app('post-abort', { autoPromotionEnabled: true, postPromotionAnalysis }));
    await newImage('post-abort', '2');
    await waitForApp(
      ns,
      'post-abort',
      'revision 2 active, its post-promotion check measuring',
      (a) => a.status?.active?.revision === 2 && measurement(a, 'post', 1)?.phase === 'Running',
    );
    const aborted = await teal('abort', 'post-abort');
    expect(aborted.code, aborted.stderr).toBe(0);
    const back = await waitForApp(
      ns,
      'post-abort',
      'back on revision 1',
      (a) => a.status?.active?.revision === 1 && a.status.postPromotionAnalysis?.phase === 'Cancelled',
    );
    expect(await selectorHash(ns, 'post-abort')).toBe(back.status?.active?.podTemplateHash);
    expect(checkPhases(back.status?.postPromotionAnalysis)).toEqual(['Cancelled']);
    // The Event of the step that switches back says it switches back, not that active stays on revision 2.
    const event = await waitForAppEvent(ns, 'post-abort', 'Aborted', (e) => e.reason === 'Aborted');
    expect(event.message).toMatch(/^revision 2 aborted by .+; active switches back to stable revision 1$/);
    expect(await eventCount('post-abort', 'Aborted')).toBe(1);
  });
});

describe('promote --skip-checks after an Inconclusive run (issue #24 A5)', () => {
  it('AnalysisPassed is True/AnalysisSkipped, before the switch and after it, and stays so', async () => {
    const server = await serve(() => ({ status: 200, body: { score: 70 } }));
    const metrics = [
      webCheck('score', `${server.url}/score`, {
        successCondition: 'result.score >= 90',
        failureCondition: 'result.score < 50',
      }),
    ];
    const skipAfterInconclusive = async (name: string, blueGreen: Record<string, unknown>) => {
      await released(app(name, blueGreen));
      await newImage(name, '2');
      const paused = await waitForApp(
        ns,
        name,
        'inconclusive, Paused',
        (a) => phase('Paused')(a) && conditionOf(a, 'AnalysisPassed')?.reason === 'AnalysisInconclusive',
      );
      expect(paused.status?.abort).toBeUndefined();
      const promoted = await teal('promote', name, '--skip-checks');
      expect(promoted.code, promoted.stderr).toBe(0);
      await waitForApp(
        ns,
        name,
        'revision 2 active and stable',
        (a) => activeRevision(2)(a) && a.status?.stable?.revision === 2,
      );
      // A reconcile later than the one that switched (or accepted the revision): an action with nothing to
      // do makes the operator plan again, so the condition read is no longer the one written with the skip.
      const poke = await intent(ns, name, 'resume');
      const later = await waitForApp(
        ns,
        name,
        'a reconcile after the skip',
        (a) => a.status?.handledIntents?.resume === poke,
      );
      expect(later.status?.phase).toBe('Healthy');
      expect(later.status?.history?.at(-1)).toMatchObject({ revision: 2, checksSkipped: true });
      expect(conditionOf(later, 'AnalysisPassed')).toMatchObject({
        status: 'True',
        reason: 'AnalysisSkipped',
        message: 'the checks of revision 2 were skipped',
      });
    };
    await Promise.all([
      skipAfterInconclusive('skip-pre', { prePromotionAnalysis: { metrics } }),
      skipAfterInconclusive('skip-post', { autoPromotionEnabled: true, postPromotionAnalysis: { metrics } }),
    ]);
  });
});

afterAll(() => {
  expect(invariant.violations).toEqual([]);
});
