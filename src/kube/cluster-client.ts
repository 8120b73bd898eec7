// What the App reconciler reads from and writes to the API server, in one
// injected client: the writes of apply.ts, and the few reads the cache cannot
// serve (Secrets, which Teal does not watch).
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Writer } from './apply.ts';
import { ignoreNotFound } from './errors.ts';

export class ClusterClient extends Writer {
  private readonly core: CoreV1Api;

  constructor(kc: KubeConfig) {
    super(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /**
   * One value of a Secret, decoded, or undefined when the Secret or the key is
   * missing. For a measurement about to be taken: never logged, never kept.
   */
  async readSecretValue(namespace: string, name: string, key: string): Promise<string | undefined> {
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    const data = secret?.data?.[key];
    if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
    return secret?.stringData?.[key];
  }

  /** The names of the Secret's keys (never its values), or undefined when there is no such Secret. */
  async readSecretKeys(namespace: string, name: string): Promise<string[] | undefined> {
    const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
    return secret ? Object.keys(secret.data ?? {}) : undefined;
  }
}
