// The pod-aware load balancer model (test/cluster/lb-model.ts, issue #26 §1)
// on the real data plane: it registers a Service's endpoints as targets only
// after its health-check delay and while they answer, sets its readiness gate
// only on pods that named it at creation, drains deregistered targets for its
// drain delay, and its listener sends requests to registered targets only.
// A selector swap to pods created without the gate shows the failure mode of
// issue #26 (Argo Rollouts' blue/green behind an ALB in IP mode).

import { randomBytes } from 'node:crypto';
import type { V1Deployment, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Answer,
  type DataPlane,
  dataPlaneSkipReason,
  type LoadBalancer,
  startTestDataPlane,
  type Target,
} from '../support/data-plane.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';

const { apps, core } = clients();
const skip = dataPlaneSkipReason();

const LB = 'web';
/** The condition type the model sets (LB_GATE_PREFIX + its name), as the pods' specs name it. */
const GATE = `target-health.lb-model.teal.dev/${LB}`;
const HEALTH_CHECK_DELAY_MS = 4_000;
/** Long enough for the test to see a drain under way on a busy machine; the test waits for its end. */
const DRAIN_DELAY_MS = 20_000;

/**
 * Pods labelled app=web, color=<color>, deploy=<name>, serving on `port` (the Service's targetPort is 8080).
 * `gated`: the pods name the load balancer's gate, as its webhook writes it into pods created while the
 * Service selects them.
 */
function deployment(name: string, color: string, replicas: number, gated: boolean, port = 8080): V1Deployment {
  const labels = { app: 'web', color, deploy: name };
  const spec: V1PodSpec = {
    containers: [
      {
        name: 'app',
        image: 'registry.example.com/team/web:1',
        ports: [{ containerPort: port }],
        readinessProbe: { httpGet: { path: '/ready', port } },
      },
    ],
    ...(gated ? { readinessGates: [{ conditionType: GATE }] } : {}),
  };
  return {
    metadata: { name },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec } },
  };
}

describe.skipIf(skip !== undefined)(`the load balancer model${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;
  let dp: DataPlane | undefined;
  let lb: LoadBalancer;

  const pods = async (deploy: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: `deploy=${deploy}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const gated = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === GATE)?.status;
  const conditionOf = (p: V1Pod | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);
  const containersReady = (p: V1Pod) => conditionOf(p, 'ContainersReady')?.status === 'True';
  const hashOf = (p: V1Pod | undefined) => p?.metadata?.labels?.['pod-template-hash'] ?? '';
  const waitForReadyPods = (deploy: string, count: number) =>
    waitFor(`${count} ready ${deploy} pods`, async () => {
      const list = await pods(deploy);
      return list.length === count && list.every(ready) ? list : undefined;
    });
  const targetsOf = (list: V1Pod[]): Target[] => {
    const names = new Set(list.map((p) => p.metadata?.name));
    return lb.targets().filter((t) => names.has(t.pod));
  };
  const waitForTargets = (what: string, list: V1Pod[], state: Target['state'] | 'gone') =>
    waitFor(`${what} ${state}`, async () => {
      const now = targetsOf(list);
      if (state === 'gone') return now.length === 0 ? now : undefined;
      return now.length === list.length && now.every((t) => t.state === state) ? now : undefined;
    });
  const selectColor = (color: string) =>
    core.patchNamespacedService({
      name: 'web',
      namespace: ns,
      body: [{ op: 'replace', path: '/spec/selector/color', value: color }],
    });

  beforeAll(async () => {
    const created = await createNamespace('traffic');
    ns = created.name;
    removeNs = created.remove;
    dp = await startTestDataPlane([ns]);
    await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web', color: 'blue' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    // Created while the Service selects blue: blue pods name the gate. Green ones never matched it at creation.
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('blue', 'blue', 2, true) });
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('green', 'green', 2, false) });
    // Its probe on 9090 answers (ContainersReady) but nothing listens on the Service's targetPort: health checks
    // fail, so the model never sets its gate and the pod is never Ready.
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('deaf', 'blue', 1, true, 9090) });
    lb = await dp.loadBalancer({
      name: LB,
      namespace: ns,
      service: 'web',
      healthCheckDelayMs: HEALTH_CHECK_DELAY_MS,
      drainDelayMs: DRAIN_DELAY_MS,
    });
  });

  afterAll(async () => {
    await dp?.stop();
    await removeNs?.();
  });

  it('registers a target only after its health-check delay and while it answers, and gates only pods that named the gate', async () => {
    expect(lb.gate).toBe(GATE);
    const blue = await waitForReadyPods('blue', 2);
    const [deaf] = await waitFor('the deaf pod with its containers ready', async () => {
      const list = await pods('deaf');
      return list.length === 1 && list.every(containersReady) ? list : undefined;
    });
    const loop = await dp?.traffic(lb.url, { rps: 20, timeoutMs: 20_000 });
    const registered = await waitForTargets('the blue targets', blue, 'healthy');
    for (const t of registered) {
      expect((t.registeredAt ?? 0) - t.seenAt).toBeGreaterThanOrEqual(HEALTH_CHECK_DELAY_MS);
    }
    await waitFor('20 answers from blue through the load balancer', async () =>
      ((await loop?.stats())?.byRevision[hashOf(blue[0])] ?? 0) >= 20 ? true : undefined,
    );
    const stats = await loop?.stop();
    // Before registration the listener has no target: it answers 503, as an ALB does.
    expect(stats?.failures.every((a) => a.error === 'HTTP 503: no registered target')).toBe(true);
    expect(Object.keys(stats?.byRevision ?? {})).toEqual([hashOf(blue[0])]);
    // The deaf pod is Ready and named in the EndpointSlice, but never answers its health check.
    const [stuck] = await waitFor('the deaf target seen for longer than the delay', async () => {
      const t = deaf ? targetsOf([deaf]) : [];
      return t[0] && Date.now() - t[0].seenAt > 2 * HEALTH_CHECK_DELAY_MS ? t : undefined;
    });
    expect(stuck).toMatchObject({ state: 'initial', answering: false });
    await waitFor('the gate on the registered blue pods', async () =>
      (await pods('blue')).every((p) => gated(p) === 'True') ? true : undefined,
    );
    const deafNow = (await pods('deaf'))[0];
    expect(gated(deafNow as V1Pod)).toBeUndefined();
    // The kubelet's rule: a pod naming a readiness gate is Ready only once that condition is True.
    expect(conditionOf(deafNow, 'ContainersReady')?.status).toBe('True');
    expect(conditionOf(deafNow, 'Ready')).toMatchObject({ status: 'False', reason: 'ReadinessGatesNotReady' });
    // The gated blue pods became Ready when the model set their gate, not when their probe first answered.
    for (const p of await pods('blue')) {
      const readyAt = Date.parse(String(conditionOf(p, 'Ready')?.lastTransitionTime));
      expect(readyAt).toBeGreaterThanOrEqual(Date.parse(String(conditionOf(p, GATE)?.lastTransitionTime)));
    }
    // Green pods are Ready but outside the Service: not targets, no gate.
    const green = await waitForReadyPods('green', 2);
    expect(targetsOf(green)).toEqual([]);
    expect(green.map(gated)).toEqual([undefined, undefined]);
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'deaf' });
  });

  it('a selector swap to pods created without the gate: requests fail until the new targets register; old ones drain', async () => {
    const blue = await waitForReadyPods('blue', 2);
    const green = await waitForReadyPods('green', 2);
    await waitForTargets('the blue targets', blue, 'healthy');
    // Two requests held open on blue pods through the load balancer: one is released during the drain,
    // the other is still open when the drain delay ends.
    const tokens = [randomBytes(6).toString('hex'), randomBytes(6).toString('hex')];
    const held: Promise<Answer>[] = [];
    for (const token of tokens) {
      held.push(dp?.request(`${lb.url}hold/${token}`, 600_000) ?? Promise.reject(new Error('no data plane')));
      await waitFor('a held request on a blue pod', async () => ((await dp?.held(token)) ? true : undefined));
    }
    const loop = await dp?.traffic(lb.url, { rps: 50, timeoutMs: 20_000 });
    await waitFor('50 answers from blue', async () =>
      ((await loop?.stats())?.byRevision[hashOf(blue[0])] ?? 0) >= 50 ? true : undefined,
    );
    await selectColor('green');
    await waitForTargets('the blue targets', blue, 'draining');
    // A request sent and answered while no green target was registered (checked after its answer) must be
    // refused: the gap is the model's, not the loop's luck. A machine stalled through the whole health-check
    // delay leaves no such probe, and then the loop's record below has to show the failures.
    const registeredGreen = () => targetsOf(green).some((t) => t.registeredAt !== undefined);
    let inGap: Answer | undefined;
    while (!inGap && !registeredGreen()) {
      const probe = await dp?.request(lb.url, 20_000);
      if (!registeredGreen()) inGap = probe;
    }
    // Draining: no new request goes to blue, the held ones are still open.
    const open = await lb.open();
    expect(targetsOf(blue).reduce((sum, t) => sum + (open[t.target] ?? 0), 0)).toBe(2);
    await waitForTargets('the green targets', green, 'healthy');
    await waitFor('the latest 50 answers all from green', async () => {
      const recent = (await loop?.stats())?.answers.slice(-50) ?? [];
      return recent.length === 50 && recent.every((a) => a.revision === hashOf(green[0])) ? true : undefined;
    });
    const stats = await loop?.stop();
    console.error(
      `selector swap behind the load balancer model: ${stats?.sent} sent, ${stats?.failed} failed ` +
        `(${[...new Set(stats?.failures.map((a) => a.error))].join(', ')}), by revision ${JSON.stringify(stats?.byRevision)}`,
    );
    // The failure mode: between blue's deregistration and green's registration the listener has no target.
    const drained = Math.min(...targetsOf(blue).map((t) => t.drainingSince ?? Number.POSITIVE_INFINITY));
    const registered = Math.min(...targetsOf(green).map((t) => t.registeredAt ?? Number.POSITIVE_INFINITY));
    expect(registered - drained).toBeGreaterThan(0);
    if (inGap) expect(inGap).toMatchObject({ error: 'HTTP 503: no registered target' });
    else expect(stats?.failed).toBeGreaterThan(0);
    expect(stats?.failures.every((a) => a.error === 'HTTP 503: no registered target')).toBe(true);
    // Nothing held green back: it never named the gate, so the model never set it, and its pods were Ready all along.
    expect((await pods('green')).map(gated)).toEqual([undefined, undefined]);
    // A request in flight on a draining target finishes.
    await dp?.release(tokens[0] ?? '');
    expect(await held[0]).toMatchObject({ status: 200, revision: hashOf(blue[0]) });
    // At the drain delay's end the target is gone and what is still open on it is cut.
    await waitForTargets('the blue targets', blue, 'gone');
    expect((await held[1])?.error).toBeDefined();
    // Every connection made here is over: each closes at the listener too, those answered 503 included
    // (the traffic bench makes thousands of those and must not run out of descriptors).
    await waitFor('no client connection left open at the listener', async () =>
      (await lb.clients()) === 0 ? true : undefined,
    );
  });
});
