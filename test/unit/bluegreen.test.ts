// The blue/green planner's rules, driven through the small model of the
// cluster in test/support/planner-world.ts: actions are applied to the
// observed state, and "pods" become available unless a test holds them back.
import { describe, expect, it } from 'vitest';
import { LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import { copyName } from '../../src/rollout/config-refs.ts';
import { ownedServiceManifest } from '../../src/rollout/service.ts';
import { intent, makeApp, T0, World } from '../support/planner-world.ts';

const S = 1000;

/** A world with revision 1 active and healthy. */
function released(edit?: (a: AppInput) => void): { w: World; h1: string } {
  const w = new World(makeApp(edit));
  w.converge();
  return { w, h1: w.target().hash };
}

const cond = (w: World, type: string) => w.status.conditions?.find((c) => c.type === type);

describe('first release', () => {
  it('deploys straight to full size and switches only once every pod is available', () => {
    const w = new World(makeApp());
    const actions = w.reconcile();
    const create = actions.find((a) => a.kind === 'createReplicaSet');
    expect(create?.kind === 'createReplicaSet' && create.manifest.spec.replicas).toBe(3);
    expect(w.activeHash()).toBeUndefined();
    expect(w.status.phase).toBe('Progressing');

    w.settle();
    w.reconcile();
    const h = w.target().hash;
    expect(w.activeHash()).toBe(h);
    // Nothing in preview: the preview Service shows what serves, never nothing.
    expect(w.previewHash()).toBe(h);
    expect(w.status.phase).toBe('Healthy');
    expect(w.status.active).toMatchObject({ revision: 1, podTemplateHash: h });
    expect(w.status.history).toEqual([expect.objectContaining({ revision: 1, promotedVia: 'first-release' })]);
    expect(cond(w, 'Promoted')?.status).toBe('True');
    expect(cond(w, 'Ready')?.status).toBe('True');
    expect(cond(w, 'Promoted')?.observedGeneration).toBe(1);
  });

  it('makes no writes once converged', () => {
    const { w } = released();
    expect(w.reconcile()).toEqual([]);
  });

  it('records two Events: the ReplicaSet scaled up from 0 with its revision and image, then Healthy', () => {
    const w = new World(makeApp());
    w.converge();
    expect(w.events.map((e) => `${e.reason}: ${e.message}`)).toEqual([
      expect.stringMatching(
        /^ScalingReplicaSet: Scaled up replica set web-\w+ from 0 to 3: revision 1 \(.+\), first release$/,
      ),
      'PhaseHealthy: revision 1 is active',
    ]);
  });

  it('still records the first step into Progressing of a later revision, and its switch', () => {
    const { w } = released();
    w.events = [];
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote', { revision: 2 })]);
    w.settle();
    w.converge();
    const reasons = w.events.map((e) => e.reason);
    expect(reasons).toEqual(
      expect.arrayContaining(['PhaseProgressing', 'PhasePaused', 'SwitchedActive', 'PhaseHealthy']),
    );
  });
});

describe('a new revision', () => {
  it('runs as a preview at previewReplicaCount, pauses for promotion, and never touches active', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.previewHash()).toBe(h2); // from the moment its ReplicaSet exists
    w.settle();
    w.reconcile();
    expect(w.previewHash()).toBe(h2);
    expect(w.activeHash()).toBe(h1);
    expect(w.status.phase).toBe('Paused');
    expect(cond(w, 'Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForPromotion' });
    expect(cond(w, 'PreviewAvailable')?.status).toBe('True');
    expect(w.status.preview).toMatchObject({ revision: 2, podTemplateHash: h2 });
  });

  it('promotes: scales the preview to full, switches when saturated, scales the old one down after the delay', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote', { revision: 2 })]);
    expect(w.status.promotion).toMatchObject({ revision: 2, by: 'alice', via: 'cli' });
    expect(w.rs(h2).specReplicas).toBe(3);
    expect(w.activeHash()).toBe(h1);

    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.previewHash()).toBe(h2);
    expect(w.status.phase).toBe('Healthy');
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, promotedBy: 'alice', promotedVia: 'cli' });
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30_000).toISOString());
    expect(w.requeue).toBeLessThanOrEqual(30_001);

    w.advance(29 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(3);
    w.advance(S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
  });

  it.each([
    ['some pods not yet available', { availableReplicas: 2 }],
    ['the controller has not seen the new size', { observedGeneration: 0 }],
    ['extra pods still counted', { replicas: 4 }],
  ])('does not switch while %s', (_title, partial) => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    Object.assign(w.rs(h2), partial);
    w.reconcile();
    expect(w.activeHash()).toBe(h1);
    expect(w.status.phase).toBe('Progressing');
  });

  it('auto-promotes after autoPromotionSeconds, counted from preview availability', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, autoPromotionSeconds: 10, previewReplicaCount: 1 } };
    });
    const h2 = w.image('repo/app:2');
    w.reconcile();
    w.settle();
    w.reconcile();
    expect(w.status.preview?.availableAt).toBe(new Date(w.now).toISOString());
    expect(w.requeue).toBe(10_001);
    w.advance(9 * S);
    w.reconcile();
    expect(w.status.promotion).toBeUndefined();
    w.advance(S);
    w.reconcile();
    expect(w.status.promotion).toMatchObject({ via: 'auto' });
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.rs(h1).scaleDownAt).toBeDefined();
    expect(w.status.history?.at(-1)?.promotedVia).toBe('auto');
  });

  it('replaces a waiting preview with a newer revision, scaling the old preview down at once', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    const h3 = w.image('repo/app:3');
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(0);
    expect(w.rs(h3).specReplicas).toBe(1);
    expect(w.rs(h3).revision).toBe(3);
    expect(w.activeHash()).toBe(h1);
  });

  it('resizes only when replicas change, without a new revision', () => {
    const { w, h1 } = released();
    w.app = { ...w.app, spec: { ...w.app.spec, replicas: 5 } };
    const actions = w.reconcile();
    expect(actions.filter((a) => a.kind === 'createReplicaSet')).toEqual([]);
    expect(w.rs(h1).specReplicas).toBe(5);
    expect(w.replicaSets.size).toBe(1);
  });
});

describe('promote', () => {
  it('refuses a stated revision that is no longer the preview, and changes nothing', () => {
    const { w } = released();
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote', { revision: 7 })]);
    expect(w.status.promotion).toBeUndefined();
    expect(w.events.at(-1)?.reason).toBe('PromoteRejected');
    expect(w.events.find((e) => e.reason === 'PromoteRejected')?.message).toMatch(/revision 7 is no longer in preview/);
  });

  it('takes an intent once: the same intent seen again does nothing more', () => {
    const { w } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    const once = intent('promote');
    w.reconcile([once]);
    w.settle();
    w.reconcile([once]);
    w.reconcile([once]);
    expect(w.activeHash()).toBe(h2);
    expect(w.status.history?.filter((h) => h.revision === 2)).toHaveLength(1);
    expect(w.events.filter((e) => e.reason === 'PromotionRequested')).toHaveLength(1);
  });

  it('ignores a promote when nothing is in preview', () => {
    const { w } = released();
    w.reconcile([intent('promote')]);
    expect(w.events.at(-1)?.reason).toBe('PromoteIgnored');
  });

  it('with --full keeps scaleDownDelaySeconds for the old revision, so an undo stays instant', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote', { full: true })]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.rs(h1).specReplicas).toBe(3);
    expect(w.rs(h1).scaleDownAt).toBe(new Date(w.now + 30_000).toISOString());
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
  });
});

describe('abort and retry', () => {
  it('abort keeps active, scales the preview down after abortScaleDownDelaySeconds, and is Degraded', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('abort')]);
    expect(w.activeHash()).toBe(h1);
    expect(w.status.phase).toBe('Degraded');
    expect(cond(w, 'Aborted')?.status).toBe('True');
    expect(w.events.filter((e) => e.reason === 'Aborted').map((e) => e.message)).toEqual([
      'revision 2 aborted by alice (cli); active stays on revision 1',
    ]);
    // As with Argo Rollouts, the preview URL shows the aborted revision while its pods are up.
    expect(w.previewHash()).toBe(h2);
    expect(w.rs(h2).specReplicas).toBe(1);
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(0);
    // Not tried again by itself.
    w.advance(60 * S);
    w.converge();
    expect(w.rs(h2).specReplicas).toBe(0);
    expect(w.activeHash()).toBe(h1);
  });

  it('abort during a promotion stops it before the switch', () => {
    const { w, h1 } = released();
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.reconcile([intent('abort')]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.status.promotion).toBeUndefined();
  });

  it('retry clears the abort and the revision runs as a preview again', () => {
    const { w } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('abort')]);
    w.advance(31 * S);
    w.converge();
    w.reconcile([intent('retry')]);
    w.settle();
    w.converge();
    expect(w.status.abort).toBeUndefined();
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.previewHash()).toBe(h2);
    expect(w.status.phase).toBe('Paused');
  });

  it('a new revision after an abort is tried without retry', () => {
    const { w } = released();
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('abort')]);
    const h3 = w.image('repo/app:3');
    w.converge();
    expect(w.status.abort).toBeUndefined();
    expect(w.previewHash()).toBe(h3);
  });
});

describe('undo', () => {
  function twoReleases() {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    w.converge();
    return { w, h1, h2 };
  }

  it('returns to the previous stable revision at once, reusing its ReplicaSet', () => {
    const { w, h1 } = twoReleases();
    w.reconcile([intent('undo')]);
    expect(w.status.pin).toMatchObject({ revision: 1 });
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.replicaSets.size).toBe(2);
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 1, promotedVia: 'undo', promotedBy: 'alice' });
    expect(w.status.phase).toBe('Healthy');
    // It stays: the spec did not change, and a pause and resume do not end it either.
    w.advance(60 * S);
    w.converge();
    w.reconcile([intent('pause')]);
    w.reconcile([intent('resume')]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.status.pin).toMatchObject({ revision: 1 });
    expect(w.status.preview).toBeUndefined();
  });

  it('after the scale-down, still goes active without a pause', () => {
    const { w, h1 } = twoReleases();
    w.advance(31 * S);
    w.converge();
    expect(w.rs(h1).specReplicas).toBe(0);
    w.reconcile([intent('undo')]);
    expect(w.rs(h1).specReplicas).toBe(3);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
  });

  it('--to-revision refuses a revision with no ReplicaSet left', () => {
    const { w, h2 } = twoReleases();
    w.reconcile([intent('undo', { toRevision: 9 })]);
    expect(w.events.at(-1)).toMatchObject({ reason: 'UndoRejected' });
    expect(w.activeHash()).toBe(h2);
  });

  it('--preview stages the revision for promotion instead', () => {
    const { w, h1, h2 } = twoReleases();
    w.advance(31 * S);
    w.converge();
    w.reconcile([intent('undo', { preview: true })]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h2);
    expect(w.previewHash()).toBe(h1);
    expect(w.status.phase).toBe('Paused');
  });

  it('ends when the spec asks for a new revision', () => {
    const { w } = twoReleases();
    w.reconcile([intent('undo')]);
    w.settle();
    w.converge();
    const h3 = w.image('repo/app:3');
    w.converge();
    expect(w.status.pin).toBeUndefined();
    expect(w.previewHash()).toBe(h3);
  });
});

describe('pause and resume', () => {
  it('deploys nothing while paused, and carries on after resume', () => {
    const { w, h1 } = released();
    w.reconcile([intent('pause')]);
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.replicaSets.has(h2)).toBe(false);
    expect(w.status.phase).toBe('Paused');
    w.reconcile([intent('resume')]);
    w.settle();
    w.converge();
    expect(w.previewHash()).toBe(h2);
    expect(w.activeHash()).toBe(h1);
  });

  it('shows Paused while paused by hand, even with nothing in flight', () => {
    const { w } = released();
    w.reconcile([intent('pause')]);
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toMatch(/^paused by alice/);
    w.reconcile([intent('resume')]);
    expect(w.status.phase).toBe('Healthy');
  });

  it('promotes nothing while paused', () => {
    const { w, h1 } = released();
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('pause')]);
    w.reconcile([intent('promote')]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
  });
});

describe('progress deadline', () => {
  it('a preview that never becomes ready goes Degraded, active never moves, and it recovers', () => {
    const { w, h1 } = released((a) => {
      a.spec.progressDeadlineSeconds = 60;
    });
    const h2 = w.image('repo/app:2');
    w.stuck.add(h2);
    w.reconcile();
    w.settle();
    w.advance(59 * S);
    w.reconcile();
    expect(w.status.phase).toBe('Progressing');
    w.advance(S);
    w.reconcile();
    expect(w.status.phase).toBe('Degraded');
    expect(cond(w, 'ProgressDeadlineExceeded')?.status).toBe('True');
    expect(w.activeHash()).toBe(h1);
    w.reconcile([intent('promote')]);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);

    w.stuck.delete(h2);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h2);
    expect(cond(w, 'ProgressDeadlineExceeded')?.status).toBe('False');
  });

  it('does not count time spent waiting for promotion', () => {
    const { w } = released((a) => {
      a.spec.progressDeadlineSeconds = 60;
    });
    w.image('repo/app:2');
    w.converge();
    w.advance(3600 * S);
    w.reconcile();
    expect(w.status.phase).toBe('Paused');
    expect(cond(w, 'ProgressDeadlineExceeded')?.status).toBe('False');
  });
});

describe('restarts and history', () => {
  it('finishes a switch that status did not record, exactly once', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    // The operator died after switching the Service, before writing status.
    const before = structuredClone(w.status);
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    w.app = { ...w.app, status: before };
    w.converge();
    expect(w.status.active?.podTemplateHash).toBe(h2);
    expect(w.status.history?.filter((h) => h.revision === 2)).toEqual([
      expect.objectContaining({ promotedBy: 'alice', promotedVia: 'cli' }),
    ]);
    expect(w.rs(h1).scaleDownAt).toBeDefined();
  });

  it('keeps revisionHistoryLimit scaled-down ReplicaSets and deletes older ones', () => {
    const { w } = released((a) => {
      a.spec.revisionHistoryLimit = 1;
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, scaleDownDelaySeconds: 0 } };
    });
    for (const tag of ['2', '3', '4']) {
      w.image(`repo/app:${tag}`);
      w.converge();
    }
    const revisions = [...w.replicaSets.values()].map((r) => r.revision).sort();
    expect(revisions).toEqual([3, 4]);
  });

  it('returns instantly to a revision still inside its scale-down delay', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: false, scaleDownDelaySeconds: 300 } };
    });
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    w.converge();
    // The spec goes back to the first image: its ReplicaSet is still up.
    w.image('repo/app:1.4.2');
    w.app.spec.image = 'harbor.example.com/team/weather:1.4.2';
    w.reconcile();
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h1);
    expect(w.replicaSets.size).toBe(2);
  });
});

describe('invalid specs', () => {
  it('become InvalidSpec naming the field, and touch nothing', () => {
    const w = new World(
      makeApp((a) => {
        a.spec.service = undefined;
        a.spec.template = { spec: { containers: [{ name: 'app' }] } };
      }),
    );
    // Nothing touched; one Event says why (events ride apart from actions).
    expect(w.reconcile()).toEqual([]);
    expect(w.events.map((e) => e.reason)).toEqual(['InvalidSpec']);
    expect(w.status.phase).toBe('Degraded');
    expect(cond(w, 'InvalidSpec')).toMatchObject({ status: 'True' });
    expect(cond(w, 'InvalidSpec')?.message).toMatch(/^spec\.service\.ports: /);
  });

  it('an App built without build.image is InvalidSpec when the operator has no default registry', () => {
    const app = makeApp((a) => {
      delete a.spec.image;
      a.spec.source = { git: { url: 'https://git.example.com/team/web.git' } };
      a.spec.build = {};
    });
    const input = { app, observed: { replicaSets: [] }, now: new Date(T0), target: undefined, intents: [] };
    for (const buildDefaults of [undefined, {}, { pushSecret: 'platform-push' }]) {
      const invalid = plan(buildDefaults ? { ...input, buildDefaults } : input);
      expect(invalid.actions).toEqual([]);
      expect(invalid.events.map((e) => e.reason)).toEqual(['InvalidSpec']);
      expect(invalid.status.phase).toBe('Degraded');
      expect(invalid.status.conditions?.find((c) => c.type === 'InvalidSpec')).toMatchObject({
        status: 'True',
        message: 'spec.build.image: required, since the operator has no --default-registry',
      });
    }
    const valid = plan({ ...input, buildDefaults: { registry: 'harbor.example.com/apps' } });
    expect(valid.status.conditions?.find((c) => c.type === 'InvalidSpec')).toMatchObject({ status: 'False' });
    expect(valid.status.phase).not.toBe('Degraded');
  });
});

describe('while a new commit builds', () => {
  it('says the active revision stays, not that the first image is building', () => {
    const { w } = released();
    const result = plan({
      app: w.app,
      observed: w.observed(),
      now: new Date(w.now),
      target: undefined,
      intents: [],
      building: true,
    });
    expect(result.status.phase).toBe('Building');
    expect(result.status.message).toBe('building a new image; revision 1 stays active');
    expect(result.actions).toEqual([]);
  });
});

describe('kaniko and ssh', () => {
  it.each([
    ['git@git.example.com:team/web.git', true],
    ['ssh://git@git.example.com/team/web.git', true],
    ['https://git.example.com/team/web.git', false],
  ])('an App built by kaniko from %s is InvalidSpec: %s', (url, invalid) => {
    const app = makeApp((a) => {
      delete a.spec.image;
      a.spec.source = { git: { url } };
      a.spec.build = { image: 'harbor.example.com/team/web', engine: 'kaniko' };
    });
    const result = plan({ app, observed: { replicaSets: [] }, now: new Date(T0), target: undefined, intents: [] });
    const condition = result.status.conditions?.find((c) => c.type === 'InvalidSpec');
    if (invalid) {
      expect(condition).toMatchObject({ status: 'True' });
      expect(condition?.message).toMatch(/^spec\.build\.engine: kaniko fetches the git context over https only/);
    } else {
      expect(condition).toMatchObject({ status: 'False' });
    }
  });
});

describe('labels', () => {
  it('selects pods by app and pod-template hash', () => {
    const { w, h1 } = released();
    expect(w.services.get('web')?.selector).toEqual({ [LABEL_APP]: 'web', [LABEL_HASH]: h1 });
  });
});

// Issue #10: where a field has Argo Rollouts' name it has Argo's meaning, and
// nothing read back from the cluster can fool or freeze the planner.
describe('Argo parity', () => {
  const scalings = (w: World) => w.events.filter((e) => e.reason === 'ScalingReplicaSet').map((e) => e.message);

  it('the preview Service selects a new revision at once with auto promotion too, then the active one', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, autoPromotionSeconds: 60, previewReplicaCount: 1 } };
    });
    expect(w.previewHash()).toBe(h1);
    const h2 = w.image('repo/app:2');
    w.reconcile();
    expect(w.previewHash()).toBe(h2);
    expect(w.activeHash()).toBe(h1);
    w.settle();
    w.reconcile();
    w.advance(60 * S);
    w.converge();
    expect(w.activeHash()).toBe(h2);
    expect(w.previewHash()).toBe(h2);
  });

  it('a replicas change with a preview up resizes the active ReplicaSet at once, the preview by previewReplicaCount', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.status.phase).toBe('Paused');
    w.app = { ...w.app, spec: { ...w.app.spec, replicas: 5 } };
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(5);
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.activeHash()).toBe(h1);
  });

  it('a replicas change while waiting for promotion stays Paused, saying the preview resizes (issue #24 A1)', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: false } };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.status.phase).toBe('Paused');
    const availableAt = w.status.preview?.availableAt;
    w.events = [];
    w.app = { ...w.app, spec: { ...w.app.spec, replicas: 5 } };
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(5);
    // Argo's CalculateRolloutPhase: a pause condition comes before the replica counts.
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toBe('revision 2 is in preview, resizing (3/5 pods available), waiting for promotion');
    expect(cond(w, 'Promoted')).toMatchObject({ status: 'False', reason: 'WaitingForPromotion' });
    expect(cond(w, 'PreviewAvailable')).toMatchObject({ status: 'False', reason: 'Progressing' });
    // Waiting for promotion is not waiting on the progress deadline, however long the pods take.
    expect(cond(w, 'ProgressDeadlineExceeded')).toMatchObject({ status: 'False', reason: 'NotWaiting' });
    w.advance(w.app.spec.progressDeadlineSeconds * S + S);
    w.reconcile();
    expect(w.status.phase).toBe('Paused');
    expect(w.status.preview?.availableAt).toBe(availableAt);
    w.settle();
    w.reconcile();
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toBe('revision 2 is ready in preview, waiting for promotion');
    expect(w.events.map((e) => e.reason)).not.toContain('PhaseProgressing');
    // Available once: the Event is not told again.
    expect(w.events.map((e) => e.reason)).not.toContain('PreviewAvailable');
    expect(w.activeHash()).toBe(h1);
  });

  it('a preview pod lost while waiting for promotion stays Paused; with auto promotion, promotion waits for it', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, autoPromotionSeconds: 60, previewReplicaCount: 2 } };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.status.phase).toBe('Paused');
    w.rs(h2).availableReplicas = 1;
    w.advance(60 * S);
    w.reconcile();
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toBe('revision 2 is in preview, resizing (1/2 pods available), waiting for promotion');
    expect(w.status.promotion).toBeUndefined();
    expect(w.activeHash()).toBe(h1);
    w.settle();
    w.converge();
    expect(w.activeHash()).toBe(h2);
  });

  it('a preview not yet available once is Progressing while it grows, as before', () => {
    const { w } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: false } };
    });
    const h2 = w.image('repo/app:2');
    w.reconcile();
    w.app = { ...w.app, spec: { ...w.app.spec, replicas: 5 } };
    w.reconcile();
    expect(w.rs(h2).specReplicas).toBe(5);
    expect(w.status.phase).toBe('Progressing');
  });

  it('without previewReplicaCount the preview follows replicas too', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: false } };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    w.app = { ...w.app, spec: { ...w.app.spec, replicas: 2 } };
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(2);
    expect(w.rs(h2).specReplicas).toBe(2);
  });

  it('abortScaleDownDelaySeconds: 0 never scales the aborted preview down', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = {
        blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 1, abortScaleDownDelaySeconds: 0 },
      };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('abort')]);
    w.advance(3600 * S);
    w.converge();
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.rs(h2).scaleDownAt).toBeUndefined();
    expect(w.requeue).toBeUndefined();
    expect(w.activeHash()).toBe(h1);
    expect(w.status.phase).toBe('Degraded');
  });

  it.each([
    ['the status write after the switch was refused (409)', false],
    ['the operator died after the switch, before marking the old ReplicaSet', true],
  ])('scales the old revision down after its delay when %s', (_title, markLost) => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    const stale = structuredClone(w.status);
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    // The status write is lost: the next reconcile starts from the stale status.
    w.app = { ...w.app, status: stale };
    if (markLost) delete w.rs(h1).scaleDownAt;
    w.reconcile();
    expect(w.status.active?.podTemplateHash).toBe(h2);
    expect(w.status.stable?.podTemplateHash).toBe(h2);
    expect(w.rs(h1).scaleDownAt).toBeDefined();
    expect(w.requeue).toBeDefined();
    expect(w.requeue).toBeLessThanOrEqual(30_001);
    w.advance(30 * S);
    w.reconcile();
    expect(w.rs(h1).specReplicas).toBe(0);
    expect(w.status.history?.filter((h) => h.revision === 2)).toHaveLength(1);
  });

  it('a recreated preview ReplicaSet gets its revision number back, and promote --revision still finds it', () => {
    const { w } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.rs(h2).revision).toBe(2);
    w.replicaSets.delete(h2);
    w.reconcile();
    expect(w.rs(h2).revision).toBe(2);
    w.settle();
    w.reconcile();
    expect(w.status.preview?.revision).toBe(2);
    w.reconcile([intent('promote', { revision: 2 })]);
    expect(w.status.promotion?.revision).toBe(2);
  });

  it('a recreated ReplicaSet of a formerly active revision gets its number back from history', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, scaleDownDelaySeconds: 0 } };
      a.spec.revisionHistoryLimit = 0;
    });
    w.image('repo/app:2');
    w.converge();
    expect(w.replicaSets.has(h1)).toBe(false);
    w.app = { ...w.app, spec: { ...w.app.spec, image: 'harbor.example.com/team/weather:1.4.2' } };
    w.converge();
    expect(w.rs(h1).revision).toBe(1);
  });

  it('records every change of a ReplicaSet size as an Event: from, to and why', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    w.advance(30 * S);
    w.reconcile();
    const rs1 = w.rs(h1).name;
    const rs2 = w.rs(h2).name;
    expect(scalings(w)).toEqual([
      expect.stringMatching(new RegExp(`^Scaled up replica set ${rs1} from 0 to 3: `)),
      expect.stringMatching(new RegExp(`^Scaled up replica set ${rs2} from 0 to 1: .*preview`)),
      expect.stringMatching(new RegExp(`^Scaled up replica set ${rs2} from 1 to 3: promoting revision 2`)),
      expect.stringMatching(new RegExp(`^Scaled down replica set ${rs1} from 3 to 0: .*scale-down delay`)),
    ]);
  });

  it('puts back a hand edit of the active selector, with a Warning, and records no promotion', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, scaleDownDelaySeconds: 0 } };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    expect(w.activeHash()).toBe(h2);
    expect(w.rs(h1).specReplicas).toBe(0);
    const before = structuredClone(w.status);
    // kubectl patch svc web -p '{"spec":{"selector":{"teal.dev/pod-template-hash":"<h1>"}}}': the note stays.
    const svc = w.services.get('web');
    if (!svc) throw new Error('no active Service');
    svc.selector = { ...svc.selector, [LABEL_HASH]: h1 };
    const actions = w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(actions.some((a) => a.kind === 'applyService' && a.role === 'active')).toBe(true);
    expect(w.events.at(-1)).toBeDefined();
    expect(w.events.filter((e) => e.reason === 'ActiveServiceEdited')).toEqual([
      expect.objectContaining({ message: expect.stringContaining('web') }),
    ]);
    expect(w.status.history).toEqual(before.history);
    expect(w.status.stable).toEqual(before.stable);
    expect(w.rs(h1).specReplicas).toBe(0);
    expect(w.rs(h2).specReplicas).toBe(3);
    // Repaired once: nothing more to say or do.
    expect(w.reconcile()).toEqual([]);
  });

  it('a selector pointing at a revision nothing was releasing is an edit even with a matching note', () => {
    const { w, h1 } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, scaleDownDelaySeconds: 300 } };
    });
    const h2 = w.image('repo/app:2');
    w.converge();
    // Someone re-applies an old copy of the Service, note and all, while revision 2 is active and wanted.
    const stale = w.services.get('web');
    if (!stale) throw new Error('no active Service');
    const note = ownedServiceManifest(w.app, 'active', h1).metadata.annotations['teal.dev/applied'];
    w.services.set('web', { ...stale, selector: { ...stale.selector, [LABEL_HASH]: h1 }, appliedHash: note ?? '' });
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.active?.podTemplateHash).toBe(h2);
    expect(w.events.some((e) => e.reason === 'ActiveServiceEdited')).toBe(true);
  });

  it('an unreadable scale-down mark is written again, never a NaN wake-up', () => {
    const { w, h1 } = released();
    w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    w.rs(h1).scaleDownAt = 'not-a-time';
    const actions = w.reconcile();
    expect(Number.isFinite(w.requeue)).toBe(true);
    expect(actions).toContainEqual(
      expect.objectContaining({ kind: 'patchReplicaSet', name: w.rs(h1).name, scaleDownAt: expect.any(String) }),
    );
    expect(Number.isFinite(Date.parse(w.rs(h1).scaleDownAt ?? ''))).toBe(true);
  });

  it('unreadable times in status restart their clocks instead of freezing them', () => {
    const { w } = released((a) => {
      a.spec.strategy = { blueGreen: { autoPromotionEnabled: true, autoPromotionSeconds: 30, previewReplicaCount: 1 } };
    });
    w.image('repo/app:2');
    w.reconcile();
    w.app = {
      ...w.app,
      status: { ...w.status, progress: { podTemplateHash: `${w.target().hash}:preview`, since: 'garbage' } },
    };
    w.reconcile();
    expect(Number.isFinite(w.requeue)).toBe(true);
    w.settle();
    w.reconcile();
    const preview = w.status.preview;
    if (!preview) throw new Error('no preview');
    w.app = { ...w.app, status: { ...w.status, preview: { ...preview, availableAt: 'garbage' } } };
    w.reconcile();
    expect(Number.isFinite(w.requeue)).toBe(true);
    expect(w.status.promotion).toBeUndefined();
  });
});

describe('values read back from the cluster', () => {
  it('a preview whose revision and image annotations were mangled is promoted under its own number and image', () => {
    const { w } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    // What observed.ts leaves of an unreadable teal.dev/revision and teal.dev/image: absent.
    Object.assign(w.rs(h2), { revision: 0, image: '' });
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
    expect(w.status.active).toMatchObject({ revision: 2, image: 'repo/app:2', podTemplateHash: h2 });
    expect(w.status.history?.at(-1)).toMatchObject({ revision: 2, image: 'repo/app:2' });
  });
});

describe('undo to a revision that never served', () => {
  it('is previewed and waits for promotion, like any new revision', () => {
    const { w, h1 } = released();
    const h2 = w.image('repo/app:2');
    w.converge();
    w.reconcile([intent('undo')]);
    w.converge();
    expect(w.rs(h2).specReplicas).toBe(0);
    w.reconcile([intent('undo', { toRevision: 2 })]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h1);
    expect(w.rs(h2).specReplicas).toBe(1);
    expect(w.previewHash()).toBe(h2);
    expect(w.status.phase).toBe('Paused');
    w.reconcile([intent('promote')]);
    w.settle();
    w.reconcile();
    expect(w.activeHash()).toBe(h2);
  });
});

describe('a copy in use deleted by hand (issue #24 S5)', () => {
  const copy = (digest: string) => copyName('uid-1', 'conf', digest);

  it('is made again from its source while the source has the content it is named after; nothing else is touched', () => {
    const { w } = released();
    w.missingCopies = [{ kind: 'configmap', name: copy('d1'), source: 'conf', state: { digest: 'd1' } }];
    const actions = w.reconcile();
    expect(actions).toEqual([
      {
        kind: 'createConfigCopy',
        copy: { kind: 'configmap', source: 'conf', name: copy('d1') },
        app: 'web',
        owner: expect.objectContaining({ uid: 'uid-1' }),
      },
    ]);
    expect(w.events.at(-1)).toMatchObject({ type: 'Normal', reason: 'ConfigCopyRecreated' });
    expect(w.status.phase).toBe('Healthy');
    expect(cond(w, 'ConfigCopyMissing')).toBeUndefined();
  });

  it('whose source moved on is told: condition, one Warning Event, Degraded; all clear once it is back', () => {
    const { w } = released();
    w.missingCopies = [{ kind: 'configmap', name: copy('d1'), source: 'conf', state: { digest: 'd2' } }];
    expect(w.reconcile()).toEqual([]);
    const message = `ConfigMap ${copy('d1')} is missing and cannot be made again (ConfigMap conf no longer has its content)`;
    expect(cond(w, 'ConfigCopyMissing')).toMatchObject({ status: 'True', reason: 'ConfigCopyMissing' });
    expect(cond(w, 'ConfigCopyMissing')?.message).toContain(message);
    expect(w.status.phase).toBe('Degraded');
    expect(w.status.message).toContain(message);
    expect(cond(w, 'Ready')?.status).toBe('False');
    const warnings = () => w.events.filter((e) => e.reason === 'ConfigCopyMissing');
    expect(warnings()).toEqual([expect.objectContaining({ type: 'Warning' })]);
    w.reconcile();
    expect(warnings().length).toBe(1);

    w.missingCopies = [];
    expect(w.reconcile()).toEqual([]);
    expect(cond(w, 'ConfigCopyMissing')).toMatchObject({ status: 'False', reason: 'ConfigCopiesPresent' });
    expect(w.status.phase).toBe('Healthy');
  });

  it('keeps a release waiting for promotion Paused, the loss added to its message', () => {
    const { w } = released();
    w.image('registry.example.com/team/web:2');
    w.converge();
    expect(w.status.phase).toBe('Paused');
    w.missingCopies = [{ kind: 'secret', name: 'db-0123456789', source: 'db', state: 'missing' }];
    w.reconcile();
    expect(w.status.phase).toBe('Paused');
    expect(w.status.message).toContain('Secret db-0123456789 is missing and cannot be made again (Secret db is gone)');
  });
});
