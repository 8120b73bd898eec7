// Configuration as part of the revision, end to end (issue #15, part 3): the
// ConfigMaps and Secrets a pod template references are copied per revision,
// a change of their content is a new revision that goes through preview and
// promotion, undo returns to the old copy, an unrelated change does nothing,
// an opted-out reference stays live, and the copies go with their revision.
import { createHash } from 'node:crypto';
import type { V1ReplicaSet } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  getApp,
  intent,
  phase,
  replicaSetOf,
  replicaSetsOf,
  type StoredApp,
  waitForApp,
} from '../support/apps.ts';
import { clients, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';

const { core } = clients();
// As the docs name them (not imported: the test must run, and fail, on code without them).
const ANN_CONFIG_COPIES = 'teal.dev/config-copies';
const ANN_LIVE_CONFIG = 'teal.dev/live-config';
const LABEL_CONFIG_COPY = 'teal.dev/config-copy';
let ns: string;
let world: OperatorNamespace;
let operator: Operator;
let invariant: Invariant;

beforeAll(async () => {
  world = await operatorNamespace('config-rev');
  ({ ns, operator, invariant } = world);
});

afterAll(async () => {
  await world?.stop();
});

type PodSpec = Record<string, unknown>;

function appWith(
  name: string,
  podSpec: PodSpec,
  blueGreen: Record<string, unknown> = {},
  extra: Partial<AppInput['spec']> = {},
) {
  const app = e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 600, ...blueGreen }, spec: extra });
  app.spec.template = { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }], ...podSpec } };
  return app;
}

async function putConfigMap(name: string, data: Record<string, string>): Promise<void> {
  const body = { metadata: { name }, data };
  try {
    await core.replaceNamespacedConfigMap({ namespace: ns, name, body });
  } catch {
    await core.createNamespacedConfigMap({ namespace: ns, body });
  }
}

async function putSecret(name: string, data: Record<string, string>): Promise<void> {
  const body = { metadata: { name }, stringData: data };
  try {
    await core.replaceNamespacedSecret({ namespace: ns, name, body });
  } catch {
    await core.createNamespacedSecret({ namespace: ns, body });
  }
}

/** The pod spec of a revision's ReplicaSet. */
async function podSpecOf(app: string, hash: string): Promise<PodSpec> {
  const rs = await replicaSetOf(ns, app, hash);
  if (!rs) throw new Error(`no ReplicaSet ${app} ${hash}`);
  return rs.spec?.template?.spec as unknown as PodSpec;
}

const volumeConfigMap = (spec: PodSpec, i = 0) =>
  (spec.volumes as { configMap?: { name: string } }[] | undefined)?.[i]?.configMap?.name ?? '';
const secretKeyRefName = (spec: PodSpec) =>
  (spec.containers as { env?: { valueFrom?: { secretKeyRef?: { name: string } } }[] }[])[0]?.env?.[0]?.valueFrom
    ?.secretKeyRef?.name ?? '';

async function configMapData(name: string): Promise<Record<string, string> | undefined> {
  try {
    const cm = await core.readNamespacedConfigMap({ namespace: ns, name });
    expect(cm.immutable).toBe(true);
    return cm.data ?? {};
  } catch {
    return undefined;
  }
}

async function secretExists(name: string): Promise<boolean> {
  try {
    const s = await core.readNamespacedSecret({ namespace: ns, name });
    expect(s.immutable).toBe(true);
    return true;
  } catch {
    return false;
  }
}

const hashOf = (a: StoredApp, role: 'active' | 'preview') => a.status?.[role]?.podTemplateHash ?? '';
/** A revision ready in preview; which one is for the test to check (an extra revision must not slip by). */
const previewReady = (a: StoredApp) => phase('Paused')(a) && a.status?.preview?.availableAt !== undefined;

describe('a referenced ConfigMap is part of the revision', () => {
  it('an edit is a new revision in preview on a new copy; promote, then undo, and the old copy is live again', async () => {
    await putConfigMap('conf', { greeting: 'hello' });
    await putConfigMap('unrelated', { x: '1' });
    await createApp(ns, appWith('cm', { volumes: [{ name: 'conf', configMap: { name: 'conf' } }] }));
    const one = await waitForApp(ns, 'cm', 'revision 1 Healthy', phase('Healthy'));
    const copy1 = volumeConfigMap(await podSpecOf('cm', hashOf(one, 'active')));
    expect(copy1).toMatch(/^conf-[0-9a-f]{10}$/);
    expect(await configMapData(copy1)).toEqual({ greeting: 'hello' });

    // An unrelated ConfigMap's edit makes no revision: the next one is revision 2.
    await putConfigMap('unrelated', { x: '2' });
    await putConfigMap('conf', { greeting: 'hi' });
    const two = await waitForApp(ns, 'cm', 'a revision ready in preview', previewReady);
    expect(two.status?.preview?.revision).toBe(2);
    expect((await replicaSetsOf(ns, 'cm')).length).toBe(2);
    const copy2 = volumeConfigMap(await podSpecOf('cm', hashOf(two, 'preview')));
    expect(copy2).toMatch(/^conf-[0-9a-f]{10}$/);
    expect(copy2).not.toBe(copy1);
    expect(await configMapData(copy2)).toEqual({ greeting: 'hi' });
    expect(two.status?.active?.revision).toBe(1);
    expect(volumeConfigMap(await podSpecOf('cm', hashOf(two, 'active')))).toBe(copy1);

    await intent(ns, 'cm', 'promote');
    await waitForApp(ns, 'cm', 'revision 2 active', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
    await intent(ns, 'cm', 'undo');
    const back = await waitForApp(
      ns,
      'cm',
      'undo: revision 1 active',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 1,
    );
    expect(volumeConfigMap(await podSpecOf('cm', hashOf(back, 'active')))).toBe(copy1);
    expect(await configMapData(copy1)).toEqual({ greeting: 'hello' });
    expect(invariant.violations).toEqual([]);
  });

  it('an opted-out reference stays pointed at the live ConfigMap and is not copied', async () => {
    await putConfigMap('live', { a: '1' });
    await putConfigMap('pinned', { b: '1' });
    const app = appWith('optout', {
      volumes: [
        { name: 'live', configMap: { name: 'live' } },
        { name: 'pinned', configMap: { name: 'pinned' } },
      ],
    });
    app.metadata.annotations = { [ANN_LIVE_CONFIG]: 'configmap/live' };
    await createApp(ns, app);
    const one = await waitForApp(ns, 'optout', 'revision 1 Healthy', phase('Healthy'));
    const spec = await podSpecOf('optout', hashOf(one, 'active'));
    expect(volumeConfigMap(spec, 0)).toBe('live');
    expect(volumeConfigMap(spec, 1)).toMatch(/^pinned-[0-9a-f]{10}$/);
    const copies = await core.listNamespacedConfigMap({
      namespace: ns,
      labelSelector: `${LABEL_CONFIG_COPY},teal.dev/app=optout`,
    });
    expect(copies.items.map((c) => c.metadata?.name)).toEqual([volumeConfigMap(spec, 1)]);

    // Its edit makes no revision: the edit of the copied one after it is revision 2.
    await putConfigMap('live', { a: '2' });
    await putConfigMap('pinned', { b: '2' });
    const two = await waitForApp(ns, 'optout', 'a revision ready in preview', previewReady);
    expect(two.status?.preview?.revision).toBe(2);
    const spec2 = await podSpecOf('optout', hashOf(two, 'preview'));
    expect(volumeConfigMap(spec2, 0)).toBe('live');
    expect(await configMapData(volumeConfigMap(spec2, 1))).toEqual({ b: '2' });
    expect((await replicaSetsOf(ns, 'optout')).length).toBe(2);
  });

  it('the copies go with their revision (revisionHistoryLimit: 1)', async () => {
    await putConfigMap('gc', { v: '1' });
    await createApp(
      ns,
      appWith(
        'gc',
        { volumes: [{ name: 'gc', configMap: { name: 'gc' } }] },
        { autoPromotionEnabled: true, scaleDownDelaySeconds: 0 },
        { revisionHistoryLimit: 1 },
      ),
    );
    const copies: string[] = [];
    for (const v of ['1', '2', '3', '4']) {
      if (v !== '1') await putConfigMap('gc', { v });
      const app = await waitForApp(
        ns,
        'gc',
        `revision ${v} active`,
        (a) => phase('Healthy')(a) && a.status?.active?.revision === Number(v),
      );
      copies.push(volumeConfigMap(await podSpecOf('gc', hashOf(app, 'active'))));
    }
    expect(new Set(copies).size).toBe(4);
    // Revisions 1 and 2 are beyond the limit: their ReplicaSets go, and their copies with them.
    await waitFor('revisions 1 and 2 and their copies gone', async () => {
      const left = (await replicaSetsOf(ns, 'gc')).map(
        (rs: V1ReplicaSet) => rs.metadata?.annotations?.[ANN_CONFIG_COPIES],
      );
      const gone =
        (await configMapData(copies[0] ?? '')) === undefined && (await configMapData(copies[1] ?? '')) === undefined;
      return left.length === 2 && gone ? true : undefined;
    });
    expect(await configMapData(copies[2] ?? '')).toEqual({ v: '3' });
    expect(await configMapData(copies[3] ?? '')).toEqual({ v: '4' });
  });
  it('an object squatting on the name of the next copy, with other content, is not used: the release waits and says why', async () => {
    await putConfigMap('squat-src', { k: 'v1' });
    await createApp(ns, appWith('squat', { volumes: [{ name: 'c', configMap: { name: 'squat-src' } }] }));
    const one = await waitForApp(ns, 'squat', 'revision 1 Healthy', phase('Healthy'));
    // The copy name v2 will get: the App's uid and the content (src/rollout/config-refs.ts copyName).
    const digest = createHash('sha256')
      .update(`${JSON.stringify([['k', 'v2']])}\n${JSON.stringify([])}`)
      .digest('hex');
    const hash = createHash('sha256').update(`${one.metadata.uid}\n${digest}`).digest('hex').slice(0, 10);
    const squatter = `squat-src-${hash}`;
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: squatter }, data: { k: 'evil' } },
    });
    await putConfigMap('squat-src', { k: 'v2' });
    const refused = await waitForApp(ns, 'squat', 'the squatted copy refused', (a) =>
      (a.status?.message ?? '').includes(`ConfigMap ${squatter} exists with other content`),
    );
    expect(refused.status?.active?.revision).toBe(1);
    expect((await replicaSetsOf(ns, 'squat')).length).toBe(1);

    await core.deleteNamespacedConfigMap({ namespace: ns, name: squatter });
    const two = await waitForApp(ns, 'squat', 'a revision ready in preview', previewReady);
    expect(volumeConfigMap(await podSpecOf('squat', hashOf(two, 'preview')))).toBe(squatter);
    expect(await configMapData(squatter)).toEqual({ k: 'v2' });
  });
});

describe('a referenced Secret is part of the revision', () => {
  it('an edit is seen (by GET, within 30 s) as a new revision in preview; promote, undo: the old copy is live again', async () => {
    const password = `pw-${Math.random().toString(36).slice(2)}`;
    await putSecret('db', { password });
    const env = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }];
    await createApp(ns, appWith('sec', { containers: [{ name: 'app', env, ports: [{ containerPort: 8080 }] }] }));
    const one = await waitForApp(ns, 'sec', 'revision 1 Healthy', phase('Healthy'));
    const copy1 = secretKeyRefName(await podSpecOf('sec', hashOf(one, 'active')));
    expect(copy1).toMatch(/^db-[0-9a-f]{10}$/);
    expect(await secretExists(copy1)).toBe(true);

    const password2 = `${password}-2`;
    await putSecret('db', { password: password2 });
    const two = await waitForApp(ns, 'sec', 'a revision ready in preview', previewReady);
    expect(two.status?.preview?.revision).toBe(2);
    const copy2 = secretKeyRefName(await podSpecOf('sec', hashOf(two, 'preview')));
    expect(copy2).toMatch(/^db-[0-9a-f]{10}$/);
    expect(copy2).not.toBe(copy1);
    const stored = await core.readNamespacedSecret({ namespace: ns, name: copy2 });
    expect(Buffer.from(stored.data?.password ?? '', 'base64').toString()).toBe(password2);
    expect(secretKeyRefName(await podSpecOf('sec', hashOf(two, 'active')))).toBe(copy1);

    await intent(ns, 'sec', 'promote');
    await waitForApp(ns, 'sec', 'revision 2 active', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
    await intent(ns, 'sec', 'undo');
    const back = await waitForApp(
      ns,
      'sec',
      'undo: revision 1 active',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 1,
    );
    expect(secretKeyRefName(await podSpecOf('sec', hashOf(back, 'active')))).toBe(copy1);
    expect(await secretExists(copy1)).toBe(true);

    // Never in status, Events or logs.
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=sec' });
    const seen = [JSON.stringify(back.status), ...events.items.map((e) => e.message ?? ''), operator.logs()].join('\n');
    expect(seen).not.toContain(password);
    expect(seen).not.toContain(Buffer.from(password).toString('base64'));
  });
  it('an optional reference to a Secret that does not exist is left as it is, and the App releases', async () => {
    // As the weather example has it: the app serves sample data without its API key.
    const env = [{ name: 'KEY', valueFrom: { secretKeyRef: { name: 'absent', key: 'k', optional: true } } }];
    await createApp(ns, appWith('opt', { containers: [{ name: 'app', env, ports: [{ containerPort: 8080 }] }] }));
    const one = await waitForApp(ns, 'opt', 'revision 1 Healthy', phase('Healthy'));
    expect(secretKeyRefName(await podSpecOf('opt', hashOf(one, 'active')))).toBe('absent');
  });
});

describe('a copy in use deleted by hand (issue #24 S5)', () => {
  /** The App's ReplicaSets, as what would churn: uid, hash and size. */
  const replicaSetShape = async (app: string) =>
    (await replicaSetsOf(ns, app))
      .map((rs) => `${rs.metadata?.uid} ${rs.metadata?.labels?.['teal.dev/pod-template-hash']} ${rs.spec?.replicas}`)
      .sort();
  const eventsOf = async (app: string, reason: string) =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${app}` })).items.filter(
      (e) => e.reason === reason,
    );

  it('a ConfigMap copy is made again at once, with the same content, and no ReplicaSet is touched', async () => {
    await putConfigMap('hand', { greeting: 'hello' });
    await createApp(ns, appWith('hand', { volumes: [{ name: 'c', configMap: { name: 'hand' } }] }));
    const one = await waitForApp(ns, 'hand', 'revision 1 Healthy', phase('Healthy'));
    const copy = volumeConfigMap(await podSpecOf('hand', hashOf(one, 'active')));
    expect(copy).toMatch(/^hand-[0-9a-f]{10}$/);
    const before = await replicaSetShape('hand');
    const { metadata } = await core.readNamespacedConfigMap({ namespace: ns, name: copy });

    await core.deleteNamespacedConfigMap({ namespace: ns, name: copy });
    // The same name, a new object: made again, not a deletion that never happened.
    await waitFor('the copy made again', async () => {
      const again = await core.readNamespacedConfigMap({ namespace: ns, name: copy }).catch(() => undefined);
      return again && again.metadata?.uid !== metadata?.uid ? again : undefined;
    });
    expect(await configMapData(copy)).toEqual({ greeting: 'hello' });
    const told = await waitFor('the ConfigCopyRecreated Event', async () => {
      const events = await eventsOf('hand', 'ConfigCopyRecreated');
      return events.length > 0 ? events : undefined;
    });
    expect(told.map((e) => e.message ?? '').join('\n')).toContain(`ConfigMap ${copy} was deleted`);
    const after = await getApp(ns, 'hand');
    expect(after.status?.phase).toBe('Healthy');
    expect(after.status?.conditions?.find((c) => c.type === 'ConfigCopyMissing')).toBeUndefined();
    expect(await replicaSetShape('hand')).toEqual(before);
  });

  it('a ConfigMap copy whose source changed meanwhile: a Warning Event, a condition and the message name it; no ReplicaSet churn', async () => {
    await putConfigMap('gone', { greeting: 'hello' });
    await createApp(ns, appWith('gone', { volumes: [{ name: 'c', configMap: { name: 'gone' } }] }));
    const one = await waitForApp(ns, 'gone', 'revision 1 Healthy', phase('Healthy'));
    const copy = volumeConfigMap(await podSpecOf('gone', hashOf(one, 'active')));
    await putConfigMap('gone', { greeting: 'hi' });
    await waitForApp(ns, 'gone', 'revision 2 ready in preview', previewReady);
    const before = await replicaSetShape('gone');

    await core.deleteNamespacedConfigMap({ namespace: ns, name: copy });
    const lost = await waitForApp(
      ns,
      'gone',
      'the lost copy named in a condition',
      (a) => a.status?.conditions?.find((c) => c.type === 'ConfigCopyMissing')?.status === 'True',
    );
    const cond = lost.status?.conditions?.find((c) => c.type === 'ConfigCopyMissing');
    expect(cond?.reason).toBe('ConfigCopyMissing');
    expect(cond?.message).toContain(`ConfigMap ${copy} is missing`);
    expect(cond?.message).toContain('ConfigMap gone no longer has its content');
    expect(lost.status?.message).toContain(`ConfigMap ${copy} is missing`);
    const warnings = await waitFor('the ConfigCopyMissing Warning Event', async () => {
      const events = await eventsOf('gone', 'ConfigCopyMissing');
      return events.length > 0 ? events : undefined;
    });
    expect(warnings.every((e) => e.type === 'Warning')).toBe(true);
    expect(warnings[0]?.message).toContain(`ConfigMap ${copy} is missing`);
    // Not made again with the other content, and the ReplicaSets as they were.
    expect(await configMapData(copy)).toBeUndefined();
    expect(await replicaSetShape('gone')).toEqual(before);
    expect(lost.status?.active?.revision).toBe(1);
  });

  it('a Secret copy is made again (Secrets are read by GET: within 30 s)', async () => {
    await putSecret('hand-db', { password: 'pw-hand' });
    const env = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'hand-db', key: 'password' } } }];
    await createApp(ns, appWith('hand-sec', { containers: [{ name: 'app', env, ports: [{ containerPort: 8080 }] }] }));
    const one = await waitForApp(ns, 'hand-sec', 'revision 1 Healthy', phase('Healthy'));
    const copy = secretKeyRefName(await podSpecOf('hand-sec', hashOf(one, 'active')));
    expect(copy).toMatch(/^hand-db-[0-9a-f]{10}$/);
    const before = await replicaSetShape('hand-sec');

    await core.deleteNamespacedSecret({ namespace: ns, name: copy });
    await waitFor('the Secret copy made again', async () => ((await secretExists(copy)) ? true : undefined));
    const stored = await core.readNamespacedSecret({ namespace: ns, name: copy });
    expect(Buffer.from(stored.data?.password ?? '', 'base64').toString()).toBe('pw-hand');
    expect(await replicaSetShape('hand-sec')).toEqual(before);
  });
});
