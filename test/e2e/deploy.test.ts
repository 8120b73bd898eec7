// The shipped manifests on the real API server, and the operator running
// under its own ServiceAccount's token: RBAC grants exactly what it uses.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eApp } from '../fixtures/apps.ts';
import { CLUSTER_SCOPED, IN_APP_NAMESPACES, IN_OPERATOR_NAMESPACE, NEVER } from '../fixtures/operator-rbac.ts';
import { createApp, intent, patchSpec, phase, waitForApp } from '../support/apps.ts';
import { canI, createNamespace, kubectl, serviceAccountKubeconfig } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const SA = 'system:serviceaccount:teal-system:teal';
const config = new URL('../../config', import.meta.url).pathname;
let dir: string;
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator | undefined;

beforeAll(async () => {
  const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-k', config]);
  expect(applied.stderr).toBe('');
  expect(applied.code).toBe(0);
  dir = await mkdtemp(join(tmpdir(), 'teal-deploy-'));
  ({ name: ns, remove: removeNs } = await createNamespace('deploy'));
});

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await rm(dir, { recursive: true, force: true });
});

describe('the shipped manifests', () => {
  it('create the operator Deployment and Service, non-root with a read-only root filesystem', async () => {
    const { stdout } = await kubectl(['get', 'deployment', 'teal-operator', '-n', 'teal-system', '-o', 'json']);
    const deployment = JSON.parse(stdout);
    const container = deployment.spec.template.spec.containers[0];
    expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
  });

  it.each([...IN_APP_NAMESPACES, ...IN_OPERATOR_NAMESPACE, ...CLUSTER_SCOPED])(
    'let the operator %s %s',
    async (verb, resource) => {
      expect(await canI(verb, resource, SA, ['-A'])).toBe('yes');
    },
  );

  it.each(NEVER)('do not let the operator %s %s', async (verb, resource) => {
    expect(await canI(verb, resource, SA, ['-A'])).toBe('no');
  });

  it('are enough for a release: the operator runs under its ServiceAccount token', async () => {
    const kubeconfig = await serviceAccountKubeconfig('teal-system', 'teal', join(dir, 'kubeconfig'));
    operator = await startOperator({ namespace: ns, kubeconfig });
    await createApp(ns, e2eApp('rbac'));
    await waitForApp(ns, 'rbac', 'first release', phase('Healthy'));
    await patchSpec(ns, 'rbac', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'rbac', 'preview', phase('Paused'));
    await intent(ns, 'rbac', 'promote');
    const done = await waitForApp(
      ns,
      'rbac',
      'promoted',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 2,
    );
    expect(done.status?.history?.at(-1)?.promotedVia).toBe('kubectl');
    expect(operator.logs()).not.toMatch(/forbidden/i);
  });
});
