import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_HASH } from '../../src/app/labels.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  patchSpec,
  phase,
  replicaSetOf,
  type StoredApp,
  selectorHash,
  waitForApp,
} from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { clients, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { serviceAccount } from '../support/users.ts';
import { watchChanges } from '../support/watch.ts';

const { core, authn } = clients();

let ns: string;
let world: OperatorNamespace;
let operator: Operator;
let invariant: Invariant;
let stopWatch: () => void;
/** Every selector each active Service had, in order. */
const selections = new Map<string, string[]>();

const teal = (...args: string[]) => tealIn(ns, ...args);

/** Records every selector of the active Services of the namespace, from their watch. */
async function recordSelections(namespace: string): Promise<() => void> {
  return watchChanges(
    `/api/v1/namespaces/${namespace}/services`,
    { labelSelector: 'teal.dev/role=active' },
    (type, obj: { metadata?: { name?: string }; spec?: { selector?: Record<string, string> } }) => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const seen = selections.get(obj.metadata?.name ?? '') ?? [];
      const hash = obj.spec?.selector?.[LABEL_HASH] ?? '';
      // Before the first release the Service may select nothing yet.
      if (hash !== '' && hash !== 'none' && seen.at(-1) !== hash) seen.push(hash);
      selections.set(obj.metadata?.name ?? '', seen);
    },
  );
}

/** A first release, then a new image waiting in preview; returns the stable and preview hashes. */
async function inPreview(name: string): Promise<{ stable: string; preview: string }> {
  await createApp(ns, e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 600 } }));
  const first = await waitForApp(ns, name, 'first release Healthy', phase('Healthy'));
  await patchSpec(ns, name, { image: 'registry.example.com/team/web:2' });
  const paused = await waitForApp(
    ns,
    name,
    'revision 2 ready in preview',
    (a) => phase('Paused')(a) && a.status?.preview?.availableAt !== undefined,
  );
  return {
    stable: first.status?.active?.podTemplateHash ?? '',
    preview: paused.status?.preview?.podTemplateHash ?? '',
  };
}

/** Waits for the operator to take the undo intent, and checks it did not refuse it. */
async function undoTaken(name: string, id: string): Promise<void> {
  await waitForApp(ns, name, 'the undo intent handled', (a) => a.status?.handledIntents?.undo === id);
  const refused = await core.listNamespacedEvent({
    namespace: ns,
    fieldSelector: `involvedObject.name=${name},reason=UndoRejected`,
  });
  expect(refused.items.map((e) => e.message)).toEqual([]);
}

/** Healthy on the stable revision, the preview gone and scaled to 0, the active Service never moved. */
async function backOnStable(name: string, hashes: { stable: string; preview: string }): Promise<StoredApp> {
  const back = await waitForApp(ns, name, 'Healthy on revision 1', (a) => phase('Healthy')(a));
  expect(back.status?.active).toMatchObject({ revision: 1, podTemplateHash: hashes.stable });
  expect(back.status?.preview).toBeUndefined();
  expect(back.status?.pin).toMatchObject({ revision: 1, podTemplateHash: hashes.stable });
  await waitFor('the preview ReplicaSet scaled to 0', async () =>
    (await replicaSetOf(ns, name, hashes.preview))?.spec?.replicas === 0 ? true : undefined,
  );
  expect(await selectorHash(ns, name)).toBe(hashes.stable);
  expect(selections.get(name)).toEqual([hashes.stable]);
  return back;
}

beforeAll(async () => {
  world = await operatorNamespace('undo-preview');
  ({ ns, operator, invariant } = world);
  stopWatch = await recordSelections(ns);
});

afterAll(async () => {
  stopWatch?.();
  await world?.stop();
});

describe('undo with a revision in preview', () => {
  it('kubectl teal undo returns to the stable revision at once, and history records it', async () => {
    const hashes = await inPreview('cli');
    const admin = (await authn.createSelfSubjectReview({ body: {} })).status?.userInfo?.username ?? '';

    const undo = await teal('undo', 'cli');
    expect(undo.code, undo.stderr).toBe(0);
    expect(undo.stdout).toContain('undo to revision 1 requested: revision 2 leaves preview');
    const id = /id ([0-9a-f-]+)\)/.exec(undo.stdout)?.[1] ?? '';
    await undoTaken('cli', id);

    const back = await backOnStable('cli', hashes);
    expect(back.status?.history?.at(-1)).toMatchObject({ revision: 1, promotedVia: 'undo', promotedBy: admin });
    expect(back.status?.history?.filter((h) => h.revision === 2)).toEqual([]);
    expect(invariant.violations).toEqual([]);
  });

  it('the HTTP API takes it (202), and the operator carries it out the same way', async () => {
    const hashes = await inPreview('api');
    const token = await serviceAccount(ns, 'releaser', ['undo']);

    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/api/v1/namespaces/${ns}/apps/api/undo`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const body = (await res.json()) as { accepted?: boolean; id?: string };
    expect(res.status).toBe(202);
    expect(body).toMatchObject({ accepted: true });
    await undoTaken('api', body.id ?? '');

    const back = await backOnStable('api', hashes);
    expect(back.status?.history?.at(-1)).toMatchObject({
      revision: 1,
      promotedVia: 'undo',
      promotedBy: `system:serviceaccount:${ns}:releaser`,
    });
    expect(invariant.violations).toEqual([]);
  });
});
