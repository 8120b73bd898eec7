// The prometheus and web providers, secrets, cancellation and templates, end to
// end: the operator runs as a child process against the real control plane, a
// real Prometheus scrapes an exporter the test controls, web checks ask an HTTP
// server of the test's on 127.0.0.1, and a watcher checks invariant 1 at every
// change of an active Service throughout.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnalysisInput,
  TEMPLATE_API_VERSION,
  TEMPLATE_KIND,
  TEMPLATE_PLURAL,
} from '../../src/app/analysis-schema.ts';
import { LABEL_HASH } from '../../src/app/labels.ts';
import { MASK } from '../../src/app/mask.ts';
import { type AppInput, GROUP, VERSION } from '../../src/app/schema.ts';
import { type Prometheus, startPrometheus } from '../cluster/prometheus.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { ARGO_ROLLOUT_ARGS, ARGO_SECRET_TEMPLATE, argoSecretWithArgs } from '../fixtures/argo-templates.ts';
import { activeRevision, appSteps, checkServers, conditionOf, webCheck } from '../support/analysis.ts';
import { createApp, phase, replicaSetsOf, type StoredApp, waitForApp } from '../support/apps.ts';
import { type Exporter, startExporter } from '../support/exporter.ts';
import { clients, waitFor } from '../support/kube.ts';
import type { Operator } from '../support/operator.ts';
import { type Invariant, type OperatorNamespace, operatorNamespace } from '../support/operator-namespace.ts';
import { waitForScrape } from '../support/prometheus.ts';
import { serviceAccount } from '../support/users.ts';
import { watchChanges } from '../support/watch.ts';

const { core, batch, custom } = clients();
let ns: string;
let world: OperatorNamespace;
let operator: Operator;
let invariant: Invariant;
let exporter: Exporter;
let prom: Prometheus;
const { serve, closeAll: closeServers } = checkServers();
const { released, newImage } = appSteps(() => ns);

beforeAll(async () => {
  world = await operatorNamespace('analysis-providers');
  ({ ns, operator, invariant } = world);
  exporter = await startExporter();
  prom = await startPrometheus({ targets: [exporter.target], log: (line) => console.error(line) });
});

afterAll(async () => {
  // The operator first: a measurement it still has in flight may not hang on a closed server.
  await world?.stop();
  await closeServers();
  await prom?.stop();
  await exporter?.close();
});

// ---- helpers ----

function app(name: string, blueGreen: Record<string, unknown>): AppInput {
  return e2eApp(name, { blueGreen: { scaleDownDelaySeconds: 2, ...blueGreen } });
}

/** Auto promotion gated by these pre-promotion checks. */
const gated = (name: string, analysis: AnalysisInput) =>
  app(name, { autoPromotionEnabled: true, prePromotionAnalysis: analysis });

async function eventsOf(name: string) {
  const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

/** Waits until the App has an Event of each reason, of this type; returns its Events. */
async function waitForEvents(name: string, type: 'Normal' | 'Warning', reasons: string[]) {
  return waitFor(`${name}: ${type} events ${reasons.join(', ')}`, async () => {
    const events = await eventsOf(name);
    const have = new Set(events.filter((e) => e.type === type).map((e) => e.reason));
    return reasons.every((r) => have.has(r)) ? events : undefined;
  });
}

async function createTemplate(name: string, spec: Record<string, unknown>): Promise<void> {
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: TEMPLATE_PLURAL,
    body: { apiVersion: TEMPLATE_API_VERSION, kind: TEMPLATE_KIND, metadata: { name }, spec },
  });
}

/**
 * Every state of one named object as the API server reports it, from its
 * current one on: what a poll could miss (a state that lasts one write).
 */
async function watchNamed<O, T>(
  path: string,
  name: string,
  pick: (obj: O) => T,
): Promise<{ seen: T[]; stop: () => void }> {
  const seen: T[] = [];
  const stop = await watchChanges(path, { fieldSelector: `metadata.name=${name}` }, (type, obj: O) => {
    if (type === 'ADDED' || type === 'MODIFIED') seen.push(pick(obj));
  });
  await waitFor(`a first state of ${name}`, async () => seen.length > 0 || undefined);
  return { seen, stop };
}

type RunSeen = { id?: string; revision?: number; phase?: string } | undefined;
const runOf = (obj: StoredApp): RunSeen => obj.status?.prePromotionAnalysis;
const selectorOf = (obj: { spec?: { selector?: Record<string, string> } }) => obj.spec?.selector?.[LABEL_HASH];

// ---- the scenarios ----

describe('prometheus checks', () => {
  it('a failing prometheus check aborts the release, and the active Service never moves', async () => {
    const query = 'teal_test_error_ratio{app="errors"}';
    exporter.set('teal_test_error_ratio', { app: 'errors' }, 0.2);
    await waitForScrape(prom.url, query, 0.2);
    const check = {
      name: 'error-ratio',
      successCondition: 'result[0] < 0.05',
      provider: { prometheus: { address: prom.url, query } },
    };
    const first = await released(gated('errors', { metrics: [check] }));
    const selectors = await watchNamed(`/api/v1/namespaces/${ns}/services`, 'errors', selectorOf);
    try {
      await newImage('errors', '2');
      const settled = await waitForApp(
        ns,
        'errors',
        'aborted by its check, Degraded',
        (a) => a.status?.abort !== undefined && phase('Degraded')(a),
      );
      expect(settled.status?.abort).toMatchObject({ revision: 2, by: 'teal', via: 'analysis' });
      expect(settled.status?.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Failed' });
      expect(conditionOf(settled, 'Ready')).toMatchObject({ status: 'False', reason: 'AnalysisFailed' });
      // The check, the measured value and the condition, all in the message a person reads.
      const message = settled.status?.message ?? '';
      expect(message).toContain('check "error-ratio" failed');
      expect(message).toContain('[0.2]');
      expect(message).toContain('result[0] < 0.05');
      expect(settled.status?.active?.revision).toBe(first.status?.active?.revision);
      expect(new Set(selectors.seen)).toEqual(new Set([first.status?.active?.podTemplateHash]));
      // Events are written after the status that has them.
      await waitForEvents('errors', 'Warning', ['MeasurementFailed', 'AnalysisRunFailed']);
    } finally {
      selectors.stop();
    }
  });
});

describe('web checks', () => {
  it('an answer 500 is an Error retried 10 s later; the 200 that follows passes and promotes', async () => {
    const server = await serve(({ n }) =>
      n === 1 ? { status: 500, body: 'warming up' } : { status: 200, body: { ok: true } },
    );
    await released(gated('flaky', { metrics: [webCheck('health', `${server.url}/healthz`)] }));
    await newImage('flaky', '2');
    const done = await waitForApp(ns, 'flaky', 'revision 2 active', activeRevision(2));
    const run = done.status?.prePromotionAnalysis;
    expect(run).toMatchObject({ revision: 2, phase: 'Successful' });
    const health = run?.checks[0];
    expect(health).toMatchObject({ name: 'health', provider: 'web', phase: 'Successful', successful: 1, error: 1 });
    const [errored, passed] = health?.measurements ?? [];
    expect(errored).toMatchObject({ n: 1, phase: 'Error' });
    expect(errored?.message).toMatch(/500/);
    expect(passed).toMatchObject({ n: 2, phase: 'Successful' });
    expect(passed?.value).toMatch(/ok.*true/);
    // Argo's error interval, whatever the check's own.
    expect(Date.parse(passed?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(errored?.finishedAt ?? '') + 10_000);
    expect(server.requestsTo('/healthz').map((r) => r.n)).toEqual([1, 2]);
  });

  it('a header from a Secret reaches the server and nothing else: not status, Events or logs', async () => {
    const token = `tok-${randomBytes(16).toString('hex')}`;
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'check-token' }, stringData: { token } },
    });
    // The server echoes the header it got: Teal must mask the answer as well as the request.
    const server = await serve(({ n, headers }) => ({
      status: 200,
      body: { ok: n > 1 && headers.authorization === `Bearer ${token}`, echo: headers.authorization },
    }));
    const check = webCheck('secured', `${server.url}/secure`, {
      // One failure allowed: the first answer fails, so a MeasurementFailed Event carries the (masked) value.
      count: 2,
      interval: '1s',
      failureLimit: 1,
      provider: {
        web: { url: `${server.url}/secure`, headers: [{ key: 'Authorization', value: 'Bearer {{args.token}}' }] },
      },
    });
    const args = [{ name: 'token', valueFrom: { secretKeyRef: { name: 'check-token', key: 'token' } } }];
    await released(gated('secret', { args, metrics: [check] }));
    await newImage('secret', '2');
    const done = await waitForApp(ns, 'secret', 'revision 2 active', activeRevision(2));
    expect(server.requestsTo('/secure').map((r) => r.headers.authorization)).toEqual([
      `Bearer ${token}`,
      `Bearer ${token}`,
    ]);
    const measurements = done.status?.prePromotionAnalysis?.checks[0]?.measurements ?? [];
    expect(measurements.map((m) => m.phase)).toEqual(['Failed', 'Successful']);
    expect(measurements[0]?.value).toContain(MASK);
    expect(JSON.stringify(done)).not.toContain(token);
    await waitForEvents('secret', 'Warning', ['MeasurementFailed']);
    const events = await waitForEvents('secret', 'Normal', ['AnalysisRunStarted', 'AnalysisRunSuccessful']);
    for (const e of events) expect(e.message ?? '').not.toContain(token);
    expect(operator.logs()).not.toContain(token);
  });
});

describe('URL userinfo and encoded secrets (issue #24 S3)', () => {
  it("a Prometheus address's userinfo is sent as Basic credentials and never recorded; an echo in any encoding is masked", async () => {
    const user = `u-${randomBytes(4).toString('hex')}`;
    // The characters a URL must percent-encode and JSON must escape.
    const password = `Sp"e c<i>al-${randomBytes(12).toString('hex')}`;
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'prom-password' }, stringData: { password } },
    });
    const basic = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    const leaks = [
      password,
      encodeURIComponent(password),
      encodeURI(password),
      encodeURIComponent(password).replaceAll('%20', '+'),
      JSON.stringify(password).slice(1, -1),
      Buffer.from(password).toString('base64'),
      basic,
      `${user}:`,
      `${user}@`,
    ];
    // A Prometheus that refuses the first query, quoting what it got in every form, then answers.
    const server = await serve(({ n, headers }) =>
      n === 1
        ? {
            status: 400,
            body: {
              status: 'error',
              errorType: 'bad_data',
              error: `got ${headers.authorization} ${encodeURIComponent(password)} ${JSON.stringify(password)}`,
            },
          }
        : {
            status: 200,
            body: { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [0, '0.01'] }] } },
          },
    );
    const address = server.url.replace('://', `://${user}:{{args.password}}@`);
    const check = {
      name: 'errors',
      successCondition: 'result[0] < 0.05',
      provider: { prometheus: { address, query: 'errors' } },
    };
    const args = [{ name: 'password', valueFrom: { secretKeyRef: { name: 'prom-password', key: 'password' } } }];
    await released(gated('userinfo', { args, metrics: [check] }));
    await newImage('userinfo', '2');
    const done = await waitForApp(ns, 'userinfo', 'revision 2 active', activeRevision(2));

    // The credentials reached Prometheus as Basic auth, on a URL without userinfo.
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([basic, basic]);
    expect(server.requests[0]?.url).toMatch(/^\/api\/v1\/query\?query=errors$/);
    const [refused, passed] = done.status?.prePromotionAnalysis?.checks[0]?.measurements ?? [];
    expect(refused).toMatchObject({ phase: 'Error' });
    // The username's own base64 (it is in the spec, not a Secret) may stay; the password's is masked.
    expect(refused?.message).toMatch(/got Basic [A-Za-z0-9+/]*\*{5} \*{5} "\*{5}"/);
    expect(passed).toMatchObject({ phase: 'Successful' });

    const events = await waitForEvents('userinfo', 'Warning', ['MeasurementFailed']);
    const api = await fetch(`http://127.0.0.1:${operator.healthPort}/api/v1/namespaces/${ns}/apps/userinfo`, {
      headers: { authorization: `Bearer ${await serviceAccount(ns, 'viewer', ['get'])}` },
    });
    expect(api.status).toBe(200);
    const recorded = {
      status: JSON.stringify(done.status),
      events: events.map((e) => e.message ?? '').join('\n'),
      logs: operator.logs(),
      api: await api.text(),
    };
    for (const [where, text] of Object.entries(recorded)) {
      for (const leak of leaks) expect(text, `${where} holds ${leak}`).not.toContain(leak);
    }
  });
});

describe('cancellation', () => {
  it('a new image during a run cancels it, deletes its Jobs, and runs the new revision once its preview is up', async () => {
    // Holds every answer: the web measurement is in flight when the run is cancelled.
    const server = await serve(() => 'hold');
    const smoke = {
      name: 'smoke',
      // The second measurement waits 10 minutes: the run is Running, its first Job done and kept.
      count: 2,
      interval: '10m',
      provider: {
        job: {
          spec: {
            backoffLimit: 0,
            template: {
              spec: { containers: [{ name: 'smoke', image: 'curlimages/curl:8', args: ['-f', 'http://preview/'] }] },
            },
          },
        },
      },
    };
    const slow = webCheck('slow', `${server.url}/slow/{{preview.revision}}`, {
      provider: { web: { url: `${server.url}/slow/{{preview.revision}}`, timeoutSeconds: 300 } },
    });
    await released(gated('cancel', { metrics: [smoke, slow] }));
    const runs = await watchNamed(`/apis/${GROUP}/${VERSION}/namespaces/${ns}/apps`, 'cancel', runOf);
    try {
      await newImage('cancel', '2');
      const measuring = await waitForApp(
        ns,
        'cancel',
        'revision 2 measured once by its job, in flight on the web',
        (a) => {
          const run = a.status?.prePromotionAnalysis;
          const [job, web] = [run?.checks.find((c) => c.name === 'smoke'), run?.checks.find((c) => c.name === 'slow')];
          return run?.revision === 2 && job?.successful === 1 && web?.measurements.at(-1)?.phase === 'Running';
        },
      );
      const oldId = measuring.status?.prePromotionAnalysis?.id ?? '';
      await waitFor(
        'the web request of revision 2',
        async () => server.requestsTo('/slow/2').length === 1 || undefined,
      );
      const jobsOf = async (id: string) =>
        (await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/analysis=${id}` })).items;
      expect(await jobsOf(oldId)).toHaveLength(1);

      await newImage('cancel', '3');
      const next = await waitForApp(
        ns,
        'cancel',
        'a run for revision 3',
        (a) => a.status?.prePromotionAnalysis?.revision === 3,
      );
      expect(runs.seen).toContainEqual(expect.objectContaining({ id: oldId, revision: 2, phase: 'Cancelled' }));
      await waitFor(
        'the Jobs of the cancelled run deleted',
        async () => (await jobsOf(oldId)).length === 0 || undefined,
      );
      await waitFor(
        'the web request of the cancelled run aborted',
        async () => server.requestsTo('/slow/2')[0]?.aborted || undefined,
      );
      // The new run started once revision 3's preview was available, not before.
      const run = next.status?.prePromotionAnalysis;
      expect(run?.id).not.toBe(oldId);
      expect(next.status?.preview?.revision).toBe(3);
      expect(Date.parse(run?.startedAt ?? '')).toBeGreaterThanOrEqual(
        Date.parse(next.status?.preview?.availableAt ?? ''),
      );
      const events = await waitForEvents('cancel', 'Normal', ['AnalysisRunCancelled']);
      const cancelled = events.filter((e) => e.reason === 'AnalysisRunCancelled');
      expect(cancelled.map((e) => e.message).join('\n')).toMatch(/revision 2/);
    } finally {
      runs.stop();
    }
  });
});

describe('templates', () => {
  /** A web check whose path holds the App's argument, and whose query names the App. */
  const healthTemplate = (url: string) => ({
    args: [{ name: 'service' }],
    metrics: [webCheck('health', `${url}/health/{{args.service}}?app={{app.name}}`)],
  });
  const uses = (templateName: string, service: string): AnalysisInput => ({
    templates: [{ templateName }],
    args: [{ name: 'service', value: service }],
  });

  it('one AnalysisTemplate used by two Apps measures each with its own args', async () => {
    const server = await serve(() => ({ status: 200, body: { ok: true } }));
    await createTemplate('health-by-service', healthTemplate(server.url));
    await Promise.all([
      released(gated('tpl-a', uses('health-by-service', 'alpha'))),
      released(gated('tpl-b', uses('health-by-service', 'beta'))),
    ]);
    await Promise.all([newImage('tpl-a', '2'), newImage('tpl-b', '2')]);
    const done = await Promise.all(
      ['tpl-a', 'tpl-b'].map((name) => waitForApp(ns, name, 'revision 2 active', activeRevision(2))),
    );
    for (const a of done) {
      expect(a.status?.prePromotionAnalysis).toMatchObject({ revision: 2, phase: 'Successful' });
      expect(a.status?.prePromotionAnalysis?.checks.map((c) => c.name)).toEqual(['health']);
    }
    expect(server.requests.map((r) => r.url).sort()).toEqual(['/health/alpha?app=tpl-a', '/health/beta?app=tpl-b']);
  });

  it('an App naming a template that does not exist is InvalidSpec, and proceeds once it is created', async () => {
    const server = await serve(() => ({ status: 200, body: { ok: true } }));
    await createApp(ns, gated('tpl-late', uses('late-health', 'gamma')));
    const invalid = await waitForApp(
      ns,
      'tpl-late',
      'InvalidSpec',
      (a) => phase('Degraded')(a) && conditionOf(a, 'InvalidSpec')?.status === 'True',
    );
    const why = conditionOf(invalid, 'InvalidSpec')?.message ?? '';
    expect(why).toContain('spec.strategy.blueGreen.prePromotionAnalysis.templates[0].templateName');
    expect(why).toContain('late-health');
    expect(await replicaSetsOf(ns, 'tpl-late')).toEqual([]);

    await createTemplate('late-health', healthTemplate(server.url));
    const ready = await waitForApp(ns, 'tpl-late', 'released once its template exists', phase('Healthy'));
    expect(conditionOf(ready, 'InvalidSpec')?.status).toBe('False');
    await newImage('tpl-late', '2');
    await waitForApp(ns, 'tpl-late', 'revision 2 active', activeRevision(2));
    expect(server.requests.map((r) => r.url)).toEqual(['/health/gamma?app=tpl-late']);
  });
});

describe("Argo Rollouts' templates", () => {
  /** The Rollout's arguments for Argo's rollout-secret-withArgs template, with these changed. */
  const rolloutArgs = (over: Record<string, string> = {}) =>
    Object.entries({ ...ARGO_ROLLOUT_ARGS, ...over }).map(([name, value]) => ({ name, value }));
  const byArgoTemplate = (over: Record<string, string> = {}): AnalysisInput => ({
    templates: [{ templateName: ARGO_SECRET_TEMPLATE }],
    args: rolloutArgs(over),
  });

  beforeAll(async () => {
    // Two answers that fail the condition, then ones that pass: within the failureLimit the Rollout gives.
    const server = await serve(({ n }) => ({ status: 200, body: { message: n <= 2 ? 'Not yet' : 'It worked!' } }));
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'example-secret' }, stringData: { secretUrl: `${server.url}/example.json` } },
    });
    await createTemplate(ARGO_SECRET_TEMPLATE, argoSecretWithArgs());
  });

  it("rollout-secret-withArgs, only its apiVersion changed: count, initialDelay, interval and failureLimit come from the App's arguments", async () => {
    await released(gated('argo-args', byArgoTemplate()));
    await newImage('argo-args', '2');
    const done = await waitForApp(ns, 'argo-args', 'revision 2 active', activeRevision(2));
    const run = done.status?.prePromotionAnalysis;
    const check = run?.checks[0];
    // analysis-runs: 3 measurements, judged by the condition the success-condition argument gave;
    // failure-limit: 2 failed ones allowed.
    expect(check).toMatchObject({ name: 'webmetric', phase: 'Successful', count: 3, successful: 1, failed: 2 });
    expect(check?.measurements.map((m) => m.phase)).toEqual(['Failed', 'Failed', 'Successful']);
    expect(check?.message).toContain('count (3) reached');
    const [first, ...rest] = check?.measurements ?? [];
    // analysis-interval (5s) is the initialDelay, and the interval from the end of one to the start of the next.
    const ms = (t: string | undefined) => Date.parse(t ?? '');
    expect(ms(first?.startedAt) - ms(run?.startedAt)).toBeGreaterThanOrEqual(5_000);
    rest.forEach((m, i) => {
      expect(ms(m.startedAt) - ms(check?.measurements[i]?.finishedAt)).toBeGreaterThanOrEqual(5_000);
    });
  });

  it('an argument that makes count no number is InvalidSpec naming the check, the field and the argument', async () => {
    await createApp(ns, gated('argo-bad-args', byArgoTemplate({ 'analysis-runs': 'ten' })));
    const invalid = await waitForApp(
      ns,
      'argo-bad-args',
      'InvalidSpec',
      (a) => phase('Degraded')(a) && conditionOf(a, 'InvalidSpec')?.status === 'True',
    );
    expect(conditionOf(invalid, 'InvalidSpec')?.message).toBe(
      'spec.strategy.blueGreen.prePromotionAnalysis.metrics "webmetric".count: must be a whole number ({{args.analysis-runs}} gave "ten")',
    );
    expect(await replicaSetsOf(ns, 'argo-bad-args')).toEqual([]);
  });
});

afterAll(() => {
  expect(invariant.violations).toEqual([]);
});
