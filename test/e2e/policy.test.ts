// config/policy/intents.yaml on the real API server: recording an action
// with one's own credentials needs the action's verb, not only `patch`.
import { readFileSync } from 'node:fs';
import { ApiException, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { intentAnnotation } from '../../src/app/intents.ts';
import { createApp } from '../support/apps.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';

const { core, rbac, objects } = clients();
const policyFile = new URL('../../config/policy/intents.yaml', import.meta.url);
let ns: string;
let removeNs: () => Promise<void>;
const bindingName = `teal-intents-test-${process.pid}`;

/** A client acting as a ServiceAccount with the given verbs on apps.teal.dev. */
async function actingAs(name: string, verbs: string[]): Promise<CustomObjectsApi> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  await rbac.createNamespacedRole({
    namespace: ns,
    body: { metadata: { name }, rules: [{ apiGroups: ['teal.dev'], resources: ['apps'], verbs }] },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    },
  });
  const token = (
    await core.createNamespacedServiceAccountToken({ name, namespace: ns, body: { spec: { audiences: [] } } })
  ).status?.token;
  const admin = kubeConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster || !token) throw new Error('no cluster or token');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name, token }],
    contexts: [{ name, cluster: cluster.name, user: name }],
    currentContext: name,
  });
  return kc.makeApiClient(CustomObjectsApi);
}

let lastMessage = '';

async function annotate(api: CustomObjectsApi, key: string, value: string): Promise<number> {
  try {
    await api.patchNamespacedCustomObject(
      {
        group: 'teal.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'apps',
        name: 'guarded',
        body: { metadata: { annotations: { [key]: value } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return 200;
  } catch (err) {
    if (err instanceof ApiException) {
      lastMessage = (JSON.parse(String(err.body)) as { message?: string }).message ?? String(err.body);
      return err.code;
    }
    throw err;
  }
}

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('policy'));
  await core.patchNamespace(
    { name: ns, body: { metadata: { labels: { 'teal.dev/policy-test': ns } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const [policy, binding] = parseAllDocuments(readFileSync(policyFile, 'utf8')).map((d) => d.toJS());
  await objects.patch(policy, undefined, undefined, 'teal-test', true, PatchStrategy.ServerSideApply);
  // The shipped binding covers every namespace; this test binds the same policy to its own only.
  binding.metadata.name = bindingName;
  binding.spec.matchResources = { namespaceSelector: { matchLabels: { 'teal.dev/policy-test': ns } } };
  await objects.patch(binding, undefined, undefined, 'teal-test', true, PatchStrategy.ServerSideApply);
  await createApp(ns, {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'guarded' },
    spec: {
      image: 'repo/app:1',
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80 }] }] } },
    },
  });
});

afterAll(async () => {
  await objects
    .delete({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: bindingName },
    })
    .catch(() => {});
  await removeNs?.();
});

describe('the intents admission policy', () => {
  it('refuses a promote intent from a user with patch but not promote, with a clear message', async () => {
    const editor = await actingAs('editor', ['get', 'list', 'patch']);
    // The policy and its binding take a moment to be in force; each try is a new intent,
    // since rewriting the same value changes nothing and is let through.
    let tries = 0;
    const intent = () =>
      JSON.stringify({ id: `x${++tries}`, by: 'editor', via: 'kubectl', at: new Date().toISOString() });
    await waitFor(
      'the policy to deny',
      async () => ((await annotate(editor, intentAnnotation('promote'), intent())) === 403 ? true : undefined),
      { intervalMs: 300 },
    );
    expect(lastMessage).toMatch(
      /cannot promote apps\.teal\.dev "guarded" in namespace .*\(RBAC: grant the teal-promoter role\)/,
    );
    // Other annotations are not its business.
    expect(await annotate(editor, 'example.com/note', 'hello')).toBe(200);
  });

  it('lets a user with the promote verb record a promote, and only that', async () => {
    const promoter = await actingAs('promoter', ['get', 'list', 'patch', 'promote']);
    const intent = (id: string) => JSON.stringify({ id, by: 'promoter', via: 'kubectl', at: new Date().toISOString() });
    await waitFor('the promoter binding', async () =>
      (await annotate(promoter, intentAnnotation('promote'), intent('p1'))) === 200 ? true : undefined,
    );
    expect(await annotate(promoter, intentAnnotation('abort'), intent('a1'))).toBe(403);
  });
});
