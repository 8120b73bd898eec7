// The switch's traffic check on the real data plane (issue #26 item 2.4): the
// operator asks a URL that reaches the App's pods only through kube-proxy's
// nftables rules (a ClusterIP inside the test's network namespace, entered from
// the host as a node port would be), and the pods answer the TEAL_REVISION
// spec.revisionEnv put in their environment, resolved from their own label as
// a kubelet resolves the Downward API. The switch counts as done only once the
// new revision answered so many times in a row; a URL that keeps answering the
// old revision keeps the old revision up, with a condition and a Warning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_SCALE_DOWN_AT, LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { TrafficCheckInput } from '../../src/app/traffic-schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { appSteps } from '../support/analysis.ts';
import { patchSpec, replicaSetOf, selectorHash, waitForApp } from '../support/apps.ts';
import { type DataPlane, dataPlaneSkipReason, startTestDataPlane } from '../support/data-plane.ts';
import { clients, waitFor } from '../support/kube.ts';
import { type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { waitForAppEvent } from '../support/parity.ts';

const { core } = clients();
const skip = dataPlaneSkipReason();

describe.skipIf(skip !== undefined)(`the traffic check${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let world: OperatorNamespace | undefined;
  let dp: DataPlane | undefined;
  let ns = '';
  const { released } = appSteps(() => ns);

  beforeAll(async () => {
    // A traffic-* namespace: its pods are Ready only once their servers in the data plane answer.
    world = await operatorNamespace('traffic');
    ns = world.ns;
    dp = await startTestDataPlane([ns]);
  });

  afterAll(async () => {
    // The operator first: a request it still has in flight may not hang on a closed way in.
    await world?.stop();
    await dp?.stop();
  });

  const app = (name: string) =>
    e2eApp(name, {
      replicas: 2,
      blueGreen: { autoPromotionEnabled: true, scaleDownDelaySeconds: 2 },
      spec: { revisionEnv: true },
    });

  /** http://127.0.0.1:<port> on the host, reaching a Service's ClusterIP inside the data plane. */
  async function entryTo(service: string): Promise<string> {
    const svc = await core.readNamespacedService({ namespace: ns, name: service });
    const ip = svc.spec?.clusterIP ?? '';
    if (!dp || ip === '') throw new Error(`Service ${service} has no ClusterIP`);
    return dp.entry(ip, 80);
  }

  /** Revision 2 of the App, with its switch checked by this traffic check, within boundSeconds. */
  const releaseChecked = (name: string, trafficCheck: TrafficCheckInput, boundSeconds: number) =>
    patchSpec(ns, name, {
      image: 'registry.example.com/team/web:2',
      strategy: { blueGreen: { switch: { timeoutSeconds: boundSeconds, trafficCheck } } },
    });

  it('sees the new revision through kube-proxy N times in a row, then the switch is done and the old revision goes', async () => {
    await released(app('seen'));
    const h1 = await selectorHash(ns, 'seen');
    // The URL users reach: the active Service, through kube-proxy. It holds a query that must never be shown.
    const url = `${await entryTo('seen')}/version?token=not-for-events`;
    await releaseChecked('seen', { url, jsonPath: '{$.tealRevision}', consecutiveSuccessLimit: 5 }, 300);

    const passed = await waitForApp(
      ns,
      'seen',
      'revision 2 traffic-checked',
      (a) => a.status?.trafficCheck?.revision === 2 && a.status.trafficCheck.phase === 'Successful',
    );
    const h2 = passed.status?.active?.podTemplateHash ?? '';
    expect(h2).not.toBe(h1);
    // Its pods told their revision themselves: TEAL_REVISION, from their own hash label.
    expect(passed.status?.trafficCheck).toMatchObject({ consecutive: 5, lastSeen: h2, podTemplateHash: h2 });
    const condition = passed.status?.conditions?.find((c) => c.type === 'TrafficChecked');
    expect(condition).toMatchObject({ status: 'True', reason: 'TrafficCheckPassed' });
    expect(condition?.message).toContain('answered 5 times in a row at 127.0.0.1:');
    expect(condition?.message).not.toContain('token');
    await waitForAppEvent(ns, 'seen', 'TrafficCheckPassed', (e) => e.reason === 'TrafficCheckPassed');

    // The switch counts as verified only once the check passed, and then the old revision goes.
    const verified = await waitForApp(
      ns,
      'seen',
      'the switch verified',
      (a) => a.status?.switch?.verifiedAt !== undefined,
    );
    const checkedAt = Date.parse(verified.status?.trafficCheck?.finishedAt ?? '');
    expect(Date.parse(verified.status?.switch?.verifiedAt ?? '')).toBeGreaterThanOrEqual(checkedAt);
    await waitFor('revision 1 scaled to zero', async () => {
      const rs = await replicaSetOf(ns, 'seen', h1 ?? '');
      return rs?.spec?.replicas === 0 ? true : undefined;
    });
  });

  it('an operator killed -9 mid-check carries on from the count status holds, and the switch completes', async () => {
    await released(app('killed'));
    const h1 = (await selectorHash(ns, 'killed')) ?? '';
    const url = `${await entryTo('killed')}/version`;
    await releaseChecked('killed', { url, revisionHeader: 'X-Teal-Revision', consecutiveSuccessLimit: 6 }, 600);
    const midway = await waitForApp(
      ns,
      'killed',
      'revision 2 seen twice in a row',
      (a) => a.status?.trafficCheck?.revision === 2 && (a.status.trafficCheck.consecutive ?? 0) >= 2,
    );
    expect(midway.status?.trafficCheck?.phase).toBe('Running');
    await world?.operator.kill();
    await world?.startOperator();
    const passed = await waitForApp(
      ns,
      'killed',
      'revision 2 traffic-checked after the restart',
      (a) => a.status?.trafficCheck?.revision === 2 && a.status.trafficCheck.phase === 'Successful',
    );
    // Read from the X-Teal-Revision header this time; the count went on from status, never past the limit.
    expect(passed.status?.trafficCheck).toMatchObject({
      consecutive: 6,
      lastSeen: passed.status?.active?.podTemplateHash,
    });
    expect(passed.status?.trafficCheck?.startedAt).toBe(midway.status?.trafficCheck?.startedAt);
    await waitFor('revision 1 scaled to zero', async () => {
      const rs = await replicaSetOf(ns, 'killed', h1);
      return rs?.spec?.replicas === 0 ? true : undefined;
    });
  });

  it('a URL that keeps answering the old revision keeps it up, with a condition and a Warning naming the host', async () => {
    await released(app('stale'));
    const h1 = (await selectorHash(ns, 'stale')) ?? '';
    // A front that was never moved: it still sends every request to revision 1's pods.
    await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'stale-front' },
        spec: {
          selector: { [LABEL_APP]: 'stale', [LABEL_HASH]: h1 },
          ports: [{ name: 'http', port: 80, targetPort: 8080 }],
        },
      },
    });
    const url = `${await entryTo('stale-front')}/version?token=not-for-events`;
    const host = new URL(url).host;
    await releaseChecked('stale', { url, jsonPath: '{$.tealRevision}', consecutiveSuccessLimit: 3 }, 15);

    const failed = await waitForApp(
      ns,
      'stale',
      'its traffic check failed',
      (a) => a.status?.trafficCheck?.revision === 2 && a.status.trafficCheck.phase === 'Failed',
    );
    expect(failed.status?.active?.revision).toBe(2);
    expect(failed.status?.trafficCheck).toMatchObject({ consecutive: 0, lastSeen: h1 });
    const condition = failed.status?.conditions?.find((c) => c.type === 'TrafficChecked');
    expect(condition).toMatchObject({ status: 'False', reason: 'TrafficCheckFailed' });
    const warning = await waitForAppEvent(ns, 'stale', 'TrafficCheckFailed', (e) => e.reason === 'TrafficCheckFailed');
    expect(warning.type).toBe('Warning');
    expect(warning.message).toContain(`at ${host} within 15s`);
    expect(warning.message).toContain(`last answer named ${h1}`);
    expect(warning.message).not.toContain('token');
    expect(warning.message).not.toContain('/version');

    // The switch is not verified: revision 1 stays at full size, with no scale-down deadline.
    const unverified = await waitForApp(
      ns,
      'stale',
      'the switch not verified',
      (a) =>
        a.status?.conditions?.some((c) => c.type === 'SwitchVerified' && c.reason === 'SwitchNotVerified') === true,
    );
    expect(unverified.status?.switch?.verifiedAt).toBeUndefined();
    const switchVerified = unverified.status?.conditions?.find((c) => c.type === 'SwitchVerified');
    expect(switchVerified?.message).toContain(`traffic check: revision 2 did not answer 3 times in a row at ${host}`);
    const old = await replicaSetOf(ns, 'stale', h1);
    expect(old?.spec?.replicas).toBe(2);
    expect(old?.metadata?.annotations?.[ANN_SCALE_DOWN_AT]).toBeUndefined();
  });
});
