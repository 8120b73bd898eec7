// Carries out the planners' actions (ClusterAction below), one at a
// time and in order, through the reconciler's client. Every write is checked
// against leadership first; a failed write stops the rest and comes back as an
// ActionFailed that names the object and carries the API server's answer, so
// the App's status can say what went wrong.
import type { Logger } from 'pino';
import { ANN_SCALE_DOWN_AT, FINALIZER, LABEL_SLOT } from '../app/labels.ts';
import { buildSecretCopyManifest } from '../build/job.ts';
import type { BuildAction } from '../build/plan.ts';
import { errorMessage, ignoreNotFound } from '../kube/errors.ts';
import type { PreviewClusterAction } from '../previews/plan.ts';
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
export type ClusterAction = RolloutAction | BuildAction | AppAction | PreviewClusterAction;

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

/** The action of one kind. */
type ActionOf<K extends ClusterAction['kind']> = Extract<ClusterAction, { kind: K }>;

/** The calls of the reconciler's client the executor makes. */
export type ExecutorClient = Pick<
  ClusterClient,
  | 'apply'
  | 'patchReplicaSet'
  | 'patchRoute'
  | 'deleteReplicaSet'
  | 'readConfigSource'
  | 'createOnce'
  | 'deleteConfigCopy'
  | 'deleteJob'
  | 'resumeJob'
  | 'readOwners'
  | 'evictPod'
  | 'patchAppMetadata'
  | 'deleteApp'
>;

/** What a write has at hand: the App it is for and the reconciler's client. */
interface WriteContext {
  target: Target;
  client: ExecutorClient;
}

/** Everything the executor knows of one kind of action. */
interface ActionHandler<A extends ClusterAction> {
  /** What it does, in words: for the status message when it fails. */
  describe(target: Target, action: A): string;
  /** The log line before the write (the e2e suites read these to see who writes what). */
  log(log: Logger, action: A): void;
  /** The write; what it answers is not used. */
  write(context: WriteContext, action: A): Promise<unknown>;
}

/**
 * Every kind of action with its words, its log line and its write: a kind
 * added to ClusterAction does not compile until it has all three here.
 */
export type ActionTable = { [K in ClusterAction['kind']]: ActionHandler<ActionOf<K>> };

const deleteJob = ({ target, client }: WriteContext, action: { name: string }) =>
  client.deleteJob(target.namespace, action.name);

/** The finalizers are bookkeeping of the App's own: logged at debug only. */
const logFinalizers = (log: Logger, action: AppAction) =>
  log.debug({ action: action.kind }, "updating the App's finalizers");

const ACTIONS: ActionTable = {
  createReplicaSet: {
    describe: (t, a) => `creating ReplicaSet ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info({ replicaSet: a.manifest.metadata.name, replicas: a.manifest.spec.replicas }, 'creating ReplicaSet'),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  patchReplicaSet: {
    describe: (t, a) => `updating ReplicaSet ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ replicaSet: a.name, ...replicaSetPatch(a) }, 'updating ReplicaSet'),
    write: ({ target, client }, a) => client.patchReplicaSet(target.namespace, a.name, replicaSetPatch(a)),
  },
  deleteReplicaSet: {
    describe: (t, a) => `deleting ReplicaSet ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ replicaSet: a.name }, 'deleting old ReplicaSet'),
    write: ({ target, client }, a) => client.deleteReplicaSet(target.namespace, a.name),
  },
  createConfigCopy: {
    describe: (t, a) => `copying ${kindName(a.copy.kind)} ${t.namespace}/${a.copy.source} to ${a.copy.name}`,
    log: (log, a) => log.info({ kind: a.copy.kind, source: a.copy.source, copy: a.copy.name }, 'copying configuration'),
    write: ({ target, client }, a) => copyConfig(client, target.namespace, a),
  },
  deleteConfigCopy: {
    describe: (t, a) => `deleting ${kindName(a.copyKind)} ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ kind: a.copyKind, copy: a.name }, 'deleting a configuration copy'),
    write: ({ target, client }, a) => client.deleteConfigCopy(a.copyKind, target.namespace, a.name, a.appUid),
  },
  applyService: {
    describe: (t, a) => `applying ${a.role} Service ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info(
        { service: a.manifest.metadata.name, role: a.role, selector: a.manifest.spec.selector },
        'applying Service',
      ),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  patchRoute: {
    describe: (t, a) => `switching HTTPRoute ${t.namespace}/${a.name} to slot ${a.to}`,
    log: (log, a) => log.info({ httpRoute: a.name, to: a.to }, 'switching HTTPRoute weights'),
    write: ({ target, client }, a) => client.patchRoute(target.namespace, a.name, a.ops),
  },
  createJob: {
    describe: (t, a) => `creating build Job ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info(
        { job: a.manifest.metadata.name, commit: a.manifest.metadata.labels['teal.dev/commit'] },
        'creating build Job',
      ),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  startJob: {
    describe: (_t, a) => `starting build Job ${a.namespace}/${a.name} with its Secret copies`,
    log: (log, a) =>
      log.info(
        { job: a.name, namespace: a.namespace, secrets: a.copies.map((c) => c.source) },
        'copying the build Secrets and starting the build Job',
      ),
    write: ({ client }, a) => startJob(client, a),
  },
  deleteJob: {
    describe: (_t, a) => `deleting build Job ${a.namespace}/${a.name}`,
    log: (log, a) => log.info({ job: a.name, namespace: a.namespace, why: a.why }, 'deleting build Job'),
    write: ({ client }, a) => client.deleteJob(a.namespace, a.name),
  },
  deleteAnalysisJob: {
    describe: (t, a) => `deleting analysis Job ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ job: a.name, why: a.why }, 'deleting analysis Job'),
    write: deleteJob,
  },
  addFinalizer: {
    describe: (t) => `adding the finalizer to App ${t.namespace}/${t.name}`,
    log: logFinalizers,
    // Guarded by the resourceVersion the plan was made from: a stale cache gets a 409 and re-plans.
    write: ({ target, client }) =>
      client.patchAppMetadata(target.namespace, target.name, {
        resourceVersion: target.resourceVersion,
        finalizers: [...target.finalizers.filter((f) => f !== FINALIZER), FINALIZER],
      }),
  },
  removeFinalizer: {
    describe: (t) => `removing the finalizer from App ${t.namespace}/${t.name}`,
    log: logFinalizers,
    // Already gone: a stale cache asked twice.
    write: ({ target, client }) =>
      ignoreNotFound(
        client.patchAppMetadata(target.namespace, target.name, {
          resourceVersion: target.resourceVersion,
          finalizers: target.finalizers.filter((f) => f !== FINALIZER),
        }),
      ),
  },
  restoreService: {
    describe: (t, a) => `restoring the selector of Service ${t.namespace}/${a.service.name}`,
    log: (log, a) => log.info({ service: a.service.name }, 'restoring the selector of an adopted Service'),
    write: ({ client }, a) => client.apply(restoredServiceManifest(a.service)),
  },
  createChild: {
    describe: (t, a) => `creating preview App ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info({ preview: a.manifest.metadata.name, pullRequest: a.number, why: a.why }, 'creating preview App'),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  updateChild: {
    describe: (t, a) => `updating preview App ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info({ preview: a.manifest.metadata.name, pullRequest: a.number, why: a.why }, 'updating preview App'),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  deleteChild: {
    describe: (t, a) => `deleting preview App ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ preview: a.name, pullRequest: a.number, why: a.why }, 'deleting preview App'),
    // Bound to the uid the planner saw: an App made again under that name is not this one.
    write: ({ target, client }, a) => client.deleteApp(target.namespace, a.name, a.uid),
  },
  applyExposure: {
    describe: (t, a) => `applying ${a.manifest.kind} ${t.namespace}/${a.manifest.metadata.name}`,
    log: (log, a) =>
      log.info(
        { [a.manifest.kind === 'Ingress' ? 'ingress' : 'httpRoute']: a.manifest.metadata.name },
        'exposing preview',
      ),
    write: ({ client }, a) => client.apply(a.manifest),
  },
  evictPod: {
    describe: (t, a) => `evicting Pod ${t.namespace}/${a.name}`,
    log: (log, a) => log.info({ pod: a.name, why: a.why }, 'evicting pod'),
    // Refused by a PodDisruptionBudget: the restart sees the pod still there and asks again (rollout/restart.ts).
    write: ({ target, client }, a) => client.evictPod(target.namespace, a.name),
  },
};

/** The handler of an action's kind, the one place the kind picks it. */
const handlerOf = (action: ClusterAction): ActionHandler<ClusterAction> => ACTIONS[action.kind];

/** What an action does, in words: for logs and for the status message when it fails. */
export const describe = (target: Target, action: ClusterAction): string => handlerOf(action).describe(target, action);

/** The merge patch for a ReplicaSet's size, its scale-down mark, and (ping-pong) the slot of its new pods. */
function replicaSetPatch(action: ActionOf<'patchReplicaSet'>) {
  const template =
    action.slot !== undefined ? { template: { metadata: { labels: { [LABEL_SLOT]: action.slot } } } } : {};
  const replicas = action.replicas !== undefined ? { replicas: action.replicas } : {};
  return {
    ...(action.replicas !== undefined || action.slot !== undefined ? { spec: { ...replicas, ...template } } : {}),
    ...(action.scaleDownAt !== undefined
      ? { metadata: { annotations: { [ANN_SCALE_DOWN_AT]: action.scaleDownAt } } }
      : {}),
  };
}

/**
 * Reads the source again and copies it, if it still has the content the
 * copy is named after: one changed since the plan makes this fail, and the
 * retry plans the newer content. Its data goes straight into the copy. An
 * object already of that name is used only if its content is the source's.
 */
async function copyConfig(client: ExecutorClient, namespace: string, action: ActionOf<'createConfigCopy'>) {
  const { copy, owner } = action;
  const what = `${kindName(copy.kind)} ${copy.source}`;
  const source = await client.readConfigSource(copy.kind, namespace, copy.source);
  if (!source || copyNameOf(copy, owner.uid, source.uid, source) !== copy.name) {
    throw new Error(`${what} changed (or went) since it was read; planning again`);
  }
  if (await client.createOnce(copyManifest(copy, namespace, action.app, owner, source))) return;
  const existing = await client.readConfigSource(copy.kind, namespace, copy.name);
  if (!existing || copyNameOf(copy, owner.uid, source.uid, existing) !== copy.name) {
    throw new Error(`${kindName(copy.kind)} ${copy.name} exists with other content than ${what}; Teal does not use it`);
  }
}

/**
 * Copies a build's Secrets from the App's namespace into the build namespace,
 * owned by its Job, then lets the Job start. Safe to run again after a crash
 * between the two: a copy already there is kept if this Job owns it. A source
 * Secret that is missing is not copied: the build meets it missing as it would
 * in the App's namespace.
 */
async function startJob(client: ExecutorClient, action: ActionOf<'startJob'>): Promise<void> {
  const job = { namespace: action.namespace, name: action.name, uid: action.uid };
  for (const copy of action.copies) {
    const source = await client.readConfigSource('secret', action.appNamespace, copy.source);
    if (!source) continue;
    if (await client.createOnce(buildSecretCopyManifest(copy, job, source))) continue;
    const owners = await client.readOwners('secret', action.namespace, copy.name);
    if (!owners?.includes(action.uid)) {
      throw new Error(
        `Secret ${action.namespace}/${copy.name} exists and is not this build's copy; Teal does not use it`,
      );
    }
  }
  await client.resumeJob(action.namespace, action.name, action.uid);
}

export class Executor {
  private readonly client: ExecutorClient;
  private readonly canWrite: (appKey: string) => boolean;

  constructor(client: ExecutorClient, canWrite: (appKey: string) => boolean) {
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
      const handler = handlerOf(action);
      handler.log(log, action);
      try {
        await handler.write({ target, client: this.client }, action);
      } catch (err) {
        throw new ActionFailed(action, handler.describe(target, action), err);
      }
    }
  }
}
