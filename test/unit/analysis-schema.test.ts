import { describe, expect, it } from 'vitest';
import { buildTemplateCrd } from '../../src/analysis/crd.ts';
import { validateTemplate } from '../../src/analysis/validate.ts';
import { AnalysisRunStatusSchema, AnalysisSchema, CheckSchema } from '../../src/app/analysis-schema.ts';
import { schemaOf } from '../../src/app/crd.ts';
import { formatIssues } from '../../src/app/validate.ts';
import { argoSecretWithArgs } from '../fixtures/argo-templates.ts';

const webMetric = (over: Record<string, unknown> = {}) => ({
  name: 'http-ok',
  provider: { web: { url: 'http://{{preview.service}}:8080/healthz' } },
  ...over,
});

const template = (metrics: unknown[], args?: unknown[]) => ({
  apiVersion: 'teal.dev/v1alpha1',
  kind: 'AnalysisTemplate',
  metadata: { name: 'http', namespace: 'team-a' },
  spec: { ...(args ? { args } : {}), metrics },
});

function errorsOf(object: unknown): string[] {
  const result = validateTemplate(object);
  return result.ok ? [] : result.errors;
}

describe('the check schema: defaults as Argo Rollouts has them', () => {
  it('fills the limits, and leaves count unset (one measurement without interval)', () => {
    const check = CheckSchema.parse(webMetric());
    expect(check).toEqual({
      name: 'http-ok',
      failureLimit: 0,
      inconclusiveLimit: 0,
      consecutiveErrorLimit: 4,
      provider: { web: { method: 'GET', url: 'http://{{preview.service}}:8080/healthz', timeoutSeconds: 10 } },
    });
  });

  it('defaults prometheus timeout to 30s', () => {
    const check = CheckSchema.parse({
      name: 'errors',
      successCondition: 'result[0] < 0.05',
      provider: { prometheus: { address: 'http://127.0.0.1:9090', query: 'sum(rate(errors[1m]))' } },
    });
    expect(check.provider.prometheus?.timeout).toBe(30);
  });

  it('defaults a job to restartPolicy Never and a 600s deadline', () => {
    const check = CheckSchema.parse({
      name: 'smoke',
      provider: { job: { spec: { template: { spec: { containers: [{ name: 'smoke', image: 'busybox' }] } } } } },
    });
    expect(check.provider.job?.spec).toEqual({
      activeDeadlineSeconds: 600,
      template: { spec: { containers: [{ name: 'smoke', image: 'busybox' }], restartPolicy: 'Never' } },
    });
  });

  it('accepts an Argo-style web check with interval, count, limits and a jsonPath', () => {
    const errors = errorsOf(
      template([
        webMetric({
          interval: '30s',
          count: 5,
          initialDelay: '1m',
          failureLimit: 1,
          successCondition: 'result == true',
          provider: { web: { url: 'https://status.example.com/api', jsonPath: '{$.data.ok}' } },
        }),
      ]),
    );
    expect(errors).toEqual([]);
  });

  // argoproj/argo-rollouts test/e2e/functional/rollout-secret-withArgs.yaml, its apiVersion changed:
  // Argo's count and limits are IntOrStrings, its durations strings, and its URL may come whole from a Secret.
  it("accepts Argo's rollout-secret-withArgs template: {{args}} in count, interval, initialDelay, failureLimit and url", () => {
    const { args, metrics } = argoSecretWithArgs();
    const argo = template(
      [
        ...metrics,
        {
          ...webMetric({ name: 'limits' }),
          inconclusiveLimit: '{{ args.inconclusive-limit }}',
          consecutiveErrorLimit: '2',
        },
      ],
      args,
    );
    expect(errorsOf(argo)).toEqual([]);
  });
});

describe('AnalysisTemplate refusals name the field', () => {
  const job = { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } } };
  it.each<[string, unknown, string]>([
    [
      'no provider',
      template([{ name: 'x', provider: {} }]),
      'spec.metrics[0].provider: provider needs exactly one of job, web and prometheus',
    ],
    [
      'two providers',
      template([{ name: 'x', provider: { job, web: { url: 'http://127.0.0.1/' } } }]),
      'spec.metrics[0].provider: provider needs exactly one of job, web and prometheus',
    ],
    [
      'count > 1 without interval',
      template([webMetric({ count: 3 })]),
      'spec.metrics[0]: interval must be set when count is more than 1',
    ],
    [
      'interval without count (Argo would measure forever)',
      template([webMetric({ interval: '1m' })]),
      'spec.metrics[0]: count must be set with interval: a check that never ends would hold the release forever',
    ],
    [
      'count below failureLimit',
      template([webMetric({ count: 2, interval: '10s', failureLimit: 3 })]),
      'spec.metrics[0]: count must be at least failureLimit and inconclusiveLimit',
    ],
    [
      'a condition on a job check',
      template([{ name: 'x', successCondition: 'result == 1', provider: { job } }]),
      'spec.metrics[0]: a job check passes when its Job completes: successCondition and failureCondition are for web and prometheus',
    ],
    [
      'a bad interval',
      template([webMetric({ interval: '5 minutes', count: 2 })]),
      'spec.metrics[0].interval: interval must be a duration such as 90s, 15m or 1h30m',
    ],
    ['a negative failureLimit', template([webMetric({ failureLimit: -1 })]), 'spec.metrics[0].failureLimit: '],
    [
      'a consecutiveErrorLimit that would retry for ever',
      template([webMetric({ consecutiveErrorLimit: 61 })]),
      'spec.metrics[0].consecutiveErrorLimit: consecutiveErrorLimit may be at most 60: an Error is retried every 10s, so that is ten minutes of retries',
    ],
    [
      'a metric name that is no DNS label',
      template([webMetric({ name: 'HTTP OK' })]),
      'spec.metrics[0].name: name must be a DNS-1123 label',
    ],
    [
      'two metrics with one name',
      template([webMetric(), webMetric()]),
      'spec.metrics[1].name: metric "http-ok" is listed twice',
    ],
    ['no metrics', template([]), 'spec.metrics: '],
    [
      'a web URL without scheme',
      template([webMetric({ provider: { web: { url: '127.0.0.1:8080/healthz' } } })]),
      'spec.metrics[0].provider.web.url: web.url must start with http:// or https://',
    ],
    [
      'a body with GET',
      template([webMetric({ provider: { web: { url: 'http://127.0.0.1/', body: '{}' } } })]),
      'spec.metrics[0].provider.web: web.body needs method POST or PUT',
    ],
    [
      'a method Argo does not have',
      template([webMetric({ provider: { web: { url: 'http://127.0.0.1/', method: 'DELETE' } } })]),
      'spec.metrics[0].provider.web.method: ',
    ],
    [
      'a jsonPath with a filter',
      template([webMetric({ provider: { web: { url: 'http://127.0.0.1/', jsonPath: '{$.items[?(@.ok)]}' } } })]),
      'spec.metrics[0].provider.web.jsonPath: web.jsonPath must be a path such as {$.data.ok}',
    ],
    [
      'a field Teal does not support (Argo jsonBody)',
      template([webMetric({ provider: { web: { url: 'http://127.0.0.1/', jsonBody: {} } } })]),
      'spec.metrics[0].provider.web.jsonBody: unknown field',
    ],
    [
      'a prometheus address that is no URL',
      template([{ name: 'p', provider: { prometheus: { address: 'prometheus:9090', query: 'up' } } }]),
      'spec.metrics[0].provider.prometheus.address: prometheus.address must start with http:// or https://',
    ],
    [
      'a built-in placeholder in count (only arguments, resolved when the run starts)',
      template([webMetric({ count: '{{preview.revision}}', interval: '1m' })]),
      'spec.metrics[0].count: count must be a whole number, or hold {{args.<name>}}',
    ],
    [
      'a word in failureLimit',
      template([webMetric({ failureLimit: 'two' })]),
      'spec.metrics[0].failureLimit: failureLimit must be a whole number, or hold {{args.<name>}}',
    ],
    [
      'an initialDelay that is neither a duration nor holds an argument',
      template([webMetric({ initialDelay: 'soon' })]),
      'spec.metrics[0].initialDelay: initialDelay must be a duration such as 90s, 15m or 1h30m, or hold {{args.<name>}}',
    ],
    [
      'an env var with both value and valueFrom',
      template([
        {
          name: 'x',
          provider: {
            job: {
              spec: {
                template: {
                  spec: {
                    containers: [
                      {
                        name: 'c',
                        image: 'b',
                        env: [{ name: 'T', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
                      },
                    ],
                  },
                },
              },
            },
          },
        },
      ]),
      'spec.metrics[0].provider.job.spec.template.spec.containers[0].env[0]: env needs exactly one of value and valueFrom',
    ],
    [
      'an argument with value and valueFrom',
      template([webMetric()], [{ name: 'token', value: 'x', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }]),
      'spec.args[0]: an argument has value or valueFrom, not both',
    ],
    [
      'an argument name with a dot',
      template([webMetric()], [{ name: 'a.b' }]),
      'spec.args[0].name: argument name must be letters',
    ],
    [
      'a Secret key with a slash',
      template([webMetric()], [{ name: 't', valueFrom: { secretKeyRef: { name: 's', key: 'a/b' } } }]),
      'spec.args[0].valueFrom.secretKeyRef.key: ',
    ],
  ])('refuses %s', (_title, object, message) => {
    const errors = errorsOf(object);
    expect(
      errors.some((e) => e.startsWith(message)),
      `errors: ${errors.join(' | ')}`,
    ).toBe(true);
  });
});

describe('the App-side analysis (Argo: templates and args; Teal: inline metrics too)', () => {
  const parse = (input: unknown) => {
    const result = AnalysisSchema.safeParse(input);
    return result.success ? [] : formatIssues(result.error.issues);
  };

  it("accepts Argo's shape", () => {
    expect(parse({ templates: [{ templateName: 'http' }], args: [{ name: 'path', value: '/healthz' }] })).toEqual([]);
  });

  it('accepts inline metrics alone', () => {
    expect(parse({ metrics: [webMetric()] })).toEqual([]);
  });

  it.each<[string, unknown, string]>([
    ['an empty analysis', {}, '(root): analysis needs templates or metrics'],
    ['empty lists', { templates: [], metrics: [] }, '(root): analysis needs templates or metrics'],
    [
      'an App argument with no value',
      { templates: [{ templateName: 'http' }], args: [{ name: 'path' }] },
      'args[0]: an argument needs exactly one of value and valueFrom',
    ],
    [
      'a template name that is no object name',
      { templates: [{ templateName: 'HTTP' }] },
      'templates[0].templateName: templateName must be an object name',
    ],
    [
      "Argo's clusterScope",
      { templates: [{ templateName: 'http', clusterScope: true }] },
      'templates[0].clusterScope: unknown field',
    ],
    [
      'an argument given twice',
      {
        templates: [{ templateName: 'h' }],
        args: [
          { name: 'a', value: '1' },
          { name: 'a', value: '2' },
        ],
      },
      'args[1].name: argument "a" is listed twice',
    ],
  ])('refuses %s', (_title, input, message) => {
    const errors = parse(input);
    expect(
      errors.some((e) => e.startsWith(message)),
      `errors: ${errors.join(' | ')}`,
    ).toBe(true);
  });
});

describe('the AnalysisTemplate CRD', () => {
  const crd = buildTemplateCrd();
  const text = JSON.stringify(crd);

  it('is a structural schema (no $ref, const or unions)', () => {
    expect(text).not.toMatch(/\$ref|definitions|patternProperties|"const"|anyOf|oneOf|uniqueItems|\$schema/);
  });

  it('carries the rules as CEL, so the API server refuses what the operator would', () => {
    expect(text).toContain('provider needs exactly one of job, web and prometheus');
    expect(text).toContain('count must be set with interval');
    expect(text).toContain('"x-kubernetes-list-map-keys":["name"]');
  });

  it('kubectl get shows the age: a printer column cannot count the metrics, and the first name alone would mislead', () => {
    const version = (crd.spec as { versions: { additionalPrinterColumns: { name: string }[] }[] }).versions[0];
    expect(version?.additionalPrinterColumns.map((c) => c.name)).toEqual(['Age']);
  });

  it('the App-side analysis and the run status convert too (for the App CRD)', () => {
    expect(() => schemaOf(AnalysisSchema)).not.toThrow();
    expect(() => schemaOf(AnalysisRunStatusSchema)).not.toThrow();
  });
});
