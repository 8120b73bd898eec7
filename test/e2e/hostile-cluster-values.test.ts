// Garbage in every label and annotation Teal reads back from the cluster, on a
// released App's ReplicaSet, its active Service, a build Job and the App
// itself. Teal must treat each bad value as absent with one Warning Event,
// keep answering /readyz and /metrics, still release, and still stop on
// SIGTERM. (On 3f05249 a scale-down-at that is not a time made the reconcile
// requeue itself after NaN ms forever, starving the whole process.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intentAnnotation } from '../../src/app/intents.ts';
import {
  ANN_APPLIED,
  ANN_COMMIT,
  ANN_IMAGE,
  ANN_ORIGINAL_SELECTOR,
  ANN_REVISION,
  ANN_SCALE_DOWN_AT,
  LABEL_APP,
  LABEL_HASH,
} from '../../src/app/labels.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, intent, patchSpec, phase, replicaSetOf, selectorHash, waitForApp } from '../support/apps.ts';
import { clients, kubectl, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';

const { apps, core, batch } = clients();
const APP = 'web';
const COMMIT = 'a'.repeat(40);
let ns: string;
let world: OperatorNamespace;
let operator: Operator;

beforeAll(async () => {
  world = await operatorNamespace('hostile');
  ({ ns, operator } = world);
});

afterAll(async () => {
  // A starved operator never answers SIGTERM: make sure it goes.
  if (operator && operator.process.exitCode === null && operator.process.signalCode === null) await operator.kill();
  await world?.stop();
});

async function patch(kind: string, name: string, body: unknown): Promise<void> {
  const { code, stderr } = await kubectl([
    'patch',
    kind,
    name,
    '-n',
    ns,
    '--type',
    'merge',
    '-p',
    JSON.stringify(body),
  ]);
  if (code !== 0) throw new Error(stderr);
}

/** Warning Events on the App, by message. */
async function warnings(): Promise<string[]> {
  const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${APP}` });
  return events.items.filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`);
}

async function answers(path: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${operator.healthPort}${path}`);
  expect(res.status, path).toBe(200);
  return res.text();
}

describe('values read back from the cluster', () => {
  it('garbage in every label and annotation Teal reads: one Warning Event each, the operator keeps answering, the App still releases, SIGTERM still stops it', async () => {
    // Revision 2 active; revision 1 kept up with a scale-down-at mark for an hour.
    await createApp(ns, e2eApp(APP, { blueGreen: { scaleDownDelaySeconds: 3600 } }));
    const first = await waitForApp(ns, APP, 'first release', phase('Healthy'));
    const h1 = first.status?.active?.podTemplateHash ?? '';
    await patchSpec(ns, APP, { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, APP, 'preview', phase('Paused'));
    await intent(ns, APP, 'promote');
    await waitForApp(ns, APP, 'revision 2 active', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
    const old = await waitFor('the old ReplicaSet to carry its scale-down mark', async () => {
      const rs = await replicaSetOf(ns, APP, h1);
      return rs?.metadata?.annotations?.[ANN_SCALE_DOWN_AT] ? rs : undefined;
    });
    const oldName = old.metadata?.name ?? '';

    // The case first, alone: a scale-down mark that is not a time.
    await patch('replicaset', oldName, { metadata: { annotations: { [ANN_SCALE_DOWN_AT]: 'not-a-time' } } });
    // Repaired: written again as a time (or dropped, with the ReplicaSet scaled to 0). On 3f05249
    // the reconcile spun on it for good instead, and nothing else ever ran.
    await waitFor('the scale-down mark to be repaired', async () => {
      const rs = await apps.readNamespacedReplicaSet({ namespace: ns, name: oldName });
      const mark = rs.metadata?.annotations?.[ANN_SCALE_DOWN_AT];
      return mark === undefined || Number.isFinite(Date.parse(mark)) ? true : undefined;
    });
    // The process is not starved: health and metrics answer.
    expect(await answers('/readyz')).toBeDefined();
    expect(await answers('/metrics')).toContain('workqueue_depth');
    const scaleDownWarning = `InvalidAnnotation: ReplicaSet ${oldName}: annotation ${ANN_SCALE_DOWN_AT}="not-a-time"`;
    await waitFor('a Warning Event for the scale-down mark', async () =>
      (await warnings()).some((w) => w.startsWith(scaleDownWarning)) ? true : undefined,
    );

    // Then garbage in everything else Teal reads, each object's in one write, so the
    // operator sees it before it repairs any of it.
    await patch('replicaset', oldName, {
      metadata: {
        labels: { [LABEL_APP]: 'Not_An_App', [LABEL_HASH]: 'garbage' },
        annotations: { [ANN_REVISION]: 'three', [ANN_IMAGE]: 'not an image!', [ANN_COMMIT]: 'HEAD' },
      },
    });
    await patch('service', APP, {
      metadata: {
        labels: { [LABEL_APP]: 'Not_An_App' },
        annotations: { [ANN_APPLIED]: 'zz', [ANN_ORIGINAL_SELECTOR]: '{' },
      },
      spec: { selector: { [LABEL_HASH]: 'garbage' } },
    });
    const badIntent = JSON.stringify({ id: 'x', by: 'e2e', via: 'kubectl', at: 'yesterday' });
    // Well formed but for an argument pause does not take: ignored as the API would refuse it, not half carried out.
    const foreignArgument = JSON.stringify({
      id: 'y',
      by: 'e2e',
      via: 'kubectl',
      at: new Date().toISOString(),
      toRevision: 1,
    });
    const annotated = await kubectl([
      'annotate',
      '--overwrite',
      `apps.teal.dev/${APP}`,
      '-n',
      ns,
      `${intentAnnotation('promote')}={not json`,
      `${intentAnnotation('retry')}=${badIntent}`,
      `${intentAnnotation('pause')}=${foreignArgument}`,
      'teal.dev/refresh-requested-at=not-a-time',
    ]);
    expect(annotated.code, annotated.stderr).toBe(0);
    // A build Job as Teal labels it, but for its commit label; suspended, so it runs nothing.
    const jobLabels = {
      [LABEL_APP]: APP,
      'teal.dev/build': COMMIT.slice(0, 12),
      'teal.dev/commit': COMMIT,
      'teal.dev/build-spec': 'abcde',
    };
    await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: `${APP}-build-hostile`, labels: { ...jobLabels, 'teal.dev/commit': 'HEAD' } },
        spec: {
          suspend: true,
          template: {
            metadata: { labels: jobLabels },
            spec: { restartPolicy: 'Never', containers: [{ name: 'build', image: 'registry.example.com/build:1' }] },
          },
        },
      },
    });

    const expected = [
      scaleDownWarning,
      `InvalidAnnotation: ReplicaSet ${oldName}: annotation ${ANN_REVISION}="three"`,
      `InvalidAnnotation: ReplicaSet ${oldName}: annotation ${ANN_IMAGE}="not an image!"`,
      `InvalidAnnotation: ReplicaSet ${oldName}: annotation ${ANN_COMMIT}="HEAD"`,
      `InvalidLabel: ReplicaSet ${oldName}: label ${LABEL_APP}="Not_An_App"`,
      `InvalidLabel: ReplicaSet ${oldName}: label ${LABEL_HASH}="garbage"`,
      `InvalidLabel: Service ${APP}: label ${LABEL_APP}="Not_An_App"`,
      `InvalidAnnotation: Service ${APP}: annotation ${ANN_APPLIED}="zz"`,
      `InvalidAnnotation: Service ${APP}: annotation ${ANN_ORIGINAL_SELECTOR}="{"`,
      `InvalidSelector: Service ${APP}: selector ${LABEL_HASH}="garbage"`,
      `InvalidAnnotation: App ${APP}: annotation ${intentAnnotation('promote')}="{not json"`,
      `InvalidAnnotation: App ${APP}: annotation ${intentAnnotation('retry')}=`,
      `InvalidAnnotation: App ${APP}: annotation ${intentAnnotation('pause')}=`,
      `InvalidAnnotation: App ${APP}: annotation teal.dev/refresh-requested-at="not-a-time"`,
      `InvalidLabel: Job ${APP}-build-hostile: label teal.dev/commit="HEAD"`,
    ];
    const missing = async () => {
      const seen = await warnings();
      return expected.filter((e) => !seen.some((s) => s.startsWith(e)));
    };
    await waitFor('a Warning Event naming each bad value', async () =>
      (await missing()).length === 0 ? true : undefined,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; missing: ${JSON.stringify(await missing())}`);
    });
    expect(await answers('/readyz')).toBeDefined();

    // The App still releases: a new image goes to preview and is promoted; the hand edits are undone.
    await patchSpec(ns, APP, { image: 'registry.example.com/team/web:3' });
    const paused = await waitForApp(ns, APP, 'revision 3 in preview', (a) => phase('Paused')(a) && !!a.status?.preview);
    const h3 = paused.status?.preview?.podTemplateHash ?? '';
    await intent(ns, APP, 'promote');
    const done = await waitForApp(
      ns,
      APP,
      'revision 3 active',
      (a) => phase('Healthy')(a) && a.status?.active?.podTemplateHash === h3,
    );
    expect(await selectorHash(ns, APP)).toBe(h3);
    expect(done.status?.active?.revision).toBe(3);

    // Once each, though the values that stay bad were read again at every reconcile since.
    const seen = await warnings();
    for (const e of expected)
      expect(
        seen.filter((s) => s.startsWith(e)),
        e,
      ).toHaveLength(1);
    expect(await answers('/readyz')).toBeDefined();

    // SIGTERM still stops it.
    expect(await operator.stop()).toBe(0);
  });
});
