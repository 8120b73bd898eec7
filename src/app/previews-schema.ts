// spec.previews (issue #28): a preview environment per pull request, each a child
// App that Teal makes, builds and releases, with its status and URL reported back
// on the pull request. Like analysis-schema.ts, this zod schema is the single
// source of truth for its types, defaults, validation and the CRD. Names follow
// Argo CD's pull-request generator and Flux Operator's ResourceSetInputProvider:
// filter.labels, filter.targetBranches (Argo: targetBranchMatch), interval (Flux;
// Argo's requeueAfterSeconds), tokenSecretRef (Argo: tokenRef), apiURL (Argo: api).
import { z } from 'zod';
import { DURATION_HINT, DURATION_PATTERN, parseDuration } from './duration.ts';
import { DNS1123_SUBDOMAIN, IMAGE_REPOSITORY } from './patterns.ts';
import { matching, withRules } from './rules.ts';

export {
  COMMIT_STATUS_STATES,
  MAX_PREVIEW_RECORDS,
  PREVIEW_STATES,
  type PreviewReported,
  PreviewReportedSchema,
  type PreviewState,
  type PreviewStatus,
  PreviewStatusSchema,
  type PreviewsStatus,
  PreviewsStatusSchema,
} from './previews-status-schema.ts';

/** The git hosting services previews can follow; gitea covers Forgejo too. */
export const PREVIEW_PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket'] as const;
export type PreviewProvider = (typeof PREVIEW_PROVIDERS)[number];

/** Each provider's public API, for a provider that has one; gitea has none and needs apiURL. */
export const DEFAULT_API_URLS: Readonly<Partial<Record<PreviewProvider, string>>> = {
  github: 'https://api.github.com',
  gitlab: 'https://gitlab.com/api/v4',
  bitbucket: 'https://api.bitbucket.org/2.0',
};

/** What a fork's pull request gets: built as any, built once approved (per head commit), or nothing. */
export const FORK_POLICIES = ['approve', 'build', 'ignore'] as const;

/** The placeholders of a host template: the pull request's number, the parent App's name, the child App's name. */
export const HOST_PLACEHOLDERS = ['number', 'app', 'name'] as const;

/** The shortest poll interval: each poll is a request against the provider's rate limit. */
export const MIN_INTERVAL_MS = 30_000;

/**
 * https anywhere; http only to the loopback (a git server beside the operator
 * in development and tests): the token must not cross a network in clear. No
 * userinfo: the token comes from tokenSecretRef, never from the URL.
 */
export const API_URL =
  /^(https:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{1,5})?)(\/[^\s@?#]*)?$/;

/** owner/name; GitLab's group/subgroup/project. */
const REPOSITORY_PATH = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/;

/** A host template: lowercase DNS characters and {{placeholder}}s (checked by hostTemplateProblems). */
const HOST_TEMPLATE = /^[a-z0-9.{}-]+$/;

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const SECRET_NAME_MESSAGE = 'must be a Secret name: lowercase letters, digits, "-" and "."';

const duration = (what: string) =>
  withRules(z.string().max(32), [matching(DURATION_PATTERN, `${what} must be ${DURATION_HINT}`)]);

const objectName = (what: string) =>
  z.string().min(1).max(253).regex(DNS1123_SUBDOMAIN, `${what} ${SECRET_NAME_MESSAGE}`);

const interval = withRules(z.string().max(32), [
  matching(DURATION_PATTERN, `previews.interval must be ${DURATION_HINT}`),
  {
    cel: `!self.matches(${JSON.stringify(DURATION_PATTERN.source)}) || duration(self) >= duration('${MIN_INTERVAL_MS / 1000}s')`,
    message: `previews.interval must be at least ${MIN_INTERVAL_MS / 1000}s: each poll counts against the provider's rate limit`,
    test: (text) => !DURATION_PATTERN.test(text) || parseDuration(text) >= MIN_INTERVAL_MS,
  },
]);

const hostTemplate = (what: string) =>
  z
    .string()
    .min(1)
    .max(253)
    .regex(HOST_TEMPLATE, `${what} must be a host name with {{number}}, {{app}} or {{name}} placeholders`);

export const PreviewsFilterSchema = z
  .strictObject({
    labels: z
      .array(z.string().min(1).max(100))
      .max(16)
      .default([])
      .describe('Only pull requests that carry every one of these labels (Argo CD, Flux: labels).'),
    targetBranches: z
      .array(z.string().min(1).max(255))
      .max(32)
      .default([])
      .describe('Only pull requests into one of these branches (names without refs/heads/); default: any.'),
    includeDrafts: z.boolean().default(false).describe('Draft pull requests too.'),
  })
  .describe('Which open pull requests get a preview.');

export const PreviewsForksSchema = z
  .strictObject({
    policy: z
      .enum(FORK_POLICIES)
      .default('approve')
      .describe(
        'approve: a pull request from a fork is built only once someone with write access adds approvalLabel, and only the head commit it was added on (a new commit needs a new approval); build: as any other; ignore: never.',
      ),
    approvalLabel: z
      .string()
      .min(1)
      .max(100)
      .default('preview-approved')
      .describe('The label that approves a fork pull request head commit for a preview.'),
  })
  .describe('Pull requests from forks run code from outside the repository: what they get.');

const envVar = z
  .strictObject({
    name: z.string().min(1).max(256).regex(ENV_NAME, 'env name must be a C identifier-like name'),
    value: z.string().max(32768).optional(),
    valueFrom: z
      .strictObject({
        secretKeyRef: z.strictObject({ name: objectName('secretKeyRef.name'), key: z.string().min(1).max(253) }),
      })
      .optional()
      .describe('A key of one of previews.secrets.'),
  })
  .describe('Set in the app container, over the same name of the parent template.');

const quantities = z.record(z.string().max(63), z.union([z.int().min(0), z.string().max(64)]));

export const PreviewsTemplatePatchSchema = z
  .strictObject({
    env: z.array(envVar).max(64).default([]),
    resources: z
      .strictObject({ requests: quantities.optional(), limits: quantities.optional() })
      .optional()
      .describe("The app container's resources, instead of the parent's."),
  })
  .describe("A small patch over the parent App's pod template for previews: the app container's env and resources.");

const ingressExposure = z.strictObject({
  host: hostTemplate('exposure.ingress.host').describe(
    'The host, such as pr-{{number}}.preview.example.com; every label is kept to 63 characters.',
  ),
  className: objectName('exposure.ingress.className').optional().describe('spec.ingressClassName.'),
  tlsSecretName: objectName('exposure.ingress.tlsSecretName')
    .optional()
    .describe('A TLS Secret (a wildcard certificate, say) for the host.'),
  annotations: z.record(z.string().max(317), z.string().max(4096)).optional(),
});

const parentRef = z.strictObject({
  name: objectName('parentRefs.name'),
  namespace: objectName('parentRefs.namespace').optional(),
  sectionName: z.string().max(253).optional(),
});

const httpRouteExposure = z.strictObject({
  hostname: hostTemplate('exposure.httpRoute.hostname').describe(
    'The hostname, such as pr-{{number}}.preview.example.com; every label is kept to 63 characters.',
  ),
  parentRefs: z.array(parentRef).min(1).max(8).describe('The Gateways (gateway.networking.k8s.io/v1) to attach to.'),
});

export const PreviewsExposureSchema = withRules(
  z.strictObject({
    scheme: z
      .enum(['https', 'http'])
      .default('https')
      .describe('How the URL reported on the pull request starts: where TLS ends is up to the Ingress or Gateway.'),
    ingress: ingressExposure.optional(),
    httpRoute: httpRouteExposure.optional(),
  }),
  [
    {
      cel: 'has(self.ingress) != has(self.httpRoute)',
      message: 'exposure must set exactly one of ingress and httpRoute',
      test: (e) => (e.ingress === undefined) !== (e.httpRoute === undefined),
    },
  ],
).describe('How a preview is reached: an Ingress, or a Gateway API HTTPRoute, per preview.');

export const PreviewsSchema = z
  .strictObject({
    provider: z.enum(PREVIEW_PROVIDERS).describe('github, gitlab, gitea (Forgejo too) or bitbucket.'),
    apiURL: withRules(z.string().max(2048), [
      matching(
        API_URL,
        'previews.apiURL must be https://host[/path] (http only to 127.0.0.1 or localhost), without credentials',
      ),
    ])
      .optional()
      .describe(`The provider's API; default ${Object.values(DEFAULT_API_URLS).join(', ')}; required for gitea.`),
    repository: withRules(z.string().max(1024), [
      matching(REPOSITORY_PATH, 'previews.repository must be owner/name (GitLab: group/subgroup/project)'),
    ])
      .optional()
      .describe('The repository at the provider; default: the path of spec.source.git.url, without .git.'),
    tokenSecretRef: z
      .strictObject({ name: objectName('tokenSecretRef.name'), key: z.string().min(1).max(253).default('token') })
      .describe(
        'A token that lists pull requests and writes commit statuses and comments (not the webhook secret), key token.',
      ),
    filter: PreviewsFilterSchema.prefault({}),
    forks: PreviewsForksSchema.prefault({}),
    interval: interval
      .default('5m')
      .describe('How often the pull requests are listed; a webhook only brings it sooner.'),
    maxActive: z
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe('Awake previews at most: the oldest idle one sleeps first.'),
    sleepAfter: duration('previews.sleepAfter')
      .optional()
      .describe(
        'Idle this long (no new commit, no wake), a preview scales to 0; a new commit or a wake brings it back.',
      ),
    deleteAfter: duration('previews.deleteAfter').optional().describe('Idle this long, a preview is deleted.'),
    replicas: z.int().min(1).max(100).default(1).describe('Replicas of each awake preview.'),
    templatePatch: PreviewsTemplatePatchSchema.optional(),
    secrets: z
      .array(objectName('secrets[]'))
      .max(32)
      .default([])
      .describe(
        "The only Secrets a preview's pods may reference: any other Secret of the parent's template is left out of the preview.",
      ),
    build: z
      .strictObject({
        image: z
          .string()
          .max(255)
          .regex(IMAGE_REPOSITORY, 'previews.build.image must be an image repository without tag or digest')
          .describe("Where previews push (tag: the commit); not the parent's repository."),
        pushSecretRef: z
          .strictObject({ name: objectName('pushSecretRef.name') })
          .describe("The previews' own registry credentials (kubernetes.io/dockerconfigjson), never the parent's."),
      })
      .describe('Where preview builds push, apart from production.'),
    exposure: PreviewsExposureSchema.optional(),
    report: z
      .strictObject({
        commitStatus: z.boolean().default(true).describe('A commit status teal/preview on the head commit.'),
        comment: z.boolean().default(true).describe('One comment on the pull request, edited in place.'),
      })
      .prefault({})
      .describe('What Teal writes back on the pull request.'),
  })
  .describe('A preview environment per open pull request: a child App named <app>-pr-<number> (docs/previews.md).');

export type Previews = z.output<typeof PreviewsSchema>;
export type PreviewsExposure = z.output<typeof PreviewsExposureSchema>;
export type PreviewsTemplatePatch = z.output<typeof PreviewsTemplatePatchSchema>;
export type ForkPolicy = (typeof FORK_POLICIES)[number];
