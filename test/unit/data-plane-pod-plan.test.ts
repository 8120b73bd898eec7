// The data plane's kubelet rules (test/cluster/data-plane/pod-plan.ts): where
// a pod's server listens and what revision it answers, how it is probed, and
// how long its preStop hook and grace period keep it.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  gatedReadyStatus,
  podProbe,
  podServe,
  podStop,
  READINESS_GATES_NOT_READY,
  readyStatus,
  unmetGates,
} from '../cluster/data-plane/pod-plan.ts';

function pod(container: Partial<V1Container> = {}, extra: Partial<V1Pod> = {}): V1Pod {
  return {
    metadata: { name: 'web-1', namespace: 'traffic-a', uid: 'u1', labels: { 'pod-template-hash': 'abc' } },
    spec: { containers: [{ name: 'app', ...container }] },
    status: {
      phase: 'Running',
      podIP: '10.244.0.7',
      containerStatuses: [{ name: 'app', image: 'i', imageID: '', ready: false, restartCount: 0 }],
    },
    ...extra,
  };
}

describe('podServe', () => {
  it("serves a Running pod on its IP and first TCP containerPort, answering the Deployment's revision", () => {
    const p = pod({ ports: [{ containerPort: 53, protocol: 'UDP' }, { containerPort: 9000 }] });
    expect(podServe(p)).toEqual({
      key: 'traffic-a/web-1',
      name: 'web-1',
      ip: '10.244.0.7',
      port: 9000,
      revision: 'abc',
    });
  });

  it("prefers Teal's revision label, and serves on 8080 without a containerPort", () => {
    const p = pod();
    p.metadata = { ...p.metadata, labels: { 'pod-template-hash': 'abc', 'teal.dev/pod-template-hash': 'teal1' } };
    expect(podServe(p)).toMatchObject({ port: 8080, revision: 'teal1' });
  });

  it("answers Argo Rollouts' revision label on a Rollout's pods, which have no pod-template-hash", () => {
    const p = pod();
    p.metadata = { ...p.metadata, labels: { app: 'web', 'rollouts-pod-template-hash': 'argo1' } };
    expect(podServe(p)).toMatchObject({ revision: 'argo1' });
  });

  it('answers the TEAL_REVISION its app container has, resolving the Downward API as a kubelet does', () => {
    const fieldRef = { fieldPath: "metadata.labels['pod-template-hash']" };
    expect(podServe(pod({ env: [{ name: 'TEAL_REVISION', valueFrom: { fieldRef } }] }))).toMatchObject({
      tealRevision: 'abc',
    });
    expect(podServe(pod({ env: [{ name: 'TEAL_REVISION', value: 'v7' }] }))).toMatchObject({ tealRevision: 'v7' });
    const named = { fieldRef: { fieldPath: 'metadata.name' } };
    expect(podServe(pod({ env: [{ name: 'TEAL_REVISION', valueFrom: named }] }))).toMatchObject({
      tealRevision: 'web-1',
    });
    expect(podServe(pod())).not.toHaveProperty('tealRevision');
  });

  it('serves nothing for a pod that is not Running or has no IP yet', () => {
    expect(podServe(pod({}, { status: { phase: 'Pending', podIP: '10.244.0.7' } }))).toBeUndefined();
    expect(podServe(pod({}, { status: { phase: 'Running' } }))).toBeUndefined();
  });
});

describe('podProbe', () => {
  it("probes the readiness probe's path and port, a named port looked up in the container", () => {
    const p = pod({
      ports: [{ name: 'http', containerPort: 8081 }],
      readinessProbe: { httpGet: { path: '/ready', port: 'http' } },
    });
    expect(podProbe(p, { port: 8081 })).toEqual({ port: 8081, path: '/ready' });
    expect(podProbe(pod({ readinessProbe: { httpGet: { path: '/r', port: 9999 } } }), { port: 8080 })).toEqual({
      port: 9999,
      path: '/r',
    });
  });

  it('without a readiness probe, asks / on the serving port', () => {
    expect(podProbe(pod(), { port: 8080 })).toEqual({ port: 8080, path: '/' });
  });
});

describe('podStop', () => {
  it("waits for the preStop sleep, within the deletion's grace period", () => {
    expect(podStop(pod({ lifecycle: { preStop: { sleep: { seconds: 5 } } } }))).toEqual({
      preStopMs: 5000,
      graceMs: 30000,
    });
    const p = pod({ lifecycle: { preStop: { exec: { command: ['/bin/sh', '-c', 'sleep 40'] } } } });
    p.spec = { ...p.spec, containers: p.spec?.containers ?? [], terminationGracePeriodSeconds: 60 };
    expect(podStop(p)).toEqual({ preStopMs: 40000, graceMs: 60000 });
    p.metadata = { ...p.metadata, deletionGracePeriodSeconds: 10 };
    expect(podStop(p)).toEqual({ preStopMs: 10000, graceMs: 10000 });
  });

  it('plays exec sleep N, and any other hook as no wait', () => {
    expect(podStop(pod({ lifecycle: { preStop: { exec: { command: ['sleep', '3'] } } } })).preStopMs).toBe(3000);
    expect(podStop(pod({ lifecycle: { preStop: { exec: { command: ['nginx', '-s', 'quit'] } } } })).preStopMs).toBe(0);
    expect(podStop(pod())).toEqual({ preStopMs: 0, graceMs: 30000 });
  });
});

describe('readyStatus', () => {
  it('sets Ready and ContainersReady with the data plane as reason, and every container ready', () => {
    const status = readyStatus(pod(), new Date(0)) as {
      conditions: { type: string; status: string }[];
      containerStatuses: { ready: boolean }[];
    };
    expect(status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=True', 'ContainersReady=True']);
    expect(status.containerStatuses.every((s) => s.ready)).toBe(true);
  });
});

describe('readiness gates', () => {
  const GATE = 'target-health.lb-model.teal.dev/web';
  const gated = (conditions: { type: string; status: string; reason?: string }[] = []): V1Pod => ({
    ...pod(),
    spec: { containers: [{ name: 'app', image: 'x' }], readinessGates: [{ conditionType: GATE }] },
    status: { phase: 'Running', podIP: '10.244.0.9', conditions },
  });
  type Status = { conditions: { type: string; status: string; reason: string; message?: string }[] };

  it('keeps Ready False, ContainersReady True, while a gate the pod names is not True', () => {
    const status = readyStatus(gated(), new Date(0)) as Status;
    expect(status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=False', 'ContainersReady=True']);
    expect(status.conditions[0]).toMatchObject({ reason: READINESS_GATES_NOT_READY });
    expect(status.conditions[0]?.message).toContain(GATE);
    expect(unmetGates(gated([{ type: GATE, status: 'False' }]))).toEqual([GATE]);
    expect(unmetGates(gated([{ type: GATE, status: 'True' }]))).toEqual([]);
  });

  it('makes Ready True once the gate is set, only for pods whose containers the data plane made ready', () => {
    const containers = { type: 'ContainersReady', status: 'True', reason: 'DataPlaneProbeAnswered' };
    const waiting = { type: 'Ready', status: 'False', reason: READINESS_GATES_NOT_READY };
    expect(gatedReadyStatus(gated([containers, waiting]), new Date(0))).toBeUndefined();
    const set = gatedReadyStatus(gated([containers, waiting, { type: GATE, status: 'True' }]), new Date(0)) as Status;
    expect(set.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(['Ready=True']);
    // Containers not ready yet (KWOK's condition): the probe decides first.
    expect(gatedReadyStatus(gated([{ type: GATE, status: 'True' }]), new Date(0))).toBeUndefined();
  });
});
