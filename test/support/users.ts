// The people of a test: ServiceAccounts of its namespace acting as users with
// some rights on Apps, each with a token, and a client acting as one. Tests of
// RBAC (the API's actions, the CLI's refusals, the intents policy) all make
// their users here.
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { GROUP, PLURAL } from '../../src/app/schema.ts';
import { clients, kubeConfig, serviceAccountToken, waitFor } from './kube.ts';

/** The user name a ServiceAccount authenticates as. */
export const userOf = (namespace: string, sa: string): string => `system:serviceaccount:${namespace}:${sa}`;

/**
 * A ServiceAccount with a Role of these verbs on apps.teal.dev (no Role when
 * none), the verbs granted by the time this returns; its token.
 */
export async function serviceAccount(namespace: string, name: string, verbs: readonly string[] = []): Promise<string> {
  const { core, rbac } = clients();
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  if (verbs.length > 0) {
    await rbac.createNamespacedRole({
      namespace,
      body: { metadata: { name }, rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: [...verbs] }] },
    });
    await bind(namespace, name, 'Role', name);
    for (const verb of verbs) await allowed(namespace, name, verb);
  }
  return serviceAccountToken(namespace, name);
}

/** Binds a Role or ClusterRole to a ServiceAccount of the namespace, in that namespace or in where. */
export async function bind(
  namespace: string,
  sa: string,
  kind: 'Role' | 'ClusterRole',
  role: string,
  where = namespace,
): Promise<void> {
  await clients().rbac.createNamespacedRoleBinding({
    namespace: where,
    body: {
      metadata: { name: `${sa}-${role}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    },
  });
}

/**
 * Waits until the ServiceAccount may use this verb on Apps (in its namespace, or in where):
 * RBAC takes a moment to reach the authorizer's cache.
 */
export async function allowed(namespace: string, sa: string, verb: string, where = namespace): Promise<void> {
  const user = userOf(namespace, sa);
  await waitFor(`${user} may ${verb} ${PLURAL}.${GROUP} in ${where}`, async () => {
    const review = await clients().authz.createSubjectAccessReview({
      body: {
        spec: {
          user,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: { group: GROUP, resource: PLURAL, verb, namespace: where },
        },
      },
    });
    return review.status?.allowed ? true : undefined;
  });
}

/** A client of custom objects (Apps) acting with this token on the test's cluster. */
export function customObjectsAs(name: string, token: string): CustomObjectsApi {
  const cluster = kubeConfig().getCurrentCluster();
  if (!cluster) throw new Error('no cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name, token }],
    contexts: [{ name, cluster: cluster.name, user: name }],
    currentContext: name,
  });
  return kc.makeApiClient(CustomObjectsApi);
}
