// The Helm chart's values, in zod: `make manifests` writes charts/teal/values.schema.json
// from it, so `helm install` rejects a mistyped value with its path.
import { z } from 'zod';
import { DURATION_HINT, DURATION_PATTERN } from '../src/app/duration.ts';
import { DNS1123_LABEL } from '../src/app/patterns.ts';

// The operator's grammar (--lease-duration and the others read them so).
const duration = z.string().regex(DURATION_PATTERN, DURATION_HINT);
const stringMap = z.record(z.string(), z.string());
const anyList = z.array(z.record(z.string(), z.unknown()));
const anyObject = z.record(z.string(), z.unknown());

export const ChartValuesSchema = z.strictObject({
  image: z.strictObject({
    repository: z.string().min(1),
    tag: z.string().describe("Defaults to the chart's appVersion."),
    pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']),
  }),
  imagePullSecrets: z.array(z.strictObject({ name: z.string().min(1) })),
  replicaCount: z.int().min(0),
  leaderElection: z.strictObject({
    enabled: z.boolean().describe('Required when replicaCount > 1.'),
    leaseDuration: duration,
    renewDeadline: duration,
    retryPeriod: duration,
  }),
  sharding: z.strictObject({
    shards: z
      .int()
      .min(1)
      .max(256)
      .describe('Splits the Apps between the replicas, one Lease per shard (--shards); > 1 needs leaderElection.'),
  }),
  watchNamespaces: z
    .array(z.string().regex(DNS1123_LABEL, 'a namespace name'))
    .describe('Empty: every namespace (ClusterRole). Otherwise a Role and RoleBinding in each.'),
  buildNamespace: z
    .string()
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/, 'a namespace name')
    .max(63)
    .describe('Empty: build Jobs run in their App namespace. Otherwise there (--build-namespace).'),
  concurrency: z.int().min(1).max(64),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error']),
  build: z.strictObject({
    defaultRegistry: z
      .string()
      // As --default-registry: a host Docker reads as one (a "." or a port, or localhost), no scheme or tag.
      .regex(
        /^(((localhost|[a-z0-9-]+(\.[a-z0-9-]+)+)(:\d+)?|[a-z0-9-]+:\d+)(\/[a-z0-9._-]+)*)?$/,
        'a registry host with an optional path, such as harbor.example.com/apps',
      )
      .describe('Repository prefix for Apps without spec.build.image: <defaultRegistry>/<namespace>/<app>.'),
    buildkitImage: z.string().min(1),
    kanikoImage: z.string().min(1),
    caConfigMap: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?(\/[-._a-zA-Z0-9]+)?)?$/, 'a ConfigMap NAME or NAME/KEY')
      .describe('PEM CAs every build trusts, from a ConfigMap where the build runs (--build-ca-configmap).'),
    proxy: z.strictObject({
      http: z.string().describe('HTTP_PROXY of every build container (--build-http-proxy).'),
      https: z.string().describe('HTTPS_PROXY of every build container (--build-https-proxy).'),
      noProxy: z.string().describe('NO_PROXY of every build container (--build-no-proxy).'),
    }),
  }),
  api: z.strictObject({
    service: z.strictObject({
      type: z.enum(['ClusterIP', 'NodePort', 'LoadBalancer']),
      port: z.int().min(1).max(65535),
      annotations: stringMap,
    }),
    tls: z.strictObject({
      secretName: z.string().describe('A kubernetes.io/tls Secret: the operator serves HTTPS with it.'),
    }),
    ingress: z.strictObject({
      enabled: z.boolean(),
      className: z.string(),
      annotations: stringMap,
      host: z.string().min(1),
      paths: z.array(z.string().startsWith('/')).min(1),
      tls: z.array(z.strictObject({ secretName: z.string(), hosts: z.array(z.string()) })),
    }),
  }),
  webhookSecret: z.strictObject({
    existingSecret: z.string(),
    value: z.string(),
    key: z.string().regex(/^[-._a-zA-Z0-9]+$/, 'a Secret key'),
  }),
  sessionKey: z.strictObject({
    existingSecret: z.string(),
    // As --session-key-file reads it: empty (no key), or at least 32 characters.
    value: z.string().regex(/^(|[\s\S]{32,})$/, 'empty, or at least 32 characters, e.g. `openssl rand -base64 32`'),
    key: z.string().regex(/^[-._a-zA-Z0-9]+$/, 'a Secret key'),
  }),
  dashboard: z.strictObject({
    maxStreams: z
      .int()
      .min(1)
      .max(100_000)
      .describe(
        '--dashboard-max-streams: live streams open at once on each replica; a browser holds one, whatever its tabs.',
      ),
    maxStreamsPerSession: z
      .int()
      .min(1)
      .max(1000)
      .describe('--dashboard-max-streams-per-session: live streams one session or bearer token may hold open at once.'),
    anonymous: z
      .enum(['off', 'read'])
      .describe(
        '--dashboard-anonymous: read lets pages and reads work without a session, as system:anonymous (RBAC decides what it sees); actions never.',
      ),
  }),
  oidc: z.strictObject({
    issuerURL: z
      .string()
      .regex(/^(|https:\/\/[^?#\s]+)$/, 'empty (off), or an https URL without a query')
      .describe('--oidc-issuer-url: login to the dashboard by OIDC; empty: off.'),
    clientID: z.string(),
    clientSecret: z.strictObject({
      existingSecret: z.string(),
      value: z.string(),
      key: z.string().regex(/^[-._a-zA-Z0-9]+$/, 'a Secret key'),
    }),
    caBundle: z.string().describe("PEM CAs of the issuer's certificate; empty: the system's."),
    usernameClaim: z.string().min(1),
    usernamePrefix: z.string(),
    groupsClaim: z.string(),
    groupsPrefix: z.string(),
    extraScopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'an OAuth scope')),
    redirectURLs: z.array(
      z
        .string()
        .regex(
          /^https?:\/\/[^/?#\s]+\/api\/v1\/session\/oidc\/callback$/,
          'http(s)://HOST/api/v1/session/oidc/callback',
        ),
    ),
    providerName: z.string().max(64),
  }),
  serviceAccount: z.strictObject({ create: z.boolean(), name: z.string(), annotations: stringMap }),
  rbac: z.strictObject({ create: z.boolean(), userRoles: z.boolean() }),
  admissionPolicy: z.strictObject({ enabled: z.boolean() }),
  serviceMonitor: z.strictObject({
    enabled: z.boolean(),
    interval: z.string(),
    scrapeTimeout: z.string(),
    labels: stringMap,
  }),
  resources: anyObject,
  nodeFlags: z
    .array(z.string().regex(/^--[a-z0-9][a-z0-9_-]*(=.*)?$/, 'a node or V8 flag, such as --max-semi-space-size=16'))
    .describe("node's flags for the operator; the default is the image's ENTRYPOINT's, [] is Node's own defaults."),
  podAnnotations: stringMap,
  podLabels: stringMap,
  nodeSelector: stringMap,
  tolerations: anyList,
  affinity: anyObject,
  priorityClassName: z.string(),
  egress: z.strictObject({
    allow: z
      .array(
        z
          .string()
          .regex(
            /^(\*\.)?[a-zA-Z0-9.-]+$|^\[?[0-9a-fA-F:.]+\]?(\/\d{1,3})?$/,
            'a host name, *.domain, IP address or CIDR, such as prometheus.monitoring or 10.0.0.0/8',
          ),
      )
      .describe(
        "--egress-allow: where checks and notifications may connect. Empty: anywhere but loopback, link-local, cloud metadata and the operator's own addresses.",
      ),
  }),
  extraArgs: z.array(z.string()),
  extraEnv: anyList,
});

/** values.schema.json: every key required, since values.yaml sets them all. */
export function renderValuesSchema(): string {
  const schema = z.toJSONSchema(ChartValuesSchema, { target: 'draft-07', io: 'input' });
  return `${JSON.stringify(schema, null, 2)}\n`;
}
