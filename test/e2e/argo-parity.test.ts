// Blue/green where Teal and Argo Rollouts share field names, end to end: the
// operator runs as a child process against the real control plane, KWOK
// plays the kubelets, and a watcher checks invariant 1 (an active Service
// only ever selects a fully available ReplicaSet) in every namespace.
//
// Three parts: the semantics of issue #10 (A1-A4, A7, A8), the active Service
// under faults and hand edits (A6, B2), each with its own operator; and cases
// derived from Argo Rollouts' own e2e tests (argoproj/argo-rollouts,
// test/e2e/bluegreen_test.go, functional_test.go, analysis_test.go and
// duration_test.go), each naming the test it derives from. Argo's fixed
// sleeps become waits on conditions; a state that lasts only a moment (the
// old revision up inside its scale-down delay) is read from a watch, or the
// delay is made long enough that no test races it.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_REVISION, ANN_SCALE_DOWN_AT, LABEL_HASH } from '../../src/app/labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  getApp,
  intent,
  patchSpec,
  phase,
  replicaSetOf,
  replicaSetsOf,
  type StoredApp,
  selectorHash,
  waitForApp,
} from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { clients, kubectl, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import {
  appEvents,
  makeReady,
  newImage,
  notReadyTemplate,
  onSelectorChange,
  podCount,
  reconcileWithoutStatus,
  recordReplicaSets,
  releaseFirst,
  switchActiveAsTeal,
  waitForAppEvent,
  waitForNewReplicaSet,
  waitForPods,
  waitForReplicaSetSize,
  waitForSelector,
} from '../support/parity.ts';
import { WAIT_MS } from '../support/wait.ts';

const { apps } = clients();

/** An App with manual promotion, a preview of one pod and a short scale-down delay, unless told otherwise. */
function app(name: string, blueGreen: Record<string, unknown> = {}, spec: Partial<AppInput['spec']> = {}): AppInput {
  return e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 2, ...blueGreen }, spec });
}

const previewHash = (a: StoredApp) => a.status?.preview?.podTemplateHash;
const activeIs = (revision: number) => (a: StoredApp) => phase('Healthy')(a) && a.status?.active?.revision === revision;
const condition = (a: StoredApp, type: string) => a.status?.conditions?.find((c) => c.type === type);

/** Argo's ExpectReplicaCounts(desired, current, updated, ready, available), on the App status. */
const counts =
  (desired: number, current: number, updated: number, ready: number, available: number) => (a: StoredApp) =>
    a.spec.replicas === desired &&
    a.status?.replicas === current &&
    a.status.updatedReplicas === updated &&
    a.status.readyReplicas === ready &&
    a.status.availableReplicas === available;

describe('issue #10: blue/green semantics', () => {
  let ns: string;
  let world: OperatorNamespace;
  let invariant: Invariant;

  beforeAll(async () => {
    world = await operatorNamespace('bg-semantics');
    ({ ns, invariant } = world);
  });

  afterAll(async () => {
    await world?.stop();
  });

  describe.concurrent('each App on its own', () => {
    it('A1: the preview Service selects a new revision as soon as its ReplicaSet exists, with auto and manual promotion', async () => {
      // Pods that never become Ready: whatever the preview Service selects, it selected before availability.
      const cases = [
        { name: 'a1-auto', blueGreen: { autoPromotionEnabled: true, autoPromotionSeconds: 600 } },
        { name: 'a1-manual', blueGreen: { autoPromotionEnabled: false } },
      ];
      await Promise.all(
        cases.map(async ({ name, blueGreen }) => {
          const h1 = await releaseFirst(ns, app(name, blueGreen));
          await newImage(ns, name, '2', { template: notReadyTemplate });
          const h2 = await waitForNewReplicaSet(ns, name, [h1]);
          await waitForSelector(ns, `${name}-preview`, h2, 'selects the new revision before it is available');
          expect((await replicaSetOf(ns, name, h2))?.status?.availableReplicas ?? 0).toBe(0);
          expect(await selectorHash(ns, name)).toBe(h1);
        }),
      );
    });

    it('A1: with nothing in preview the preview Service selects the active revision: after the first release and after a promotion', async () => {
      const h1 = await releaseFirst(ns, app('a1-after'));
      await waitForSelector(ns, 'a1-after-preview', h1, 'selects the active revision after the first release');
      await newImage(ns, 'a1-after', '2');
      const paused = await waitForApp(ns, 'a1-after', 'preview', phase('Paused'));
      const h2 = previewHash(paused) ?? '';
      expect(await selectorHash(ns, 'a1-after-preview')).toBe(h2);
      await intent(ns, 'a1-after', 'promote');
      await waitForApp(ns, 'a1-after', 'revision 2 active', activeIs(2));
      await waitForSelector(ns, 'a1-after-preview', h2, 'selects the new active revision after the promotion');
    });

    it('A2: changing replicas with a preview up resizes the active ReplicaSet at once, and the preview following previewReplicaCount', async () => {
      const paused = async () => {
        // Paused, previewReplicaCount 1: active follows replicas, the preview stays at 1.
        const h1 = await releaseFirst(ns, app('a2-paused'));
        await newImage(ns, 'a2-paused', '2');
        const h2 = previewHash(await waitForApp(ns, 'a2-paused', 'preview', phase('Paused'))) ?? '';
        await patchSpec(ns, 'a2-paused', { replicas: 3 });
        await waitForReplicaSetSize(ns, 'a2-paused', h1, 3, { available: true });
        await waitForApp(ns, 'a2-paused', 'still waiting for promotion', phase('Paused'));
        expect((await replicaSetOf(ns, 'a2-paused', h2))?.spec?.replicas).toBe(1);
        expect(await selectorHash(ns, 'a2-paused')).toBe(h1);
      };
      const progressing = async () => {
        // Progressing (preview pods not Ready), no previewReplicaCount: both follow replicas.
        const h1 = await releaseFirst(ns, app('a2-progressing', { previewReplicaCount: undefined }));
        await newImage(ns, 'a2-progressing', '2', { template: notReadyTemplate });
        const h2 = await waitForNewReplicaSet(ns, 'a2-progressing', [h1]);
        await waitForApp(ns, 'a2-progressing', 'preview progressing', phase('Progressing'));
        await patchSpec(ns, 'a2-progressing', { replicas: 3 });
        await waitForReplicaSetSize(ns, 'a2-progressing', h1, 3, { available: true });
        await waitForReplicaSetSize(ns, 'a2-progressing', h2, 3);
        expect(await selectorHash(ns, 'a2-progressing')).toBe(h1);
      };
      await Promise.all([paused(), progressing()]);
    });

    // Issue #24 A1. Argo's CalculateRolloutPhase reads the pause conditions before the replica counts.
    it('issue #24 A1: a replicas change while waiting for promotion stays Paused while the preview resizes; status exits 2', async () => {
      const name = 'a1-resize';
      const h1 = await releaseFirst(ns, app(name, { previewReplicaCount: undefined }, { replicas: 1 }));
      // The preview's pods are Ready only when the test says so: the resized preview stays short of one.
      await newImage(ns, name, '2', { template: notReadyTemplate });
      const h2 = await waitForNewReplicaSet(ns, name, [h1]);
      await makeReady(ns, name, h2, 1);
      await waitForApp(ns, name, 'waiting for promotion', phase('Paused'));
      await patchSpec(ns, name, { replicas: 2 });
      await waitForReplicaSetSize(ns, name, h2, 2);
      // The status of a reconcile that saw the preview's new size, its new pod not available.
      const resizing = await waitForApp(
        ns,
        name,
        'the resize seen',
        (a) =>
          a.status?.observedGeneration === a.metadata.generation &&
          condition(a, 'PreviewAvailable')?.status === 'False',
      );
      expect(resizing.status?.phase).toBe('Paused');
      expect(resizing.status?.message).toBe(
        'revision 2 is in preview, resizing (1/2 pods available), waiting for promotion',
      );
      expect(condition(resizing, 'Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForPromotion' });
      // A CI step waiting on the pause is not fooled: settled, Paused, exit code 2.
      const status = await tealIn(ns, 'status', name, '--timeout', `${WAIT_MS / 1000}s`);
      expect(status.code, status.stdout + status.stderr).toBe(2);
      expect(status.stdout).toContain(`revision 2 waits for "kubectl teal promote ${name}"`);
      await makeReady(ns, name, h2, 2);
      const ready = await waitForApp(
        ns,
        name,
        'the preview at its new size',
        (a) => phase('Paused')(a) && condition(a, 'PreviewAvailable')?.status === 'True',
      );
      expect(ready.status?.message).toBe('revision 2 is ready in preview, waiting for promotion');
      await intent(ns, name, 'promote');
      await waitForApp(ns, name, 'revision 2 active', activeIs(2));
    });

    it('A3: abortScaleDownDelaySeconds: 0 never scales the aborted preview down', async () => {
      const h1 = await releaseFirst(ns, app('a3', { abortScaleDownDelaySeconds: 0 }));
      await newImage(ns, 'a3', '2');
      const h2 = previewHash(await waitForApp(ns, 'a3', 'preview', phase('Paused'))) ?? '';
      const rec = await recordReplicaSets(ns, 'a3');
      try {
        const abort = await intent(ns, 'a3', 'abort');
        // The reconcile that took the abort made its ReplicaSet writes before this status landed.
        await waitForApp(
          ns,
          'a3',
          'abort taken, Degraded',
          (a) => a.status?.handledIntents?.abort === abort && phase('Degraded')(a),
        );
        // One more reconcile, seen through a harmless intent (resume with nothing paused).
        const resume = await intent(ns, 'a3', 'resume');
        await waitForApp(ns, 'a3', 'a later reconcile', (a) => a.status?.handledIntents?.resume === resume);
        const rs = await replicaSetOf(ns, 'a3', h2);
        expect(rs?.spec?.replicas).toBe(1);
        expect(rs?.metadata?.annotations?.[ANN_SCALE_DOWN_AT]).toBeUndefined();
        expect(rec.of(h2).filter((s) => s.replicas === 0 || s.scaleDownAt !== undefined)).toEqual([]);
        expect(await podCount(ns, 'a3', h2)).toBe(1);
        expect(await selectorHash(ns, 'a3')).toBe(h1);
        expect((await getApp(ns, 'a3')).status?.phase).toBe('Degraded');
      } finally {
        rec.stop();
      }
    });

    it('A4: promote --full skips the remaining waits but keeps scaleDownDelaySeconds for the old revision', async () => {
      const h1 = await releaseFirst(ns, app('a4', { scaleDownDelaySeconds: 3 }));
      const rec = await recordReplicaSets(ns, 'a4');
      try {
        await newImage(ns, 'a4', '2');
        const h2 = previewHash(await waitForApp(ns, 'a4', 'preview', phase('Paused'))) ?? '';
        await intent(ns, 'a4', 'promote', { full: true });
        const done = await waitForApp(ns, 'a4', 'revision 2 active', activeIs(2));
        expect(await selectorHash(ns, 'a4')).toBe(h2);
        await waitForReplicaSetSize(ns, 'a4', h1, 0);
        // Right after the switch the old revision was still up, with its scale-down time set.
        const waiting = rec.of(h1).find((s) => s.replicas === 2 && s.scaleDownAt !== undefined);
        expect(waiting, JSON.stringify(rec.of(h1))).toBeDefined();
        const promotedAt = Date.parse(done.status?.history?.at(-1)?.promotedAt ?? '');
        // Both times are the operator's; the old ReplicaSet was due about 3 s after the switch, not at it.
        expect(Date.parse(waiting?.scaleDownAt ?? '') - promotedAt).toBeGreaterThanOrEqual(2_000);
      } finally {
        rec.stop();
      }
    });

    it('A7: a preview ReplicaSet deleted by hand comes back with its revision number, and promote --revision N is accepted', async () => {
      await releaseFirst(ns, app('a7'));
      await newImage(ns, 'a7', '2');
      const paused = await waitForApp(ns, 'a7', 'preview', phase('Paused'));
      const h2 = previewHash(paused) ?? '';
      expect(paused.status?.preview?.revision).toBe(2);
      const before = await replicaSetOf(ns, 'a7', h2);
      await apps.deleteNamespacedReplicaSet({ namespace: ns, name: before?.metadata?.name ?? '' });
      const recreated = await waitFor('the preview ReplicaSet recreated', async () => {
        const rs = await replicaSetOf(ns, 'a7', h2);
        return rs && rs.metadata?.uid !== before?.metadata?.uid && !rs.metadata?.deletionTimestamp ? rs : undefined;
      });
      expect(recreated.metadata?.annotations?.[ANN_REVISION]).toBe('2');
      const again = await waitForApp(
        ns,
        'a7',
        'the recreated preview available again',
        (a) => phase('Paused')(a) && previewHash(a) === h2 && a.status?.preview?.availableAt !== undefined,
      );
      expect(again.status?.preview?.revision).toBe(2);
      await intent(ns, 'a7', 'promote', { revision: 2 });
      const done = await waitForApp(ns, 'a7', 'revision 2 active', activeIs(2));
      expect(done.status?.active).toMatchObject({ revision: 2, podTemplateHash: h2 });
      expect(await selectorHash(ns, 'a7')).toBe(h2);
      expect((await appEvents(ns, 'a7')).filter((e) => e.reason === 'PromoteRejected')).toEqual([]);
    });

    it('A8: every scale of a ReplicaSet is an Event on the App naming it, from and to', async () => {
      const h1 = await releaseFirst(ns, app('a8'));
      await newImage(ns, 'a8', '2');
      const h2 = previewHash(await waitForApp(ns, 'a8', 'preview', phase('Paused'))) ?? '';
      await intent(ns, 'a8', 'promote');
      await waitForApp(ns, 'a8', 'revision 2 active', activeIs(2));
      await waitForReplicaSetSize(ns, 'a8', h1, 0);
      const oldName = (await replicaSetOf(ns, 'a8', h1))?.metadata?.name ?? '';
      const newName = (await replicaSetOf(ns, 'a8', h2))?.metadata?.name ?? '';
      const scaled = (name: string, from: number, to: number) => (e: { reason: string; message: string }) =>
        e.reason === 'ScalingReplicaSet' && e.message.includes(name) && e.message.includes(`from ${from} to ${to}`);
      // The preview to full size at the promotion, and the old revision to zero after its delay.
      await waitForAppEvent(ns, 'a8', `${newName} from 1 to 2`, scaled(newName, 1, 2));
      await waitForAppEvent(ns, 'a8', `${oldName} from 2 to 0`, scaled(oldName, 2, 0));
      // A replicas change is a scale too.
      await patchSpec(ns, 'a8', { replicas: 3 });
      await waitForAppEvent(ns, 'a8', `${newName} from 2 to 3`, scaled(newName, 2, 3));
    });
  });

  it('kept invariant 1 at every active Service change', () => {
    expect(invariant.checks()).toBeGreaterThan(5);
    expect(invariant.violations).toEqual([]);
  });
});

describe('issue #10: the active Service under faults and hand edits', () => {
  let ns: string;
  let world: OperatorNamespace;
  let operator: Operator | undefined;
  let invariant: Invariant;
  /** B2 points the active Service at a scaled-down revision by hand: the one violation that is not Teal's. */
  let foreignEdit = '';

  beforeAll(async () => {
    world = await operatorNamespace('bg-faults');
    ({ ns, operator, invariant } = world);
  });

  afterAll(async () => {
    await world?.stop();
  });

  /**
   * Brings an App to a preview at full size, ready to switch, and stops the
   * operator; `interrupt` then leaves the cluster as a switch whose status
   * write was lost would; a new operator must record the switch once and
   * scale the old revision down after its delay.
   */
  async function lostStatusWrite(name: string, interrupt: (h2: string) => Promise<void>): Promise<void> {
    const h1 = await releaseFirst(ns, app(name, { previewReplicaCount: undefined }));
    await newImage(ns, name, '2');
    const h2 = previewHash(await waitForApp(ns, name, 'preview', phase('Paused'))) ?? '';
    await waitForReplicaSetSize(ns, name, h2, 2, { available: true });
    await operator?.stop();
    operator = undefined;
    // The promote lands while no operator runs; the lost status would have recorded it as handled.
    await intent(ns, name, 'promote');
    await interrupt(h2);
    expect(await selectorHash(ns, name)).toBe(h2);
    const stale = await getApp(ns, name);
    expect(stale.status?.active?.revision).toBe(1);
    expect(stale.status?.stable?.revision).toBe(1);
    expect((await replicaSetOf(ns, name, h1))?.spec?.replicas).toBe(2);

    operator = await world.startOperator();
    await waitForApp(ns, name, 'revision 2 recorded active', activeIs(2));
    await waitForReplicaSetSize(ns, name, h1, 0);
    const after = await getApp(ns, name);
    expect(after.status?.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect(after.status?.stable?.revision).toBe(2);
    expect(await selectorHash(ns, name)).toBe(h2);
  }

  it('A6: every write of the switching reconcile landed but its status: recorded once, the old revision still goes after its delay', async () => {
    await lostStatusWrite('a6-all', async (h2) => {
      // Teal's own planner and writes, run by hand, stopping short of the status write.
      const actions = await reconcileWithoutStatus(ns, 'a6-all');
      const switched = actions.some(
        (a) => a.kind === 'applyService' && a.role === 'active' && a.manifest.spec.selector[LABEL_HASH] === h2,
      );
      expect(switched, JSON.stringify(actions)).toBe(true);
    });
  });

  it('A6: only the active Service switch landed: recorded once, the old revision still goes after its delay', async () => {
    await lostStatusWrite('a6-switch', async (h2) => {
      await switchActiveAsTeal(ns, 'a6-switch', h2);
    });
  });

  it('A6: kill -9 right after the switch is seen: the next operator records it once and scales the old revision down', async () => {
    // The preview at full size, so the promote switches in the reconcile that takes it.
    const h1 = await releaseFirst(ns, app('a6-kill', { previewReplicaCount: undefined }));
    await newImage(ns, 'a6-kill', '2');
    const h2 = previewHash(await waitForApp(ns, 'a6-kill', 'preview', phase('Paused'))) ?? '';
    await waitForReplicaSetSize(ns, 'a6-kill', h2, 2, { available: true });
    const victim = operator;
    const killer = await onSelectorChange(ns, 'a6-kill', h2, async () => {
      await victim?.kill();
    });
    await intent(ns, 'a6-kill', 'promote');
    await killer.done;
    operator = await world.startOperator();

    await waitForApp(ns, 'a6-kill', 'revision 2 active', activeIs(2));
    await waitForReplicaSetSize(ns, 'a6-kill', h1, 0);
    const after = await getApp(ns, 'a6-kill');
    expect(after.status?.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect(after.status?.stable?.revision).toBe(2);
    expect(await selectorHash(ns, 'a6-kill')).toBe(h2);
  });

  it('B2: a foreign edit of the active selector is repaired with a Warning, never adopted', async () => {
    const h1 = await releaseFirst(ns, app('b2', { activeService: 'b2-live' }));
    await newImage(ns, 'b2', '2');
    const h2 = previewHash(await waitForApp(ns, 'b2', 'preview', phase('Paused'))) ?? '';
    await intent(ns, 'b2', 'promote');
    await waitForApp(ns, 'b2', 'revision 2 active', activeIs(2));
    await waitForReplicaSetSize(ns, 'b2', h1, 0);
    const before = await getApp(ns, 'b2');

    foreignEdit = `b2-live switched to ${h1} `;
    const { code, stderr } = await kubectl([
      'patch',
      'svc',
      'b2-live',
      '-n',
      ns,
      '-p',
      JSON.stringify({ spec: { selector: { 'teal.dev/pod-template-hash': h1 } } }),
    ]);
    expect(code, stderr).toBe(0);

    // Teal answers either way: a Warning naming the Service, or (the old bug) a new history entry.
    const warned = (e: { type: string; message: string }) => e.type === 'Warning' && e.message.includes('b2-live');
    await waitFor('Teal to answer the edit', async () => {
      const history = (await getApp(ns, 'b2')).status?.history ?? [];
      if (history.length !== before.status?.history?.length) return true;
      return (await appEvents(ns, 'b2')).some(warned) ? true : undefined;
    });
    await waitForSelector(ns, 'b2-live', h2, 'restored to the active revision');
    const after = await getApp(ns, 'b2');
    expect(after.status?.history).toEqual(before.status?.history);
    expect(after.status?.active).toEqual(before.status?.active);
    expect(after.status?.stable).toEqual(before.status?.stable);
    expect((await appEvents(ns, 'b2')).filter(warned)).not.toEqual([]);
    const serving = await replicaSetOf(ns, 'b2', h2);
    expect(serving?.spec?.replicas).toBe(2);
    expect(serving?.status?.availableReplicas).toBe(2);
    expect((await replicaSetOf(ns, 'b2', h1))?.spec?.replicas).toBe(0);
  });

  it('kept invariant 1 at every active Service change Teal made', () => {
    expect(invariant.checks()).toBeGreaterThan(3);
    expect(invariant.violations.filter((v) => !foreignEdit || !v.startsWith(foreignEdit))).toEqual([]);
  });
});

describe('Argo Rollouts parity (cases from argoproj/argo-rollouts test/e2e)', () => {
  let ns: string;
  let world: OperatorNamespace;
  let invariant: Invariant;

  beforeAll(async () => {
    world = await operatorNamespace('argo-parity');
    ({ ns, invariant } = world);
  });

  afterAll(async () => {
    await world?.stop();
  });

  describe.concurrent('each App on its own', () => {
    // bluegreen_test.go TestBlueGreenPreviewReplicaCount. Argo's scaleDownDelaySeconds: 5 becomes 600,
    // so that "the old revision is still up after the promotion" is not a race.
    it('previewReplicaCount: the preview runs that many pods until promoted, then all', async () => {
      const body = app('p-preview-count', {
        activeService: 'p-preview-count-active',
        previewService: 'p-preview-count-preview',
        scaleDownDelaySeconds: 600,
      });
      const h1 = await releaseFirst(ns, body);
      await newImage(ns, 'p-preview-count', '2');
      const h2 = previewHash(await waitForApp(ns, 'p-preview-count', 'preview', phase('Paused'))) ?? '';
      await waitForPods(ns, 'p-preview-count', h2, 1);
      await waitForPods(ns, 'p-preview-count', h1, 2);
      await waitForApp(ns, 'p-preview-count', 'counts 2, 3, 1, 2, 2', counts(2, 3, 1, 2, 2));
      await intent(ns, 'p-preview-count', 'promote');
      await waitForApp(ns, 'p-preview-count', 'revision 2 active', activeIs(2));
      await waitForPods(ns, 'p-preview-count', h2, 2);
      expect(await podCount(ns, 'p-preview-count', h1)).toBe(2);
      await waitForApp(ns, 'p-preview-count', 'counts 2, 4, 2, 2, 2', counts(2, 4, 2, 2, 2));
    });

    // bluegreen_test.go TestBlueGreenPreviewReplicaCountPromoteFull. Argo leaves scaleDownDelaySeconds at its
    // default (30 s, as Teal's); 600 here keeps the check free of timing.
    it('promote full with previewReplicaCount: waiting past progressDeadlineSeconds is not Degraded; the old revision stays for its delay', async () => {
      const body = app('p-full', { scaleDownDelaySeconds: 600 }, { progressDeadlineSeconds: 1 });
      const h1 = await releaseFirst(ns, body);
      await newImage(ns, 'p-full', '2');
      const paused = await waitForApp(ns, 'p-full', 'preview', phase('Paused'));
      const h2 = previewHash(paused) ?? '';
      // Argo sleeps past the deadline; here: wait until the clock is past it, then make the operator look again.
      const deadline = Date.parse(paused.status?.preview?.availableAt ?? '') + 1_000;
      await waitFor('the clock past progressDeadlineSeconds', async () => (Date.now() > deadline ? true : undefined));
      const poke = await intent(ns, 'p-full', 'resume');
      const later = await waitForApp(
        ns,
        'p-full',
        'a reconcile after the deadline',
        (a) => a.status?.handledIntents?.resume === poke,
      );
      expect(later.status?.phase).toBe('Paused');
      expect(condition(later, 'ProgressDeadlineExceeded')?.status).toBe('False');
      await waitForApp(ns, 'p-full', 'counts 2, 3, 1, 2, 2', counts(2, 3, 1, 2, 2));

      await intent(ns, 'p-full', 'promote', { full: true });
      await waitForApp(ns, 'p-full', 'revision 2 active', activeIs(2));
      await waitForPods(ns, 'p-full', h2, 2);
      expect((await replicaSetOf(ns, 'p-full', h1))?.spec?.replicas).toBe(2);
      expect(await podCount(ns, 'p-full', h1)).toBe(2);
      await waitForApp(ns, 'p-full', 'counts 2, 4, 2, 2, 2', counts(2, 4, 2, 2, 2));
    });

    // functional_test.go TestBlueGreenUpdate (rollout-bluegreen.yaml: 3 replicas, auto promotion,
    // scaleDownDelaySeconds 10; here 2, with the watch to see the old revision up after the switch).
    it('an update with auto promotion: switch once the new revision is up, the old one kept for its delay, scaling events', async () => {
      const body = app('p-update', { autoPromotionEnabled: true, previewReplicaCount: undefined }, { replicas: 3 });
      const h1 = await releaseFirst(ns, body);
      await waitForApp(ns, 'p-update', 'counts 3, 3, 3, 3, 3', counts(3, 3, 3, 3, 3));
      const rec = await recordReplicaSets(ns, 'p-update');
      try {
        await newImage(ns, 'p-update', '2');
        const done = await waitForApp(ns, 'p-update', 'revision 2 active', activeIs(2));
        const h2 = done.status?.active?.podTemplateHash ?? '';
        expect(await selectorHash(ns, 'p-update')).toBe(h2);
        await waitForReplicaSetSize(ns, 'p-update', h1, 0);
        expect(rec.of(h1).some((s) => s.replicas === 3 && s.scaleDownAt !== undefined)).toBe(true);
        const oldName = (await replicaSetOf(ns, 'p-update', h1))?.metadata?.name ?? '';
        await waitForAppEvent(
          ns,
          'p-update',
          'ScalingReplicaSet of the old revision',
          (e) => e.reason === 'ScalingReplicaSet' && e.message.includes(oldName) && e.message.includes('from 3 to 0'),
        );
      } finally {
        rec.stop();
      }
    });

    // functional_test.go TestBlueGreenScaleDownOnAbort; with retry after it, as duration_test.go
    // TestBlueGreenDuration_Retry does.
    it('abortScaleDownDelaySeconds: the aborted preview goes after the delay; retry brings it back', async () => {
      const body = app('p-abort', {
        activeService: 'p-abort-active',
        previewService: 'p-abort-preview',
        abortScaleDownDelaySeconds: 1,
        scaleDownDelaySeconds: 5,
      });
      const h1 = await releaseFirst(ns, body);
      await newImage(ns, 'p-abort', '2');
      const h2 = previewHash(await waitForApp(ns, 'p-abort', 'preview', phase('Paused'))) ?? '';
      await waitForPods(ns, 'p-abort', h2, 1);
      await waitForPods(ns, 'p-abort', h1, 2);
      await intent(ns, 'p-abort', 'abort');
      await waitForApp(ns, 'p-abort', 'Degraded', phase('Degraded'));
      await waitForPods(ns, 'p-abort', h2, 0);
      expect(await selectorHash(ns, 'p-abort-active')).toBe(h1);
      await intent(ns, 'p-abort', 'retry');
      await waitForApp(ns, 'p-abort', 'preview again', (a) => phase('Paused')(a) && previewHash(a) === h2);
      await waitForPods(ns, 'p-abort', h2, 1);
    });

    // functional_test.go TestBlueGreenScaleDownDelay, first half. Its second half needs
    // scaleDownDelayRevisionLimit, which Teal does not have.
    it('scaleDownDelaySeconds of a day: after an auto-promoted update both revisions run', async () => {
      const body = app(
        'p-delay',
        { autoPromotionEnabled: true, previewReplicaCount: undefined, scaleDownDelaySeconds: 86_400 },
        { replicas: 1 },
      );
      const h1 = await releaseFirst(ns, body);
      await newImage(ns, 'p-delay', '2');
      const done = await waitForApp(ns, 'p-delay', 'revision 2 active', activeIs(2));
      const h2 = done.status?.active?.podTemplateHash ?? '';
      await waitForPods(ns, 'p-delay', h2, 1);
      await waitForPods(ns, 'p-delay', h1, 1);
      expect((await replicaSetOf(ns, 'p-delay', h1))?.metadata?.annotations?.[ANN_SCALE_DOWN_AT]).toBeDefined();
      await waitForApp(ns, 'p-delay', 'counts 1, 2, 1, 1, 1', counts(1, 2, 1, 1, 1));
    });

    // analysis_test.go TestBlueGreenAbortAndUpdate, without analysis: an abort by hand stands in for the
    // failed analysis (before the switch: an abort after it belongs to post-promotion checks, #9). Argo
    // checks the aborted revision is marked for scale-down; a 2 s abortScaleDownDelaySeconds lets this
    // one see it reach zero.
    it('abort, then a new revision: it previews and promotes; the preview Service follows to the active one', async () => {
      const body = app(
        'p-abort-update',
        { scaleDownDelaySeconds: 600, abortScaleDownDelaySeconds: 2 },
        { replicas: 1 },
      );
      const h1 = await releaseFirst(ns, body);
      await newImage(ns, 'p-abort-update', '2');
      const h2 = previewHash(await waitForApp(ns, 'p-abort-update', 'preview', phase('Paused'))) ?? '';
      await intent(ns, 'p-abort-update', 'abort');
      await waitForApp(ns, 'p-abort-update', 'Degraded', phase('Degraded'));
      expect(await selectorHash(ns, 'p-abort-update')).toBe(h1);

      await newImage(ns, 'p-abort-update', '3');
      const three = await waitForApp(
        ns,
        'p-abort-update',
        'revision 3 in preview',
        (a) => phase('Paused')(a) && a.status?.preview?.revision === 3,
      );
      const h3 = previewHash(three) ?? '';
      await waitForPods(ns, 'p-abort-update', h1, 1);
      await waitForPods(ns, 'p-abort-update', h2, 0);
      await waitForPods(ns, 'p-abort-update', h3, 1);
      expect(three.status?.active?.revision).toBe(1);
      expect(await selectorHash(ns, 'p-abort-update-preview')).toBe(h3);

      await intent(ns, 'p-abort-update', 'promote');
      await waitForApp(ns, 'p-abort-update', 'revision 3 active', activeIs(3));
      expect(await podCount(ns, 'p-abort-update', h1)).toBe(1);
      expect((await replicaSetOf(ns, 'p-abort-update', h1))?.metadata?.annotations?.[ANN_SCALE_DOWN_AT]).toBeDefined();
      await waitForPods(ns, 'p-abort-update', h3, 1);
      expect(await selectorHash(ns, 'p-abort-update')).toBe(h3);
      await waitForSelector(
        ns,
        'p-abort-update-preview',
        h3,
        'selects the active revision (Argo: ExpectPreviewRevision)',
      );
    });

    // bluegreen_test.go TestBlueGreenProgressDeadlineExceededWithPause (readiness that comes late:
    // pods not Ready until the test makes them so).
    it('progress deadline with manual promotion: Degraded, then Healthy when pods become ready; the update pauses and promotes', async () => {
      const body = app('p-deadline-pause', {}, { replicas: 1, progressDeadlineSeconds: 2, template: notReadyTemplate });
      await createApp(ns, body);
      const first = await waitForApp(ns, 'p-deadline-pause', 'Degraded by the deadline', phase('Degraded'));
      expect(condition(first, 'ProgressDeadlineExceeded')?.status).toBe('True');
      const h1 = await waitForNewReplicaSet(ns, 'p-deadline-pause', []);
      await makeReady(ns, 'p-deadline-pause', h1, 1);
      await waitForApp(ns, 'p-deadline-pause', 'Healthy once ready', activeIs(1));

      await newImage(ns, 'p-deadline-pause', '2');
      const h2 = await waitForNewReplicaSet(ns, 'p-deadline-pause', [h1]);
      await waitForApp(ns, 'p-deadline-pause', 'Degraded by the deadline', phase('Degraded'));
      await makeReady(ns, 'p-deadline-pause', h2, 1);
      await waitForApp(ns, 'p-deadline-pause', 'Paused once ready', phase('Paused'));
      await intent(ns, 'p-deadline-pause', 'promote');
      await waitForApp(ns, 'p-deadline-pause', 'revision 2 active', activeIs(2));
    });

    // bluegreen_test.go TestBlueGreenProgressDeadlineExceededWithoutPause.
    it('progress deadline with auto promotion: Degraded, then Healthy on revision 2 once its pods become ready', async () => {
      const body = app(
        'p-deadline-auto',
        { autoPromotionEnabled: true },
        { replicas: 1, progressDeadlineSeconds: 2, template: notReadyTemplate },
      );
      await createApp(ns, body);
      await waitForApp(ns, 'p-deadline-auto', 'Degraded by the deadline', phase('Degraded'));
      const h1 = await waitForNewReplicaSet(ns, 'p-deadline-auto', []);
      await makeReady(ns, 'p-deadline-auto', h1, 1);
      await waitForApp(ns, 'p-deadline-auto', 'Healthy once ready', activeIs(1));

      await newImage(ns, 'p-deadline-auto', '2');
      const h2 = await waitForNewReplicaSet(ns, 'p-deadline-auto', [h1]);
      await waitForApp(ns, 'p-deadline-auto', 'Degraded by the deadline', phase('Degraded'));
      await makeReady(ns, 'p-deadline-auto', h2, 1);
      const done = await waitForApp(ns, 'p-deadline-auto', 'revision 2 active', activeIs(2));
      expect(done.status?.active?.podTemplateHash).toBe(h2);
    });

    // functional_test.go TestKubectlWaitForPaused and TestKubectlWaitForCompleted: Argo's Paused and
    // Healthy conditions are Teal's Promoted=False (WaitingForPromotion) and Ready.
    it('kubectl wait: Promoted=False while waiting for promotion, Ready after it', async () => {
      await releaseFirst(ns, app('p-kubectl-wait', {}, { replicas: 1 }));
      await newImage(ns, 'p-kubectl-wait', '2');
      const wait = (cond: string) =>
        kubectl(['wait', `--for=condition=${cond}`, 'apps.teal.dev/p-kubectl-wait', '-n', ns, '--timeout=120s']);
      const paused = await wait('Promoted=False');
      expect(paused.stdout, paused.stderr).toContain('condition met');
      const waiting = await getApp(ns, 'p-kubectl-wait');
      expect(waiting.status?.active?.revision).toBe(1);
      await waitForApp(ns, 'p-kubectl-wait', 'Paused', phase('Paused'));
      expect(condition(await getApp(ns, 'p-kubectl-wait'), 'Promoted')?.reason).toBe('WaitingForPromotion');
      await intent(ns, 'p-kubectl-wait', 'promote');
      const ready = await wait('Promoted=True');
      expect(ready.stdout, ready.stderr).toContain('condition met');
      const healthy = await wait('Ready=True');
      expect(healthy.stdout, healthy.stderr).toContain('condition met');
      expect((await getApp(ns, 'p-kubectl-wait')).status?.active?.revision).toBe(2);
    });

    // duration_test.go TestBlueGreenDuration_SupersededRollout.
    it('a new revision while another waits in preview replaces it; promote takes the newest', async () => {
      const h1 = await releaseFirst(ns, app('p-superseded', {}, { replicas: 1 }));
      await newImage(ns, 'p-superseded', '2');
      const h2 = previewHash(await waitForApp(ns, 'p-superseded', 'preview of 2', phase('Paused'))) ?? '';
      await newImage(ns, 'p-superseded', '3');
      const three = await waitForApp(
        ns,
        'p-superseded',
        'preview of 3',
        (a) => phase('Paused')(a) && a.status?.preview?.revision === 3,
      );
      await waitForPods(ns, 'p-superseded', h2, 0);
      await intent(ns, 'p-superseded', 'promote');
      const done = await waitForApp(ns, 'p-superseded', 'revision 3 active', activeIs(3));
      expect(done.status?.active?.podTemplateHash).toBe(previewHash(three));
      expect(await selectorHash(ns, 'p-superseded')).not.toBe(h1);
    });

    // duration_test.go TestBlueGreenDuration_SupersededRollbackToStable (scaleDownDelaySeconds 0).
    it('going back to the stable revision while another is in preview is instant, with no pause', async () => {
      const h1 = await releaseFirst(ns, app('p-back-stable', { scaleDownDelaySeconds: 0 }, { replicas: 1 }));
      await newImage(ns, 'p-back-stable', '2');
      const h2 = previewHash(await waitForApp(ns, 'p-back-stable', 'preview of 2', phase('Paused'))) ?? '';
      await newImage(ns, 'p-back-stable', '1');
      const back = await waitForApp(ns, 'p-back-stable', 'Healthy on revision 1', activeIs(1));
      expect(back.status?.preview).toBeUndefined();
      expect(await selectorHash(ns, 'p-back-stable')).toBe(h1);
      await waitForPods(ns, 'p-back-stable', h2, 0);
    });

    // duration_test.go TestBlueGreenDuration_SupersededRollback and _RollbackInsideWindow: back to a
    // revision still up inside its scale-down delay is instant, its ReplicaSet reused.
    // (Argo numbers the reused revision anew; Teal keeps its number, a deliberate difference.)
    it('going back to a revision inside its scale-down delay is instant and reuses its ReplicaSet', async () => {
      const h1 = await releaseFirst(ns, app('p-back-window', { scaleDownDelaySeconds: 600 }, { replicas: 1 }));
      const uid = (await replicaSetOf(ns, 'p-back-window', h1))?.metadata?.uid;
      await newImage(ns, 'p-back-window', '2');
      await waitForApp(ns, 'p-back-window', 'preview of 2', phase('Paused'));
      await intent(ns, 'p-back-window', 'promote');
      await waitForApp(ns, 'p-back-window', 'revision 2 active', activeIs(2));
      await newImage(ns, 'p-back-window', '3');
      await waitForApp(
        ns,
        'p-back-window',
        'preview of 3',
        (a) => phase('Paused')(a) && a.status?.preview?.revision === 3,
      );
      await newImage(ns, 'p-back-window', '1');
      await waitForApp(ns, 'p-back-window', 'Healthy on revision 1 without a promote', activeIs(1));
      expect(await selectorHash(ns, 'p-back-window')).toBe(h1);
      expect((await replicaSetOf(ns, 'p-back-window', h1))?.metadata?.uid).toBe(uid);
    });

    // duration_test.go TestBlueGreenDuration_RollbackOutsideWindow (scaleDownDelaySeconds 0; Teal has no
    // rollbackWindow): back to a revision already scaled down is a new preview that waits for promotion.
    it('going back to a revision already scaled down previews it and waits for promotion', async () => {
      const h1 = await releaseFirst(ns, app('p-back-old', { scaleDownDelaySeconds: 0 }, { replicas: 1 }));
      for (const [tag, revision] of [
        ['2', 2],
        ['3', 3],
      ] as const) {
        await newImage(ns, 'p-back-old', tag);
        await waitForApp(
          ns,
          'p-back-old',
          `preview of ${tag}`,
          (a) => phase('Paused')(a) && a.status?.preview?.revision === revision,
        );
        await intent(ns, 'p-back-old', 'promote');
        await waitForApp(ns, 'p-back-old', `revision ${revision} active`, activeIs(revision));
      }
      await waitForPods(ns, 'p-back-old', h1, 0);
      await newImage(ns, 'p-back-old', '4');
      await waitForApp(
        ns,
        'p-back-old',
        'preview of 4',
        (a) => phase('Paused')(a) && a.status?.preview?.revision === 4,
      );
      await newImage(ns, 'p-back-old', '1');
      const paused = await waitForApp(
        ns,
        'p-back-old',
        'revision 1 in preview',
        (a) => phase('Paused')(a) && previewHash(a) === h1,
      );
      expect(paused.status?.active?.revision).toBe(3);
      await intent(ns, 'p-back-old', 'promote');
      const done = await waitForApp(
        ns,
        'p-back-old',
        'back on the first image',
        (a) => phase('Healthy')(a) && a.status?.active?.podTemplateHash === h1,
      );
      expect(done.status?.history?.at(-1)?.promotedBy).toBe('e2e');
    });

    // duration_test.go TestBlueGreenDuration_SpecPaused (autoPromotionSeconds 2).
    it('spec.paused holds a new revision back; unpausing releases it with auto promotion', async () => {
      const h1 = await releaseFirst(
        ns,
        app('p-spec-paused', { autoPromotionEnabled: true, autoPromotionSeconds: 2 }, { replicas: 1 }),
      );
      await patchSpec(ns, 'p-spec-paused', { paused: true });
      await newImage(ns, 'p-spec-paused', '2');
      // phase() waits for the status of this generation: the reconcile that saw the new image has run.
      await waitForApp(ns, 'p-spec-paused', 'Paused by spec.paused', phase('Paused'));
      expect((await replicaSetsOf(ns, 'p-spec-paused')).map((rs) => rs.metadata?.labels?.[LABEL_HASH])).toEqual([h1]);
      await patchSpec(ns, 'p-spec-paused', { paused: false });
      await waitForApp(ns, 'p-spec-paused', 'Healthy on revision 2', activeIs(2));
    });
  });

  it('kept invariant 1 at every active Service change', () => {
    expect(invariant.checks()).toBeGreaterThan(10);
    expect(invariant.violations).toEqual([]);
  });
});
