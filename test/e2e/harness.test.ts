// Proves the test control plane is real: controllers, EndpointSlices, Jobs,
// RBAC and garbage collection behave as on any cluster; only containers are
// simulated, by Teal's KWOK stages.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type V1Job, type V1Pod, VersionApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { clusterPorts, kwokctlConfig } from '../cluster/cluster.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { serviceAccount } from '../support/users.ts';

const { kc, core, apps, batch, authn, authz, discovery } = clients();
let ns: string;
let removeNs: () => Promise<void>;

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('harness'));
});
afterAll(async () => removeNs());

const podsOf = async (selector: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items;

function job(name: string, labels: Record<string, string>): V1Job {
  return {
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels },
        spec: { restartPolicy: 'Never', containers: [{ name: 'build', image: 'moby/buildkit:rootless' }] },
      },
    },
  };
}

describe('the test control plane', () => {
  it('runs real binaries of the pinned versions on 127.0.0.1', async () => {
    const version = await kc.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toMatch(/^v1\.36\./);
    expect(new URL(kc.getCurrentCluster()?.server ?? '').hostname).toBe('127.0.0.1');
  });

  it('creates clusters from local binaries only, on the ports it picked: the dry run downloads nothing', async () => {
    const binDir = inject('binDir');
    const dir = mkdtempSync(join(tmpdir(), 'teal-dryrun-'));
    try {
      const ports = await clusterPorts();
      writeFileSync(join(dir, 'kwokctl.yaml'), kwokctlConfig(binDir, ports));
      const { stdout, stderr } = await promisify(execFile)(
        join(binDir, 'kwokctl'),
        [
          'create',
          'cluster',
          '--name',
          'dry',
          '--config',
          join(dir, 'kwokctl.yaml'),
          '--dry-run',
          '--kubeconfig',
          join(dir, 'kc'),
        ],
        { env: { ...process.env, KWOK_WORKDIR: dir } },
      );
      const output = stdout + stderr;
      // kwokctl calls copying a local binary into the cluster folder "Download";
      // every such source must be our cache, never a URL.
      const sources = [...output.matchAll(/^# Download (\S+)/gm)].map((m) => m[1]);
      expect(sources.length).toBeGreaterThan(0);
      for (const src of sources) expect(src?.startsWith(`${binDir}/`)).toBe(true);
      // Every server it would start listens on loopback only.
      expect(output).not.toMatch(/0\.0\.0\.0/);
      expect([...output.matchAll(/--(?:bind|server)-address=(\S+)/g)].map((m) => m[1]?.split(':')[0])).toEqual(
        expect.arrayContaining(['127.0.0.1']),
      );
      // Every port a server would listen on is one the harness picked, none of kwokctl's own choosing.
      const listening = output.matchAll(
        /--(?:secure-port|node-port|server-address|listen-peer-urls|listen-client-urls)=(?:\S*:)?(\d+)/g,
      );
      expect(new Set([...listening].map((m) => Number(m[1])))).toEqual(new Set(Object.values(ports)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives a Deployment Ready pods and its Service ready EndpointSlice endpoints', async () => {
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'web:1' }] } },
        },
      },
    });
    await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'web' }, spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] } },
    });
    await waitFor('the Deployment to be available', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      return d.status?.availableReplicas === 2 ? d : undefined;
    });
    const pods = await podsOf('app=web');
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      expect(pod.status?.phase).toBe('Running');
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }
    const podIPs = pods.map((p) => p.status?.podIP).sort();
    const endpoints = await waitFor('ready endpoints for both pods', async () => {
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace: ns,
        labelSelector: 'kubernetes.io/service-name=web',
      });
      const ready = slices.items
        .flatMap((s) => s.endpoints ?? [])
        .filter((e) => e.conditions?.ready)
        .flatMap((e) => e.addresses)
        .sort();
      return ready.length === 2 ? ready : undefined;
    });
    expect(endpoints).toEqual(podIPs);
  });

  it('keeps pods labelled kwok.teal.dev/not-ready running but never Ready', async () => {
    const labels = { app: 'stuck', 'kwok.teal.dev/not-ready': 'true' };
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'stuck' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'stuck' } },
          template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'stuck:1' }] } },
        },
      },
    });
    const pod = await waitFor('the pod to run', async () => {
      const [p] = await podsOf('app=stuck');
      return p?.status?.phase === 'Running' ? p : undefined;
    });
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    // Once the Deployment has counted the running pod, nothing has made it Ready: no stage
    // matches a Running pod, so none can later.
    const d = await waitFor('the Deployment to count the pod', async () => {
      const found = await apps.readNamespacedDeployment({ name: 'stuck', namespace: ns });
      const counted =
        (found.status?.observedGeneration ?? 0) >= (found.metadata?.generation ?? 1) &&
        found.status?.replicas === 1 &&
        (found.status.availableReplicas ?? 0) + (found.status.unavailableReplicas ?? 0) === 1;
      return counted ? found : undefined;
    });
    expect(d.status?.availableReplicas ?? 0).toBe(0);
    expect(d.status?.unavailableReplicas).toBe(1);
  });

  it('completes a build Job with the image digest as its termination message', async () => {
    await batch.createNamespacedJob({ namespace: ns, body: job('build-ok', { 'teal.dev/build': 'ok' }) });
    await waitFor('the Job to complete', async () => {
      const j = await batch.readNamespacedJob({ name: 'build-ok', namespace: ns });
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
    });
    const [pod] = await podsOf('job-name=build-ok');
    const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
    expect(terminated?.exitCode).toBe(0);
    const expected = `sha256:${createHash('sha256').update('build-ok').digest('hex')}`;
    expect(terminated?.message).toBe(expected);
  });

  it('fails a build Job labelled to fail, with a log line as its message', async () => {
    await batch.createNamespacedJob({
      namespace: ns,
      body: job('build-bad', { 'teal.dev/build': 'bad', 'kwok.teal.dev/build-outcome': 'fail' }),
    });
    const failed = await waitFor('the Job to fail', async () => {
      const j = await batch.readNamespacedJob({ name: 'build-bad', namespace: ns });
      return j.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
    });
    expect(failed.reason).toBe('BackoffLimitExceeded');
    const [pod] = await podsOf('job-name=build-bad');
    const terminated = pod?.status?.containerStatuses?.[0]?.state?.terminated;
    expect(terminated?.exitCode).toBe(1);
    expect(terminated?.message).toMatch(/^error: failed to solve/);
  });

  it('fails a build Job whose Dockerfile is fail.Dockerfile, so an App can ask for a failing build', async () => {
    const body = job('build-dockerfile', { 'teal.dev/build': 'df' });
    const container = body.spec?.template.spec?.containers[0];
    if (container) container.env = [{ name: 'TEAL_DOCKERFILE', value: 'fail.Dockerfile' }];
    await batch.createNamespacedJob({ namespace: ns, body });
    await waitFor('the Job to fail', async () => {
      const j = await batch.readNamespacedJob({ name: 'build-dockerfile', namespace: ns });
      return j.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
    });
  });

  it('authenticates a TokenRequest token and authorizes a custom verb by RBAC, per namespace', async () => {
    const other = await createNamespace('harness-other');
    try {
      const token = await serviceAccount(ns, 'releaser', ['promote']);
      expect(token).not.toBe('');

      const review = await authn.createTokenReview({ body: { spec: { token } } });
      expect(review.status?.authenticated).toBe(true);
      const user = review.status?.user;
      expect(user?.username).toBe(`system:serviceaccount:${ns}:releaser`);

      const rejected = await authn.createTokenReview({ body: { spec: { token: `${token.slice(0, -4)}AAAA` } } });
      expect(rejected.status?.authenticated).toBeFalsy();

      const can = async (namespace: string, verb: string) =>
        (
          await authz.createSubjectAccessReview({
            body: {
              spec: {
                user: user?.username,
                groups: user?.groups,
                resourceAttributes: { group: 'teal.dev', resource: 'apps', verb, namespace, name: 'weather' },
              },
            },
          })
        ).status?.allowed;
      // RBAC bindings reach the authorizer's cache a moment after they are written.
      await waitFor('the binding to take effect', async () => ((await can(ns, 'promote')) ? true : undefined));
      expect(await can(other.name, 'promote')).toBe(false);
      expect(await can(ns, 'abort')).toBe(false);
    } finally {
      await other.remove();
    }
  });

  it('garbage-collects owned objects when their owner is deleted', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
    const ownerReferences = [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '', controller: true },
    ];
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owned', ownerReferences } } });
    await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'owned-svc', ownerReferences }, spec: { ports: [{ port: 80 }] } },
    });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'bystander' } } });

    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: ns });
    await waitFor('the owned objects to be collected', async () => {
      const names = (await core.listNamespacedConfigMap({ namespace: ns })).items.map((c) => c.metadata?.name);
      const services = (await core.listNamespacedService({ namespace: ns })).items.map((s) => s.metadata?.name);
      return !names.includes('owned') && !services.includes('owned-svc') ? true : undefined;
    });
    const left = (await core.listNamespacedConfigMap({ namespace: ns })).items.map((c) => c.metadata?.name);
    expect(left).toContain('bystander');
  });
});
