// The traffic tests' data plane is real (issue #26 §1): requests sent inside
// the test's network namespace to a Service's ClusterIP reach the pods'
// servers through kube-proxy's nftables rules, follow the Service's selector,
// fail (and are recorded) when nothing is behind it, and a deleted pod drains.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Deployment, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reapStaleDataPlanes } from '../cluster/data-plane.ts';
import { readyEndpoints } from '../support/apps.ts';
import {
  type Answer,
  DATA_PLANE_READY_REASON,
  type DataPlane,
  dataPlaneSkipReason,
  startTestDataPlane,
  type TrafficStats,
} from '../support/data-plane.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';

const { apps, core } = clients();
const skip = dataPlaneSkipReason();

/** A Deployment of pods labelled app=web, color=<color>, serving on 8080 with an HTTP readiness probe. */
function deployment(name: string, color: string, replicas: number, probePort = 8080): V1Deployment {
  const labels = { app: 'web', color };
  const spec: V1PodSpec = {
    containers: [
      {
        name: 'app',
        image: 'registry.example.com/team/web:1',
        ports: [{ containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/ready', port: probePort } },
      },
    ],
  };
  return {
    metadata: { name },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec } },
  };
}

describe.skipIf(skip !== undefined)(`the traffic harness${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;
  let dp: DataPlane | undefined;
  let clusterIP: string;

  const pods = async (color: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=web,color=${color}` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const hashOf = (p: V1Pod | undefined) => p?.metadata?.labels?.['pod-template-hash'] ?? '';
  const selectColor = (color: string) =>
    core.patchNamespacedService({
      name: 'web',
      namespace: ns,
      body: [{ op: 'replace', path: '/spec/selector/color', value: color }],
    });
  const waitForReadyPods = (color: string, count: number) =>
    waitFor(`${count} ready ${color} pods`, async () => {
      const list = await pods(color);
      return list.length === count && list.every(ready) ? list : undefined;
    });
  const traffic = () => {
    if (!dp) throw new Error('no data plane');
    // A generous timeout: the loop and the pods' servers share one process on a busy machine (load
    // above 20 on 2 cores here), where a 5 s timeout at 200 requests a second timed out hundreds that
    // a starved event loop had not read yet. The bench chooses its own rate and timeout.
    return dp.traffic(`http://${clusterIP}/`, { rps: 50, timeoutMs: 20_000 });
  };

  beforeAll(async () => {
    const created = await createNamespace('traffic');
    ns = created.name;
    removeNs = created.remove;
    dp = await startTestDataPlane([ns]);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('blue', 'blue', 2) });
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('green', 'green', 2) });
    const svc = await core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web', color: 'blue' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    clusterIP = svc.spec?.clusterIP ?? '';
  });

  afterAll(async () => {
    await dp?.stop();
    await removeNs?.();
  });

  it('requests to a ClusterIP reach the Ready pods behind it through kube-proxy rules, each answering its name and revision', async () => {
    const blue = await waitForReadyPods('blue', 2);
    // Ready was written by the data plane once the pod's server answered its probe, not by KWOK.
    for (const pod of blue) {
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe(DATA_PLANE_READY_REASON);
    }
    await waitFor('both blue endpoints ready', async () =>
      (await readyEndpoints(ns, 'web')).length === 2 ? true : undefined,
    );
    // Nothing listens on the ClusterIP: only kube-proxy's DNAT can take a request to a pod. Its rules
    // follow the endpoints a moment later (its own watch and sync period).
    await waitFor("kube-proxy's rules for the ClusterIP", async () =>
      (await dp?.ruleset())?.includes(clusterIP) ? true : undefined,
    );
    const answered = new Map<string, Answer>();
    await waitFor('answers from both blue pods through the ClusterIP', async () => {
      const a = await dp?.request(`http://${clusterIP}/`);
      if (a?.pod) answered.set(a.pod, a);
      return answered.size === 2 ? true : undefined;
    });
    for (const pod of blue) {
      expect(answered.get(pod.metadata?.name ?? '')?.revision).toBe(hashOf(pod));
    }
  });

  it('a pod is not Ready while its server does not answer the readiness probe', async () => {
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('mute', 'mute', 1, 9999) });
    const [pod] = await waitFor('the mute pod to be Running with an IP', async () => {
      const list = await pods('mute');
      return list[0]?.status?.podIP ? list : undefined;
    });
    const key = `${ns}/${pod?.metadata?.name}`;
    await waitFor('three failed probes of the mute pod', async () =>
      (dp?.probeFailures(key) ?? 0) >= 3 ? true : undefined,
    );
    // Its server answers on its IP; only the probe (port 9999, where nothing listens) fails.
    expect((await dp?.request(`http://${pod?.status?.podIP}:8080/`))?.pod).toBe(pod?.metadata?.name);
    const now = await core.readNamespacedPod({ namespace: ns, name: pod?.metadata?.name ?? '' });
    expect(ready(now)).toBe(false);
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'mute' });
  });

  it("changing the Service's selector moves traffic to the other pods, and no request fails", async () => {
    const [blue, green] = [
      hashOf((await waitForReadyPods('blue', 2))[0]),
      hashOf((await waitForReadyPods('green', 2))[0]),
    ];
    const loop = await traffic();
    await waitFor('50 answers from blue', async () =>
      ((await loop.stats()).byRevision[blue] ?? 0) >= 50 ? true : undefined,
    );
    await selectColor('green');
    await waitFor('the latest 100 answers all from green', async () => {
      const recent = (await loop.stats()).answers.slice(-100);
      return recent.length === 100 && recent.every((a) => a.revision === green) ? true : undefined;
    });
    const final: TrafficStats = await loop.stop();
    expect(final.failures).toEqual([]);
    expect(final.byRevision[blue]).toBeGreaterThanOrEqual(50);
    expect(final.byRevision[green]).toBeGreaterThanOrEqual(100);
    expect(Object.keys(final.byRevision).sort()).toEqual([blue, green].sort());
    expect(final.answers).toHaveLength(final.sent);
  });

  it('a Service with nothing behind it answers no request, and the loop records each failure', async () => {
    await selectColor('none');
    try {
      const rejected = new RegExp(
        `${clusterIP.replaceAll('.', '\\.')} \\. tcp \\. 80 comment "[^"]*" : goto reject-chain`,
      );
      await waitFor("kube-proxy's rule for the empty Service", async () =>
        rejected.test((await dp?.ruleset()) ?? '') ? true : undefined,
      );
      const loop = await dp?.traffic(`http://${clusterIP}/`, { rps: 50, timeoutMs: 1_000 });
      await waitFor('20 failed requests', async () => (((await loop?.stats())?.failed ?? 0) >= 20 ? true : undefined));
      const final = await loop?.stop();
      expect(final?.ok).toBe(0);
      expect(final?.failed).toBe(final?.sent);
      // kube-proxy rejects such a connection; on this namespace's loopback the client sees no ICMP and times out.
      expect(final?.failures.every((a) => a.error === 'ECONNREFUSED' || a.error === 'timeout')).toBe(true);
    } finally {
      await selectColor('green');
    }
  });

  it('a deleted pod drains: its in-flight request finishes, new connections are refused, then it is removed', async () => {
    const [pod] = await waitForReadyPods('green', 2);
    const name = pod?.metadata?.name ?? '';
    const ip = pod?.status?.podIP ?? '';
    const token = randomBytes(6).toString('hex');
    const inFlight = dp?.request(`http://${ip}:8080/hold/${token}`, 200_000);
    await waitFor('the held request to reach the pod', async () =>
      (await dp?.held(token)) === name ? true : undefined,
    );
    // A grace period far beyond the test: the pod goes when its server has drained, not at KWOK's deadline.
    await core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 3_000 });
    await waitFor('the draining pod to refuse new connections', async () =>
      (await dp?.request(`http://${ip}:8080/`))?.error === 'ECONNREFUSED' ? true : undefined,
    );
    const draining = await core.readNamespacedPod({ namespace: ns, name });
    expect(draining.metadata?.deletionTimestamp).toBeDefined();
    expect(await dp?.serving()).toContain(`${ns}/${name}`);
    await dp?.release(token);
    expect(await inFlight).toMatchObject({ status: 200, pod: name });
    await waitFor('the drained pod to be removed', async () => {
      const left = await core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${name}` });
      return left.items.length === 0 ? true : undefined;
    });
  });

  it('the loop keeps at most maxInFlight requests open, counts the slots it skipped, and names the pod a failed request reached', async () => {
    const [pod] = await waitForReadyPods('green', 2);
    const name = pod?.metadata?.name ?? '';
    // Every request is held by the pod: three are open, the later slots find the cap reached.
    const loop = await dp?.traffic(`http://${pod?.status?.podIP}:8080/hold/loop`, {
      rps: 20,
      timeoutMs: 60_000,
      maxInFlight: 3,
    });
    const held = await waitFor('slots skipped at the cap', async () => {
      const s = await loop?.stats();
      return s && s.skipped >= 5 ? s : undefined;
    });
    expect(held).toMatchObject({ sent: 3, ok: 0, failed: 0, maxInFlight: 3 });
    // The loop stops sending, then the pod, deleted for good, is cut with the three requests open on it.
    const stopped = loop?.stop();
    await core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 0 });
    const final = await stopped;
    expect(final).toMatchObject({ sent: 3, ok: 0, failed: 3, maxInFlight: 3 });
    expect(final?.skipped).toBeGreaterThanOrEqual(5);
    expect(final?.achievedRps).toBeGreaterThan(0);
    for (const a of final?.failures ?? []) {
      expect(a.via).toEqual({ pod: name, revision: hashOf(pod) });
      expect(a.error).not.toBe('timeout');
    }
  });

  it('a deleted pod keeps serving through its preStop hook, and one deleted for good is cut at once', async () => {
    const body = deployment('slow', 'slow', 1);
    const spec = body.spec?.template.spec;
    if (!spec?.containers[0]) throw new Error('no container');
    spec.terminationGracePeriodSeconds = 3_600;
    spec.containers[0].lifecycle = { preStop: { exec: { command: ['/bin/sh', '-c', 'sleep 3600'] } } };
    await apps.createNamespacedDeployment({ namespace: ns, body });
    try {
      const [pod] = await waitForReadyPods('slow', 1);
      const name = pod?.metadata?.name ?? '';
      const ip = pod?.status?.podIP ?? '';
      await core.deleteNamespacedPod({ namespace: ns, name });
      await waitFor('the data plane to be stopping the pod', async () =>
        (await dp?.stopping())?.includes(`${ns}/${name}`) ? true : undefined,
      );
      // In its preStop hook, deleted, the pod still takes new connections, as a kubelet's would.
      expect(await dp?.request(`http://${ip}:8080/`)).toMatchObject({ status: 200, pod: name });
      await core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 0 });
      await waitFor('the pod removed for good to be cut', async () =>
        (await dp?.serving())?.includes(`${ns}/${name}`) ? undefined : true,
      );
      expect((await dp?.request(`http://${ip}:8080/`))?.error).toBeDefined();
    } finally {
      await apps.deleteNamespacedDeployment({ namespace: ns, name: 'slow' });
      await core.deleteCollectionNamespacedPod({ namespace: ns, labelSelector: 'color=slow', gracePeriodSeconds: 0 });
    }
  });

  it('a data plane left by a killed run (namespace, processes in it, folder) is removed by the next one', async () => {
    const owner = spawn('true');
    const dead = await new Promise<number>((resolve) => owner.once('exit', () => resolve(owner.pid ?? 0)));
    const name = `teal-dp-${dead}-${randomBytes(3).toString('hex')}`;
    execFileSync('ip', ['netns', 'add', name]);
    mkdirSync(join(tmpdir(), name));
    const orphan = spawn('ip', ['netns', 'exec', name, 'sleep', '600'], { stdio: 'ignore' });
    await waitFor('the orphan to run in the namespace', async () =>
      execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).trim() ? true : undefined,
    );
    const orphanExit = new Promise((resolve) => orphan.once('exit', (_code, signal) => resolve(signal)));
    reapStaleDataPlanes();
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(name);
    expect(existsSync(join(tmpdir(), name))).toBe(false);
    expect(await orphanExit).toBe('SIGKILL');
  });
});
