// config/policy/intents.yaml and the shipped roles on the real API server:
// recording an action with one's own credentials needs the action's verb, not
// only `patch`, and changing anything else of an App needs `update`, so the
// `patch` a promoter holds for the kubectl plugin changes nothing but intents.
// Every shipped role (config/rbac/roles.yaml, the chart's user roles, and the
// built-in view, edit and admin they aggregate into) is tried with kubectl,
// kubectl teal and the HTTP API of an operator running as its shipped ClusterRole.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTIONS, intentAnnotation } from '../../src/app/intents.ts';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp, phase, waitForApp } from '../support/apps.ts';
import { tealAs } from '../support/cli.ts';
import { render } from '../support/helm.ts';
import { clients, createNamespace, kubeConfig, kubectl, tokenKubeconfig, waitFor } from '../support/kube.ts';
import { find, type Manifest, parseManifests } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { allowed, bind, customObjectsAs, serviceAccount, userOf } from '../support/users.ts';

const { core, custom, objects } = clients();
const CONFIG = new URL('../../config', import.meta.url).pathname;
const run = randomBytes(3).toString('hex');
/** The policy's binding here covers this file's namespaces only (the shipped one covers all). */
const bindingName = `teal-intents-test-${run}`;
/** The chart's user roles, rendered for a release of this name: `<release>-viewer` and so on. */
const chartRelease = `teal-policy-${run}`;
/** config/rbac/cluster/operator.yaml's ClusterRole, under a name of this run. */
const operatorRole = `teal-operator-policy-${run}`;
const APP = 'guarded';

let ns: string;
let watched: string;
let dir: string;
let operator: Operator | undefined;
const removers: (() => Promise<void>)[] = [];
/** Cluster-scoped objects this file made, deleted after it. */
const made: Manifest[] = [];

const configObjects = async (path: string) => parseManifests(await readFile(join(CONFIG, path), 'utf8'));
const apply = (object: Manifest) =>
  objects.patch(object, undefined, undefined, 'teal-test', true, PatchStrategy.ServerSideApply);

/** A client acting as a ServiceAccount of ns with the given verbs on apps.teal.dev. */
const actingAs = async (name: string, verbs: string[]): Promise<CustomObjectsApi> =>
  customObjectsAs(name, await serviceAccount(ns, name, verbs));

let lastMessage = '';

/** A merge patch of one annotation (null removes it); the HTTP status of the answer. */
async function annotate(api: CustomObjectsApi, key: string, value: string | null): Promise<number> {
  try {
    await api.patchNamespacedCustomObject(
      {
        group: 'teal.dev',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'apps',
        name: APP,
        body: { metadata: { annotations: { [key]: value } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    return 200;
  } catch (err) {
    if (err instanceof ApiException) {
      lastMessage = (JSON.parse(String(err.body)) as { message?: string }).message ?? String(err.body);
      return err.code;
    }
    throw err;
  }
}

// ---- the shipped roles, and who holds them ----

type Kind = 'reader' | 'promoter' | 'admin';

/** Subject name, the ClusterRole bound to it, and what the role is for. */
const SUBJECTS: [string, string, Kind][] = [
  ['config-viewer', 'teal-viewer', 'reader'],
  ['config-promoter', 'teal-promoter', 'promoter'],
  ['config-admin', 'teal-admin', 'admin'],
  ['chart-viewer', `${chartRelease}-viewer`, 'reader'],
  ['chart-promoter', `${chartRelease}-promoter`, 'promoter'],
  ['chart-admin', `${chartRelease}-admin`, 'admin'],
  ['view', 'view', 'reader'],
  ['edit', 'edit', 'promoter'],
  ['admin', 'admin', 'admin'],
];

interface Subject {
  user: string;
  kubeconfig: string;
  token: string;
}
const subjects = new Map<string, Subject>();
const subject = (name: string): Subject => {
  const s = subjects.get(name);
  if (!s) throw new Error(`no subject ${name}`);
  return s;
};

/** A ServiceAccount of ns bound to role in ns and watched; waits until RBAC says what the role is for. */
async function holder(name: string, role: string, kind: Kind): Promise<void> {
  const token = await serviceAccount(ns, name);
  await Promise.all([bind(ns, name, 'ClusterRole', role), bind(ns, name, 'ClusterRole', role, watched)]);
  // A role's rules are aggregated all at once, so an admin's apps/scale comes with update.
  const verb = { reader: 'get', promoter: 'pause', admin: 'update' }[kind];
  for (const where of [ns, watched]) await allowed(ns, name, verb, where);
  const user = userOf(ns, name);
  subjects.set(name, { user, token, kubeconfig: await tokenKubeconfig(join(dir, `${name}.kubeconfig`), name, token) });
}

/** Two namespaces under this file's binding of the policy: ns for the table, watched for the operator. */
async function namespaces(): Promise<void> {
  for (const prefix of ['policy', 'policy-op']) {
    const created = await createNamespace(prefix);
    removers.push(created.remove);
    if (prefix === 'policy') ns = created.name;
    else watched = created.name;
    await core.patchNamespace(
      { name: created.name, body: { metadata: { labels: { 'teal.dev/policy-test': run } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

/** config/policy/intents.yaml, its binding limited to this file's namespaces. */
async function installPolicy(): Promise<void> {
  const [policy, binding] = await configObjects('policy/intents.yaml');
  if (!policy || !binding) throw new Error('config/policy/intents.yaml: a policy and its binding');
  await apply(policy);
  binding.metadata.name = bindingName;
  (binding.spec as Record<string, unknown>).matchResources = {
    namespaceSelector: { matchLabels: { 'teal.dev/policy-test': run } },
  };
  await apply(binding);
  made.push(binding);
}

/** The user roles of config/ (shared with other files: left in place), and the chart's. */
async function installUserRoles(): Promise<void> {
  for (const role of await configObjects('rbac/roles.yaml')) await apply(role);
  const { objects: rendered } = await render(chartRelease, 'teal-system');
  for (const name of ['viewer', 'promoter', 'admin']) {
    const [role] = find(rendered, 'ClusterRole', `${chartRelease}-${name}`);
    if (!role) throw new Error(`the chart renders no ${chartRelease}-${name}`);
    await apply(role);
    made.push(role);
  }
}

/** The App the table writes to, with a status; no operator watches ns. And a ConfigMap to own it. */
async function guardedApp(): Promise<void> {
  await createApp(ns, {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name: APP },
    spec: {
      image: 'repo/app:1',
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80 }] }] } },
    },
  });
  await custom.patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name: APP,
      body: { status: { phase: 'Healthy', message: 'written by the test' } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
}

/**
 * The policy and its binding take a moment to be in force: a user with patch but not
 * promote writes promote intents until refused (each a new one: an unchanged value is no change).
 */
async function policyInForce(): Promise<void> {
  const patcher = await actingAs('patcher', ['get', 'list', 'patch']);
  let tries = 0;
  const intent = () =>
    JSON.stringify({ id: `x${++tries}`, by: 'patcher', via: 'kubectl', at: new Date().toISOString() });
  await waitFor(
    'the policy to deny',
    async () => ((await annotate(patcher, intentAnnotation('promote'), intent())) === 403 ? true : undefined),
    { intervalMs: 300 },
  );
}

/** The operator, watching watched, as a ServiceAccount bound to the shipped cluster-wide ClusterRole. */
async function operatorAsItsServiceAccount(): Promise<Operator> {
  const [role] = find(await configObjects('rbac/cluster/operator.yaml'), 'ClusterRole', 'teal-operator');
  if (!role) throw new Error('config/rbac/cluster/operator.yaml: no ClusterRole teal-operator');
  role.metadata.name = operatorRole;
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: operatorRole },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: operatorRole },
    subjects: [{ kind: 'ServiceAccount', name: 'teal', namespace: watched }],
  };
  for (const object of [role, binding]) {
    await apply(object);
    made.push(object);
  }
  const token = await serviceAccount(watched, 'teal');
  await allowed(watched, 'teal', 'update');
  return startOperator({
    namespace: watched,
    kubeconfig: await tokenKubeconfig(join(dir, 'operator.kubeconfig'), 'teal', token),
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-policy-'));
  await namespaces();
  await installPolicy();
  await installUserRoles();
  await guardedApp();
  await policyInForce();
  operator = await operatorAsItsServiceAccount();
  await Promise.all(SUBJECTS.map(([name, role, kind]) => holder(name, role, kind)));
  await createApp(watched, e2eApp('calm'));
  await waitForApp(watched, 'calm', 'first release', phase('Healthy'));
});

/** Takes off the App the finalizer and owner an admin's row put on it, which would hold or collect it. */
function clearOwnership(): Promise<unknown> {
  return custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name: APP,
      body: { metadata: { finalizers: null, ownerReferences: null } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

afterAll(async () => {
  await operator?.stop();
  // A finalizer an admin left would hold the namespace's deletion.
  await clearOwnership().catch(() => {});
  for (const object of made) await objects.delete(object).catch(() => {});
  await Promise.all(removers.map((remove) => remove()));
  await rm(dir, { recursive: true, force: true });
});

describe('the intents admission policy', () => {
  it('knows every action', async () => {
    const [policy] = await configObjects('policy/intents.yaml');
    const spec = policy?.spec as { variables: { name: string; expression: string }[] } | undefined;
    const actions = spec?.variables.find((v) => v.name === 'actions')?.expression ?? '';
    expect(JSON.parse(actions.replaceAll("'", '"'))).toEqual([...ACTIONS]);
  });

  it('refuses a promote intent from a user with patch but not promote, with a clear message', async () => {
    const editor = await actingAs('editor', ['get', 'list', 'patch']);
    const intent = JSON.stringify({ id: 'e1', by: 'editor', via: 'kubectl', at: new Date().toISOString() });
    expect(await annotate(editor, intentAnnotation('promote'), intent)).toBe(403);
    expect(lastMessage).toMatch(
      /cannot promote apps\.teal\.dev "guarded" in namespace .*\(RBAC: grant the teal-promoter role\)/,
    );
  });

  it('lets a user with the promote verb record a promote, and only that', async () => {
    const promoter = await actingAs('promoter', ['get', 'list', 'patch', 'promote']);
    const intent = (id: string) => JSON.stringify({ id, by: 'promoter', via: 'kubectl', at: new Date().toISOString() });
    await waitFor('the promoter binding', async () =>
      (await annotate(promoter, intentAnnotation('promote'), intent('p1'))) === 200 ? true : undefined,
    );
    expect(await annotate(promoter, intentAnnotation('abort'), intent('a1'))).toBe(403);
    // Nor may it take back an intent of another action, or change anything else.
    const admin = kubeConfig().makeApiClient(CustomObjectsApi);
    expect(await annotate(admin, intentAnnotation('pause'), intent('q1'))).toBe(200);
    expect(await annotate(promoter, intentAnnotation('pause'), null)).toBe(403);
    expect(lastMessage).toContain('cannot pause apps.teal.dev "guarded"');
    expect(await annotate(promoter, 'example.com/note', 'hello')).toBe(403);
    expect(lastMessage).toContain(
      `cannot update apps.teal.dev "guarded" in namespace "${ns}": without "update" only intent annotations (intents.teal.dev/<action>) may change, and this changes annotations other than intents (RBAC: grant the teal-admin role)`,
    );
  });
});

// ---- every shipped role, with kubectl, kubectl teal and the HTTP API ----

/** How a request ended: ok, refused by RBAC, refused by the policy, or refused by the plugin. */
function outcome(r: { code: number; stderr: string }): string {
  if (r.code === 0) return 'ok';
  if (r.stderr.includes("ValidatingAdmissionPolicy 'teal-intents'")) return 'policy';
  if (/is forbidden: User "[^"]+" cannot \w+ resource/.test(r.stderr)) return 'rbac';
  if (/^error: user "[^"]+" cannot set the image of/.test(r.stderr)) return 'refused';
  return `unexpected (${r.code}): ${r.stderr.trim()}`;
}

const ALL_REFUSED = {
  intent: 'rbac',
  spec: 'rbac',
  specWithIntent: 'rbac',
  label: 'rbac',
  annotation: 'rbac',
  finalizer: 'rbac',
  ownerReference: 'rbac',
  statusThroughApp: 'rbac',
  statusSubresource: 'rbac',
  applyIntent: 'rbac',
  applySpec: 'rbac',
  scale: 'rbac',
  create: 'rbac',
  setImage: 'refused',
  apiPause: '403',
};

const EXPECTED: Record<Kind, typeof ALL_REFUSED> = {
  reader: ALL_REFUSED,
  // Every action, and nothing else: a write that changes more than intents is refused,
  // one that only touches status (which the App's own writes cannot change) changes nothing.
  promoter: {
    ...ALL_REFUSED,
    intent: 'ok',
    spec: 'policy',
    specWithIntent: 'policy',
    label: 'policy',
    annotation: 'policy',
    finalizer: 'policy',
    ownerReference: 'policy',
    statusThroughApp: 'ok',
    applyIntent: 'ok',
    applySpec: 'policy',
    apiPause: '202',
  },
  admin: {
    intent: 'ok',
    spec: 'ok',
    specWithIntent: 'ok',
    label: 'ok',
    annotation: 'ok',
    finalizer: 'ok',
    ownerReference: 'ok',
    statusThroughApp: 'ok',
    // Status is the operator's alone.
    statusSubresource: 'rbac',
    applyIntent: 'ok',
    applySpec: 'ok',
    scale: 'ok',
    create: 'ok',
    setImage: 'ok',
    apiPause: '202',
  },
};

interface AppState {
  metadata: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: unknown[];
  };
  spec: Record<string, unknown>;
  status?: unknown;
}

const INTENT_KEYS = new Set<string>(ACTIONS.map(intentAnnotation));
/** The App but its intent annotations, and but what the API server keeps up to date itself. */
const beyondIntents = (app: AppState) => ({
  spec: app.spec,
  status: app.status,
  labels: app.metadata.labels,
  annotations: Object.entries(app.metadata.annotations ?? {}).filter(([k]) => !INTENT_KEYS.has(k)),
  finalizers: app.metadata.finalizers,
  ownerReferences: app.metadata.ownerReferences,
});

/** Everything the table names, tried as one subject; returns each outcome and each refusal's message. */
async function tryAll(name: string): Promise<{ outcomes: typeof ALL_REFUSED; messages: Record<string, string> }> {
  const s = subject(name);
  const messages: Record<string, string> = {};
  let n = 0;
  const as = async (what: string, args: string[], input?: string) => {
    const r = await kubectl(['--kubeconfig', s.kubeconfig, '-n', ns, ...args], input);
    messages[what] = r.stderr.trim();
    return outcome(r);
  };
  const app = [`apps.${GROUP}`, APP];
  const patch = (what: string, body: object, ...extra: string[]) =>
    as(what, ['patch', ...app, '--type=merge', '-p', JSON.stringify(body), ...extra]);
  const intent = () =>
    JSON.stringify({ id: `${name}-${++n}`, by: s.user, via: 'kubectl', at: new Date().toISOString() });
  const image = `registry.example.com/team/web:${name}`;
  const applied = (what: string, part: object) =>
    as(
      what,
      ['apply', '--server-side', '--force-conflicts', `--field-manager=${name}`, '-f', '-'],
      JSON.stringify({ apiVersion: `${GROUP}/${VERSION}`, kind: 'App', ...part }),
    );
  const owner = await core.readNamespacedConfigMap({ namespace: ns, name: 'owner' });
  const setImage = await tealAs(s.kubeconfig, ns, 'set', 'image', APP, `${image}-cli`);
  const api = await fetch(`http://127.0.0.1:${operator?.healthPort}/api/v1/namespaces/${watched}/apps/calm/pause`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const outcomes = {
    intent: await as('intent', ['annotate', ...app, `${intentAnnotation('pause')}=${intent()}`, '--overwrite']),
    spec: await patch('spec', { spec: { image } }),
    specWithIntent: await patch('specWithIntent', {
      metadata: { annotations: { [intentAnnotation('pause')]: intent() } },
      spec: { replicas: 3 },
    }),
    label: await as('label', ['label', ...app, `example.com/by=${name}`, '--overwrite']),
    annotation: await as('annotation', ['annotate', ...app, `example.com/note=${name}`, '--overwrite']),
    finalizer: await patch('finalizer', { metadata: { finalizers: ['example.com/hold'] } }),
    ownerReference: await patch('ownerReference', {
      metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid }] },
    }),
    statusThroughApp: await patch('statusThroughApp', { status: { phase: 'Degraded', message: `forged by ${name}` } }),
    statusSubresource: await patch(
      'statusSubresource',
      { status: { phase: 'Degraded', message: `forged by ${name}` } },
      '--subresource=status',
    ),
    applyIntent: await applied('applyIntent', {
      metadata: { name: APP, annotations: { [intentAnnotation('resume')]: intent() } },
    }),
    applySpec: await applied('applySpec', { metadata: { name: APP }, spec: { image: `${image}-applied` } }),
    scale: await as('scale', ['scale', ...app, '--replicas=4']),
    create: await as(
      'create',
      ['create', '-f', '-'],
      JSON.stringify({ ...e2eApp(`made-by-${name}`), metadata: { name: `made-by-${name}` } }),
    ),
    setImage: outcome(setImage),
    apiPause: String(api.status),
  };
  messages.setImage = setImage.stderr.trim();
  return { outcomes, messages };
}

describe('every shipped role', () => {
  it.each(SUBJECTS)(
    '%s (ClusterRole %s, a %s) may do what its role promises and nothing more',
    async (name, _, kind) => {
      const before = (await getApp(ns, APP)) as unknown as AppState;
      const { outcomes, messages } = await tryAll(name);
      expect(outcomes).toEqual(EXPECTED[kind]);
      const after = (await getApp(ns, APP)) as unknown as AppState;
      // Status is never changed through the App, by anyone.
      expect(after.status).toEqual(before.status);
      if (kind !== 'admin') {
        // Nothing but intents changed.
        expect(beyondIntents(after)).toEqual(beyondIntents(before));
      }
      if (kind === 'promoter') {
        const user = `system:serviceaccount:${ns}:${name}`;
        expect(messages.spec).toContain(
          `user "${user}" cannot update apps.teal.dev "${APP}" in namespace "${ns}": without "update" only intent annotations (intents.teal.dev/<action>) may change, and this changes spec (RBAC: grant the teal-admin role)`,
        );
        expect(messages.finalizer).toContain('and this changes finalizers (RBAC');
        expect(messages.ownerReference).toContain('and this changes ownerReferences (RBAC');
        expect(messages.label).toContain('and this changes labels (RBAC');
        expect(messages.setImage).toBe(
          `error: user "${user}" cannot set the image of apps.teal.dev "${APP}" in namespace "${ns}" (RBAC: needs "update" and "patch" on apps.teal.dev, e.g. the teal-admin role)`,
        );
      }
      if (kind === 'admin') {
        expect(after.spec).toMatchObject({ replicas: 4, image: `registry.example.com/team/web:${name}-applied` });
        expect(after.metadata.labels?.['example.com/by']).toBe(name);
        expect(after.metadata.finalizers).toEqual(['example.com/hold']);
        // Put back what would outlive the test: the finalizer, the owner, the App made.
        await clearOwnership();
        await custom.deleteNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: PLURAL,
          name: `made-by-${name}`,
        });
      }
    },
  );
});

describe('the operator as its shipped ServiceAccount, under the policy', () => {
  it('carries out a release whose image an admin sets and a promoter promotes, with kubectl teal and the API', async () => {
    const web = (revision: number) => `registry.example.com/team/web:${revision}`;
    await createApp(watched, e2eApp('web'));
    await waitForApp(watched, 'web', 'first release', phase('Healthy'));

    const set = await tealAs(subject('config-admin').kubeconfig, watched, 'set', 'image', 'web', web(2));
    expect(set.code, set.stderr).toBe(0);
    await waitForApp(
      watched,
      'web',
      'revision 2 in preview',
      (a) => phase('Paused')(a) && a.status?.preview?.revision === 2,
    );
    const refused = await tealAs(subject('config-promoter').kubeconfig, watched, 'set', 'image', 'web', web(3));
    expect(refused.code).toBe(1);
    const promote = await tealAs(subject('config-promoter').kubeconfig, watched, 'promote', 'web');
    expect(promote.code, promote.stderr).toBe(0);
    await waitForApp(
      watched,
      'web',
      'revision 2 active',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 2,
    );

    const scaled = await kubectl([
      '--kubeconfig',
      subject('admin').kubeconfig,
      '-n',
      watched,
      'scale',
      `apps.${GROUP}`,
      'web',
      '--replicas=3',
    ]);
    expect(scaled.code, scaled.stderr).toBe(0);
    expect((await getApp(watched, 'web')).spec.replicas).toBe(3);

    const again = await tealAs(subject('chart-admin').kubeconfig, watched, 'set', 'image', 'web', web(3));
    expect(again.code, again.stderr).toBe(0);
    await waitForApp(
      watched,
      'web',
      'revision 3 in preview',
      (a) => phase('Paused')(a) && a.status?.preview?.revision === 3,
    );
    const api = await fetch(`http://127.0.0.1:${operator?.healthPort}/api/v1/namespaces/${watched}/apps/web/promote`, {
      method: 'POST',
      headers: { authorization: `Bearer ${subject('edit').token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ revision: 3 }),
    });
    expect(api.status).toBe(202);
    await waitForApp(
      watched,
      'web',
      'revision 3 active',
      (a) => phase('Healthy')(a) && a.status?.active?.revision === 3,
    );
    // Its own writes were never refused (the API's "API request forbidden" lines are its callers').
    expect(operator?.logs()).not.toMatch(/is forbidden|ValidatingAdmissionPolicy/);
  });
});
