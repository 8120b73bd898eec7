// Test helpers for the shared control plane: clients, a namespace per test
// file, and polling.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { inject } from 'vitest';

const run = promisify(execFile);

export function kubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(inject('kubeconfig'));
  return kc;
}

export function clients(kc = kubeConfig()) {
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    batch: kc.makeApiClient(k8s.BatchV1Api),
    rbac: kc.makeApiClient(k8s.RbacAuthorizationV1Api),
    authn: kc.makeApiClient(k8s.AuthenticationV1Api),
    authz: kc.makeApiClient(k8s.AuthorizationV1Api),
    discovery: kc.makeApiClient(k8s.DiscoveryV1Api),
    ext: kc.makeApiClient(k8s.ApiextensionsV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
  };
}

/** Creates a namespace with a unique name; the returned function deletes it. */
export async function createNamespace(prefix: string): Promise<{ name: string; remove: () => Promise<void> }> {
  const { core } = clients();
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels: { 'teal.dev/test': 'true' } } } });
  return {
    name,
    remove: async () => {
      await core.deleteNamespace({ name }).catch(() => {});
    },
  };
}

export { WAIT_MS, waitFor } from './wait.ts';

/** Runs the cluster's real kubectl. */
export async function kubectl(
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const bin = join(inject('binDir'), 'kubectl');
  const env = { ...process.env, KUBECONFIG: inject('kubeconfig') };
  try {
    const child = run(bin, args, { env });
    if (input !== undefined) child.child.stdin?.end(input);
    const { stdout, stderr } = await child;
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
  }
}

/** A fresh TokenRequest token of a ServiceAccount, for the API server's own audience. */
export async function serviceAccountToken(namespace: string, name: string): Promise<string> {
  const { core } = clients();
  const token = (await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [] } } }))
    .status?.token;
  if (!token) throw new Error(`no token for ${namespace}/${name}`);
  return token;
}

/** Writes a kubeconfig for the test's cluster that acts with this token (in this namespace, when given). */
export async function tokenKubeconfig(path: string, user: string, token: string, namespace?: string): Promise<string> {
  const cluster = kubeConfig().getCurrentCluster();
  if (!cluster) throw new Error('no cluster');
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cluster.server, 'certificate-authority': cluster.caFile } }],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: user, context: { cluster: 'c', user: user, ...(namespace ? { namespace } : {}) } }],
      'current-context': user,
    }),
  );
  return path;
}

/** Writes a kubeconfig that acts as a ServiceAccount, with a fresh TokenRequest token. */
export async function serviceAccountKubeconfig(namespace: string, name: string, path: string): Promise<string> {
  return tokenKubeconfig(path, name, await serviceAccountToken(namespace, name));
}

/** kubectl auth can-i; "pods/log" means the log subresource (kubectl reads "pods/x" as a name). */
export async function canI(verb: string, resource: string, as: string, scope: string[]): Promise<string> {
  const [kind, sub] = resource.split('/');
  const args = ['auth', 'can-i', verb, kind ?? resource, ...(sub ? ['--subresource', sub] : []), '--as', as];
  const { stdout, stderr, code } = await kubectl([...args, ...scope]);
  // can-i exits 1 for "no"; anything else on stderr is a broken question, not an answer.
  if (stdout.trim() === '' || (code !== 0 && stdout.trim() !== 'no')) throw new Error(`can-i failed: ${stderr}`);
  return stdout.trim();
}
