// The HTTP API and the checks (src/api/actions.ts): promote takes skipChecks
// (a boolean, or the body is refused naming it), the rules hear it, the
// intent written carries it; and an App is shown with its runs of checks.
// The routes run in fastify against a stand-in API server on loopback that
// records the patch the API writes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHandlers, apiPlugin, appView, conflictOf, intentVia, parseActionBody } from '../../src/api/actions.ts';
import { ApiError } from '../../src/api/errors.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import { INTENT_SCHEMAS, intentAnnotation } from '../../src/app/intents.ts';
import type { AppAnalysisRun, RevisionStatus } from '../../src/app/schema.ts';
import { analysisRun, revisionStatus } from '../fixtures/app-status.ts';

const T0 = '2026-11-21T10:00:00.000Z';

const revision = (n: number): RevisionStatus => revisionStatus(n);

const run = (phase: AppAnalysisRun['phase']): AppAnalysisRun => analysisRun(2, T0, { id: 'web-2-pre-1', phase });

/** Revision 2 in preview, its pre-promotion checks in the given phase; revision 1 active. */
const cached = (phase: AppAnalysisRun['phase']): CachedApp => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', resourceVersion: '7', generation: 1 },
  spec: { strategy: { blueGreen: { prePromotionAnalysis: { templates: [{ templateName: 'healthz' }] } } } },
  status: {
    phase: 'Paused',
    observedGeneration: 1,
    active: revision(1),
    stable: revision(1),
    preview: revision(2),
    history: [{ revision: 1, image: revision(1).image, createdAt: T0, promotedVia: 'first-release' }],
    prePromotionAnalysis: run(phase),
  },
});

describe('a promote body with skipChecks', () => {
  it('takes a boolean, and refuses anything else naming the field, as it does full', () => {
    expect(parseActionBody('promote', { skipChecks: true })).toEqual({ skipChecks: true });
    for (const field of ['skipChecks', 'full']) {
      let refused: unknown;
      try {
        parseActionBody('promote', { [field]: 'yes' });
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({ status: 422, message: expect.stringContaining(field) });
    }
    expect(() => parseActionBody('abort', { skipChecks: true })).toThrow(/unknown field "skipChecks"/);
  });

  it('lets a promotion past checks that have not passed; without it, a conflict', () => {
    expect(conflictOf(cached('Running'), 'promote', {})).toBe(
      'App ns/web: the pre-promotion checks of revision 2 are running: check healthz: 1 of 3 measured; promote --skip-checks to promote without them',
    );
    expect(conflictOf(cached('Running'), 'promote', { skipChecks: true })).toBeUndefined();
    expect(conflictOf(cached('Inconclusive'), 'promote', { skipChecks: true, revision: 2 })).toBeUndefined();
    expect(conflictOf(cached('Successful'), 'promote', {})).toBeUndefined();
  });
});

describe('the App as the API shows it', () => {
  it('has its runs of checks under analysis, as status holds them', () => {
    const view = appView(cached('Running'));
    expect(view.analysis).toEqual({ prePromotion: run('Running') });
    expect(view.status).not.toHaveProperty('prePromotionAnalysis');
    expect(view.status).toMatchObject({ phase: 'Paused' });
  });

  it('has an empty analysis without runs, and leaves out one it cannot read', () => {
    const bare = cached('Running');
    bare.status = { phase: 'Healthy', active: revision(1), postPromotionAnalysis: 'garbage' };
    expect(appView(bare).analysis).toEqual({});
  });
});

describe('POST promote with skipChecks', () => {
  let kube: Server;
  let api: FastifyInstance;
  const patches: { url: string; body: unknown }[] = [];
  const apps = new Map<string, CachedApp>();

  beforeAll(async () => {
    kube = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        patches.push({ url: req.url ?? '', body: JSON.parse(body || '{}') });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => kube.listen(0, '127.0.0.1', resolve));
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      // Plain HTTP on loopback: the client allows it only with skipTLSVerify.
      clusters: [
        { name: 'c', server: `http://127.0.0.1:${(kube.address() as AddressInfo).port}`, skipTLSVerify: true },
      ],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    api = Fastify();
    await api.register(apiPlugin, {
      kubeConfig,
      apps: () => ({
        get: (ns: string, name: string) => apps.get(`${ns}/${name}`),
        list: () => [...apps.values()],
        listByNamespace: () => [...apps.values()],
      }),
      isReady: () => true,
      auth: {
        authenticate: async () => ({ username: 'ann', groups: [] }),
        reviewToken: async () => ({ username: 'ann', groups: [] }),
        authorize: async () => {},
      },
      logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    });
  });

  afterAll(async () => {
    await api.close();
    await new Promise<void>((resolve) => kube.close(() => resolve()));
  });

  // The fake auth takes any token, but a caller must send one (or a session cookie).
  const BEARER = { authorization: 'Bearer any' };
  const promote = (payload: object) =>
    api.inject({ method: 'POST', url: '/api/v1/namespaces/ns/apps/web/promote', payload, headers: BEARER });

  it('records an intent that carries it, and refuses the promotion without it', async () => {
    apps.set('ns/web', cached('Running'));
    const refused = await promote({});
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ error: 'Conflict', message: expect.stringContaining('--skip-checks') });
    const typed = await promote({ skipChecks: 'yes' });
    expect(typed.statusCode).toBe(422);
    expect(typed.json().message).toContain('skipChecks');
    expect(patches).toHaveLength(0);

    const accepted = await promote({ skipChecks: true, revision: 2 });
    expect(accepted.statusCode).toBe(202);
    expect(patches).toHaveLength(1);
    expect(patches[0]?.url).toContain('/apis/teal.dev/v1alpha1/namespaces/ns/apps/web');
    const written = patches[0]?.body as { metadata: { annotations: Record<string, string> } };
    const intent = INTENT_SCHEMAS.promote.parse(
      JSON.parse(written.metadata.annotations[intentAnnotation('promote')] ?? ''),
    );
    expect(intent).toMatchObject({ skipChecks: true, revision: 2, by: 'ann', via: 'api' });
  });

  it('answers GET with the runs', async () => {
    apps.set('ns/web', cached('Inconclusive'));
    const res = await api.inject({ method: 'GET', url: '/api/v1/namespaces/ns/apps/web', headers: BEARER });
    expect(res.statusCode).toBe(200);
    expect(res.json().analysis).toEqual({ prePromotion: run('Inconclusive') });
  });
});

describe('ApiHandlers, without fastify', () => {
  const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const user = { username: 'ann', groups: [] };

  function handlers(apps: CachedApp[], ready = true) {
    const written: { ns: string; name: string; uid: string | undefined; action: string; intent: string }[] = [];
    const h = new ApiHandlers(
      {
        apps: () => ({
          get: (ns: string, name: string) => apps.find((a) => a.metadata.namespace === ns && a.metadata.name === name),
          list: () => apps,
          listByNamespace: (ns: string) => apps.filter((a) => a.metadata.namespace === ns),
        }),
        isReady: () => ready,
      },
      async (ns, name, uid, action, intent) => void written.push({ ns, name, uid, action, intent }),
    );
    return { h, written };
  }

  it('lists, gets and refuses as the routes do: 404 for no such App, 503 before the cache syncs', () => {
    const { h } = handlers([cached('Inconclusive')]);
    expect(h.list('all').items.map((a) => a.metadata.name)).toEqual(['web']);
    expect(h.list(['ns']).items.map((a) => a.metadata.name)).toEqual(['web']);
    expect(h.list(['other']).items).toEqual([]);
    expect(h.namespaces()).toEqual(['ns']);
    expect(h.get('ns', 'web').analysis).toEqual({ prePromotion: run('Inconclusive') });
    expect(() => h.get('ns', 'nope')).toThrow(new ApiError(404, 'App ns/nope not found'));
    expect(() => handlers([], false).h.list('all')).toThrow(ApiError);
  });

  it('records an intent bound to the App uid, and writes nothing for a refused one', async () => {
    const { h, written } = handlers([cached('Running')]);
    const act = (body: unknown) =>
      h.act({ ns: 'ns', name: 'web', action: 'promote', body, user, via: intentVia('bearer') }, silent);
    await expect(act({})).rejects.toMatchObject({ status: 409 });
    expect(written).toEqual([]);
    const accepted = await act({ skipChecks: true });
    expect(accepted).toMatchObject({ accepted: true, action: 'promote' });
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ ns: 'ns', name: 'web', uid: 'uid-1', action: 'promote' });
    expect(INTENT_SCHEMAS.promote.parse(JSON.parse(written[0]?.intent ?? ''))).toMatchObject({
      id: accepted.id,
      skipChecks: true,
      by: 'ann',
      via: 'api',
    });
  });

  it('records an action of a session (the dashboard) as via dashboard, of a bearer token as via api', () => {
    expect(intentVia('session')).toBe('dashboard');
    expect(intentVia('bearer')).toBe('api');
  });
});
