// Checks before and after promotion, teal.dev/v1alpha1: the check (Argo Rollouts'
// Metric), the AnalysisTemplate resource, the App-side reference, and the durable
// run state that lives in App status. Like src/app/schema.ts, this zod schema is
// the single source of truth for types, defaults, validation and the CRD.
//
// Not imported from src/app/schema.ts: that file will import this one (for
// prePromotionAnalysis), and an import cycle between schema modules fails at load.
//
// Checks sit inside arrays, so their string rules are plain `.regex()` patterns
// rather than CEL regexes: one CEL regex per array item blows the CRD cost budget.
import { z } from 'zod';
import { listMap, MAX_CHECKS, type Provider } from './analysis-status-schema.ts';
import { DURATION_HINT, DURATION_PATTERN, parseDuration } from './duration.ts';
import { ObjectMetaSchema } from './object-meta.ts';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, JSON_PATH_PATTERN } from './patterns.ts';
import { type Rule, withRules } from './rules.ts';

export {
  type AnalysisRunStatus,
  AnalysisRunStatusSchema,
  CHECK_PHASES,
  type CheckPhase,
  type CheckStatus,
  CheckStatusSchema,
  MAX_CHECKS,
  MAX_MESSAGE_LENGTH,
  MAX_VALUE_LENGTH,
  MEASUREMENT_HISTORY_LIMIT,
  MEASUREMENT_PHASES,
  type MeasurementPhase,
  type MeasurementStatus,
  MeasurementStatusSchema,
  PROVIDERS,
  type Provider,
  RUN_PHASES,
  type RunPhase,
} from './analysis-status-schema.ts';

export const TEMPLATE_API_VERSION = 'teal.dev/v1alpha1';
/**
 * Argo Rollouts' name: the App's fields are already Argo's (prePromotionAnalysis),
 * and an Argo template ports by changing its apiVersion. In a cluster that also
 * runs Argo Rollouts, `kubectl get analysistemplates` is ambiguous: name it
 * `analysistemplates.teal.dev` there. No short name, so Argo's `at` stays Argo's.
 */
export const TEMPLATE_KIND = 'AnalysisTemplate';
export const TEMPLATE_PLURAL = 'analysistemplates';

/**
 * Errors in a row a check may allow. Argo Rollouts has no maximum; here an
 * Error is retried every 10 s (run.ts), so this is ten minutes of retries, and
 * no check retries for ever.
 */
export const MAX_CONSECUTIVE_ERROR_LIMIT = 60;

const name63 = (what: string) =>
  z.string().min(1).max(63).regex(DNS1123_LABEL, `${what} must be a DNS-1123 label: lowercase letters, digits and "-"`);

const objectName = (what: string) =>
  z
    .string()
    .min(1)
    .max(253)
    .regex(DNS1123_SUBDOMAIN, `${what} must be an object name: lowercase letters, digits, "-" and "."`);

// Placeholders may sit anywhere after the scheme, or make the whole URL (Argo's
// templates take one from a Secret: url: "{{args.secret-url}}"); args.ts checks
// the URL again once they are replaced.
const HTTP_URL = /^(https?:\/\/|\{\{)[^\s]+$/;
// RFC 9110 token.
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
/** Argument names, as `{{args.<name>}}` spells them. */
export const ARG_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export const httpUrl = (what: string) =>
  z.string().min(1).max(2048).regex(HTTP_URL, `${what} must start with http:// or https://, or with a placeholder`);

export const SecretKeyRefSchema = z
  .strictObject({
    name: objectName('secretKeyRef.name'),
    key: z.string().min(1).max(253).regex(SECRET_KEY, 'secretKeyRef.key must be a Secret key'),
  })
  .describe('A key of a Secret in the App namespace.');

const valueFrom = z
  .strictObject({ secretKeyRef: SecretKeyRefSchema })
  .describe('Read from a Secret when a measurement is taken; never written to status, events or logs.');

// ---- providers ----

const HeaderSchema = z.strictObject({
  key: z.string().min(1).max(256).regex(HEADER_NAME, 'header key must be an HTTP header name'),
  value: z
    .string()
    .max(4096)
    .describe('May hold {{args.<name>}}; an argument from a Secret keeps the value out of status.'),
});

export const headers = z
  .array(HeaderSchema)
  .max(32)
  .optional()
  .describe('Request headers. For a token, use an argument whose valueFrom is a Secret, as Argo Rollouts does.');

const webRules: Rule<{ method: string; body?: string | undefined }>[] = [
  {
    cel: "!has(self.body) || self.method != 'GET'",
    message: 'web.body needs method POST or PUT',
    test: (w) => w.body === undefined || w.method !== 'GET',
  },
];

export const WebProviderSchema = withRules(
  z.strictObject({
    method: z.enum(['GET', 'POST', 'PUT']).default('GET').describe('HTTP method. Default: GET.'),
    url: httpUrl('web.url').describe('The URL to ask; Teal never builds one from a Pod or Service IP.'),
    headers,
    body: z.string().max(65536).optional().describe('Request body, with POST or PUT.'),
    timeoutSeconds: z
      .int()
      .min(1)
      .max(300)
      .default(10)
      .describe('Deadline of one request; past it the measurement is an Error. Default: 10 (as Argo Rollouts).'),
    jsonPath: z
      .string()
      .max(256)
      .regex(JSON_PATH_PATTERN, 'web.jsonPath must be a path such as {$.data.ok} or {$.items[0].value}')
      .optional()
      .describe(
        'Which part of the JSON answer the conditions see as `result`: fields and indexes from the root, such as {$.data.ok}. Default: {$}, the whole answer. An answer that is not JSON is `result` as a string.',
      ),
  }),
  webRules,
).describe(
  'An HTTP request whose answer is judged by successCondition and failureCondition; a non-2xx status is an Error.',
);

export const PrometheusProviderSchema = z
  .strictObject({
    address: httpUrl('prometheus.address').describe(
      'Base URL of the Prometheus server, such as http://127.0.0.1:9090.',
    ),
    query: z.string().min(1).max(8192).describe('An instant PromQL query.'),
    timeout: z
      .int()
      .min(1)
      .max(300)
      .default(30)
      .describe(
        'Seconds one query may take, as Argo Rollouts spells it; past it the measurement is an Error. Default: 30.',
      ),
    headers,
  })
  .describe(
    'A PromQL query judged by successCondition and failureCondition: `result` is a number for a scalar, and a list of numbers, one per series, for a vector.',
  );

const EnvVarSchema = withRules(
  z.strictObject({
    name: z.string().min(1).max(256).regex(ENV_NAME, 'env name must be a C identifier-like name'),
    value: z.string().max(32768).optional(),
    valueFrom: valueFrom.optional(),
  }),
  [
    {
      cel: 'has(self.value) != has(self.valueFrom)',
      message: 'env needs exactly one of value and valueFrom',
      test: (e) => (e.value === undefined) !== (e.valueFrom === undefined),
    },
  ],
);

const ContainerSchema = z.strictObject({
  name: name63('container name'),
  image: z.string().min(1).max(512).describe('May hold {{args.<name>}} and built-ins such as {{preview.revision}}.'),
  command: z.array(z.string().max(4096)).max(64).optional(),
  args: z.array(z.string().max(4096)).max(64).optional(),
  env: z
    .array(EnvVarSchema)
    .max(64)
    .optional()
    .describe(
      'Teal adds TEAL_APP_NAME, TEAL_APP_NAMESPACE, TEAL_PREVIEW_SERVICE, TEAL_PREVIEW_REVISION, TEAL_PREVIEW_IMAGE and TEAL_SOURCE_COMMIT (args.ts builtinEnv).',
    ),
});

const labelsAndAnnotations = z
  .strictObject({
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  })
  .optional();

export const JobProviderSchema = z
  .strictObject({
    metadata: labelsAndAnnotations,
    spec: z
      .strictObject({
        backoffLimit: z
          .int()
          .min(0)
          .max(100)
          .optional()
          .describe("Pod retries before the Job fails. Default: Kubernetes' (6); set 0 or 1 for a quick verdict."),
        activeDeadlineSeconds: z
          .int()
          .min(1)
          .max(86400)
          .default(600)
          .describe(
            'The Job fails past this many seconds, so a measurement always ends. Default: 600 (Argo Rollouts sets none).',
          ),
        template: z.strictObject({
          metadata: labelsAndAnnotations,
          spec: z.strictObject({
            containers: z.array(ContainerSchema).min(1).max(8),
            restartPolicy: z.enum(['Never', 'OnFailure']).default('Never').describe('Default: Never.'),
            serviceAccountName: objectName('serviceAccountName').optional(),
          }),
        }),
      })
      .describe('A subset of a batch/v1 JobSpec: what a check needs.'),
  })
  .describe('A Job run in the App namespace: the measurement is Successful when it completes, Failed when it fails.');

const providerRules: Rule<{ job?: unknown; web?: unknown; prometheus?: unknown }>[] = [
  {
    cel: '(has(self.job) ? 1 : 0) + (has(self.web) ? 1 : 0) + (has(self.prometheus) ? 1 : 0) == 1',
    message: 'provider needs exactly one of job, web and prometheus',
    test: (p) => [p.job, p.web, p.prometheus].filter((x) => x !== undefined).length === 1,
  },
];

export const ProviderSchema = withRules(
  z.strictObject({
    job: JobProviderSchema.optional(),
    web: WebProviderSchema.optional(),
    prometheus: PrometheusProviderSchema.optional(),
  }),
  providerRules,
).describe('Where a measurement comes from: exactly one of job, web and prometheus.');

// ---- the check (Argo's Metric) ----

// Argo Rollouts' count and limits are IntOrStrings and its interval and
// initialDelay strings, so that a template may leave them to arguments:
// `count: "{{args.runs}}"`. So here, as text holding {{args.<name>}} (and no
// other braces), replaced when a run starts (args.ts resolveNumbers); the
// check is then parsed again as CheckSchema, with numbers and durations only.
const WITH_ARGS = '[^{}]*(\\{\\{ *args\\.[A-Za-z_][A-Za-z0-9_-]* *\\}\\}[^{}]*)+';
const WHOLE_OR_ARGS = new RegExp(`^([0-9]+|${WITH_ARGS})$`);
const DURATION_OR_ARGS = new RegExp(`^(${DURATION_PATTERN.source.slice(1, -1)}|${WITH_ARGS})$`);
const ARGS_HINT = 'or hold {{args.<name>}}';

const WHOLE = {
  count: z.int().min(1, 'count must be at least 1').max(10000, 'count may be at most 10000'),
  failureLimit: z.int().min(0, 'failureLimit may not be negative'),
  inconclusiveLimit: z.int().min(0, 'inconclusiveLimit may not be negative'),
  consecutiveErrorLimit: z
    .int()
    .min(0, 'consecutiveErrorLimit may not be negative')
    .max(
      MAX_CONSECUTIVE_ERROR_LIMIT,
      `consecutiveErrorLimit may be at most ${MAX_CONSECUTIVE_ERROR_LIMIT}: an Error is retried every 10s, so that is ten minutes of retries`,
    ),
};

/** The fields of a check that may hold {{args.<name>}}, until the run starts. */
export const ARG_FIELDS = [
  'count',
  'failureLimit',
  'inconclusiveLimit',
  'consecutiveErrorLimit',
  'interval',
  'initialDelay',
] as const;
export type ArgField = (typeof ARG_FIELDS)[number];

const wholeOrArgs = (what: keyof typeof WHOLE) =>
  z.union([WHOLE[what], z.string().max(256).regex(WHOLE_OR_ARGS, `${what} must be a whole number, ${ARGS_HINT}`)]);

const duration = (what: string) => z.string().max(32).regex(DURATION_PATTERN, `${what} must be ${DURATION_HINT}`);
const durationOrArgs = (what: string) =>
  z.string().max(256).regex(DURATION_OR_ARGS, `${what} must be ${DURATION_HINT}, ${ARGS_HINT}`);

/**
 * The shortest interval between two measurements of a check. Argo Rollouts
 * has none, and `interval: "0"` on 20 checks made a target take about 100
 * requests a second, and the App's status several writes a second.
 */
export const MIN_INTERVAL_MS = 1000;

// Held by the interval as written (a placeholder passes, to be held once replaced) and as the run reads it.
// A duration the pattern refuses is reported by the pattern; CEL's duration() reads Go's syntax, as Teal writes it.
const intervalFloor: Rule<string> = {
  cel: `!self.matches(${JSON.stringify(DURATION_PATTERN.source)}) || duration(self) >= duration('${MIN_INTERVAL_MS / 1000}s')`,
  message: `interval must be at least ${MIN_INTERVAL_MS / 1000}s: a shorter one floods the target with requests and the App with status writes`,
  test: (text) => !DURATION_PATTERN.test(text) || parseDuration(text) >= MIN_INTERVAL_MS,
};

type CheckShape = {
  interval?: string | undefined;
  count?: number | string | undefined;
  failureLimit: number | string;
  inconclusiveLimit: number | string;
  successCondition?: string | undefined;
  failureCondition?: string | undefined;
  provider: { job?: unknown };
};

const whole = (v: unknown): v is number => typeof v === 'number';

// Limits are defaulted before the API server runs CEL, so has() on them is always true.
// A field still holding {{args.<name>}} is a string: its rules wait for the run's start.
const checkRules: Rule<CheckShape>[] = [
  {
    cel: '!has(self.count) || type(self.count) != int || self.count <= 1 || has(self.interval)',
    message: 'interval must be set when count is more than 1',
    test: (c) => !whole(c.count) || c.count <= 1 || c.interval !== undefined,
  },
  {
    cel: '!has(self.interval) || has(self.count)',
    message: 'count must be set with interval: a check that never ends would hold the release forever',
    test: (c) => c.interval === undefined || c.count !== undefined,
  },
  {
    cel:
      '!has(self.count) || type(self.count) != int || ' +
      '((type(self.failureLimit) != int || self.count >= self.failureLimit) && ' +
      '(type(self.inconclusiveLimit) != int || self.count >= self.inconclusiveLimit))',
    message: 'count must be at least failureLimit and inconclusiveLimit',
    test: (c) =>
      !whole(c.count) ||
      ((!whole(c.failureLimit) || c.count >= c.failureLimit) &&
        (!whole(c.inconclusiveLimit) || c.count >= c.inconclusiveLimit)),
  },
  {
    cel: '!has(self.provider.job) || (!has(self.successCondition) && !has(self.failureCondition))',
    message:
      'a job check passes when its Job completes: successCondition and failureCondition are for web and prometheus',
    test: (c) => c.provider.job === undefined || (c.successCondition === undefined && c.failureCondition === undefined),
  },
];

const condition = (which: string) =>
  z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe(
      `An expression over \`result\`, the measured value, such as result[0] < 0.05 (see ${which === 'success' ? 'failureCondition' : 'successCondition'}). It shows in status and events, so it may not use an argument from a Secret.`,
    );

const ARGS_NOTE = ' May hold {{args.<name>}} (as in Argo Rollouts), replaced when the run starts.';

const CheckFields = z.strictObject({
  name: name63('name').describe('Unique within the run; names its Jobs and its result in status.'),
  interval: withRules(durationOrArgs('interval'), [intervalFloor])
    .optional()
    .describe(`Time between measurements, from the end of one to the start of the next. Needs count.${ARGS_NOTE}`),
  count: wholeOrArgs('count')
    .optional()
    .describe(
      `Measurements to take (Errors not counted), 1 to 10000. Default: 1 when interval is unset; required with interval (Argo Rollouts would measure forever).${ARGS_NOTE}`,
    ),
  initialDelay: durationOrArgs('initialDelay')
    .optional()
    .describe(`Wait this long after the run starts before the first measurement. Default: none.${ARGS_NOTE}`),
  failureLimit: wholeOrArgs('failureLimit')
    .default(0)
    .describe(`Failed measurements allowed; one more fails the check and aborts the release. Default: 0.${ARGS_NOTE}`),
  inconclusiveLimit: wholeOrArgs('inconclusiveLimit')
    .default(0)
    .describe(
      `Inconclusive measurements allowed; one more makes the check Inconclusive, which pauses. Default: 0.${ARGS_NOTE}`,
    ),
  consecutiveErrorLimit: wholeOrArgs('consecutiveErrorLimit')
    .default(4)
    .describe(
      `Errors in a row allowed (an Error is retried after 10s); one more makes the check Error, which aborts. At most ${MAX_CONSECUTIVE_ERROR_LIMIT}. Default: 4.${ARGS_NOTE}`,
    ),
  successCondition: condition('success').describe(
    'A measurement is Successful when this holds. Without failureCondition, it is Failed otherwise. Unset with failureCondition unset: every value passes.',
  ),
  failureCondition: condition('failure').describe(
    'A measurement is Failed when this holds. With successCondition too, a value that meets neither is Inconclusive.',
  ),
  provider: ProviderSchema,
});

/** A check as written in a template or an App: Argo Rollouts' Metric. */
export const CheckSpecSchema = withRules(CheckFields, checkRules).describe(
  "A check, Argo Rollouts' Metric: measurements taken from one provider and judged against limits.",
);

/** A check once its run has started: its count and limits are numbers and its durations durations. */
export const CheckSchema = withRules(
  CheckFields.extend({
    interval: withRules(duration('interval'), [intervalFloor]).optional(),
    count: WHOLE.count.optional(),
    initialDelay: duration('initialDelay').optional(),
    failureLimit: WHOLE.failureLimit.default(0),
    inconclusiveLimit: WHOLE.inconclusiveLimit.default(0),
    consecutiveErrorLimit: WHOLE.consecutiveErrorLimit.default(4),
  }),
  checkRules,
);

// The API server refuses duplicates itself (a list-map keyed by name); this says it for zod.
const uniqueNames = (what: string) => (items: { name: string }[], ctx: z.RefinementCtx) => {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.name)) {
      ctx.addIssue({
        code: 'custom',
        message: `${what} "${item.name}" is listed twice`,
        input: item,
        path: [i, 'name'],
      });
    }
    seen.add(item.name);
  });
};

const checks = (min: number) =>
  z
    .array(CheckSpecSchema)
    .min(min)
    .max(MAX_CHECKS)
    .superRefine(uniqueNames('metric'))
    .meta(listMap('name'))
    .describe('The checks (Argo Rollouts calls them metrics).');

// ---- arguments ----

const argName = z
  .string()
  .min(1)
  .max(63)
  .regex(ARG_NAME, 'argument name must be letters, digits, "_" and "-", starting with a letter or "_"');

export const TemplateArgumentSchema = withRules(
  z.strictObject({
    name: argName,
    value: z.string().max(4096).optional().describe('The default; without it (and valueFrom) the App must pass one.'),
    valueFrom: valueFrom.optional(),
  }),
  [
    {
      cel: '!(has(self.value) && has(self.valueFrom))',
      message: 'an argument has value or valueFrom, not both',
      test: (a) => a.value === undefined || a.valueFrom === undefined,
    },
  ],
).describe('An argument of the template, used as {{args.<name>}}.');

export const AppArgumentSchema = withRules(
  z.strictObject({
    name: argName,
    value: z.string().max(4096).optional(),
    valueFrom: valueFrom.optional(),
  }),
  [
    {
      cel: 'has(self.value) != has(self.valueFrom)',
      message: 'an argument needs exactly one of value and valueFrom',
      test: (a) => (a.value === undefined) !== (a.valueFrom === undefined),
    },
  ],
).describe('A value for {{args.<name>}}: given to the templates, and to the inline metrics.');

export const args = <S extends z.ZodType<{ name: string }>>(item: S) =>
  z.array(item).max(32).superRefine(uniqueNames('argument')).meta(listMap('name')).optional();

// ---- the template resource ----

export const AnalysisTemplateSpecSchema = z.strictObject({
  args: args(TemplateArgumentSchema).describe('Arguments of the template, with optional defaults.'),
  metrics: checks(1),
});

export const AnalysisTemplateSchema = z.object({
  apiVersion: z.literal(TEMPLATE_API_VERSION),
  kind: z.literal(TEMPLATE_KIND),
  metadata: ObjectMetaSchema,
  spec: AnalysisTemplateSpecSchema,
});

// ---- the App-side reference ----

export const TemplateRefSchema = z.strictObject({
  templateName: objectName('templateName').describe('An AnalysisTemplate in the App namespace.'),
});

export const AnalysisSchema = withRules(
  z.strictObject({
    templates: z
      .array(TemplateRefSchema)
      .max(10)
      .optional()
      .describe('Templates whose metrics join the run (Argo Rollouts: the same field).'),
    args: args(AppArgumentSchema).describe(
      "Values for the templates' arguments (Argo Rollouts: the same field), also seen by inline metrics; an argument no template declares is ignored by the templates.",
    ),
    metrics: checks(0)
      .optional()
      .describe('Checks written in the App itself (Argo Rollouts needs a template for each).'),
  }),
  [
    {
      cel: '(has(self.templates) && size(self.templates) > 0) || (has(self.metrics) && size(self.metrics) > 0)',
      message: 'analysis needs templates or metrics',
      test: (a) => (a.templates?.length ?? 0) > 0 || (a.metrics?.length ?? 0) > 0,
    },
  ],
).describe('Checks a revision must pass: metrics from templates, and inline ones.');

/** A check with its run started (what the run planner and the providers read). */
export type Check = z.output<typeof CheckSchema>;
/** A check as a template or an App gives it. */
export type CheckSpec = z.output<typeof CheckSpecSchema>;
export type CheckInput = z.input<typeof CheckSpecSchema>;
export type TemplateArgument = z.output<typeof TemplateArgumentSchema>;
export type AppArgument = z.output<typeof AppArgumentSchema>;
export type SecretKeyRef = z.output<typeof SecretKeyRefSchema>;
export type AnalysisTemplateSpec = z.output<typeof AnalysisTemplateSpecSchema>;
export type AnalysisTemplate = z.output<typeof AnalysisTemplateSchema>;
export type Analysis = z.output<typeof AnalysisSchema>;
export type AnalysisInput = z.input<typeof AnalysisSchema>;

/** The provider a check measures with (the schema allows exactly one). */
export function providerOf(check: Pick<Check, 'provider'>): Provider {
  if (check.provider.job) return 'job';
  return check.provider.web ? 'web' : 'prometheus';
}
