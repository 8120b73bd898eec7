// A write the API server refuses reaches the App's status, not only a log
// line: the operator runs under its own ServiceAccount with the namespaced
// Role of config/namespaced, less `create jobs`; a new commit then cannot be
// built, the App says why, and once the rule is given back it recovers by itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Role } from '@kubernetes/client-node';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { createApp, getApp, phase, waitForApp } from '../support/apps.ts';
import { createRepo, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, kubeConfig, kubectl, serviceAccountKubeconfig, waitFor } from '../support/kube.ts';
import { find, parseManifests } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const { core, batch } = clients();
const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
const config = new URL('../../config', import.meta.url).pathname;

let ns: string;
let removeNs: () => Promise<void>;
let dir: string;
let repo: TestRepo;
let operator: Operator;
let role: V1Role;

/** The operator's namespaced Role as config/namespaced ships it, for namespace ns. */
async function shippedRole(namespace: string): Promise<V1Role> {
  const out = await kubectl(['kustomize', join(config, 'namespaced')]);
  if (out.code !== 0) throw new Error(`kubectl kustomize: ${out.stderr}`);
  const [shipped] = find(parseManifests(out.stdout), 'Role', 'teal-operator');
  if (!shipped) throw new Error('config/namespaced has no Role teal-operator');
  const { rules } = shipped as unknown as V1Role;
  return { metadata: { name: 'teal-operator', namespace }, rules: rules ?? [] };
}

/** The same Role, without one verb on one resource. */
function without(r: V1Role, resource: string, verb: string): V1Role {
  const rules = (r.rules ?? []).map((rule) =>
    rule.resources?.includes(resource) ? { ...rule, verbs: rule.verbs.filter((v) => v !== verb) } : rule,
  );
  return { ...r, rules };
}

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('rbac-errors'));
  dir = await mkdtemp(join(tmpdir(), 'teal-rbac-errors-'));
  repo = await createRepo(join(dir, 'web'));
  await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
  role = await shippedRole(ns);
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'teal' } } });
  await rbac.createNamespacedRole({ namespace: ns, body: without(role, 'jobs', 'create') });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'teal-operator' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'teal-operator' },
      subjects: [{ kind: 'ServiceAccount', name: 'teal', namespace: ns }],
    },
  });
  const kubeconfig = await serviceAccountKubeconfig(ns, 'teal', join(dir, 'teal.kubeconfig'));
  operator = await startOperator({
    namespace: ns,
    kubeconfig,
    extraArgs: ['--leader-elect=false', '--allow-file-git'],
  });
});

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const ready = (app: {
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}) => app.status?.conditions?.find((c) => c.type === 'Ready');

describe('a write the API server refuses', () => {
  it('reaches status as Ready=False/ReconcileError naming the object and the answer; given back, the App recovers', async () => {
    const body: AppInput = {
      apiVersion: 'teal.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'web' },
      spec: {
        source: { git: { url: `file://${repo.dir}`, ref: 'main', pollInterval: '0' } },
        build: { image: 'registry.example.com/team/web' },
        replicas: 1,
        template: { spec: { containers: [{ name: 'app' }] } },
        service: { ports: [{ port: 80, targetPort: 8080 }] },
      },
    };
    await createApp(ns, body);

    const failed = await waitForApp(ns, 'web', 'Ready=False with ReconcileError', (a) => {
      return ready(a)?.reason === 'ReconcileError';
    });
    const head = await repo.revParse('HEAD');
    const condition = ready(failed);
    expect(condition?.status).toBe('False');
    expect(condition?.message).toMatch(
      new RegExp(
        `^reconcile failed: creating build Job ${ns}/web-\\S+: 403: .*forbidden.*cannot create resource "jobs"`,
      ),
    );
    expect(failed.status?.message).toBe(condition?.message);
    // What is true is still written: the commit was resolved; nothing was built.
    expect(failed.status?.source?.commit).toBe(head);
    expect(failed.status?.build).toBeUndefined();
    expect((await batch.listNamespacedJob({ namespace: ns })).items).toEqual([]);
    // The Event follows the status that landed, and the log line the reconcile that failed: both may come after it.
    const warnings = await waitFor('the ReconcileError Event', async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=web' });
      const found = events.items.filter((e) => e.reason === 'ReconcileError');
      return found.length > 0 ? found : undefined;
    });
    expect(warnings.map((e) => e.type)).toEqual(['Warning']);
    expect(warnings[0]?.message).toMatch(/^creating build Job .*: 403: /);
    // A refusal needs a person: retried on a slow backoff, not at once.
    const slowRetry = /"err":"403: [^\n]*forbidden[^\n]*"msg":"reconcile failed; will retry slowly/;
    await waitFor('the slow retry logged', async () => slowRetry.test(operator.logs()) || undefined);

    await rbac.replaceNamespacedRole({ namespace: ns, name: 'teal-operator', body: role });
    const recovered = await waitForApp(ns, 'web', 'built and released', phase('Healthy'));
    expect(ready(recovered)).toMatchObject({ status: 'True' });
    expect(recovered.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
    expect((await getApp(ns, 'web')).status?.active?.revision).toBe(1);
  });
});
