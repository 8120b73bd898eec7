// The user a bench's page or stream acts as: a ServiceAccount that may read
// (get, list) the Apps of one namespace, and a token of it. The dashboard and
// App-Event benches both need exactly this one.
import { GROUP, PLURAL } from '../src/app/schema.ts';
import { type Cluster, kubectlOutput } from '../test/cluster/cluster.ts';

/** Makes the ServiceAccount `viewer` in the namespace, allowed to read its Apps; returns a 4-hour token of it. */
export async function appsViewerToken(cluster: Cluster, namespace: string): Promise<string> {
  await kubectlOutput(cluster, ['create', 'serviceaccount', 'viewer', '-n', namespace]);
  await kubectlOutput(cluster, [
    'create',
    'role',
    'viewer',
    '-n',
    namespace,
    '--verb=get,list',
    `--resource=${PLURAL}.${GROUP}`,
  ]);
  await kubectlOutput(cluster, [
    'create',
    'rolebinding',
    'viewer',
    '-n',
    namespace,
    '--role=viewer',
    `--serviceaccount=${namespace}:viewer`,
  ]);
  return (await kubectlOutput(cluster, ['create', 'token', 'viewer', '-n', namespace, '--duration=4h'])).trim();
}
