// Status counts and the scale subresource on the real control plane: the real
// kubectl scales an App, `kubectl get -o wide` shows the counts, and the
// controller-manager's HPA controller reads the App's scale. There is no
// metrics server here, so the HPA can read the scale but never measure.
import { execFile } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import {
  createApp,
  fullyAvailable,
  getApp,
  patchSpec,
  phase,
  replicaSetOf,
  type StoredApp,
  selectorHash,
  waitForApp,
} from '../support/apps.ts';
import { clients, kubectl, waitFor } from '../support/kube.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';

const { kc, custom } = clients();
const hpas = kc.makeApiClient(k8s.AutoscalingV2Api);
let ns: string;
let world: OperatorNamespace;

beforeAll(async () => {
  world = await operatorNamespace('scale');
  ({ ns } = world);
});

afterAll(async () => {
  await world?.stop();
});

interface Scale {
  spec?: { replicas?: number };
  status?: { replicas?: number; selector?: string };
}

const readScale = async (name: string): Promise<Scale> =>
  (await custom.getNamespacedCustomObjectScale({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: PLURAL,
    name,
  })) as Scale;

const counts = (app: StoredApp) => {
  const s = app.status;
  return [s?.replicas, s?.updatedReplicas, s?.readyReplicas, s?.availableReplicas, s?.HPAReplicas];
};

/** `kubectl teal ...` through the real kubectl, which finds the plugin in bin/ on PATH. */
async function teal(...args: string[]): Promise<string> {
  const bin = fileURLToPath(new URL('../../bin', import.meta.url));
  const env = {
    ...process.env,
    PATH: [bin, inject('binDir'), process.env.PATH ?? ''].join(delimiter),
    KUBECONFIG: inject('kubeconfig'),
    NO_COLOR: '1',
  };
  const { stdout } = await promisify(execFile)(join(inject('binDir'), 'kubectl'), ['teal', ...args, '-n', ns], { env });
  return stdout;
}

/** `kubectl get` output as rows of cells, cut at the header's column starts (cells may hold spaces). */
function parseTable(stdout: string): Record<string, string>[] {
  const [header = '', ...lines] = stdout.trimEnd().split('\n');
  const starts = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index ?? 0 }));
  return lines.map((line) =>
    Object.fromEntries(starts.map((c, i) => [c.name, line.slice(c.at, starts[i + 1]?.at ?? line.length).trim()])),
  );
}

async function wide(name: string): Promise<Record<string, string>> {
  const { stdout, stderr, code } = await kubectl(['get', `apps.${GROUP}`, name, '-n', ns, '-o', 'wide']);
  expect(code, stderr).toBe(0);
  const [row] = parseTable(stdout);
  if (!row) throw new Error(`no row in ${stdout}`);
  return row;
}

// The HPA controller may take a sync period or two (15 s each) to find the App's kind.
describe('status counts and the scale subresource', () => {
  let hash: string;

  it('kubectl scale resizes the active ReplicaSet; the counts and the selector follow, and -o wide shows them', async () => {
    await createApp(ns, e2eApp('web', { replicas: 2 }));
    await waitForApp(ns, 'web', 'first release Healthy', phase('Healthy'));
    hash = (await selectorHash(ns, 'web')) ?? '';
    expect(hash).toMatch(/^[0-9a-f]{10}$/);

    const scaled = await kubectl(['scale', `apps.${GROUP}/web`, '--replicas=3', '-n', ns]);
    expect(scaled.code, scaled.stderr).toBe(0);
    expect(scaled.stdout.trim()).toBe(`app.${GROUP}/web scaled`);

    // The scale wrote spec.replicas and bumped the generation: the operator caught up with it.
    const app = await waitForApp(
      ns,
      'web',
      'all counts at 3',
      (a) => phase('Healthy')(a) && counts(a).every((n) => n === 3),
    );
    expect(app.spec.replicas).toBe(3);
    expect(app.status?.selector).toBe(`teal.dev/app=web,teal.dev/pod-template-hash=${hash}`);
    const rs = await replicaSetOf(ns, 'web', hash);
    expect(rs?.spec?.replicas).toBe(3);
    expect(fullyAvailable(rs)).toBe(true);

    expect(await readScale('web')).toMatchObject({
      spec: { replicas: 3 },
      status: { replicas: 3, selector: `teal.dev/app=web,teal.dev/pod-template-hash=${hash}` },
    });

    expect(await wide('web')).toMatchObject({
      NAME: 'web',
      PHASE: 'Healthy',
      DESIRED: '3',
      CURRENT: '3',
      'UP-TO-DATE': '3',
      AVAILABLE: '3',
    });
    // The counts are wide-only: the default view stays NAME PHASE ACTIVE PREVIEW COMMIT AGE.
    const plain = await kubectl(['get', `apps.${GROUP}`, 'web', '-n', ns]);
    expect(plain.stdout.split('\n')[0]?.trim().split(/\s+/)).toEqual([
      'NAME',
      'PHASE',
      'ACTIVE',
      'PREVIEW',
      'COMMIT',
      'AGE',
    ]);
  });

  it('refuses a scale out of range, naming spec.replicas, and changes nothing', async () => {
    const before = await getApp(ns, 'web');
    const refused = await kubectl(['scale', `apps.${GROUP}/web`, '--replicas=20000', '-n', ns]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/spec\.replicas/);
    const after = await getApp(ns, 'web');
    expect(after.spec.replicas).toBe(3);
    expect(after.metadata.generation).toBe(before.metadata.generation);
  });

  it('an HPA targeting the App reads its scale and parses its selector', async () => {
    await hpas.createNamespacedHorizontalPodAutoscaler({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          scaleTargetRef: { apiVersion: `${GROUP}/${VERSION}`, kind: 'App', name: 'web' },
          minReplicas: 1,
          maxReplicas: 5,
          metrics: [
            { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } },
          ],
        },
      },
    });
    const hpa = await waitFor(
      'the HPA to read the scale and try to measure',
      async () => {
        const h = await hpas.readNamespacedHorizontalPodAutoscaler({ namespace: ns, name: 'web' });
        const able = h.status?.conditions?.find((c) => c.type === 'AbleToScale');
        const active = h.status?.conditions?.find((c) => c.type === 'ScalingActive');
        // The controller-manager may not know the kind yet (FailedGetScale: no matches for kind "App"),
        // and tries again on its next sync. Thrown, so a time-out says what the HPA said last.
        if (able?.status !== 'True' || !active)
          throw new Error(`conditions so far: ${JSON.stringify(h.status?.conditions ?? [])}`);
        return h;
      },
      { timeoutMs: 120_000 },
    );
    const conditions = Object.fromEntries((hpa.status?.conditions ?? []).map((c) => [c.type, c]));
    expect(conditions.AbleToScale).toMatchObject({ status: 'True', reason: 'SucceededGetScale' });
    // It got past the selector (an empty or bad one is InvalidSelector) and failed only for want of metrics.
    expect(conditions.ScalingActive).toMatchObject({ status: 'False', reason: 'FailedGetResourceMetric' });
    expect(hpa.status?.currentReplicas).toBe(3);
    await hpas.deleteNamespacedHorizontalPodAutoscaler({ namespace: ns, name: 'web' });
  });

  it('with a preview up, replicas counts every pod, updated the preview, and the scale only the active pods', async () => {
    await patchSpec(ns, 'web', { image: 'registry.example.com/team/web:2' });
    const app = await waitForApp(
      ns,
      'web',
      'preview of one pod counted',
      (a) => phase('Paused')(a) && a.status?.replicas === 4 && a.status.updatedReplicas === 1,
      60_000,
    );
    expect(app.status?.preview?.revision).toBe(2);
    expect(counts(app)).toEqual([4, 1, 3, 3, 3]);
    expect(app.status?.selector).toBe(`teal.dev/app=web,teal.dev/pod-template-hash=${hash}`);
    expect(await readScale('web')).toMatchObject({ spec: { replicas: 3 }, status: { replicas: 3 } });
    expect(await wide('web')).toMatchObject({
      PREVIEW: '2',
      DESIRED: '3',
      CURRENT: '4',
      'UP-TO-DATE': '1',
      AVAILABLE: '3',
    });

    // The plugin shows them too: the tree's header as `kubectl argo rollouts get`, and the list.
    const tree = await teal('get', 'web');
    expect(tree).toMatch(
      /^Replicas:\n {2}Desired: +3\n {2}Current: +4\n {2}Updated: +1\n {2}Ready: +3\n {2}Available: +3$/m,
    );
    expect(parseTable(await teal('list')).find((r) => r.NAME === 'web')).toMatchObject({
      DESIRED: '3',
      CURRENT: '4',
      'UP-TO-DATE': '1',
      AVAILABLE: '3',
    });
    const json = JSON.parse(await teal('get', 'web', '-o', 'json')) as Record<string, unknown>;
    expect(json).toMatchObject({ replicas: 3, current: 4, updated: 1, ready: 3, available: 3 });
  });
});
