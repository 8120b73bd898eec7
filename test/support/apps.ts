// Test helpers for Apps on the real control plane.
import { randomUUID } from 'node:crypto';
import type { V1ReplicaSet } from '@kubernetes/client-node';
import type { Action } from '../../src/app/intents.ts';
import { intentAnnotation } from '../../src/app/intents.ts';
import { LABEL_APP, LABEL_HASH, LABEL_SLOT } from '../../src/app/labels.ts';
import { type AppInput, type AppStatus, GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { clients, kubectl, WAIT_MS, waitFor } from './kube.ts';
import { watchChanges } from './watch.ts';

const { custom, apps, core, discovery } = clients();

export interface StoredApp {
  metadata: { name: string; namespace: string; resourceVersion: string; generation: number; uid: string };
  spec: Record<string, unknown>;
  status?: AppStatus;
}

export async function createApp(namespace: string, body: AppInput): Promise<StoredApp> {
  return (await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    body,
  })) as StoredApp;
}

export async function getApp(namespace: string, name: string): Promise<StoredApp> {
  return (await custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    name,
  })) as StoredApp;
}

/** A JSON merge patch of the spec, as `kubectl patch --type merge` does. */
export async function patchSpec(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
  const { code, stderr } = await kubectl([
    'patch',
    `apps.${GROUP}`,
    name,
    '-n',
    namespace,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec }),
  ]);
  if (code !== 0) throw new Error(stderr);
}

/** Records an action the way the API and CLI do: an intent annotation. */
export async function intent(
  namespace: string,
  name: string,
  action: Action,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const id = randomUUID();
  const value = JSON.stringify({ id, by: 'e2e', via: 'kubectl', at: new Date().toISOString(), ...extra });
  const { code, stderr } = await kubectl([
    'annotate',
    '--overwrite',
    `apps.${GROUP}`,
    name,
    '-n',
    namespace,
    `${intentAnnotation(action)}=${value}`,
  ]);
  if (code !== 0) throw new Error(stderr);
  return id;
}

export async function waitForApp(
  namespace: string,
  name: string,
  what: string,
  check: (app: StoredApp) => boolean,
  timeoutMs = WAIT_MS,
): Promise<StoredApp> {
  return waitFor(
    `${namespace}/${name}: ${what}`,
    async () => {
      const app = await getApp(namespace, name);
      return check(app) ? app : undefined;
    },
    { timeoutMs },
  );
}

export const phase = (p: string) => (app: StoredApp) =>
  app.status?.phase === p && app.status.observedGeneration === app.metadata.generation;

export async function selectorHash(namespace: string, service: string): Promise<string | undefined> {
  const svc = await core.readNamespacedService({ namespace, name: service });
  return svc.spec?.selector?.[LABEL_HASH];
}

/** Revisions of different Apps may share a hash: always select by App too. */
const revisionSelector = (app: string, hash: string) => `${LABEL_APP}=${app},${LABEL_HASH}=${hash}`;

export async function replicaSetOf(namespace: string, app: string, hash: string): Promise<V1ReplicaSet | undefined> {
  const list = await apps.listNamespacedReplicaSet({ namespace, labelSelector: revisionSelector(app, hash) });
  return list.items[0];
}

export async function replicaSetsOf(namespace: string, app: string): Promise<V1ReplicaSet[]> {
  return (await apps.listNamespacedReplicaSet({ namespace, labelSelector: `teal.dev/app=${app}` })).items;
}

/** Ready endpoint addresses behind a Service, from its EndpointSlices. */
export async function readyEndpoints(namespace: string, service: string): Promise<string[]> {
  const slices = await discovery.listNamespacedEndpointSlice({
    namespace,
    labelSelector: `kubernetes.io/service-name=${service}`,
  });
  return slices.items
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready)
    .flatMap((e) => e.addresses)
    .sort();
}

export async function podIPs(namespace: string, app: string, hash: string): Promise<string[]> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: revisionSelector(app, hash) });
  return pods.items
    .map((p) => p.status?.podIP ?? '')
    .filter(Boolean)
    .sort();
}

export const fullyAvailable = (rs: V1ReplicaSet | undefined): boolean => {
  const want = rs?.spec?.replicas ?? -1;
  return (
    rs !== undefined &&
    (rs.status?.observedGeneration ?? 0) >= (rs.metadata?.generation ?? 0) &&
    (rs.status?.replicas ?? 0) === want &&
    (rs.status?.availableReplicas ?? 0) === want
  );
};

/** A ReplicaSet scaled to 0 with no pod left: it serves nothing, so nothing it serves can fail. */
const drained = (rs: V1ReplicaSet) => (rs.spec?.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0;

/**
 * Invariant 1 (DESIGN §5), the one rule for every routing object Teal writes:
 * traffic goes only where every ReplicaSet serving it is fully available.
 * `serving` holds the ReplicaSets one routing target selects (an active
 * Service's revision; the ReplicaSets in a slot that a route gives a weight);
 * a drained one serves nothing, and at least one must have pods, or the
 * traffic has nowhere to go. An abort returns traffic to stable while stable
 * is up: no exception is needed for it. Returns why not, or undefined.
 */
export function unavailableServing(serving: (V1ReplicaSet | undefined)[]): string | undefined {
  const live = serving.filter((rs): rs is V1ReplicaSet => rs !== undefined && !drained(rs));
  if (live.length === 0) return 'no ReplicaSet with pods serves it';
  const bad = live.filter((rs) => !fullyAvailable(rs));
  if (bad.length === 0) return undefined;
  return bad
    .map((rs) => `ReplicaSet ${rs.metadata?.name} was ${JSON.stringify(rs.status)} of ${rs.spec?.replicas}`)
    .join('; ');
}

/**
 * Invariant 1, checked at every change of an active Service in a namespace:
 * the selector never points at a ReplicaSet that is not fully available.
 */
export async function watchActiveServices(
  namespace: string,
): Promise<{ violations: string[]; checks: () => number; stop: () => void }> {
  const violations: string[] = [];
  let checks = 0;
  const seen = new Map<string, string>();
  const stop = await watchChanges(
    `/api/v1/namespaces/${namespace}/services`,
    { labelSelector: 'teal.dev/role=active' },
    (type, obj: { metadata?: { name?: string }; spec?: { selector?: Record<string, string> } }) => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const name = obj.metadata?.name ?? '';
      const app = obj.spec?.selector?.[LABEL_APP] ?? '';
      const hash = obj.spec?.selector?.[LABEL_HASH];
      if (!hash || hash === 'none' || seen.get(name) === hash) return;
      seen.set(name, hash);
      checks += 1;
      void replicaSetOf(namespace, app, hash).then((rs) => {
        const why = unavailableServing([rs]);
        if (why) violations.push(`${name} switched to ${hash} while ${why}`);
      });
    },
  );
  return { violations, checks: () => checks, stop };
}

/**
 * Invariant 1 for ping-pong Apps, checked at every change of the weights of an
 * HTTPRoute in a namespace: every backendRef of weight > 0 to a slot Service
 * is served only by fully available ReplicaSets (unavailableServing, the rule
 * the active Services are held to). `slots` maps each slot Service to its App
 * and slot (its selector); backendRefs to other Services are not Teal's and
 * are not checked.
 */
export async function watchRoutes(
  namespace: string,
  slots: Record<string, { app: string; slot: string }>,
): Promise<{ violations: string[]; checks: () => number; settled: () => Promise<void>; stop: () => void }> {
  const violations: string[] = [];
  let checks = 0;
  const pending = new Set<Promise<void>>();
  const seen = new Map<string, string>();
  type Route = {
    metadata?: { name?: string };
    spec?: { rules?: { backendRefs?: { name?: string; weight?: number }[] }[] };
  };
  const stop = await watchChanges(
    `/apis/gateway.networking.k8s.io/v1/namespaces/${namespace}/httproutes`,
    {},
    (type, route: Route) => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const refs = (route.spec?.rules ?? []).flatMap((r) => r.backendRefs ?? []);
      const served = refs.filter((b) => (b.weight ?? 1) > 0 && b.name && slots[b.name]).map((b) => slots[b.name ?? '']);
      const key = JSON.stringify(served);
      if (seen.get(route.metadata?.name ?? '') === key) return;
      seen.set(route.metadata?.name ?? '', key);
      for (const target of served) {
        if (!target) continue;
        checks += 1;
        const what = `HTTPRoute ${route.metadata?.name} sent traffic to slot ${target.slot}`;
        const check = replicaSetsOf(namespace, target.app)
          .then((all) => {
            const inSlot = all.filter((rs) => rs.spec?.template?.metadata?.labels?.[LABEL_SLOT] === target.slot);
            const why = unavailableServing(inSlot);
            if (why) violations.push(`${what} while ${why}`);
          })
          // A check that could not be made is no pass.
          .catch((err: unknown) => void violations.push(`${what}, unchecked: ${String(err)}`))
          .finally(() => pending.delete(check));
        pending.add(check);
      }
    },
  );
  /** Resolves once every check begun so far has its verdict. */
  const settled = async () => {
    await Promise.allSettled([...pending]);
  };
  return { violations, checks: () => checks, settled, stop };
}

/** A first release of e2eApp(name), a new image into preview, and its promotion. */
export async function releaseAndPromote(namespace: string, name: string): Promise<StoredApp> {
  await createApp(namespace, e2eApp(name));
  await waitForApp(namespace, name, 'first release', phase('Healthy'));
  await patchSpec(namespace, name, { image: 'registry.example.com/team/web:2' });
  await waitForApp(namespace, name, 'preview', phase('Paused'));
  await intent(namespace, name, 'promote');
  return waitForApp(namespace, name, 'promoted', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
}

/**
 * Many Apps of one namespace, each e2eApp(name), created `inFlight` at a time: real objects of the
 * API server for the tests that need thousands (the dashboard's windowed rows).
 */
export async function createManyApps(namespace: string, names: readonly string[], inFlight = 16): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++] as string;
      await createApp(namespace, e2eApp(name));
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, names.length) }, worker));
}
