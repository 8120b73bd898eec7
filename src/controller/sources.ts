// The link between the git poller and the reconciler: Apps say what they
// follow, the poller resolves each repository once per interval, and every
// change queues the Apps concerned. Credentials are read from Secrets when a
// repository is polled; they are never cached or logged.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ResolvedSource, SourceFailure } from '../build/status.ts';
import { credentialsFromSecretData } from '../git/credentials.ts';
import { isGitError } from '../git/errors.ts';
import { type ResolveOutcome, SourcePoller } from '../git/poller.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import type { FollowSpec, SourceView } from './reconciler.ts';

export interface SourcesOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  allowFile: boolean;
  /** Called with the Apps whose source changed. */
  changed: (appKeys: string[]) => void;
  onPoll?: ConstructorParameters<typeof SourcePoller>[0]['onPoll'];
}

interface State {
  resolved?: ResolvedSource;
  failure?: SourceFailure;
}

export class Sources implements SourceView {
  readonly poller: SourcePoller;
  private readonly states = new Map<string, State>();
  private readonly core: CoreV1Api;

  constructor(options: SourcesOptions) {
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    const log = options.logger.child({ component: 'git' });
    this.poller = new SourcePoller({
      allowFile: options.allowFile,
      // credentialsKey is "namespace/secret".
      credentials: async (key) => {
        const [namespace = '', name = ''] = key.split('/');
        const secret = await ignoreNotFound(this.core.readNamespacedSecret({ namespace, name }));
        if (!secret) throw new Error(`Secret ${key} not found`);
        return credentialsFromSecretData(secret.data, name);
      },
      onResolved: (appKeys, result) => {
        for (const key of appKeys) this.states.set(key, toState(result, new Date().toISOString()));
        log.debug({ apps: appKeys.length, ok: !isGitError(result) }, 'source changed');
        options.changed(appKeys);
      },
      onCallbackError: (err) => log.warn({ err: String(err) }, 'source callback failed'),
      ...(options.onPoll ? { onPoll: options.onPoll } : {}),
    });
  }

  follow(appKey: string, spec: FollowSpec): void {
    this.poller.watch(appKey, {
      url: spec.url,
      ref: spec.ref,
      interval: spec.pollIntervalMs,
      credentialsKey: spec.secretName ? `${spec.namespace}/${spec.secretName}` : undefined,
    });
  }

  forget(appKey: string): void {
    this.poller.unwatch(appKey);
    this.states.delete(appKey);
  }

  refresh(appKey: string): void {
    this.poller.trigger([appKey]);
  }

  state(appKey: string): State | undefined {
    return this.states.get(appKey);
  }

  stop(): void {
    this.poller.stop();
  }
}

function toState(result: ResolveOutcome, now: string): State {
  if (isGitError(result)) return { failure: { reason: result.reason, message: result.message } };
  return { resolved: { ref: result.ref, commit: result.commit, resolvedAt: now } };
}
