// config/ on the real API server, in both RBAC modes, and the operator running
// under its own ServiceAccount's token with the flags the Deployment gives it:
// RBAC grants exactly what it uses.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eApp } from '../fixtures/apps.ts';
import { CLUSTER_SCOPED, IN_APP_NAMESPACES, IN_OPERATOR_NAMESPACE, NEVER } from '../fixtures/operator-rbac.ts';
import { createApp, getApp, releaseAndPromote } from '../support/apps.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { canI, createNamespace, kubectl, serviceAccountKubeconfig } from '../support/kube.ts';
import { find, type Manifest, operatorContainer, parseManifests, rulesOf } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const config = new URL('../../config', import.meta.url).pathname;
let dir: string;
const operators: Operator[] = [];
const removers: (() => Promise<void>)[] = [];

async function namespace(prefix: string): Promise<string> {
  const { name, remove } = await createNamespace(prefix);
  removers.push(remove);
  return name;
}

async function kustomize(path: string): Promise<string> {
  const out = await kubectl(['kustomize', path]);
  if (out.code !== 0) throw new Error(`kubectl kustomize ${path}: ${out.stderr}`);
  return out.stdout;
}

const REVIEW_GROUPS = ['authentication.k8s.io', 'authorization.k8s.io'];

beforeAll(async () => {
  // kubectl auth can-i resolves httproutes.gateway.networking.k8s.io only once the API server serves it.
  await installGatewayApi();
  dir = await mkdtemp(join(tmpdir(), 'teal-deploy-'));
});

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop()));
  await Promise.all(removers.map((r) => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('config/, cluster-wide mode', () => {
  const SA = 'system:serviceaccount:teal-system:teal';
  let objects: Manifest[];

  beforeAll(async () => {
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-k', config]);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    objects = parseManifests(await kustomize(config));
  });

  it('creates the operator Deployment and Service, non-root with a read-only root filesystem', async () => {
    const { stdout } = await kubectl(['get', 'deployment', 'teal-operator', '-n', 'teal-system', '-o', 'json']);
    const deployment = JSON.parse(stdout);
    const container = deployment.spec.template.spec.containers[0];
    expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
  });

  it.each([...IN_APP_NAMESPACES, ...IN_OPERATOR_NAMESPACE, ...CLUSTER_SCOPED])(
    'lets the operator %s %s',
    async (verb, resource) => {
      expect(await canI(verb, resource, SA, ['-A'])).toBe('yes');
    },
  );

  it.each(NEVER)('does not let the operator %s %s', async (verb, resource) => {
    expect(await canI(verb, resource, SA, ['-A'])).toBe('no');
  });

  it('is enough for a release: the operator runs under its ServiceAccount token', async () => {
    const apps = await namespace('deploy');
    const kubeconfig = await serviceAccountKubeconfig('teal-system', 'teal', join(dir, 'cluster.kubeconfig'));
    // Other test files' operators own their namespaces: this one watches one of its own.
    const operator = await startOperator({
      namespace: apps,
      kubeconfig,
      deployed: { args: operatorContainer(objects).args, podNamespace: 'teal-system' },
      extraArgs: [`--namespace=${apps}`],
    });
    operators.push(operator);
    const done = await releaseAndPromote(apps, 'rbac');
    expect(done.status?.history?.at(-1)?.promotedVia).toBe('kubectl');
    expect(operator.logs()).not.toMatch(/forbidden/i);
  });
});

describe('config/namespaced', () => {
  let text: string;
  let operatorNs: string;
  let watched: string;
  let other: string;
  let SA: string;

  beforeAll(async () => {
    text = await kustomize(join(config, 'namespaced'));
    [operatorNs, watched, other] = await Promise.all([
      namespace('deploy-ns'),
      namespace('deploy-ns-apps'),
      namespace('deploy-ns-other'),
    ]);
    SA = `system:serviceaccount:${operatorNs}:teal`;
  });

  it('grants per namespace exactly the cluster-wide rules on namespaced objects', async () => {
    const objects = parseManifests(text);
    const [clusterRole] = find(
      parseManifests(await kustomize(join(config, 'rbac/cluster'))),
      'ClusterRole',
      'teal-operator',
    );
    const all = rulesOf(clusterRole) ?? [];
    const group = (r: { apiGroups: string[] }) => r.apiGroups[0] ?? '';
    expect(rulesOf(find(objects, 'Role', 'teal-operator', 'teal-apps')[0])).toEqual(
      all.filter((r) => group(r) !== 'coordination.k8s.io' && !REVIEW_GROUPS.includes(group(r))),
    );
    expect(rulesOf(find(objects, 'Role', 'teal-leader-election', 'teal-system')[0])).toEqual(
      all.filter((r) => group(r) === 'coordination.k8s.io'),
    );
    expect(rulesOf(find(objects, 'ClusterRole', 'teal-auth-delegator')[0])).toEqual(
      all.filter((r) => REVIEW_GROUPS.includes(group(r))),
    );
    expect(find(objects, 'ClusterRole', 'teal-operator')).toEqual([]);
    expect(operatorContainer(objects).args).toContain('--namespace=teal-apps');
  });

  it('passes a server-side dry-run', async () => {
    // The watched namespace must exist for its Role to be checked.
    const out = await kubectl(
      ['apply', '--server-side', '--dry-run=server', '--force-conflicts', '-f', '-'],
      text.replaceAll('teal-apps', watched),
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
  });

  it('is enough for a release in the watched namespace, and nothing elsewhere', async () => {
    // Installed into fresh namespaces, beside the cluster-wide install above.
    const objects = parseManifests(
      text
        .replaceAll('teal-system', operatorNs)
        .replaceAll('teal-apps', watched)
        .replaceAll('name: teal-auth-delegator', `name: teal-auth-delegator-${operatorNs}`),
    ).filter((o) => o.kind !== 'Namespace' && o.kind !== 'CustomResourceDefinition');
    const applied = await kubectl(
      ['apply', '--server-side', '--force-conflicts', '-f', '-'],
      objects.map((o) => JSON.stringify(o)).join('\n'),
    );
    expect(applied.stderr).toBe('');

    for (const [verb, resource] of IN_APP_NAMESPACES) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, SA, ['-n', watched])}`).toBe(
        `${verb} ${resource}: yes`,
      );
      expect(`${verb} ${resource}: ${await canI(verb, resource, SA, ['-n', other])}`).toBe(`${verb} ${resource}: no`);
    }
    for (const [verb, resource] of IN_OPERATOR_NAMESPACE) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, SA, ['-n', operatorNs])}`).toBe(
        `${verb} ${resource}: yes`,
      );
    }
    for (const [verb, resource] of CLUSTER_SCOPED) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, SA, [])}`).toBe(`${verb} ${resource}: yes`);
    }

    const kubeconfig = await serviceAccountKubeconfig(operatorNs, 'teal', join(dir, 'namespaced.kubeconfig'));
    const operator = await startOperator({
      namespace: watched,
      kubeconfig,
      deployed: { args: operatorContainer(objects).args, podNamespace: operatorNs },
    });
    operators.push(operator);
    await createApp(other, e2eApp('elsewhere'));
    await releaseAndPromote(watched, 'rbac');
    expect((await getApp(other, 'elsewhere')).status).toBeUndefined();
    expect(operator.logs()).not.toMatch(/forbidden/i);
  });
});
