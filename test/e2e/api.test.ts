// The HTTP API against the real control plane: real TokenReviews and
// SubjectAccessReviews for ServiceAccount tokens from the TokenRequest API,
// RBAC Roles granting the action verbs, and intents written on real Apps. The
// operator does not run: Apps get their status written directly, and
// ReplicaSets are made by hand, so the 409 rules see the state they are about.
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiOptions, apiPlugin } from '../../src/api/actions.ts';
import { REDACT_PATHS } from '../../src/api/auth.ts';
import { APPS_INDEX, type CachedApp } from '../../src/app/cached.ts';
import { type Action, INTENT_SCHEMAS, intentAnnotation } from '../../src/app/intents.ts';
import { ANN_REVISION, LABEL_APP, LABEL_HASH } from '../../src/app/labels.ts';
import { type AppInput, type AppStatus, GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { makeCaches } from '../../src/controller/cache.ts';
import type { Cached } from '../../src/kube/informer.ts';
import type { SharedInformer } from '../../src/kube/multi-namespace-informer.ts';
import type { ObservedReplicaSet } from '../../src/rollout/observed.ts';
import { createApp, getApp } from '../support/apps.ts';
import { clients, createNamespace, kubeConfig, kubectl, waitFor } from '../support/kube.ts';
import { allowed, bind, serviceAccount } from '../support/users.ts';

const { core, custom, apps } = clients();

let ns: string;
let other: string;
const removers: (() => Promise<void>)[] = [];
let informer: SharedInformer<CachedApp>;
let replicaSets: SharedInformer<Cached<ObservedReplicaSet>>;
let stopApi: (() => Promise<void>) | undefined;
let base: string;
const logLines: string[] = [];
const tokens: Record<string, string> = {};

const T0 = '2026-01-01T00:00:00Z';
const revision = (n: number) => ({
  revision: n,
  image: `registry.example.com/team/web:${n}`,
  podTemplateHash: `hash${n}`,
  replicaSet: `web-hash${n}`,
});

/** Stable 1 active, 2 in preview, waiting for promotion. */
const IN_PREVIEW: AppStatus = {
  phase: 'Paused',
  active: revision(1),
  stable: revision(1),
  preview: revision(2),
  history: [{ revision: 1, image: revision(1).image, createdAt: T0, promotedAt: T0, promotedVia: 'first-release' }],
};

/** Healthy on revision 2, with 1 before it: nothing in preview, nothing aborted. */
const SETTLED: AppStatus = {
  phase: 'Healthy',
  active: revision(2),
  stable: revision(2),
  history: [
    { revision: 1, image: revision(1).image, createdAt: T0, promotedAt: T0, promotedVia: 'first-release' },
    { revision: 2, image: revision(2).image, createdAt: T0, promotedAt: T0, promotedVia: 'api' },
  ],
};

function appBody(name: string): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: { image: 'registry.example.com/team/web:2', template: { spec: { containers: [{ name: 'app' }] } } },
  };
}

/** Creates an App, writes its status subresource, and waits for the cache to see it. */
async function appWithStatus(namespace: string, name: string, status: AppStatus): Promise<void> {
  const created = await createApp(namespace, appBody(name));
  await custom.replaceNamespacedCustomObjectStatus({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    name,
    body: { ...created, status },
  });
  await waitFor(`${namespace}/${name} status in the cache`, async () =>
    informer.get(namespace, name)?.status !== undefined ? true : undefined,
  );
}

/** A scaled-down ReplicaSet of an App's revision, as the operator labels it; waits for the cache to see it. */
async function replicaSet(namespace: string, app: string, revision: number): Promise<void> {
  // A pod template hash as Teal writes them: 10 hex digits.
  const hash = String(revision).padStart(10, '0');
  const labels = { [LABEL_APP]: app, [LABEL_HASH]: hash };
  await apps.createNamespacedReplicaSet({
    namespace,
    body: {
      metadata: { name: `${app}-${hash}`, labels, annotations: { [ANN_REVISION]: String(revision) } },
      spec: {
        replicas: 0,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: `web:${revision}` }] } },
      },
    },
  });
  await waitFor(`${namespace}/${app} revision ${revision} in the cache`, async () =>
    replicaSets.byIndex(APPS_INDEX, `${namespace}/${app}`).some((rs) => rs.value.revision === revision)
      ? true
      : undefined,
  );
}

async function call(
  method: 'GET' | 'POST',
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let payload: string | undefined = options.raw;
  if (options.body !== undefined) payload = JSON.stringify(options.body);
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(payload !== undefined ? { body: payload } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const act = (namespace: string, name: string, action: string, token: string | undefined, body?: unknown) =>
  call('POST', `/api/v1/namespaces/${namespace}/apps/${name}/${action}`, {
    ...(token !== undefined ? { token } : {}),
    ...(body !== undefined ? { body } : {}),
  });

async function annotation(namespace: string, name: string, action: Action) {
  const app = (await getApp(namespace, name)) as { metadata: { annotations?: Record<string, string> } };
  const raw = app.metadata.annotations?.[intentAnnotation(action)];
  return raw === undefined ? undefined : INTENT_SCHEMAS[action].parse(JSON.parse(raw));
}

async function startApi(extra: Partial<ApiOptions> = {}): Promise<{ close: () => Promise<void>; base: string }> {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const log = pino({ level: 'debug', redact: REDACT_PATHS }, sink);
  const app = Fastify({ loggerInstance: log });
  await app.register(apiPlugin, {
    kubeConfig: kubeConfig(),
    apps: () => informer,
    replicaSets: () => replicaSets,
    isReady: () => informer.hasSynced() && replicaSets.hasSynced(),
    logger: log,
    ...extra,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { close: () => app.close(), base: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  for (const prefix of ['api', 'api-other']) {
    const created = await createNamespace(prefix);
    removers.push(created.remove);
    if (prefix === 'api') ns = created.name;
    else other = created.name;
  }
  ({ apps: informer, replicaSets } = makeCaches(kubeConfig(), [], pino({ level: 'silent' })));
  informer.start();
  replicaSets.start();
  await Promise.all([informer.waitForSync(), replicaSets.waitForSync()]);
  ({ close: stopApi, base } = await startApi());

  await Promise.all([
    appWithStatus(ns, 'web', IN_PREVIEW),
    appWithStatus(ns, 'stale', IN_PREVIEW),
    appWithStatus(ns, 'calm', SETTLED),
    appWithStatus(ns, 'abortme', IN_PREVIEW),
    appWithStatus(other, 'web', IN_PREVIEW),
  ]);
  // stale keeps no ReplicaSet of revision 1; calm and abortme do.
  for (const [app, revision] of [
    ['calm', 1],
    ['abortme', 1],
    ['abortme', 2],
  ] as const) {
    await replicaSet(ns, app, revision);
  }
  const [promoter, releaser, viewer, nobody, outsider, reviewer] = await Promise.all([
    serviceAccount(ns, 'promoter', ['promote']),
    serviceAccount(ns, 'releaser', ['abort', 'retry', 'undo', 'pause', 'resume']),
    serviceAccount(ns, 'viewer', ['get', 'list']),
    serviceAccount(ns, 'nobody'),
    serviceAccount(other, 'promoter', ['get']),
    serviceAccount(ns, 'reviewer', ['get', 'promote']),
  ]);
  Object.assign(tokens, { promoter, releaser, viewer, nobody, outsider, reviewer });
});

afterAll(async () => {
  await stopApi?.();
  informer?.stop();
  replicaSets?.stop();
  await Promise.all(removers.map((remove) => remove()));
});

describe('authentication', () => {
  it('answers 401 without a token, with a garbage token, or another scheme', async () => {
    const none = await act(ns, 'web', 'promote', undefined, {});
    expect(none).toMatchObject({ status: 401, body: { error: 'Unauthorized' } });
    const garbage = await act(ns, 'web', 'promote', 'not-a-token', {});
    expect(garbage).toMatchObject({ status: 401, body: { error: 'Unauthorized' } });
    const basic = await call('GET', `/api/v1/namespaces/${ns}/apps/web`, { headers: { authorization: 'Basic YTpi' } });
    expect(basic.status).toBe(401);
    expect(await annotation(ns, 'web', 'promote')).toBeUndefined();
  });

  it('answers 401 for a token of a deleted ServiceAccount', async () => {
    const token = await serviceAccount(ns, 'ephemeral', ['promote']);
    await core.deleteNamespacedServiceAccount({ namespace: ns, name: 'ephemeral' });
    await waitFor('the token to stop authenticating', async () => {
      const res = await act(ns, 'calm', 'promote', token, {});
      return res.status === 401 ? res : undefined;
    });
  });
});

describe('actions', () => {
  it('promotes with a ServiceAccount whose Role grants promote, recording who and how', async () => {
    const before = Date.now();
    const res = await act(ns, 'web', 'promote', tokens.promoter, { revision: 2 });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: true, action: 'promote', id: expect.any(String) });
    const recorded = await annotation(ns, 'web', 'promote');
    expect(recorded).toMatchObject({
      id: res.body.id,
      by: `system:serviceaccount:${ns}:promoter`,
      via: 'api',
      revision: 2,
    });
    expect(Date.parse(recorded?.at ?? '')).toBeGreaterThanOrEqual(before - 1000);

    // The cache shows it as pending: the operator has not handled it.
    const view = await waitFor('the intent in the cache', async () => {
      const got = await call('GET', `/api/v1/namespaces/${ns}/apps/web`, { token: tokens.viewer });
      const pending = got.body.pendingIntents as { id: string }[];
      return pending.some((p) => p.id === res.body.id) ? got : undefined;
    });
    expect(view.status).toBe(200);
  });

  it('answers 403 without the Role, and in another namespace', async () => {
    const without = await act(ns, 'web', 'promote', tokens.nobody, {});
    expect(without.status).toBe(403);
    expect(without.body).toMatchObject({ error: 'Forbidden' });
    expect(String(without.body.message)).toContain(`system:serviceaccount:${ns}:nobody`);
    expect(String(without.body.message)).toContain('cannot promote');

    // Allowed in ns, not in the other namespace.
    const elsewhere = await act(other, 'web', 'promote', tokens.promoter, {});
    expect(elsewhere.status).toBe(403);
    // Allowed to get there, not to promote.
    const outsider = await act(other, 'web', 'promote', tokens.outsider, {});
    expect(outsider.status).toBe(403);
    expect(await annotation(other, 'web', 'promote')).toBeUndefined();
  });

  it('refuses a stale revision with 409 and writes nothing', async () => {
    const res = await act(ns, 'stale', 'promote', tokens.promoter, { revision: 1 });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('Conflict');
    expect(res.body.message).toMatch(/revision 1 .*revision 2/);
    expect(await annotation(ns, 'stale', 'promote')).toBeUndefined();
  });

  it('refuses a promote with nothing in preview, a retry with nothing aborted, an undo to an unknown revision', async () => {
    const promote = await act(ns, 'calm', 'promote', tokens.promoter, {});
    expect(promote).toMatchObject({ status: 409, body: { error: 'Conflict' } });
    const retry = await act(ns, 'calm', 'retry', tokens.releaser);
    expect(retry).toMatchObject({ status: 409, body: { error: 'Conflict' } });
    const undo = await act(ns, 'calm', 'undo', tokens.releaser, { toRevision: 7 });
    expect(undo).toMatchObject({ status: 409, body: { error: 'Conflict' } });
    expect(undo.body.message).toContain('revision 7 has no ReplicaSet left');
    for (const action of ['promote', 'retry', 'undo'] as const) {
      expect(await annotation(ns, 'calm', action)).toBeUndefined();
    }
  });

  it('refuses as the operator would: an abort with nothing in progress, an undo to a revision without a ReplicaSet', async () => {
    // The rules of actionVerdict, as the operator applies them: abort needs a revision on its way to active.
    const abort = await act(ns, 'calm', 'abort', tokens.releaser);
    expect(abort).toMatchObject({ status: 409, body: { error: 'Conflict' } });
    expect(abort.body.message).toBe(`App ${ns}/calm: nothing is in progress to abort`);
    // Revision 1 of stale is in its history, but its ReplicaSet is gone: the operator would refuse it.
    const undo = await act(ns, 'stale', 'undo', tokens.releaser, { toRevision: 1 });
    expect(undo).toMatchObject({ status: 409, body: { error: 'Conflict' } });
    expect(undo.body.message).toContain('revision 1 has no ReplicaSet left');
    expect(await annotation(ns, 'calm', 'abort')).toBeUndefined();
    expect(await annotation(ns, 'stale', 'undo')).toBeUndefined();
  });

  it('takes an undo with a revision in preview: back to the stable revision', async () => {
    const undo = await act(ns, 'abortme', 'undo', tokens.releaser, {});
    expect(undo).toMatchObject({ status: 202, body: { accepted: true, action: 'undo' } });
    expect(await annotation(ns, 'abortme', 'undo')).toMatchObject({ id: undo.body.id, via: 'api' });
  });

  it('aborts and undoes with their own verbs, and not with promote alone', async () => {
    const abort = await act(ns, 'abortme', 'abort', tokens.releaser);
    expect(abort).toMatchObject({ status: 202, body: { accepted: true, action: 'abort' } });
    expect(await annotation(ns, 'abortme', 'abort')).toMatchObject({
      id: abort.body.id,
      by: `system:serviceaccount:${ns}:releaser`,
      via: 'api',
    });
    const undo = await act(ns, 'calm', 'undo', tokens.releaser, { toRevision: 1, preview: true });
    expect(undo).toMatchObject({ status: 202, body: { action: 'undo' } });
    expect(await annotation(ns, 'calm', 'undo')).toMatchObject({ id: undo.body.id, toRevision: 1, preview: true });

    expect((await act(ns, 'web', 'abort', tokens.promoter)).status).toBe(403);
    expect((await act(ns, 'calm', 'undo', tokens.promoter, {})).status).toBe(403);
    expect((await act(ns, 'web', 'promote', tokens.releaser, {})).status).toBe(403);
    expect((await act(ns, 'web', 'abort', tokens.nobody)).status).toBe(403);
  });

  it('takes an empty body, with or without a content type', async () => {
    const bare = await call('POST', `/api/v1/namespaces/${ns}/apps/calm/pause`, { token: tokens.releaser });
    expect(bare.status).toBe(202);
    const empty = await call('POST', `/api/v1/namespaces/${ns}/apps/calm/resume`, {
      token: tokens.releaser,
      raw: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(202);
  });

  it('rejects bodies: an unknown field 400, a bad value 422, broken JSON 400, too large 413', async () => {
    const unknown = await act(ns, 'web', 'promote', tokens.promoter, { revision: 2, force: true });
    expect(unknown).toMatchObject({ status: 400, body: { error: 'BadRequest' } });
    expect(unknown.body.message).toContain('"force"');
    const extra = await act(ns, 'abortme', 'abort', tokens.releaser, { reason: 'x' });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toContain('"reason"');
    const bad = await act(ns, 'web', 'promote', tokens.promoter, { revision: 0 });
    expect(bad).toMatchObject({ status: 422, body: { error: 'Invalid' } });
    expect(bad.body.message).toContain('revision');
    const typed = await act(ns, 'web', 'promote', tokens.promoter, { full: 'yes' });
    expect(typed.status).toBe(422);
    const broken = await call('POST', `/api/v1/namespaces/${ns}/apps/web/promote`, {
      token: tokens.promoter,
      raw: '{"revision":',
    });
    expect(broken).toMatchObject({ status: 400, body: { error: 'BadRequest' } });
    const array = await act(ns, 'web', 'promote', tokens.promoter, [1]);
    expect(array.status).toBe(400);
    const text = await call('POST', `/api/v1/namespaces/${ns}/apps/web/promote`, {
      token: tokens.promoter,
      raw: 'promote',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(400);
    const large = await act(ns, 'web', 'promote', tokens.promoter, { pad: 'x'.repeat(64 * 1024) });
    expect(large).toMatchObject({ status: 413, body: { error: 'RequestEntityTooLarge' } });
  });

  it('answers 404 for an App that does not exist and for an unknown action', async () => {
    const missing = await act(ns, 'nope', 'promote', tokens.promoter, {});
    expect(missing).toMatchObject({ status: 404, body: { error: 'NotFound' } });
    const action = await act(ns, 'web', 'explode', tokens.promoter, {});
    expect(action).toMatchObject({ status: 404, body: { error: 'NotFound' } });
  });
});

describe('reading Apps', () => {
  it('gets one App with its revisions, given get', async () => {
    const res = await call('GET', `/api/v1/namespaces/${ns}/apps/stale`, { token: tokens.viewer });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      metadata: { namespace: ns, name: 'stale' },
      status: { phase: 'Paused' },
      revisions: {
        active: { revision: 1 },
        stable: { revision: 1 },
        preview: { revision: 2, podTemplateHash: 'hash2' },
        history: [{ revision: 1, promotedVia: 'first-release' }],
      },
      pendingIntents: [],
    });
    const missing = await call('GET', `/api/v1/namespaces/${ns}/apps/nope`, { token: tokens.viewer });
    expect(missing.status).toBe(404);
  });

  it('lists the Apps of a namespace, given list there', async () => {
    const res = await call('GET', `/api/v1/apps?namespace=${ns}`, { token: tokens.viewer });
    expect(res.status).toBe(200);
    const names = (res.body.items as { metadata: { namespace: string; name: string } }[]).map(
      (i) => `${i.metadata.namespace}/${i.metadata.name}`,
    );
    expect(names).toEqual(['abortme', 'calm', 'stale', 'web'].map((n) => `${ns}/${n}`));
  });

  it('answers 403 without get or list, and for a namespace asked for without list there', async () => {
    expect((await call('GET', `/api/v1/namespaces/${ns}/apps/web`, { token: tokens.promoter })).status).toBe(403);
    expect((await call('GET', `/api/v1/namespaces/${ns}/apps/web`, { token: tokens.nobody })).status).toBe(403);
    expect((await call('GET', `/api/v1/apps?namespace=${ns}`, { token: tokens.nobody })).status).toBe(403);
    expect((await call('GET', `/api/v1/apps?namespace=${other}`, { token: tokens.viewer })).status).toBe(403);
    expect((await call('GET', `/api/v1/namespaces/${ns}/apps/web`)).status).toBe(401);
  });

  it('lists, without a namespace, the Apps of each namespace a namespaced Role lets the caller list, nothing of another', async () => {
    const all = await call('GET', '/api/v1/apps', { token: tokens.viewer });
    expect(all.status).toBe(200);
    const names = (all.body.items as { metadata: { namespace: string; name: string } }[]).map(
      (i) => `${i.metadata.namespace}/${i.metadata.name}`,
    );
    expect(names).toEqual(['abortme', 'calm', 'stale', 'web'].map((n) => `${ns}/${n}`));
    expect(JSON.stringify(all.body)).not.toContain(other);
    // No list anywhere: nothing, and no namespace named.
    expect(await call('GET', '/api/v1/apps', { token: tokens.nobody })).toMatchObject({
      status: 200,
      body: { items: [] },
    });
  });
});

describe('actions explained (GET .../actions)', () => {
  interface Entry {
    action: string;
    allowed: boolean;
    rules: { allowed: boolean; reason?: string };
    rbac: { allowed: boolean | 'unknown'; reason?: string };
    args: { name: string; kind: string; help: string; flag: string }[];
    kubectl: string;
    curl: string;
  }
  const explain = async (name: string, token: string | undefined) => {
    const res = await call('GET', `/api/v1/namespaces/${ns}/apps/${name}/actions`, token ? { token } : {});
    const entries = (res.body.actions ?? []) as Entry[];
    return { status: res.status, body: res.body, of: (action: string) => entries.find((e) => e.action === action) };
  };

  it('shows a viewer every action denied by RBAC, each with the reason', async () => {
    const res = await explain('calm', tokens.viewer);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ namespace: ns, name: 'calm' });
    const entries = res.body.actions as Entry[];
    expect(entries.map((e) => e.action)).toEqual(['promote', 'abort', 'retry', 'undo', 'pause', 'resume', 'restart']);
    for (const entry of entries) {
      expect(entry.allowed).toBe(false);
      expect(entry.rbac).toEqual({
        allowed: false,
        reason: expect.stringContaining(`system:serviceaccount:${ns}:viewer" cannot ${entry.action}`),
      });
    }
    // The rules are told apart from RBAC: pause is allowed by the rules, promote is not (nothing in preview).
    expect(res.of('pause')?.rules).toEqual({ allowed: true });
    expect(res.of('promote')?.rules.allowed).toBe(false);
  });

  it('shows a promoter promote allowed by RBAC, and by the rules only when they allow it, with the 409’s own text', async () => {
    // Nothing in preview: RBAC allows, the rules refuse, with the text the POST's 409 then carries.
    const calm = await explain('calm', tokens.reviewer);
    expect(calm.status).toBe(200);
    const refused = calm.of('promote');
    expect(refused).toMatchObject({ allowed: false, rbac: { allowed: true }, rules: { allowed: false } });
    const conflict = await act(ns, 'calm', 'promote', tokens.reviewer);
    expect(conflict.status).toBe(409);
    expect(refused?.rules.reason).toBe(conflict.body.message);
    expect(calm.of('abort')?.rbac.allowed).toBe(false);

    // Revision 2 in preview: both allow it, with its arguments and the commands that take it.
    const explained = await explain('web', tokens.reviewer);
    expect(explained.of('promote')).toEqual({
      action: 'promote',
      allowed: true,
      rules: { allowed: true },
      rbac: { allowed: true },
      args: [
        { name: 'full', kind: 'switch', help: expect.any(String), flag: '--full' },
        { name: 'revision', kind: 'revision', help: expect.any(String), flag: '--revision' },
        { name: 'skipChecks', kind: 'switch', help: expect.any(String), flag: '--skip-checks' },
      ],
      kubectl: `kubectl teal promote web -n ${ns}`,
      curl: `curl -sS -X POST -H "Authorization: Bearer $TOKEN" "$TEAL/api/v1/namespaces/${ns}/apps/web/promote"`,
    });
    expect((await act(ns, 'web', 'promote', tokens.reviewer)).status).toBe(202);
  });

  it('answers as the get route does: 404 for an unknown App, 403 without get, 401 without credentials', async () => {
    expect((await explain('calm', tokens.viewer)).status).toBe(200);
    expect(await explain('nope', tokens.viewer)).toMatchObject({ status: 404, body: { error: 'NotFound' } });
    expect(await explain('calm', tokens.promoter)).toMatchObject({ status: 403, body: { error: 'Forbidden' } });
    expect(await explain('calm', tokens.nobody)).toMatchObject({ status: 403, body: { error: 'Forbidden' } });
    expect(await explain('calm', undefined)).toMatchObject({ status: 401, body: { error: 'Unauthorized' } });
  });
});

describe('config/rbac/roles.yaml', () => {
  const ROLES = new URL('../../config/rbac/roles.yaml', import.meta.url);

  it('teal-promoter, bound in a namespace, allows promote there; teal-viewer reads only', async () => {
    const applied = await kubectl(['apply', '-f', ROLES.pathname]);
    expect(applied.code, applied.stderr).toBe(0);
    const promoter = await serviceAccount(ns, 'bound-promoter');
    await bind(ns, 'bound-promoter', 'ClusterRole', 'teal-promoter');
    const viewer = await serviceAccount(ns, 'bound-viewer');
    await bind(ns, 'bound-viewer', 'ClusterRole', 'teal-viewer');
    await allowed(ns, 'bound-promoter', 'promote');
    await allowed(ns, 'bound-viewer', 'get');

    const promoted = await act(ns, 'web', 'promote', promoter, { revision: 2, full: true });
    expect(promoted.status).toBe(202);
    expect(await annotation(ns, 'web', 'promote')).toMatchObject({
      id: promoted.body.id,
      by: `system:serviceaccount:${ns}:bound-promoter`,
      full: true,
    });
    expect((await call('GET', `/api/v1/apps?namespace=${ns}`, { token: promoter })).status).toBe(200);
    expect((await call('GET', `/api/v1/namespaces/${ns}/apps/web`, { token: viewer })).status).toBe(200);
    expect((await act(ns, 'web', 'promote', viewer, {})).status).toBe(403);
    expect((await act(other, 'web', 'promote', promoter, {})).status).toBe(403);
  });

  it('aggregates: the built-in edit role may promote, view may only read', async () => {
    const editor = await serviceAccount(ns, 'editor');
    await bind(ns, 'editor', 'ClusterRole', 'edit');
    const reader = await serviceAccount(ns, 'reader');
    await bind(ns, 'reader', 'ClusterRole', 'view');
    // The aggregation controller fills edit and view in shortly after the apply.
    await allowed(ns, 'editor', 'promote');
    await allowed(ns, 'reader', 'get');
    expect((await act(ns, 'stale', 'promote', editor, {})).status).toBe(202);
    expect((await act(ns, 'stale', 'abort', reader, {})).status).toBe(403);
    expect((await call('GET', `/api/v1/namespaces/${ns}/apps/stale`, { token: reader })).status).toBe(200);
  });
});

describe('service', () => {
  it('answers 503 until the App cache has synced', async () => {
    const notReady = await startApi({ isReady: () => false });
    try {
      const res = await fetch(`${notReady.base}/api/v1/namespaces/${ns}/apps/web/promote`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.promoter}` },
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ error: 'ServiceUnavailable' });
    } finally {
      await notReady.close();
    }
  });

  it('never logs a token', () => {
    expect(logLines.length).toBeGreaterThan(0);
    const all = logLines.join('');
    for (const token of Object.values(tokens)) expect(all).not.toContain(token);
    expect(all).not.toContain('not-a-token');
  });
});
