import { describe, expect, it } from 'vitest';
import {
  type ArgValue,
  type Builtins,
  bindArgs,
  builtinEnv,
  mergeArgs,
  redact,
  resolveCheck,
  secretRefs,
} from '../../src/analysis/args.ts';
import { assembleRun } from '../../src/analysis/assemble.ts';
import {
  AnalysisSchema,
  type AnalysisTemplateSpec,
  AnalysisTemplateSpecSchema,
  type Check,
  type CheckInput,
  CheckSchema,
} from '../../src/app/analysis-schema.ts';
import { MASK } from '../../src/app/mask.ts';
import { ARGO_ROLLOUT_ARGS, ARGO_SECRET_TEMPLATE, argoSecretWithArgs } from '../fixtures/argo-templates.ts';

const builtins: Builtins = {
  appName: 'weather',
  appNamespace: 'team-a',
  previewService: 'weather-preview',
  previewRevision: 7,
  previewImage: 'registry.local/team-a/weather@sha256:abc',
  sourceCommit: 'a3f1c2d4e5f60718293a4b5c6d7e8f9012345678',
};

const plain = (name: string, value: string): ArgValue => ({ name, value, secret: false });
const secret = (name: string, value: string): ArgValue => ({ name, value, secret: true });

const web = (over: Partial<CheckInput> = {}, webOver: Record<string, unknown> = {}): Check =>
  CheckSchema.parse({
    name: 'http-ok',
    successCondition: 'result.status == "ok"',
    provider: { web: { url: 'http://{{preview.service}}.{{app.namespace}}:8080{{args.path}}', ...webOver } },
    ...over,
  });

function resolved(c: Check, values: ArgValue[], b: Builtins = builtins) {
  const out = resolveCheck(c, values, b);
  if (!out.ok) throw new Error(out.errors.join('\n'));
  return out;
}

function errorsOf(c: Check, values: ArgValue[], b: Builtins = builtins): string[] {
  const out = resolveCheck(c, values, b);
  return out.ok ? [] : out.errors;
}

describe('resolveCheck', () => {
  it('replaces args and built-ins, with spaces inside the braces allowed', () => {
    const c = web({ successCondition: 'result.revision == {{ preview.revision }}' });
    const out = resolved(c, [plain('path', '/healthz')]);
    expect(out.check.provider.web?.url).toBe('http://weather-preview.team-a:8080/healthz');
    expect(out.check.successCondition).toBe('result.revision == 7');
  });

  it('resolves every built-in', () => {
    const c = web(
      {},
      {
        url: 'http://127.0.0.1/',
        body: '{{app.name}} {{app.namespace}} {{preview.service}} {{preview.revision}} {{preview.image}} {{source.commit}}',
        method: 'POST',
      },
    );
    expect(resolved(c, []).check.provider.web?.body).toBe(
      'weather team-a weather-preview 7 registry.local/team-a/weather@sha256:abc a3f1c2d4e5f60718293a4b5c6d7e8f9012345678',
    );
  });

  it('reaches into job containers: image, command, args and env', () => {
    const c = CheckSchema.parse({
      name: 'smoke',
      provider: {
        job: {
          spec: {
            template: {
              spec: {
                containers: [
                  {
                    name: 'smoke',
                    image: '{{preview.image}}',
                    command: ['/smoke', '--target={{args.target}}'],
                    env: [{ name: 'COMMIT', value: '{{source.commit}}' }],
                  },
                ],
              },
            },
          },
        },
      },
    });
    const container = resolved(c, [plain('target', 'http://weather-preview')]).check.provider.job?.spec.template.spec
      .containers[0];
    expect(container).toMatchObject({
      image: builtins.previewImage,
      command: ['/smoke', '--target=http://weather-preview'],
      env: [{ name: 'COMMIT', value: builtins.sourceCommit }],
    });
  });

  it.each<[string, Check, ArgValue[], Builtins, string]>([
    [
      'an undeclared argument',
      web(),
      [],
      builtins,
      'check "http-ok", provider.web.url: {{args.path}} names no argument: declare it in the template\'s args or give it in the App\'s args',
    ],
    [
      'an unknown placeholder',
      web({ successCondition: 'result == {{preview.port}}' }),
      [plain('path', '/')],
      builtins,
      'check "http-ok", successCondition: unknown placeholder {{preview.port}}: use one of {{preview.service}}, {{preview.revision}}, {{preview.image}}, {{app.name}}, {{app.namespace}}, {{source.commit}}, {{args.<name>}}',
    ],
    [
      'a built-in with no value for this App',
      web({}, { headers: [{ key: 'X-Commit', value: '{{source.commit}}' }] }),
      [plain('path', '/')],
      { appName: 'weather', appNamespace: 'team-a', previewService: 'weather-preview', previewRevision: 2 },
      'check "http-ok", provider.web.headers[0].value: {{source.commit}} has no value here: the App deploys a ready image, with no source',
    ],
    [
      'an unclosed placeholder',
      web({}, { url: 'http://127.0.0.1/{{args.path' }),
      [plain('path', '/')],
      builtins,
      'check "http-ok", provider.web.url: "{{" without a matching "}}"',
    ],
    [
      'a URL that is no URL once resolved',
      web({}, { url: 'http://{{args.host}}' }),
      [plain('host', 'bad host')],
      builtins,
      'check "http-ok", provider.web.url: not an http(s) URL once its placeholders are replaced',
    ],
    [
      'a secret in a condition',
      web({ successCondition: 'result.token == "{{args.token}}"' }),
      [plain('path', '/'), secret('token', 's3cr3t')],
      builtins,
      'check "http-ok", successCondition: {{args.token}} comes from a Secret and successCondition shows in status and events',
    ],
  ])('refuses %s, naming the field', (_title, c, values, b, message) => {
    expect(errorsOf(c, values, b)).toEqual([message]);
  });

  it('refuses a secret in a job check, pointing at env valueFrom', () => {
    const c = CheckSchema.parse({
      name: 'smoke',
      provider: {
        job: {
          spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox', args: ['{{args.token}}'] }] } } },
        },
      },
    });
    expect(errorsOf(c, [secret('token', 's3cr3t')])).toEqual([
      'check "smoke", provider.job.spec.template.spec.containers[0].args[0]: {{args.token}} comes from a Secret and would be written into the Job spec: use env valueFrom.secretKeyRef',
    ]);
  });

  it('reports every problem, not just the first', () => {
    const c = web({ successCondition: '{{nope}}' }, { body: '{{args.missing}}', method: 'POST' });
    expect(errorsOf(c, [plain('path', '/')])).toHaveLength(2);
  });

  describe('secrets', () => {
    const c = web({}, { headers: [{ key: 'Authorization', value: 'Bearer {{args.token}}' }] });
    const values = [plain('path', '/healthz'), secret('token', 's3cr3t-t0ken')];

    it('the executor gets the value; what may be recorded shows ***** instead', () => {
      const out = resolved(c, values);
      expect(out.check.provider.web?.headers?.[0]?.value).toBe('Bearer s3cr3t-t0ken');
      expect(out.shown.provider.web?.headers?.[0]?.value).toBe(`Bearer ${MASK}`);
      expect(JSON.stringify(out.shown)).not.toContain('s3cr3t');
      expect(out.shown.provider.web?.url).toBe('http://weather-preview.team-a:8080/healthz');
    });

    it('redacts a secret echoed by the provider', () => {
      const out = resolved(c, values);
      expect(out.redact('401: bad token s3cr3t-t0ken (s3cr3t-t0ken)')).toBe(`401: bad token ${MASK} (${MASK})`);
      expect(redact('token s3cr3t-t0ken', values)).toBe(`token ${MASK}`);
    });

    it('masks the longer of two overlapping secrets whole', () => {
      expect(redact('abc-123-xyz', [secret('a', 'abc'), secret('b', 'abc-123-xyz')])).toBe(MASK);
    });

    it('leaves plain values alone', () => {
      expect(redact('path /healthz', values)).toBe('path /healthz');
    });
  });
});

describe('mergeArgs (Argo: templates declare, the App gives)', () => {
  const ref = { secretKeyRef: { name: 'tokens', key: 'api' } };

  it('takes template defaults, lets the App override, and keeps App-only args for inline checks', () => {
    const out = mergeArgs(
      [{ name: 'http', args: [{ name: 'path', value: '/healthz' }, { name: 'port' }] }],
      [
        { name: 'port', value: '8080' },
        { name: 'extra', value: 'x' },
      ],
    );
    expect(out).toEqual({
      ok: true,
      args: [
        { name: 'path', value: '/healthz' },
        { name: 'port', value: '8080' },
        { name: 'extra', value: 'x' },
      ],
    });
  });

  it('keeps a Secret reference as a reference', () => {
    const out = mergeArgs([{ name: 'http', args: [{ name: 'token', valueFrom: ref }] }]);
    expect(out.ok && out.args).toEqual([{ name: 'token', secretKeyRef: ref.secretKeyRef }]);
    expect(out.ok && secretRefs(out.args)).toEqual([ref.secretKeyRef]);
  });

  it.each<[string, Parameters<typeof mergeArgs>[0], Parameters<typeof mergeArgs>[1], string]>([
    [
      'a required argument nobody gives',
      [{ name: 'http', args: [{ name: 'port' }] }],
      [],
      'args.port: template "http" needs a value and the App\'s args give none',
    ],
    [
      'two templates giving different defaults',
      [
        { name: 'a', args: [{ name: 'port', value: '80' }] },
        { name: 'b', args: [{ name: 'port', value: '8080' }] },
      ],
      [],
      'args.port: template "a" and template "b" give it different values',
    ],
  ])('refuses %s', (_title, templates, app, message) => {
    expect(mergeArgs(templates, app)).toEqual({ ok: false, errors: [message] });
  });

  it("accepts the same default from two templates, and one template filling the other's blank", () => {
    const out = mergeArgs([
      { name: 'a', args: [{ name: 'port' }, { name: 'host', value: 'h' }] },
      {
        name: 'b',
        args: [
          { name: 'port', value: '80' },
          { name: 'host', value: 'h' },
        ],
      },
    ]);
    expect(out.ok && out.args).toEqual([
      { name: 'port', value: '80' },
      { name: 'host', value: 'h' },
    ]);
  });
});

describe('bindArgs', () => {
  const args = [
    { name: 'path', value: '/healthz' },
    { name: 'token', secretKeyRef: { name: 'tokens', key: 'api' } },
  ];

  it('marks values read from a Secret as secret', () => {
    expect(bindArgs(args, () => 's3cr3t')).toEqual({
      ok: true,
      values: [plain('path', '/healthz'), secret('token', 's3cr3t')],
    });
  });

  it('names the argument, Secret and key when the value cannot be read, without any value', () => {
    expect(bindArgs(args, () => undefined)).toEqual({
      ok: false,
      errors: ['args.token: Secret "tokens" or its key "api" was not found'],
    });
  });
});

describe('builtinEnv', () => {
  it('gives a job check the built-ins that have a value', () => {
    expect(
      builtinEnv({ appName: 'weather', appNamespace: 'team-a', previewService: 'weather-preview', previewRevision: 3 }),
    ).toEqual([
      { name: 'TEAL_PREVIEW_SERVICE', value: 'weather-preview' },
      { name: 'TEAL_PREVIEW_REVISION', value: '3' },
      { name: 'TEAL_APP_NAME', value: 'weather' },
      { name: 'TEAL_APP_NAMESPACE', value: 'team-a' },
    ]);
  });
});

describe('assembleRun', () => {
  const template = (metrics: string[], args: { name: string; value?: string }[] = []): AnalysisTemplateSpec =>
    AnalysisTemplateSpecSchema.parse({
      args,
      metrics: metrics.map((name) => ({ name, provider: { web: { url: 'http://127.0.0.1/{{args.path}}' } } })),
    });

  it("lists the templates' metrics, then the inline ones, with merged args", () => {
    const analysis = AnalysisSchema.parse({
      templates: [{ templateName: 'http' }, { templateName: 'http' }],
      args: [{ name: 'path', value: 'healthz' }],
      metrics: [{ name: 'inline', provider: { web: { url: 'http://127.0.0.1/' } } }],
    });
    const out = assembleRun(analysis, new Map([['http', template(['ok', 'fast'], [{ name: 'path' }])]]));
    if (!out.ok) throw new Error(out.errors.join('\n'));
    expect(out.checks.map((c) => c.name)).toEqual(['ok', 'fast', 'inline']);
    expect(out.args).toEqual([{ name: 'path', value: 'healthz' }]);
  });

  it('names a missing template and a metric name used twice', () => {
    const analysis = AnalysisSchema.parse({
      templates: [{ templateName: 'http' }, { templateName: 'gone' }],
      metrics: [{ name: 'ok', provider: { web: { url: 'http://127.0.0.1/' } } }],
    });
    const out = assembleRun(analysis, new Map([['http', template(['ok'], [{ name: 'path', value: '/' }])]]));
    expect(out).toEqual({
      ok: false,
      errors: [
        'templates[1].templateName: AnalysisTemplate "gone" not found',
        'metrics: "ok" comes from both template "http" and the App; names must be unique in a run',
      ],
    });
  });
});

// Argo Rollouts' test/e2e/functional/rollout-secret-withArgs.yaml: its template leaves count,
// interval, initialDelay and failureLimit to arguments, which the Rollout gives.
describe('assembleRun: arguments in count, limits and durations (Argo: IntOrString and duration strings)', () => {
  const argoTemplate = AnalysisTemplateSpecSchema.parse(argoSecretWithArgs());
  const run = (args: Record<string, string>, templateArgs: Record<string, unknown>[] = []) =>
    assembleRun(
      AnalysisSchema.parse({
        templates: [{ templateName: ARGO_SECRET_TEMPLATE }],
        args: [...Object.entries(args).map(([name, value]) => ({ name, value })), ...templateArgs],
      }),
      new Map([[ARGO_SECRET_TEMPLATE, argoTemplate]]),
    );
  const errorsOfRun = (args: Record<string, string>) => {
    const out = run(args);
    return out.ok ? [] : out.errors;
  };

  it("takes the Rollout's values: the run's check has numbers and durations", () => {
    const out = run(ARGO_ROLLOUT_ARGS);
    if (!out.ok) throw new Error(out.errors.join('\n'));
    expect(out.checks[0]).toMatchObject({
      count: 3,
      interval: '5s',
      initialDelay: '5s',
      failureLimit: 2,
      inconclusiveLimit: 0,
      consecutiveErrorLimit: 4,
      // Conditions and the provider keep theirs for each measurement (resolveCheck).
      successCondition: 'result == "{{args.success-condition}}"',
      provider: { web: { url: '{{args.secret-url}}' } },
    });
  });

  it("takes the template's defaults where the App gives none, and digits as text as Argo does", () => {
    const { 'analysis-runs': _, 'analysis-interval': __, ...rest } = ARGO_ROLLOUT_ARGS;
    const out = run(rest);
    if (!out.ok) throw new Error(out.errors.join('\n'));
    expect(out.checks[0]).toMatchObject({ count: 10, interval: '100s', initialDelay: '100s', failureLimit: 2 });
    const inline = assembleRun(
      AnalysisSchema.parse({ metrics: [{ ...webCheckInput('digits'), count: '2', interval: '1m' }] }),
      new Map(),
    );
    expect(inline.ok && inline.checks[0]?.count).toBe(2);
  });

  it.each<[string, Record<string, string>, ...string[]]>([
    [
      'a count that is no number',
      { 'analysis-runs': 'ten' },
      'metrics "webmetric".count: must be a whole number ({{args.analysis-runs}} gave "ten")',
    ],
    [
      'a count of 0',
      { 'analysis-runs': '0', 'failure-limit': '0' },
      'metrics "webmetric".count: count must be at least 1 ({{args.analysis-runs}} gave "0")',
    ],
    [
      'a negative failureLimit',
      { 'failure-limit': '-1' },
      'metrics "webmetric".failureLimit: must be a whole number ({{args.failure-limit}} gave "-1")',
    ],
    [
      'an interval that is no duration',
      { 'analysis-interval': '5 minutes' },
      'metrics "webmetric".interval: interval must be a duration such as 90s, 15m or 1h30m ({{args.analysis-interval}} gave "5 minutes")',
      'metrics "webmetric".initialDelay: initialDelay must be a duration such as 90s, 15m or 1h30m ({{args.analysis-interval}} gave "5 minutes")',
    ],
    [
      'an interval under a second (issue #24 S4)',
      { 'analysis-interval': '500ms' },
      'metrics "webmetric".interval: interval must be at least 1s: a shorter one floods the target with requests and the App with status writes ({{args.analysis-interval}} gave "500ms")',
    ],
    [
      'a failureLimit above count',
      { 'failure-limit': '4' },
      'metrics "webmetric": count must be at least failureLimit and inconclusiveLimit (count: {{args.analysis-runs}} gave "3"; failureLimit: {{args.failure-limit}} gave "4")',
    ],
  ])('refuses %s, naming the check, the field and the argument', (_, over, ...messages) => {
    expect(errorsOfRun({ ...ARGO_ROLLOUT_ARGS, ...over })).toEqual(messages);
  });

  it('refuses an argument from a Secret in a count: it shows in status and events', () => {
    const { 'analysis-runs': _, ...rest } = ARGO_ROLLOUT_ARGS;
    const out = run(rest, [{ name: 'analysis-runs', valueFrom: { secretKeyRef: { name: 'runs', key: 'n' } } }]);
    expect(out.ok ? [] : out.errors).toEqual([
      'metrics "webmetric".count: {{args.analysis-runs}} comes from a Secret and count shows in status and events',
    ]);
  });

  it('refuses an argument nobody declares or gives', () => {
    const inline = assembleRun(
      AnalysisSchema.parse({ metrics: [{ ...webCheckInput('unknown'), count: '{{args.runs}}', interval: '1m' }] }),
      new Map(),
    );
    expect(inline.ok ? [] : inline.errors).toEqual([
      'metrics "unknown".count: {{args.runs}} names no argument: declare it in the template\'s args or give it in the App\'s args',
    ]);
  });
});

describe('assembleRun: consecutiveErrorLimit has a maximum (issue #24 S2)', () => {
  it('refuses one over 60 given as text, as the schema refuses the number: no check retries for ever', () => {
    const inline = assembleRun(
      AnalysisSchema.parse({ metrics: [{ ...webCheckInput('retries'), consecutiveErrorLimit: '61' }] }),
      new Map(),
    );
    expect(inline.ok ? [] : inline.errors).toEqual([
      'metrics "retries".consecutiveErrorLimit: consecutiveErrorLimit may be at most 60: an Error is retried every 10s, so that is ten minutes of retries',
    ]);
  });
});

function webCheckInput(name: string): CheckInput {
  return { name, provider: { web: { url: 'http://127.0.0.1:8080/healthz' } } };
}
