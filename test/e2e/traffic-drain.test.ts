// The drain-verified switch (spec.strategy.blueGreen.switch, issue #26 item
// 2.1) on the real data plane: a real kube-proxy follows the active Service's
// EndpointSlices, and a request loop goes through its ClusterIP all along.
// The test holds the slices back at the switch, as a busy controller-manager
// does: its cluster (of its own, as pausing a controller would disturb the
// other tests) runs the EndpointSlice controller as a process of its own,
// which the test pauses (SIGSTOP) just before the promotion and resumes
// (SIGCONT) after. ReplicaSets and pods go on meanwhile.
// - Without `switch`, scaleDownDelaySeconds: 0 scales the old revision down
//   at the switch: its pods go while kube-proxy still sends to them.
// - With it, Teal keeps them up until the slices list only the new pods,
//   ready and serving: not one request fails.
// - Past timeoutSeconds, the App says what is missing and keeps them up.

import { randomBytes } from 'node:crypto';
import { KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intentAnnotation } from '../../src/app/intents.ts';
import { LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import { type AppInput, type AppStatus, GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { type Cluster, NODE_NAME, startCluster, stopCluster } from '../cluster/cluster.ts';
import { type DataPlane, startDataPlane, type Traffic, type TrafficStats } from '../cluster/data-plane.ts';
import {
  type EndpointSliceController,
  startEndpointSliceController,
  WITHOUT_ENDPOINTSLICE_CONTROLLER,
} from '../cluster/endpointslice-controller.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { dataPlaneSkipReason } from '../support/data-plane.ts';
import { clients } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';
import { installCrds } from './global-setup.ts';

const skip = dataPlaneSkipReason();
/**
 * The pods' preStop: they keep answering this long after their deletion, as real apps do to cover
 * what no object in the cluster shows, the moment kube-proxy (or a load balancer) has applied
 * slices that no longer list them (kube-proxy syncs at most once a second). What `switch` covers
 * is the rest: slices held back for as long as the controller-manager lags, beyond any preStop.
 */
const PRE_STOP_SECONDS = 10;
const container = {
  name: 'app',
  ports: [{ containerPort: 8080 }],
  lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
};
const log = (line: string) => console.error(line);

interface StoredApp {
  metadata: { generation: number };
  status?: AppStatus;
}

describe.skipIf(skip !== undefined)(`the drain-verified switch${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let cluster: Cluster | undefined;
  let slices: EndpointSliceController | undefined;
  let dp: DataPlane | undefined;
  let operator: Operator | undefined;
  let c: ReturnType<typeof clients>;
  const ns = `traffic-drain-${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    cluster = await startCluster({
      name: 'teal-drain',
      controllerManagerArgs: [WITHOUT_ENDPOINTSLICE_CONTROLLER],
      log,
    });
    slices = startEndpointSliceController(cluster);
    await installCrds(cluster);
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    c = clients(kc);
    await c.core.createNamespace({ body: { metadata: { name: ns } } });
    dp = await startDataPlane({ kc, binDir: cluster.binDir, namespaces: [ns], nodeName: NODE_NAME, log });
    operator = await startOperator({ namespace: ns, kubeconfig: cluster.kubeconfig });
  }, 600_000);

  afterAll(async () => {
    slices?.resume();
    await operator?.stop();
    await dp?.stop();
    await slices?.stop();
    if (cluster) await stopCluster(cluster);
  });

  const getApp = async (name: string) =>
    (await c.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name,
    })) as StoredApp;
  const waitForApp = (name: string, what: string, check: (app: StoredApp) => boolean) =>
    waitFor(`${name}: ${what}`, async () => {
      const app = await getApp(name);
      return check(app) ? app : undefined;
    });
  const patchApp = (name: string, body: Record<string, unknown>) =>
    c.custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const promote = (name: string) =>
    patchApp(name, {
      metadata: {
        annotations: {
          [intentAnnotation('promote')]: JSON.stringify({
            id: randomBytes(8).toString('hex'),
            by: 'e2e',
            via: 'kubectl',
            at: new Date().toISOString(),
          }),
        },
      },
    });
  const replicasOf = async (name: string, hash: string) =>
    (
      await c.apps.listNamespacedReplicaSet({
        namespace: ns,
        labelSelector: `${LABEL_APP}=${name},${LABEL_HASH}=${hash}`,
      })
    ).items[0]?.spec?.replicas;
  const podsOf = async (name: string, hash: string): Promise<V1Pod[]> =>
    (await c.core.listNamespacedPod({ namespace: ns, labelSelector: `${LABEL_APP}=${name},${LABEL_HASH}=${hash}` }))
      .items;
  const switchCondition = (app: StoredApp) => app.status?.conditions?.find((x) => x.type === 'SwitchVerified');
  const answersFrom = async (traffic: Traffic, hash: string) => (await traffic.stats()).byRevision[hash] ?? 0;

  /**
   * Revision 1 active and answering through the active Service's ClusterIP, a
   * request loop running, and revision 2 available in preview: the moment before
   * a promotion. scaleDownDelaySeconds: 0, so the old revision goes as soon as Teal lets it.
   */
  async function inPreview(name: string, blueGreen: Record<string, unknown>) {
    const app: AppInput = e2eApp(name, {
      blueGreen: { scaleDownDelaySeconds: 0, ...blueGreen },
      spec: { template: { spec: { containers: [container] } } },
    });
    await c.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      body: app,
    });
    const first = await waitForApp(name, 'revision 1 Healthy', (a) => a.status?.phase === 'Healthy');
    const h1 = first.status?.active?.podTemplateHash ?? '';
    const ip = (await c.core.readNamespacedService({ namespace: ns, name })).spec?.clusterIP;
    const traffic = await (dp as DataPlane).traffic(`http://${ip}/`, { rps: 50, timeoutMs: 5_000 });
    await waitFor('20 answers from revision 1 through kube-proxy', async () =>
      (await answersFrom(traffic, h1)) >= 20 ? true : undefined,
    );
    await patchApp(name, { spec: { image: 'registry.example.com/team/web:2' } });
    const previewed = await waitForApp(
      name,
      'revision 2 available in preview',
      (a) => a.status?.preview?.availableAt !== undefined,
    );
    const h2 = previewed.status?.preview?.podTemplateHash ?? '';
    return { h1, h2, traffic };
  }

  /** The old revision's pods are gone, and the loop's latest 50 answers are all the new revision's. */
  async function settledOn(name: string, h1: string, h2: string, traffic: Traffic): Promise<TrafficStats> {
    await waitFor('the old revision at 0 replicas, its pods gone', async () =>
      (await replicasOf(name, h1)) === 0 && (await podsOf(name, h1)).length === 0 ? true : undefined,
    );
    await waitFor('the latest 50 answers all from revision 2', async () => {
      const recent = (await traffic.stats()).answers.slice(-50);
      return recent.length === 50 && recent.every((a) => a.revision === h2) ? true : undefined;
    });
    const stats = await traffic.stop();
    console.error(
      `${name}: ${stats.sent} sent, ${stats.failed} failed (${[...new Set(stats.failures.map((a) => a.error))].join(', ')}), by revision ${JSON.stringify(stats.byRevision)}`,
    );
    return stats;
  }

  it('without switch: the old pods go while the held-back slices still send traffic to them, and requests fail', async () => {
    const { h1, h2, traffic } = await inPreview('plain', {});
    slices?.pause();
    try {
      await promote('plain');
      await waitFor('the old revision scaled down and its pods gone', async () =>
        (await replicasOf('plain', h1)) === 0 && (await podsOf('plain', h1)).length === 0 ? true : undefined,
      );
      // Past their preStop, the old pods are gone; kube-proxy still has only their endpoints: every request fails.
      await waitFor('10 failed requests', async () => ((await traffic.stats()).failed >= 10 ? true : undefined));
    } finally {
      slices?.resume();
    }
    const stats = await settledOn('plain', h1, h2, traffic);
    expect(stats.failed).toBeGreaterThanOrEqual(10);
  });

  it('with switch: the old revision stays up until the slices list only ready new pods, then goes: no request fails', async () => {
    const { h1, h2, traffic } = await inPreview('drained', { switch: {} });
    slices?.pause();
    try {
      await promote('drained');
      // The plan that switches has not read the new pods yet; the next one names the endpoints held back.
      await waitForApp(
        'drained',
        'the switch to revision 2 recorded, waiting for the old endpoints to leave the slices',
        (a) =>
          a.status?.switch?.podTemplateHash === h2 &&
          switchCondition(a)?.reason === 'SwitchVerifying' &&
          switchCondition(a)?.message?.includes('endpoints of other revisions still listed') === true,
      );
      // The slices are held: whatever the time it takes, Teal cannot see the switch done. Traffic still
      // reaches revision 1 through kube-proxy, and its pods stay up.
      const before = await answersFrom(traffic, h1);
      await waitFor('50 more answers from revision 1 after the switch', async () =>
        (await answersFrom(traffic, h1)) >= before + 50 ? true : undefined,
      );
      expect(await replicasOf('drained', h1)).toBe(2);
      expect((await getApp('drained')).status?.switch?.verifiedAt).toBeUndefined();
    } finally {
      slices?.resume();
    }
    const verified = await waitForApp(
      'drained',
      'the switch verified',
      (a) => a.status?.switch?.verifiedAt !== undefined,
    );
    expect(switchCondition(verified)).toMatchObject({ status: 'True', reason: 'SwitchVerified' });
    const stats = await settledOn('drained', h1, h2, traffic);
    expect(stats.failures).toEqual([]);
    expect(Object.keys(stats.byRevision).sort()).toEqual([h1, h2].sort());
  });

  it('past timeoutSeconds: a condition and a Warning Event say what is missing, and the old revision stays up', async () => {
    const { h1, h2, traffic } = await inPreview('bounded', { switch: { timeoutSeconds: 1 } });
    slices?.pause();
    try {
      await promote('bounded');
      const late = await waitForApp(
        'bounded',
        'the switch not verified within timeoutSeconds',
        (a) => switchCondition(a)?.reason === 'SwitchNotVerified' && a.status?.switch?.podTemplateHash === h2,
      );
      expect(switchCondition(late)?.message).toMatch(
        /^the switch to revision 2 was not verified within timeoutSeconds \(1s\), the previous revision stays up: endpoints of other revisions still listed: /,
      );
      const [event] = await waitFor('the Warning Event', async () => {
        const events = await c.core.listNamespacedEvent({
          namespace: ns,
          fieldSelector: 'involvedObject.name=bounded',
        });
        const found = events.items.filter((e) => e.reason === 'SwitchNotVerified');
        return found.length > 0 ? found : undefined;
      });
      expect(event).toMatchObject({ type: 'Warning', message: switchCondition(late)?.message });
      expect(await replicasOf('bounded', h1)).toBe(2);
      expect((await podsOf('bounded', h1)).filter((p) => !p.metadata?.deletionTimestamp)).toHaveLength(2);
    } finally {
      slices?.resume();
    }
    // Once the slices catch up, the switch is verified after all and the old revision goes.
    await waitForApp('bounded', 'the switch verified', (a) => switchCondition(a)?.reason === 'SwitchVerified');
    const stats = await settledOn('bounded', h1, h2, traffic);
    expect(stats.failures).toEqual([]);
  });

  it('killed -9 while the switch waits: the next operator verifies it from the cluster, and no request fails', async () => {
    const { h1, h2, traffic } = await inPreview('killed', { switch: {} });
    slices?.pause();
    try {
      await promote('killed');
      await waitForApp(
        'killed',
        'the switch recorded, waiting for the old endpoints to leave the slices',
        (a) =>
          a.status?.switch?.podTemplateHash === h2 &&
          switchCondition(a)?.message?.includes('endpoints of other revisions still listed') === true,
      );
      await operator?.kill();
    } finally {
      slices?.resume();
    }
    // The slices catch up with no operator running: nothing moves the old revision meanwhile.
    await waitFor('the active Service slices listing only revision 2', async () => {
      const list = await c.discovery.listNamespacedEndpointSlice({
        namespace: ns,
        labelSelector: 'kubernetes.io/service-name=killed',
      });
      const pods = list.items.flatMap((sl) => (sl.endpoints ?? []).map((e) => e.targetRef?.name ?? ''));
      const news = new Set((await podsOf('killed', h2)).map((p) => p.metadata?.name));
      return pods.length === 2 && pods.every((p) => news.has(p)) ? true : undefined;
    });
    expect(await replicasOf('killed', h1)).toBe(2);
    expect((await getApp('killed')).status?.switch?.verifiedAt).toBeUndefined();
    operator = await startOperator({ namespace: ns, kubeconfig: cluster?.kubeconfig ?? '' });
    await waitForApp(
      'killed',
      'the switch verified by the next operator',
      (a) => a.status?.switch?.verifiedAt !== undefined,
    );
    const stats = await settledOn('killed', h1, h2, traffic);
    expect(stats.failures).toEqual([]);
  });

  it('readiness gates: verified only once the load balancer model has set its gate on every new pod', async () => {
    // The load balancer's target group holds every pod of the App (its Service selects them all), so its
    // webhook writes the gate into each new pod: a pod is Ready only once the model has registered it.
    await c.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'gated-lb' },
        spec: { selector: { [LABEL_APP]: 'gated' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    const lb = await (dp as DataPlane).loadBalancer({
      name: 'gated',
      namespace: ns,
      service: 'gated-lb',
      healthCheckDelayMs: 2_000,
      drainDelayMs: 1_000,
    });
    const body = e2eApp('gated', {
      blueGreen: { scaleDownDelaySeconds: 0, switch: { readinessGates: [lb.gate] } },
      spec: {
        template: {
          spec: {
            containers: [container],
            readinessGates: [{ conditionType: lb.gate }],
          },
        },
      },
    });
    await c.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      body,
    });
    const first = await waitForApp('gated', 'revision 1 Healthy', (a) => a.status?.phase === 'Healthy');
    const h1 = first.status?.active?.podTemplateHash ?? '';
    await patchApp('gated', { spec: { image: 'registry.example.com/team/web:2' } });
    const previewed = await waitForApp(
      'gated',
      'revision 2 available in preview',
      (a) => a.status?.preview?.availableAt !== undefined,
    );
    const h2 = previewed.status?.preview?.podTemplateHash ?? '';
    await promote('gated');
    const verified = await waitForApp(
      'gated',
      'the switch verified',
      (a) => a.status?.switch?.verifiedAt !== undefined && a.status.switch.podTemplateHash === h2,
    );
    expect(switchCondition(verified)?.message).toContain(`readiness gates ${lb.gate} True`);
    const verifiedAt = Date.parse(verified.status?.switch?.verifiedAt ?? '');
    const gateAt = (pod: V1Pod) => pod.status?.conditions?.find((x) => x.type === lb.gate);
    for (const pod of await podsOf('gated', h2)) {
      expect(gateAt(pod)?.status).toBe('True');
      expect(Date.parse(String(gateAt(pod)?.lastTransitionTime))).toBeLessThanOrEqual(verifiedAt);
    }
    await waitFor('the old revision at 0 replicas', async () =>
      (await replicasOf('gated', h1)) === 0 ? true : undefined,
    );
    await lb.stop();
  });
});
