// Status counts and the scale subresource's selector, as Argo Rollouts counts
// a blue/green Rollout: all pods, the desired revision's, the active revision's.
import { describe, expect, it } from 'vitest';
import { podTemplateHash } from '../../src/app/hash.ts';
import { LABEL_HASH } from '../../src/app/labels.ts';
import { validateApp } from '../../src/app/validate.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import { replicaCounts } from '../../src/rollout/counts.ts';
import type { ObservedReplicaSet } from '../../src/rollout/observed.ts';
import { imageApp } from '../fixtures/apps.ts';

const rs = (hash: string, replicas: number, ready = replicas, available = ready, app = 'web') => ({
  app,
  hash,
  replicas,
  readyReplicas: ready,
  availableReplicas: available,
});

describe('replicaCounts', () => {
  it('counts a steady App: one revision, active and desired', () => {
    expect(replicaCounts([rs('aaa', 3)], 'aaa', 'aaa', 'web')).toEqual({
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      HPAReplicas: 3,
      selector: 'teal.dev/app=web,teal.dev/pod-template-hash=aaa',
    });
  });

  it('with a preview up: replicas counts every pod, updated the preview, ready and available the active', () => {
    const sets = [rs('act', 3), rs('new', 2, 1, 0), rs('old', 1, 1, 1)];
    expect(replicaCounts(sets, 'act', 'new', 'web')).toEqual({
      replicas: 6,
      updatedReplicas: 2,
      readyReplicas: 3,
      availableReplicas: 3,
      // The Scale counts what its selector matches, so an HPA never sees the preview pods it does not measure.
      HPAReplicas: 3,
      selector: 'teal.dev/app=web,teal.dev/pod-template-hash=act',
    });
  });

  it('without an active ReplicaSet counts every revision, with a selector of any revision and no build pod', () => {
    expect(replicaCounts([rs('aaa', 2, 1, 1), rs('bbb', 1, 1, 0)], undefined, 'bbb', 'web')).toEqual({
      replicas: 3,
      updatedReplicas: 1,
      readyReplicas: 2,
      availableReplicas: 1,
      HPAReplicas: 3,
      selector: 'teal.dev/app=web,teal.dev/pod-template-hash',
    });
    // An active revision whose ReplicaSet is gone falls back the same way.
    expect(replicaCounts([rs('aaa', 2)], 'gone', 'aaa', 'web').selector).toBe(
      'teal.dev/app=web,teal.dev/pod-template-hash',
    );
  });

  it('counts nothing for an App without ReplicaSets, and no updated pods while the desired revision is unknown', () => {
    expect(replicaCounts([], undefined, undefined, 'web')).toEqual({
      replicas: 0,
      updatedReplicas: 0,
      readyReplicas: 0,
      availableReplicas: 0,
      HPAReplicas: 0,
      selector: 'teal.dev/app=web,teal.dev/pod-template-hash',
    });
    expect(replicaCounts([rs('aaa', 2)], 'aaa', undefined, 'web').updatedReplicas).toBe(0);
  });

  it("leaves out another App's ReplicaSets, even of the same hash", () => {
    const counts = replicaCounts([rs('aaa', 2), rs('aaa', 5, 5, 5, 'api')], 'aaa', 'aaa', 'web');
    expect([counts.replicas, counts.updatedReplicas, counts.readyReplicas, counts.HPAReplicas]).toEqual([2, 2, 2, 2]);
  });
});

describe('the planner', () => {
  it('sets the counts on status at every plan, from the first ReplicaSet to the first release', () => {
    const input = imageApp('web');
    input.metadata = { name: 'web', namespace: 'ns', uid: 'uid-1', generation: 1 };
    input.spec.replicas = 2;
    const result = validateApp(input);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const app = result.app;
    const image = app.spec.image ?? '';
    const target = { hash: podTemplateHash(image, app.spec.template), image };
    const now = new Date('2026-11-21T10:00:00Z');

    const first = plan({ app, observed: { replicaSets: [] }, now, target, intents: [] });
    expect(first.status).toMatchObject({ replicas: 0, updatedReplicas: 0, HPAReplicas: 0 });
    const created = first.actions.find((a) => a.kind === 'createReplicaSet');
    if (created?.kind !== 'createReplicaSet') throw new Error('no ReplicaSet created');

    const m = created.manifest;
    const observed: ObservedReplicaSet = {
      namespace: 'ns',
      name: m.metadata.name,
      resourceVersion: '1',
      app: 'web',
      hash: m.metadata.labels[LABEL_HASH] ?? '',
      revision: 1,
      image,
      ownerUid: 'uid-1',
      createdAt: now.toISOString(),
      generation: 1,
      specReplicas: 2,
      observedGeneration: 1,
      replicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      deleting: false,
    };
    const second = plan({
      app: { ...app, status: first.status },
      observed: { replicaSets: [observed] },
      now,
      target,
      intents: [],
    });
    expect(second.status.active?.podTemplateHash).toBe(target.hash);
    expect(second.status).toMatchObject({
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      HPAReplicas: 2,
      selector: `teal.dev/app=web,teal.dev/pod-template-hash=${target.hash}`,
    });
  });
});
