// Kubernetes Events for App transitions and actions, so `kubectl describe`
// and `kubectl get events` tell the story. Recording never fails a reconcile.
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, KIND } from '../app/schema.ts';
import { errorMessage } from '../kube/errors.ts';

export interface EventTarget {
  /** The App's, unless said otherwise (a shard Lease's, say). */
  apiVersion?: string;
  kind?: string;
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
}

export class EventRecorder {
  private readonly core: CoreV1Api;
  private readonly instance: string;
  private readonly log: Logger;

  constructor(kc: KubeConfig, instance: string, log: Logger) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.instance = instance;
    this.log = log;
  }

  async record(target: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    try {
      await this.core.createNamespacedEvent({
        namespace: target.namespace,
        body: {
          metadata: {
            name: `${target.name}.${now.getTime().toString(16)}${randomBytes(3).toString('hex')}`,
            namespace: target.namespace,
          },
          involvedObject: {
            apiVersion: target.apiVersion ?? API_VERSION,
            kind: target.kind ?? KIND,
            name: target.name,
            namespace: target.namespace,
            ...(target.uid ? { uid: target.uid } : {}),
            ...(target.resourceVersion ? { resourceVersion: target.resourceVersion } : {}),
          },
          type,
          reason,
          message: message.slice(0, 1024),
          source: { component: 'teal' },
          reportingComponent: 'teal.dev/controller',
          reportingInstance: this.instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.log.warn(
        { err: errorMessage(err), app: `${target.namespace}/${target.name}`, reason },
        'could not record event',
      );
    }
  }
}
