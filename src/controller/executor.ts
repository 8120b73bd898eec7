// Carries out the planners' actions (ClusterAction below), one at a
// time and in order, through the reconciler's client. Every write is checked
// against leadership first; a failed write stops the rest and comes back as an
// ActionFailed that names the object and carries the API server's answer, so
// the App's status can say what went wrong.
import type { Logger } from 'pino';
import { ANN_SCALE_DOWN_AT, FINALIZER } from '../app/labels.ts';
import type { BuildAction } from '../build/plan.ts';
import { errorMessage, ignoreNotFound } from '../kube/errors.ts';
import type { RolloutAction } from '../rollout/cluster-actions.ts';
import {
  type ConfigCopy,
  configMapDigest,
  copyManifest,
  copyName,
  kindName,
  secretDigest,
} from '../rollout/config-refs.ts';
import type { ObservedService } from '../rollout/observed.ts';
import { restoredServiceManifest } from '../rollout/service.ts';
import type { ClusterClient, ConfigSource } from './cluster-client.ts';

/**
 * The App's own metadata: a finalizer held while Teal has adopted a Service
 * (it must get its selector back if the App goes), and that selector given back.
 * The reconciler asks for these itself.
 */
export type AppAction =
  | { kind: 'addFinalizer' }
  | { kind: 'removeFinalizer' }
  | { kind: 'restoreService'; service: ObservedService };

/**
 * Every write the controller makes for an App, as data: what the blue/green
 * planner (rollout/cluster-actions.ts) and the build planner (build/plan.ts)
 * return, and the reconciler's own. Declared here, above both planners, by the
 * one room that carries them all out; each planner declares only its own.
 */
export type ClusterAction = RolloutAction | BuildAction | AppAction;

export class NotLeaderError extends Error {
  constructor() {
    super('not the leader: writes are refused');
  }
}

/** The name a copy of this content gets; a Secret's digest is keyed by its source's uid. */
function copyNameOf(copy: ConfigCopy, appUid: string, sourceUid: string, content: ConfigSource): string {
  const digest =
    copy.kind === 'configmap'
      ? configMapDigest(content.data, content.binaryData)
      : secretDigest(appUid, sourceUid, content.type ?? 'Opaque', content.data);
  return copyName(appUid, copy.source, digest);
}

/** A write the API server refused (or that never got an answer), named for people. */
export class ActionFailed extends Error {
  readonly action: ClusterAction;
  /** e.g. "creating Job apps/web-build-1a2b3c". */
  readonly doing: string;
  constructor(action: ClusterAction, doing: string, cause: unknown) {
    super(`${doing}: ${errorMessage(cause)}`, { cause });
    this.name = 'ActionFailed';
    this.action = action;
    this.doing = doing;
  }
}

/** The App an action is for: its namespace, name and the resourceVersion its plan was made from. */
export interface Target {
  namespace: string;
  name: string;
  resourceVersion: string;
  finalizers: readonly string[];
}

/** What an action does, in words: for logs and for the status message when it fails. */
export function describe(target: Target, action: ClusterAction): string {
  const ns = target.namespace;
  switch (action.kind) {
    case 'createReplicaSet':
      return `creating ReplicaSet ${ns}/${action.manifest.metadata.name}`;
    case 'patchReplicaSet':
      return `updating ReplicaSet ${ns}/${action.name}`;
    case 'deleteReplicaSet':
      return `deleting ReplicaSet ${ns}/${action.name}`;
    case 'createConfigCopy':
      return `copying ${kindName(action.copy.kind)} ${ns}/${action.copy.source} to ${action.copy.name}`;
    case 'deleteConfigCopy':
      return `deleting ${kindName(action.copyKind)} ${ns}/${action.name}`;
    case 'applyService':
      return `applying ${action.role} Service ${ns}/${action.manifest.metadata.name}`;
    case 'createJob':
      return `creating build Job ${ns}/${action.manifest.metadata.name}`;
    case 'deleteJob':
      return `deleting build Job ${ns}/${action.name}`;
    case 'deleteAnalysisJob':
      return `deleting analysis Job ${ns}/${action.name}`;
    case 'addFinalizer':
      return `adding the finalizer to App ${ns}/${target.name}`;
    case 'removeFinalizer':
      return `removing the finalizer from App ${ns}/${target.name}`;
    case 'restoreService':
      return `restoring the selector of Service ${ns}/${action.service.name}`;
    case 'evictPod':
      return `evicting Pod ${ns}/${action.name}`;
  }
}

/** The log line before a write (the e2e suites read these to see who writes what). */
function logWrite(log: Logger, action: ClusterAction): void {
  switch (action.kind) {
    case 'createReplicaSet': {
      const { metadata, spec } = action.manifest;
      log.info({ replicaSet: metadata.name, replicas: spec.replicas }, 'creating ReplicaSet');
      return;
    }
    case 'patchReplicaSet':
      log.info({ replicaSet: action.name, ...replicaSetPatch(action) }, 'updating ReplicaSet');
      return;
    case 'deleteReplicaSet':
      log.info({ replicaSet: action.name }, 'deleting old ReplicaSet');
      return;
    case 'createConfigCopy':
      log.info({ kind: action.copy.kind, source: action.copy.source, copy: action.copy.name }, 'copying configuration');
      return;
    case 'deleteConfigCopy':
      log.info({ kind: action.copyKind, copy: action.name }, 'deleting a configuration copy');
      return;
    case 'applyService': {
      const { metadata, spec } = action.manifest;
      log.info({ service: metadata.name, role: action.role, selector: spec.selector }, 'applying Service');
      return;
    }
    case 'createJob': {
      const { name, labels } = action.manifest.metadata;
      log.info({ job: name, commit: labels['teal.dev/commit'] }, 'creating build Job');
      return;
    }
    case 'deleteJob':
      log.info({ job: action.name, why: action.why }, 'deleting build Job');
      return;
    case 'deleteAnalysisJob':
      log.info({ job: action.name, why: action.why }, 'deleting analysis Job');
      return;
    case 'restoreService':
      log.info({ service: action.service.name }, 'restoring the selector of an adopted Service');
      return;
    case 'evictPod':
      log.info({ pod: action.name, why: action.why }, 'evicting pod');
      return;
    default:
      log.debug({ action: action.kind }, "updating the App's finalizers");
  }
}

/** The merge patch for a ReplicaSet's size and its scale-down mark. */
function replicaSetPatch(action: Extract<ClusterAction, { kind: 'patchReplicaSet' }>) {
  return {
    ...(action.replicas !== undefined ? { spec: { replicas: action.replicas } } : {}),
    ...(action.scaleDownAt !== undefined
      ? { metadata: { annotations: { [ANN_SCALE_DOWN_AT]: action.scaleDownAt } } }
      : {}),
  };
}

export class Executor {
  private readonly client: ClusterClient;
  private readonly canWrite: (appKey: string) => boolean;

  constructor(client: ClusterClient, canWrite: (appKey: string) => boolean) {
    this.client = client;
    this.canWrite = canWrite;
  }

  /** Throws NotLeaderError unless this replica may write for this App now (sharded: it holds the App's shard). */
  guard(appKey: string): void {
    if (!this.canWrite(appKey)) throw new NotLeaderError();
  }

  /** Carries the actions out in order; the first failure stops the rest. */
  async run(target: Target, actions: readonly ClusterAction[], log: Logger): Promise<void> {
    for (const action of actions) {
      this.guard(`${target.namespace}/${target.name}`);
      logWrite(log, action);
      try {
        await this.write(target, action);
      } catch (err) {
        throw new ActionFailed(action, describe(target, action), err);
      }
    }
  }

  /**
   * Reads the source again and copies it, if it still has the content the
   * copy is named after: one changed since the plan makes this fail, and the
   * retry plans the newer content. Its data goes straight into the copy. An
   * object already of that name is used only if its content is the source's.
   */
  private async copyConfig(namespace: string, action: Extract<ClusterAction, { kind: 'createConfigCopy' }>) {
    const { copy, owner } = action;
    const what = `${kindName(copy.kind)} ${copy.source}`;
    const source = await this.client.readConfigSource(copy.kind, namespace, copy.source);
    if (!source || copyNameOf(copy, owner.uid, source.uid, source) !== copy.name) {
      throw new Error(`${what} changed (or went) since it was read; planning again`);
    }
    if (await this.client.createOnce(copyManifest(copy, namespace, action.app, owner, source))) return;
    const existing = await this.client.readConfigSource(copy.kind, namespace, copy.name);
    if (!existing || copyNameOf(copy, owner.uid, source.uid, existing) !== copy.name) {
      throw new Error(
        `${kindName(copy.kind)} ${copy.name} exists with other content than ${what}; Teal does not use it`,
      );
    }
  }

  private async write(target: Target, action: ClusterAction): Promise<void> {
    const { namespace, name, resourceVersion, finalizers } = target;
    const client = this.client;
    switch (action.kind) {
      case 'createReplicaSet':
      case 'applyService':
      case 'createJob':
        await client.apply(action.manifest);
        return;
      case 'patchReplicaSet':
        await client.patchReplicaSet(namespace, action.name, replicaSetPatch(action));
        return;
      case 'deleteReplicaSet':
        await client.deleteReplicaSet(namespace, action.name);
        return;
      case 'createConfigCopy':
        await this.copyConfig(namespace, action);
        return;
      case 'deleteConfigCopy':
        await client.deleteConfigCopy(action.copyKind, namespace, action.name, action.appUid);
        return;
      case 'deleteJob':
      case 'deleteAnalysisJob':
        await client.deleteJob(namespace, action.name);
        return;
      case 'restoreService':
        await client.apply(restoredServiceManifest(action.service));
        return;
      // Refused by a PodDisruptionBudget: the restart sees the pod still there and asks again (rollout/restart.ts).
      case 'evictPod':
        await client.evictPod(namespace, action.name);
        return;
      // Guarded by the resourceVersion the plan was made from: a stale cache gets a 409 and re-plans.
      case 'addFinalizer':
        await client.patchAppMetadata(namespace, name, {
          resourceVersion,
          finalizers: [...finalizers.filter((f) => f !== FINALIZER), FINALIZER],
        });
        return;
      case 'removeFinalizer':
        // Already gone: a stale cache asked twice.
        await ignoreNotFound(
          client.patchAppMetadata(namespace, name, {
            resourceVersion,
            finalizers: finalizers.filter((f) => f !== FINALIZER),
          }),
        );
        return;
    }
  }
}
