// Helpers for the blue/green parity tests: what a test must see that a poll
// could miss (every state a ReplicaSet went through), Events about an App,
// pods that become Ready by hand, and writes made exactly as Teal makes them
// (to reproduce a switch whose status write was lost).
import { pino } from 'pino';
import { readIntents } from '../../src/app/intents.ts';
import { ANN_REVISION, ANN_SCALE_DOWN_AT, LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { Writer } from '../../src/controller/apply.ts';
import { ClusterClient } from '../../src/controller/cluster-client.ts';
import { Executor } from '../../src/controller/executor.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import type { RolloutAction } from '../../src/rollout/cluster-actions.ts';
import { type ObservedReplicaSet, observeReplicaSet, observeService } from '../../src/rollout/observed.ts';
import { ownedServiceManifest, serviceName } from '../../src/rollout/service.ts';
import { targetRevision } from '../../src/rollout/target.ts';
import {
  createApp,
  fullyAvailable,
  getApp,
  patchSpec,
  phase,
  replicaSetOf,
  replicaSetsOf,
  selectorHash,
  waitForApp,
} from './apps.ts';
import { clients, kubeConfig, WAIT_MS, waitFor } from './kube.ts';
import { watchChanges } from './watch.ts';

const { core, apps } = clients();

/** One observed state of a ReplicaSet, as a watch delivered it. */
export interface ReplicaSetState {
  name: string;
  uid: string;
  hash: string;
  revision: string | undefined;
  replicas: number;
  scaleDownAt: string | undefined;
}

export interface ReplicaSetRecorder {
  /** Every distinct state seen, in the order the API server sent them. */
  states: ReplicaSetState[];
  /** The states of one revision (by pod-template hash). */
  of: (hash: string) => ReplicaSetState[];
  stop: () => void;
}

type RawReplicaSet = {
  metadata?: { name?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { replicas?: number };
};

/**
 * Records every state of an App's ReplicaSets from a watch, so a test can
 * assert on a state that lasts only a moment (the old revision still up,
 * inside its scale-down delay) without racing against it.
 */
export async function recordReplicaSets(namespace: string, app: string): Promise<ReplicaSetRecorder> {
  const states: ReplicaSetState[] = [];
  const last = new Map<string, string>();
  const stop = await watchChanges(
    `/apis/apps/v1/namespaces/${namespace}/replicasets`,
    { labelSelector: `${LABEL_APP}=${app}` },
    (type, obj: RawReplicaSet) => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const m = obj.metadata;
      const state: ReplicaSetState = {
        name: m?.name ?? '',
        uid: m?.uid ?? '',
        hash: m?.labels?.[LABEL_HASH] ?? '',
        revision: m?.annotations?.[ANN_REVISION],
        replicas: obj.spec?.replicas ?? 0,
        scaleDownAt: m?.annotations?.[ANN_SCALE_DOWN_AT],
      };
      const key = JSON.stringify(state);
      if (last.get(state.uid) === key) return;
      last.set(state.uid, key);
      states.push(state);
    },
  );
  return { states, of: (hash) => states.filter((s) => s.hash === hash), stop };
}

export interface AppEvent {
  type: string;
  reason: string;
  message: string;
}

/** Events whose involved object is the App (not a ReplicaSet or Service of the same name). */
export async function appEvents(namespace: string, app: string): Promise<AppEvent[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${app}` });
  return list.items
    .filter((e) => e.involvedObject.kind === 'App')
    .map((e) => ({ type: e.type ?? '', reason: e.reason ?? '', message: e.message ?? '' }));
}

/** Waits for an App Event that matches; returns it. */
export async function waitForAppEvent(
  namespace: string,
  app: string,
  what: string,
  match: (e: AppEvent) => boolean,
  timeoutMs = WAIT_MS,
): Promise<AppEvent> {
  return waitFor(`${namespace}/${app}: event ${what}`, async () => (await appEvents(namespace, app)).find(match), {
    timeoutMs,
  });
}

/** Running pods of one revision (not being deleted). */
export async function podCount(namespace: string, app: string, hash: string): Promise<number> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `${LABEL_APP}=${app},${LABEL_HASH}=${hash}` });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp).length;
}

/** Waits until a revision runs exactly `count` pods. */
export async function waitForPods(namespace: string, app: string, hash: string, count: number): Promise<void> {
  await waitFor(`${namespace}/${app}: ${count} pods of ${hash}`, async () =>
    (await podCount(namespace, app, hash)) === count ? true : undefined,
  );
}

/**
 * Makes the pods of a revision Ready, as a kubelet would once a slow
 * readiness probe passes: pods labelled kwok.teal.dev/not-ready stay
 * unready until then (KWOK leaves a Running pod's conditions alone).
 */
export async function makePodsReady(namespace: string, app: string, hash: string): Promise<number> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `${LABEL_APP}=${app},${LABEL_HASH}=${hash}` });
  let made = 0;
  for (const pod of pods.items) {
    const name = pod.metadata?.name;
    if (!name || pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Running') continue;
    const now = new Date();
    const conditions = (pod.status.conditions ?? []).map((c) =>
      c.type === 'Ready' || c.type === 'ContainersReady'
        ? { ...c, status: 'True', reason: undefined, lastTransitionTime: now }
        : c,
    );
    const containerStatuses = (pod.status.containerStatuses ?? []).map((s) => ({ ...s, ready: true }));
    await core.replaceNamespacedPodStatus({
      namespace,
      name,
      body: { ...pod, status: { ...pod.status, conditions, containerStatuses } },
    });
    made += 1;
  }
  return made;
}

/**
 * Points an App's (Teal-owned) active Service at a revision exactly as Teal's
 * own switch does: the same manifest, server-side applied by field manager
 * "teal" with the same teal.dev/applied annotation. Run with the operator
 * stopped, it leaves the state a kill -9 between switch and status write does.
 */
export async function switchActiveAsTeal(namespace: string, name: string, hash: string): Promise<void> {
  const validation = validateApp(await getApp(namespace, name));
  if (!validation.ok) throw new Error(`App ${name} does not validate: ${validation.errors.join('; ')}`);
  await new Writer(kubeConfig()).apply(ownedServiceManifest(validation.app, 'active', hash));
}

/** Creates an App and waits for its first release to be Healthy; returns the active revision's hash. */
export async function releaseFirst(namespace: string, body: AppInput): Promise<string> {
  await createApp(namespace, body);
  await waitForApp(namespace, body.metadata.name, 'first release Healthy', phase('Healthy'));
  const active = body.spec.strategy?.blueGreen?.activeService ?? body.metadata.name;
  const hash = await selectorHash(namespace, active);
  if (!hash || !/^[0-9a-f]{10}$/.test(hash)) throw new Error(`active Service ${active} selects ${hash}`);
  return hash;
}

/** A new image: a new revision, as Argo's e2e UpdateSpec makes one. */
export async function newImage(namespace: string, name: string, tag: string, spec: Record<string, unknown> = {}) {
  await patchSpec(namespace, name, { image: `registry.example.com/team/web:${tag}`, ...spec });
}

/** A pod template whose pods run but are not Ready until makePodsReady. */
export const notReadyTemplate = {
  metadata: { labels: { 'kwok.teal.dev/not-ready': 'true' } },
  spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] },
};

/** The hash of the one ReplicaSet of an App that is not `known`, once it exists. */
export async function waitForNewReplicaSet(namespace: string, app: string, known: readonly string[]): Promise<string> {
  return waitFor(`${namespace}/${app}: a new ReplicaSet`, async () => {
    const found = (await replicaSetsOf(namespace, app))
      .map((rs) => rs.metadata?.labels?.[LABEL_HASH] ?? '')
      .find((h) => h !== '' && !known.includes(h));
    return found;
  });
}

/** Waits until a Service selects a revision. */
export async function waitForSelector(namespace: string, service: string, hash: string, what: string): Promise<void> {
  await waitFor(`${namespace}/${service} ${what} (${hash})`, async () =>
    (await selectorHash(namespace, service)) === hash ? true : undefined,
  );
}

/** spec.replicas of one revision's ReplicaSet, once it equals `want` (and, if asked, that many are available). */
export async function waitForReplicaSetSize(
  namespace: string,
  app: string,
  hash: string,
  want: number,
  { available = false, timeoutMs = WAIT_MS } = {},
): Promise<void> {
  await waitFor(
    `${namespace}/${app}: ReplicaSet ${hash} at ${want}${available ? ', all available' : ''}`,
    async () => {
      const rs = await replicaSetOf(namespace, app, hash);
      if (rs?.spec?.replicas !== want) return undefined;
      return !available || fullyAvailable(rs) ? true : undefined;
    },
    { timeoutMs },
  );
}

/**
 * Runs `act` once, as soon as a watch sees the Service select `hash`: to kill
 * the operator right after its switch, before it can write status.
 */
export async function onSelectorChange(
  namespace: string,
  service: string,
  hash: string,
  act: () => Promise<void>,
): Promise<{ done: Promise<void>; stop: () => void }> {
  let fire: () => void = () => {};
  const seen = new Promise<void>((resolve) => {
    fire = resolve;
  });
  const stop = await watchChanges(
    `/api/v1/namespaces/${namespace}/services`,
    { fieldSelector: `metadata.name=${service}` },
    (_type, obj: { spec?: { selector?: Record<string, string> } }) => {
      if (obj.spec?.selector?.[LABEL_HASH] === hash) fire();
    },
  );
  const done = seen.then(async () => {
    await act();
    stop();
  });
  return { done, stop };
}

/** Makes a revision's `count` pods Ready, retrying until its ReplicaSet counts them available. */
export async function makeReady(namespace: string, app: string, hash: string, count: number): Promise<void> {
  await waitFor(`${namespace}/${app}: ${count} pods of ${hash} made ready`, async () => {
    if ((await podCount(namespace, app, hash)) !== count) return undefined;
    await makePodsReady(namespace, app, hash);
    const rs = await replicaSetOf(namespace, app, hash);
    return (rs?.status?.availableReplicas ?? 0) >= count ? true : undefined;
  });
}

/**
 * Runs one reconcile of an image App by hand, with the operator stopped:
 * Teal's own planner over what the cluster holds now, and every write it
 * asks for made as the reconciler makes it, except the last one, the status
 * write. That is the state a kill -9 (or a lost status write) just before
 * the status leaves, whatever the planner's version decides. Returns the
 * actions it carried out.
 */
export async function reconcileWithoutStatus(namespace: string, name: string): Promise<RolloutAction[]> {
  const stored = await getApp(namespace, name);
  const validation = validateApp(stored);
  if (!validation.ok) throw new Error(`App ${name} does not validate: ${validation.errors.join('; ')}`);
  const app = validation.app;
  const listed = await apps.listNamespacedReplicaSet({ namespace, labelSelector: `${LABEL_APP}=${name}` });
  const replicaSets = listed.items.map(observeReplicaSet).filter((rs): rs is ObservedReplicaSet => !!rs);
  const service = async (role: 'active' | 'preview') =>
    observeService(
      await core.readNamespacedService({ namespace, name: serviceName(app, role) }).catch(() => undefined),
    );
  const [activeService, previewService] = [await service('active'), await service('preview')];
  const { intents } = readIntents(app.metadata.annotations);
  const result = plan({
    app,
    observed: {
      replicaSets,
      ...(activeService ? { activeService } : {}),
      ...(previewService ? { previewService } : {}),
    },
    now: new Date(),
    target: targetRevision(app),
    intents,
  });
  // Exactly as the operator writes them: its own executor, with no leader to defer to.
  const executor = new Executor(new ClusterClient(kubeConfig()), () => true);
  const target = { namespace, name, resourceVersion: stored.metadata.resourceVersion ?? '', finalizers: [] };
  await executor.run(target, result.actions, pino({ level: 'silent' }));
  return result.actions;
}
