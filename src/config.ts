// The operator's command line: flags, their rules (zod) and the usage text.
// Light on purpose: node:util, zod and pure rules only, so main.ts answers
// --help and a flag error before it loads the client, the server and the
// controller (seconds on a busy machine). Nothing here may import
// @kubernetes/client-node, fastify or pino, even indirectly.
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { OIDC_CALLBACK } from './app/dashboard-pages.ts';
import { parseDuration } from './app/duration.ts';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from './app/patterns.ts';
import { DEFAULT_BUILD_IMAGES } from './build/images.ts';
import { noProxyProblem, parseConfigMapRef, proxyUrlProblem } from './build/network.ts';
import { registryProblem } from './build/registry.ts';
import { EGRESS_FLAG, parseEgressAllow } from './kube/egress.ts';
import { MAX_SHARDS } from './kube/shards.ts';

/** A duration flag, read by the App's grammar (app/duration.ts), in milliseconds and at least `min`. */
const durationFlag = (min: string) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return parseDuration(text);
      } catch (err) {
        ctx.issues.push({ code: 'custom', message: (err as Error).message, input: text });
        return z.NEVER;
      }
    })
    .pipe(z.int().min(parseDuration(min), `must be at least ${min}`));

/** --dashboard-anonymous: off (the default: no page or route without a session), or read. */
export const DASHBOARD_ANONYMOUS = ['off', 'read'] as const;
/** A URL flag of this scheme (https: an issuer, as the API server requires), without a query or a fragment. */
const urlOf = (text: string, schemes: readonly string[]): URL | string => {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not a URL`;
  }
  if (!schemes.includes(url.protocol))
    return `${JSON.stringify(text)} must be ${schemes.map((s) => `${s}//`).join(' or ')}`;
  if (url.search !== '' || url.hash !== '') return `${JSON.stringify(text)} must have no query and no fragment`;
  return url;
};

const urlFlag = (schemes: readonly string[], check: (url: URL) => string | undefined = () => undefined) =>
  z.string().transform((text, ctx) => {
    const url = urlOf(text, schemes);
    const problem = typeof url === 'string' ? url : check(url);
    if (problem === undefined) return url as URL;
    ctx.issues.push({ code: 'custom', message: problem, input: text });
    return z.NEVER;
  });

const redirectUrl = urlFlag(['https:', 'http:'], (url) =>
  url.pathname === OIDC_CALLBACK ? undefined : `${url.href} must end in ${OIDC_CALLBACK}, where the operator answers`,
);

/** An OAuth scope token: printable ASCII but space, " and \ (RFC 6749 §3.3). */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** A JWT claim's name: not empty, no control characters. */
const claimName = z.string().regex(/^[^\x00-\x1f\x7f]+$/, 'must be a claim name');

/** A proxy URL; a problem never quotes it, as it may carry a password. */
const proxyFlag = z.string().check((ctx) => {
  const problem = proxyUrlProblem(ctx.value);
  if (problem) ctx.issues.push({ code: 'custom', message: problem, input: '' });
});

const ConfigFields = z.strictObject({
  kubeconfig: z.string().optional(),
  namespaces: z
    .array(z.string().regex(DNS1123_LABEL, 'each namespace must be a DNS label'))
    .describe('The namespaces to watch; all when empty.'),
  leaderElect: z.boolean(),
  leaderElectionNamespace: z.string().min(1),
  leaderElectionId: z.string().min(1),
  leaseDurationMs: durationFlag('1s'),
  renewDeadlineMs: durationFlag('500ms'),
  retryPeriodMs: durationFlag('100ms'),
  shards: z
    .int()
    .min(1)
    .max(MAX_SHARDS)
    .describe('Splits the Apps between replicas by a hash of namespace/name, one Lease per shard; 1: no sharding.'),
  requestTimeoutMs: durationFlag('100ms').optional().describe('Default: half of renewDeadlineMs.'),
  gracefulShutdownTimeoutMs: durationFlag('100ms'),
  concurrency: z.int().min(1).max(64),
  httpAddr: z.string().regex(/^[^:]+:\d+$/, 'must be host:port'),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error']),
  allowFileGit: z.boolean(),
  webhookSecretFile: z.string().optional(),
  tlsCertFile: z.string().optional(),
  tlsKeyFile: z.string().optional(),
  sessionKeyFile: z.string().optional().describe('Seals the session cookies; replicas sharing it share sessions.'),
  dashboardDir: z.string().optional().describe("The dashboard's built files; by default the ui folder of the bundle."),
  dashboardAnonymous: z
    .enum(DASHBOARD_ANONYMOUS, `must be ${DASHBOARD_ANONYMOUS.join(' or ')}`)
    .describe('read: read-only pages and read routes work without a session, as system:anonymous; actions never.'),
  sessionReviewIntervalMs: durationFlag('1s')
    .pipe(z.int().max(5 * 60_000, 'must be at most 5m'))
    .describe("How often a session's token is reviewed again."),
  dashboardMaxStreams: z
    .int()
    .min(1)
    .max(100_000)
    .describe("The dashboard's live streams (GET /api/v1/stream) open at once on this replica."),
  dashboardMaxStreamsPerSession: z
    .int()
    .min(1)
    .max(1000)
    .describe('Live streams one session (or bearer token) may hold open at once on this replica.'),
  oidcIssuerUrl: urlFlag(['https:']).optional().describe('Log in to the dashboard by OIDC with this issuer.'),
  oidcClientId: z.string().min(1).optional(),
  oidcClientSecretFile: z.string().min(1).optional(),
  oidcCaFile: z.string().min(1).optional(),
  oidcUsernameClaim: claimName,
  oidcUsernamePrefix: z.string().optional(),
  oidcGroupsClaim: claimName.optional(),
  oidcGroupsPrefix: z.string().optional(),
  oidcExtraScopes: z.array(z.string().regex(SCOPE, 'each scope must be printable ASCII without spaces or quotes')),
  oidcRedirectUrl: z.array(redirectUrl),
  oidcProviderName: z.string().min(1).max(64).optional(),
  buildkitImage: z.string().min(1),
  kanikoImage: z.string().min(1),
  defaultRegistry: z
    .string()
    .check((ctx) => {
      const problem = registryProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    })
    .optional()
    .describe('Apps without build.image push to <registry>/<namespace>/<name>.'),
  defaultPushSecret: z
    .string()
    .max(253)
    .regex(DNS1123_SUBDOMAIN, 'must be a Secret name: lowercase letters, digits, "-" and "."')
    .optional()
    .describe('The push Secret, in the App namespace, of Apps without build.pushSecretRef.'),
  buildNamespace: z
    .string()
    .regex(DNS1123_LABEL, 'must be a namespace name (a DNS label)')
    .optional()
    .describe("Build Jobs run in this namespace, with copies of their Secrets, rather than in the App's."),
  buildCaConfigmap: z
    .string()
    .transform((text, ctx) => {
      const ref = parseConfigMapRef(text);
      if (typeof ref !== 'string') return ref;
      ctx.issues.push({ code: 'custom', message: ref, input: text });
      return z.NEVER;
    })
    .optional()
    .describe("A ConfigMap's PEM CAs every build trusts, read in the namespace the build runs in."),
  buildHttpProxy: proxyFlag.optional().describe('HTTP_PROXY of every build container.'),
  buildHttpsProxy: proxyFlag.optional().describe('HTTPS_PROXY of every build container.'),
  buildNoProxy: z
    .string()
    .check((ctx) => {
      const problem = noProxyProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    })
    .optional()
    .describe('NO_PROXY of every build container.'),
  egressAllow: z
    .array(z.string())
    .check((ctx) => {
      try {
        parseEgressAllow(ctx.value);
      } catch (err) {
        ctx.issues.push({
          code: 'custom',
          message: err instanceof Error ? err.message : String(err),
          input: ctx.value,
        });
      }
    })
    .describe('Where checks and notifications may connect (kube/egress.ts); empty: anywhere but guarded addresses.'),
});
// The request timeout's default depends on the renew deadline.
const ConfigSchema = ConfigFields.transform((c) => ({
  ...c,
  requestTimeoutMs: c.requestTimeoutMs ?? Math.round(c.renewDeadlineMs / 2),
}));
export type Config = z.output<typeof ConfigSchema>;

export const USAGE = `teal: the Teal operator

  --kubeconfig PATH                 kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --namespace NS[,NS...]            watch these namespaces only (default: all); needs only namespaced RBAC
  --leader-elect=false              run without leader election (one replica only)
  --leader-election-namespace NS    namespace of the Lease (default: $POD_NAMESPACE or default)
  --leader-election-id NAME         name of the Lease (default: teal-controller)
  --lease-duration 15s --renew-deadline 10s --retry-period 2s
                                    durations are Go's, as in every Kubernetes component: 500ms, 15s, 1m30s
  --shards N                        split the Apps between the replicas by a hash of namespace/name, one Lease
                                    per shard (<id>-shard-<i>); 1 to ${MAX_SHARDS} (default: 1, no sharding;
                                    docs/sharding.md)
  --request-timeout DURATION        each API request but a watch is aborted after this long; shorter than
                                    --renew-deadline (default: half of it)
  --graceful-shutdown-timeout 20s   after SIGTERM, exit even if reconciles have not finished by then
  --concurrency N                   concurrent reconciles (default: 4)
  --http-addr HOST:PORT             the HTTP server: /api/v1, /webhooks, /healthz, /readyz, /metrics (default: 127.0.0.1:8081)
  --webhook-secret-file PATH        a global webhook secret, besides each App's webhookSecretRef
  --tls-cert-file PATH --tls-key-file PATH   serve HTTPS instead of HTTP
  --session-key-file PATH           a secret of at least 32 bytes that seals the session cookies (POST /api/v1/session);
                                    give every replica the same one so a session holds on each (default: a random
                                    key per process: sessions hold on one replica until it restarts; docs/dashboard.md)
  --session-review-interval 5m      a session's token is reviewed again this often; at most 5m (default: 5m)
  --dashboard-dir PATH              the dashboard's built files, served under / (default: ui/ beside dist/teal.js,
                                    or dist/ui/ of the repository when run from source; npm run bundle makes them)
  --dashboard-max-streams N         live streams (GET /api/v1/stream) open at once on this replica; more get a 429
                                    (default: 1000; a browser holds one, whatever its tabs)
  --dashboard-max-streams-per-session N
                                    live streams one session or bearer token may hold open at once (default: 4)
  --dashboard-anonymous=read        let pages and read routes (GET) work without a session, as the user
                                    system:anonymous (group system:unauthenticated): RBAC decides what it sees;
                                    an action always needs a session or a token (default: off; docs/dashboard.md)
  --oidc-issuer-url URL             log in to the dashboard by OIDC (authorization code with PKCE) with this https
                                    issuer; the claims map to users as the API server's AuthenticationConfiguration
                                    maps them, so set the same values there (docs/dashboard.md). With it:
  --oidc-client-id ID               the client registered at the provider (required)
  --oidc-client-secret-file PATH    its secret (default: none, a public client)
  --oidc-ca-file PATH               PEM CAs of the issuer's certificate (default: the system's)
  --oidc-username-claim CLAIM       claimMappings.username.claim (default: sub)
  --oidc-username-prefix PREFIX     claimMappings.username.prefix (required; --oidc-username-prefix= for none)
  --oidc-groups-claim CLAIM         claimMappings.groups.claim (default: none, no groups)
  --oidc-groups-prefix PREFIX       claimMappings.groups.prefix (required with --oidc-groups-claim; may be empty)
  --oidc-extra-scopes S[,S...]      scopes asked besides openid (e.g. email,groups)
  --oidc-redirect-url URL[,URL...]  the callback URLs registered at the provider, each https://HOST${OIDC_CALLBACK};
                                    a login uses the one of the host the dashboard was opened at (required)
  --oidc-provider-name NAME         the login page's "Log in with NAME" (default: the issuer's host)
  --log-level LEVEL                 trace|debug|info|warn|error (default: info)
  --allow-file-git                  accept file:// git URLs (local development only)
  --buildkit-image IMAGE            build image for engine buildkit (default: ${DEFAULT_BUILD_IMAGES.buildkit})
  --kaniko-image IMAGE              build image for engine kaniko (default: ${DEFAULT_BUILD_IMAGES.kaniko})
  --default-registry HOST[/PATH]    Apps without spec.build.image push to HOST[/PATH]/<namespace>/<name>
                                    (e.g. harbor.example.com/apps; default: none, build.image is required)
  --default-push-secret NAME        the push Secret, in the App's namespace, of Apps without spec.build.pushSecretRef
  --build-namespace NS              run build Jobs in NS, with per-build copies of their git and push Secrets, so
                                    App namespaces can stay Pod Security restricted (docs/getting-started.md)
  --build-ca-configmap NAME[/KEY]   PEM CAs (KEY, default: ca.crt) every build trusts for git and the registry,
                                    besides the system's and spec.build.caSecretRef's; the ConfigMap is read in the
                                    namespace the build runs in (the App's, or --build-namespace), as trust-manager
                                    writes a bundle (docs/builds.md)
  --build-http-proxy URL --build-https-proxy URL --build-no-proxy HOST[,...]
                                    HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and lowercase) of every build container,
                                    passed on to the Dockerfile's RUN steps; a password in a URL is masked in logs
  ${EGRESS_FLAG} PATTERN[,...]      where web and Prometheus checks and notifications may connect: host names
                                    (prometheus.monitoring, *.example.com), IP addresses and CIDRs; repeatable.
                                    Default: anywhere but loopback, link-local, cloud metadata and the operator's
                                    own addresses, which only an address or CIDR listed here allows (docs/analysis.md)`;

/** What the command line asks of the process: run with a config, or print and exit. */
export type CommandLine = { run: Config } | { exit: { code: 0; stdout: string } | { code: 2; stderr: string } };

/** The command line read; --help and flag errors become what to print and the exit code (2 for an error). */
export function readCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): CommandLine {
  try {
    const parsed = parseConfig(argv, env);
    return parsed === 'help' ? { exit: { code: 0, stdout: USAGE } } : { run: parsed };
  } catch (err) {
    return { exit: { code: 2, stderr: `teal: ${err instanceof Error ? err.message : String(err)}\n\n${USAGE}` } };
  }
}

/** The config the flags give; throws with every problem, each line naming its flag as typed. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Config | 'help' {
  const values = readFlags(argv, env);
  if (values.help) return 'help';
  const result = ConfigSchema.safeParse(toConfigInput(values, env));
  if (!result.success) {
    throw new Error(result.error.issues.map((i) => `--${flagOf(String(i.path[0]))}: ${i.message}`).join('\n'));
  }
  const problem =
    pairingProblem(result.data) ??
    timingProblem(result.data) ??
    shardingProblem(result.data) ??
    oidcProblem(result.data);
  if (problem) throw new Error(problem);
  return result.data;
}

type Flags = ReturnType<typeof readFlags>;

function readFlags(argv: readonly string[], env: NodeJS.ProcessEnv) {
  return parseArgs({
    args: [...argv],
    strict: true,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect': { type: 'string', default: 'true' },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string', default: 'teal-controller' },
      'lease-duration': { type: 'string', default: '15s' },
      'renew-deadline': { type: 'string', default: '10s' },
      'retry-period': { type: 'string', default: '2s' },
      shards: { type: 'string', default: '1' },
      'request-timeout': { type: 'string' },
      'graceful-shutdown-timeout': { type: 'string', default: '20s' },
      concurrency: { type: 'string', default: '4' },
      'http-addr': { type: 'string', default: '127.0.0.1:8081' },
      'log-level': { type: 'string', default: env.LOG_LEVEL ?? 'info' },
      'allow-file-git': { type: 'boolean', default: false },
      'webhook-secret-file': { type: 'string' },
      'tls-cert-file': { type: 'string' },
      'tls-key-file': { type: 'string' },
      'session-key-file': { type: 'string' },
      'session-review-interval': { type: 'string', default: '5m' },
      'dashboard-dir': { type: 'string' },
      'dashboard-max-streams': { type: 'string', default: '1000' },
      'dashboard-max-streams-per-session': { type: 'string', default: '4' },
      'dashboard-anonymous': { type: 'string', default: 'off' },
      'oidc-issuer-url': { type: 'string' },
      'oidc-client-id': { type: 'string' },
      'oidc-client-secret-file': { type: 'string' },
      'oidc-ca-file': { type: 'string' },
      'oidc-username-claim': { type: 'string', default: DEFAULT_USERNAME_CLAIM },
      'oidc-username-prefix': { type: 'string' },
      'oidc-groups-claim': { type: 'string' },
      'oidc-groups-prefix': { type: 'string' },
      'oidc-extra-scopes': { type: 'string' },
      'oidc-redirect-url': { type: 'string' },
      'oidc-provider-name': { type: 'string' },
      'buildkit-image': { type: 'string', default: DEFAULT_BUILD_IMAGES.buildkit },
      'kaniko-image': { type: 'string', default: DEFAULT_BUILD_IMAGES.kaniko },
      'default-registry': { type: 'string' },
      'default-push-secret': { type: 'string' },
      'build-namespace': { type: 'string' },
      'build-ca-configmap': { type: 'string' },
      'build-http-proxy': { type: 'string' },
      'build-https-proxy': { type: 'string' },
      'build-no-proxy': { type: 'string' },
      'egress-allow': { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
}

/** The flags as the schema's input: namespaces as a list, the defaults that depend on the environment. */
function toConfigInput(values: Flags, env: NodeJS.ProcessEnv) {
  return {
    kubeconfig: values.kubeconfig,
    namespaces: commaList(values.namespace),
    leaderElect: values['leader-elect'] !== 'false',
    leaderElectionNamespace: values['leader-election-namespace'] ?? env.POD_NAMESPACE ?? 'default',
    leaderElectionId: values['leader-election-id'],
    leaseDurationMs: values['lease-duration'],
    renewDeadlineMs: values['renew-deadline'],
    retryPeriodMs: values['retry-period'],
    shards: Number(values.shards),
    requestTimeoutMs: values['request-timeout'],
    gracefulShutdownTimeoutMs: values['graceful-shutdown-timeout'],
    concurrency: Number(values.concurrency),
    httpAddr: values['http-addr'],
    logLevel: values['log-level'],
    allowFileGit: values['allow-file-git'],
    webhookSecretFile: values['webhook-secret-file'],
    tlsCertFile: values['tls-cert-file'],
    tlsKeyFile: values['tls-key-file'],
    sessionKeyFile: values['session-key-file'],
    sessionReviewIntervalMs: values['session-review-interval'],
    dashboardDir: values['dashboard-dir'],
    dashboardMaxStreams: Number(values['dashboard-max-streams']),
    dashboardMaxStreamsPerSession: Number(values['dashboard-max-streams-per-session']),
    dashboardAnonymous: values['dashboard-anonymous'],
    oidcIssuerUrl: values['oidc-issuer-url'],
    oidcClientId: values['oidc-client-id'],
    oidcClientSecretFile: values['oidc-client-secret-file'],
    oidcCaFile: values['oidc-ca-file'],
    oidcUsernameClaim: values['oidc-username-claim'],
    oidcUsernamePrefix: values['oidc-username-prefix'],
    oidcGroupsClaim: values['oidc-groups-claim'],
    oidcGroupsPrefix: values['oidc-groups-prefix'],
    oidcExtraScopes: commaList(values['oidc-extra-scopes']),
    oidcRedirectUrl: commaList(values['oidc-redirect-url']),
    oidcProviderName: values['oidc-provider-name'],
    buildkitImage: values['buildkit-image'],
    kanikoImage: values['kaniko-image'],
    defaultRegistry: values['default-registry'],
    defaultPushSecret: values['default-push-secret'],
    buildNamespace: values['build-namespace'],
    buildCaConfigmap: values['build-ca-configmap'],
    buildHttpProxy: values['build-http-proxy'],
    buildHttpsProxy: values['build-https-proxy'],
    buildNoProxy: values['build-no-proxy'],
    egressAllow: values['egress-allow'],
  };
}

/** A comma-separated flag's values, trimmed, without empty ones or repeats. */
const commaList = (value: string | undefined): string[] => [
  ...new Set(
    (value ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  ),
];

/** The command-line flag a config key comes from: leaseDurationMs → lease-duration. */
const flagOf = (key: string): string =>
  key === 'namespaces' ? 'namespace' : key.replace(/Ms$/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function pairingProblem(c: Config): string | undefined {
  if ((c.tlsCertFile === undefined) !== (c.tlsKeyFile === undefined)) {
    return '--tls-cert-file and --tls-key-file go together';
  }
  return undefined;
}

/** Shards are owned through Leases, and every Lease carries the election id as a label value. */
function shardingProblem(c: Config): string | undefined {
  if (c.shards === 1) return undefined;
  if (!c.leaderElect) return '--shards: needs leader election (--leader-elect=false runs a single replica)';
  if (!LABEL_VALUE.test(c.leaderElectionId)) {
    return '--leader-election-id: with --shards, at most 63 letters, digits, "-", "_" or ".", starting and ending alphanumeric';
  }
  return undefined;
}

/**
 * The OIDC flags go together: an issuer needs a client, a redirect URL and an explicit username
 * prefix (as claimMappings.username.prefix is required in the API server's AuthenticationConfiguration,
 * so the value to copy there is never a guess); a groups claim needs its prefix, and the reverse.
 */
function oidcProblem(c: Config): string | undefined {
  if (c.oidcIssuerUrl === undefined) {
    const set = OIDC_FLAGS_BUT_ISSUER.find((key) => {
      const value = c[key];
      return Array.isArray(value) ? value.length > 0 : value !== undefined && value !== DEFAULT_USERNAME_CLAIM;
    });
    return set === undefined ? undefined : `--${flagOf(set)}: needs --oidc-issuer-url`;
  }
  if (c.oidcClientId === undefined) return '--oidc-client-id: required with --oidc-issuer-url';
  if (c.oidcRedirectUrl.length === 0) {
    return `--oidc-redirect-url: required with --oidc-issuer-url (https://<the dashboard's host>${OIDC_CALLBACK})`;
  }
  if (c.oidcUsernamePrefix === undefined) {
    return "--oidc-username-prefix: required with --oidc-issuer-url, as claimMappings.username.prefix is in the API server's AuthenticationConfiguration; --oidc-username-prefix= for none";
  }
  if (c.oidcGroupsClaim !== undefined && c.oidcGroupsPrefix === undefined) {
    return '--oidc-groups-prefix: required with --oidc-groups-claim, as claimMappings.groups.prefix is; --oidc-groups-prefix= for none';
  }
  if (c.oidcGroupsClaim === undefined && c.oidcGroupsPrefix !== undefined) {
    return '--oidc-groups-prefix: needs --oidc-groups-claim';
  }
  return undefined;
}

const DEFAULT_USERNAME_CLAIM = 'sub';
const OIDC_FLAGS_BUT_ISSUER = [
  'oidcClientId',
  'oidcClientSecretFile',
  'oidcCaFile',
  'oidcUsernameClaim',
  'oidcUsernamePrefix',
  'oidcGroupsClaim',
  'oidcGroupsPrefix',
  'oidcExtraScopes',
  'oidcRedirectUrl',
  'oidcProviderName',
] as const satisfies readonly (keyof Config)[];

const LABEL_VALUE = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * How the lease and request timings must relate. A leader stops at the renew
 * deadline, before a standby may see the lease expire; a request must end
 * before that deadline too, or a write sent in one term could land in the next.
 */
function timingProblem(c: Config): string | undefined {
  if (c.renewDeadlineMs >= c.leaseDurationMs) return '--renew-deadline: must be shorter than --lease-duration';
  if (c.requestTimeoutMs >= c.renewDeadlineMs) {
    return `--request-timeout: must be shorter than --renew-deadline (${c.renewDeadlineMs / 1000}s)`;
  }
  return undefined;
}
