// The generated AnalysisTemplate CRD on the real API server: accepted, defaulting,
// refusing bad templates with messages that name the field, and listed with its
// printer columns. Also the App CRD's prePromotionAnalysis/postPromotionAnalysis,
// which embed the same checks.
import { ApiException } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEMPLATE_KIND, TEMPLATE_PLURAL } from '../../src/app/analysis-schema.ts';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { ARGO_SECRET_TEMPLATE, argoSecretWithArgs } from '../fixtures/argo-templates.ts';
import { canI, clients, createNamespace, kubectl, waitFor } from '../support/kube.ts';

const { ext, custom, rbac } = clients();
// Applied file by file, as test/e2e/crd.test.ts applies the App's.
const CRDS = {
  [`${TEMPLATE_PLURAL}.${GROUP}`]: new URL('../../config/crd/teal.dev_analysistemplates.yaml', import.meta.url),
  [`${PLURAL}.${GROUP}`]: new URL('../../config/crd/teal.dev_apps.yaml', import.meta.url),
};
let ns: string;
let removeNs: () => Promise<void>;

async function installCrd(name: string, path: URL): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '-f', path.pathname]);
  expect(applied.stderr).toBe('');
  await waitFor(`the ${name} CRD to be established`, async () => {
    const crd = await ext.readCustomResourceDefinition({ name });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? crd : undefined;
  });
}

beforeAll(async () => {
  for (const [name, path] of Object.entries(CRDS)) await installCrd(name, path);
  ({ name: ns, remove: removeNs } = await createNamespace('at-crd'));
});
afterAll(async () => removeNs());

const webMetric = (name: string, over: Record<string, unknown> = {}) => ({
  name,
  successCondition: 'result == true',
  provider: { web: { url: 'http://127.0.0.1:8080/healthz', jsonPath: '{$.ok}' } },
  ...over,
});
const jobProvider = { job: { spec: { template: { spec: { containers: [{ name: 'smoke', image: 'busybox' }] } } } } };

const template = (name: string, metrics: unknown[], args?: unknown[]) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: TEMPLATE_KIND,
  metadata: { name },
  spec: { ...(args ? { args } : {}), metrics },
});

const createIn = (plural: string) => (body: unknown) =>
  custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural,
    body,
    fieldValidation: 'Strict',
  });
const createTemplate = createIn(TEMPLATE_PLURAL);
const createApp = createIn(PLURAL);

/** The line of the API server's refusal that names the field. */
async function refusal(created: Promise<unknown>, field: string): Promise<string> {
  const err = await created.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiException);
  const status = err as ApiException<string>;
  expect(status.code).toBe(422);
  const { message } = JSON.parse(status.body) as { message: string };
  const line = message.split(/\n|, (?=spec)/).find((l) => l.includes(`${field}:`));
  expect(line, message).toBeDefined();
  return line ?? '';
}

describe('the AnalysisTemplate CRD on the API server', () => {
  it('is accepted as structural, namespaced, in the teal category', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: `${TEMPLATE_PLURAL}.${GROUP}` });
    expect(crd.status?.conditions?.find((c) => c.type === 'NonStructuralSchema')).toBeUndefined();
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({ kind: 'AnalysisTemplate', categories: ['teal'] });
  });

  it('stores a valid template with the defaults applied by the API server', async () => {
    const stored = (await createTemplate(
      template(
        'http-and-smoke',
        [
          webMetric('http-ok', { interval: '10s', count: 3, failureLimit: 1 }),
          { name: 'smoke', provider: jobProvider },
          {
            name: 'errors',
            successCondition: 'result[0] < 0.05',
            provider: { prometheus: { address: 'http://127.0.0.1:9090', query: 'sum(rate(errors[1m]))' } },
          },
        ],
        [{ name: 'service' }, { name: 'threshold', value: '0.05' }],
      ),
    )) as { spec: { metrics: { consecutiveErrorLimit: number; provider: Record<string, Record<string, unknown>> }[] } };
    const [web, job, prometheus] = stored.spec.metrics;
    expect(web?.consecutiveErrorLimit).toBe(4);
    expect(web?.provider.web).toMatchObject({ method: 'GET', timeoutSeconds: 10 });
    expect(job?.provider.job?.spec).toMatchObject({
      activeDeadlineSeconds: 600,
      template: { spec: { restartPolicy: 'Never' } },
    });
    expect(prometheus?.provider.prometheus).toMatchObject({ timeout: 30 });
  });

  // Argo's count and limits are IntOrStrings and its durations strings: a template may leave them to arguments.
  it("stores Argo's rollout-secret-withArgs template as Argo writes it but for its apiVersion", async () => {
    const { args, metrics } = argoSecretWithArgs();
    const stored = (await createTemplate(template(ARGO_SECRET_TEMPLATE, metrics, args))) as {
      spec: { metrics: Record<string, unknown>[] };
    };
    expect(stored.spec.metrics[0]).toMatchObject({
      count: '{{args.analysis-runs}}',
      interval: '{{args.analysis-interval}}',
      initialDelay: '{{args.analysis-interval}}',
      failureLimit: '{{args.failure-limit}}',
      inconclusiveLimit: 0,
      consecutiveErrorLimit: 4,
      provider: { web: { url: '{{args.secret-url}}' } },
    });
  });

  it('stores a check whose limits are arguments beside numbers, and digits as text, as Argo does', async () => {
    const check = webMetric('mixed', {
      interval: '{{args.every}}',
      count: '{{args.runs}}',
      failureLimit: 3,
      inconclusiveLimit: '1',
      consecutiveErrorLimit: '{{ args.errors }}',
    });
    const stored = (await createTemplate(template('mixed', [check]))) as { spec: { metrics: unknown[] } };
    expect(stored.spec.metrics[0]).toMatchObject({ failureLimit: 3, inconclusiveLimit: '1' });
  });

  it.each<{ title: string; metrics: unknown[]; field: string; message: RegExp }>([
    {
      title: 'a check with two providers',
      metrics: [
        webMetric('both', {
          successCondition: undefined,
          provider: { ...jobProvider, web: webMetric('x').provider.web },
        }),
      ],
      field: 'spec.metrics[0].provider',
      message: /exactly one of job, web and prometheus/,
    },
    {
      title: 'an interval without count',
      metrics: [webMetric('forever', { interval: '30s' })],
      field: 'spec.metrics[0]',
      message: /count must be set with interval/,
    },
    {
      title: 'an interval of "0" (issue #24 S4: 20 such checks flooded their target)',
      metrics: [webMetric('flood', { interval: '0', count: 100 })],
      field: 'spec.metrics[0].interval',
      message: /interval must be at least 1s/,
    },
    {
      title: 'an interval under a second',
      metrics: [webMetric('flood', { interval: '999ms', count: 100 })],
      field: 'spec.metrics[0].interval',
      message: /interval must be at least 1s/,
    },
    {
      title: 'a job check with a successCondition',
      metrics: [{ name: 'smoke', successCondition: 'result == true', provider: jobProvider }],
      field: 'spec.metrics[0]',
      message: /successCondition and failureCondition are for web and prometheus/,
    },
    {
      title: 'a built-in placeholder in count (arguments only)',
      metrics: [webMetric('builtin', { count: '{{preview.revision}}', interval: '1m' })],
      field: 'spec.metrics[0].count',
      message: /should match/,
    },
    {
      title: 'a count of 0',
      metrics: [webMetric('none', { count: 0 })],
      field: 'spec.metrics[0].count',
      message: /should be greater than or equal to 1/,
    },
    {
      title: 'a word as failureLimit',
      metrics: [webMetric('word', { failureLimit: 'two' })],
      field: 'spec.metrics[0].failureLimit',
      message: /should match/,
    },
    {
      title: 'an interval that is neither a duration nor holds an argument',
      metrics: [webMetric('soon', { interval: 'soon', count: 2 })],
      field: 'spec.metrics[0].interval',
      message: /should match/,
    },
    {
      title: 'a count below failureLimit, both numbers',
      metrics: [webMetric('below', { interval: '10s', count: 2, failureLimit: 3 })],
      field: 'spec.metrics[0]',
      message: /count must be at least failureLimit and inconclusiveLimit/,
    },
    {
      title: 'a consecutiveErrorLimit over its maximum',
      metrics: [webMetric('retries', { consecutiveErrorLimit: 61 })],
      field: 'spec.metrics[0].consecutiveErrorLimit',
      message: /less than or equal to 60/,
    },
    {
      title: 'two checks of one name',
      metrics: [webMetric('twice'), webMetric('twice')],
      field: 'spec.metrics[1]',
      message: /Duplicate value/,
    },
  ])('refuses $title with a message naming $field', async ({ metrics, field, message }) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    expect(await refusal(createTemplate(template(name, metrics)), field)).toMatch(message);
    const listed = (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: TEMPLATE_PLURAL,
    })) as { items: { metadata: { name: string } }[] };
    expect(listed.items.map((i) => i.metadata.name)).not.toContain(name);
  });

  it('shows its printer columns in kubectl get', async () => {
    await createTemplate(template('two-checks', [webMetric('http-ok'), webMetric('http-ready')]));
    const { stdout, stderr } = await kubectl(['get', `${TEMPLATE_PLURAL}.${GROUP}`, 'two-checks', '-n', ns]);
    expect(stderr).toBe('');
    const [header, row] = stdout.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'AGE']);
    expect(row?.split(/\s+/)[0]).toBe('two-checks');
  });
});

describe('the App CRD with analysis', () => {
  it('stores an App with prePromotionAnalysis from a template and inline postPromotionAnalysis', async () => {
    const app = e2eApp('checked', {
      blueGreen: {
        prePromotionAnalysis: {
          templates: [{ templateName: 'http-and-smoke' }],
          args: [{ name: 'service', value: '{{preview.service}}' }],
        },
        postPromotionAnalysis: { metrics: [webMetric('after')] },
      },
    });
    const stored = (await createApp(app)) as {
      spec: { strategy: { blueGreen: { postPromotionAnalysis: { metrics: { consecutiveErrorLimit: number }[] } } } };
    };
    expect(stored.spec.strategy.blueGreen.postPromotionAnalysis.metrics[0]?.consecutiveErrorLimit).toBe(4);
  });

  it('refuses a prePromotionAnalysis with neither templates nor metrics, naming the field', async () => {
    const app = e2eApp('unchecked', {
      blueGreen: { prePromotionAnalysis: { args: [{ name: 'service', value: 'x' }] } },
    });
    expect(await refusal(createApp(app), 'spec.strategy.blueGreen.prePromotionAnalysis')).toMatch(
      /analysis needs templates or metrics/,
    );
  });
});

describe('who may use AnalysisTemplates (config/rbac/roles.yaml)', () => {
  const ROLES = new URL('../../config/rbac/roles.yaml', import.meta.url);
  const RESOURCE = `${TEMPLATE_PLURAL}.${GROUP}`;

  async function bindUser(user: string, role: string): Promise<void> {
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: user },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  }

  // A promoter may not change a template: that would change the checks of every App naming it.
  it.each([
    ['teal-viewer', ['get', 'list', 'watch'], ['create', 'update', 'patch', 'delete']],
    ['teal-promoter', ['get', 'list', 'watch'], ['create', 'update', 'patch', 'delete']],
    ['teal-admin', ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'], []],
  ])('%s may %j and not %j', async (role, may, mayNot) => {
    const applied = await kubectl(['apply', '--server-side', '-f', ROLES.pathname]);
    expect(applied.code, applied.stderr).toBe(0);
    const user = `${role}-user`;
    await bindUser(user, role);
    const answers = async (verbs: string[]) =>
      Promise.all(verbs.map(async (verb) => `${verb}: ${await canI(verb, RESOURCE, user, ['-n', ns])}`));
    expect(await answers(may)).toEqual(may.map((verb) => `${verb}: yes`));
    expect(await answers(mayNot)).toEqual(mayNot.map((verb) => `${verb}: no`));
  });
});
