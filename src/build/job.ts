// Build Jobs: one per (App, commit), with a deterministic name so a commit is
// built at most once. User input reaches the build container only as
// environment variables or exec arguments, never through a shell.
import { parseDuration } from '../app/duration.ts';
import { jobNamePrefix, sha } from '../app/hash.ts';
import { LABEL_APP, LABEL_APP_NAMESPACE, LABEL_APP_UID, LABEL_MANAGED_BY, MANAGED_BY } from '../app/labels.ts';
import { ownerReference } from '../app/owner.ts';
import type { App } from '../app/schema.ts';
import { SECRET_KEYS } from '../git/credentials.ts';
import type { BuildImages } from './images.ts';
import { type BuildNetwork, type KeyRef, proxyEnv } from './network.ts';
import { type BuildDefaults, imageRepository, pushSecretName } from './registry.ts';

// Where the build's callers have always found them.

export const LABEL_BUILD = 'teal.dev/build';
export const LABEL_COMMIT = 'teal.dev/commit';
/** A hash of what shapes the image besides the commit: a change of it builds the commit again. */
export const LABEL_BUILD_SPEC = 'teal.dev/build-spec';
export const ANN_TARGET_IMAGE = 'teal.dev/target-image';
/** The build pod's one container, whose log is the build's. */
export const BUILD_CONTAINER = 'build';

export interface BuildInput {
  app: App;
  commit: string;
  /** The full ref the commit was resolved from, e.g. refs/heads/main (kaniko's git context needs it). */
  ref: string;
  /** The Secret keys the git credentials Secret holds, to mount only what exists. */
  gitSecretKeys?: readonly string[];
  images: BuildImages;
  /** The operator's registry defaults, for Apps that name no image or push Secret. */
  defaults?: BuildDefaults;
  /** --build-namespace: the Job runs there, with copies of its Secrets (see buildSecretCopies). */
  buildNamespace?: string;
  /** The operator's CA ConfigMap and proxy for every build. */
  network?: BuildNetwork;
}

/** A Secret of the App's namespace copied into the build namespace for one Job, owned by it. */
export interface BuildSecretCopy {
  /** The Secret's name in the App's namespace. */
  source: string;
  /** The copy's name in the build namespace. */
  name: string;
  /** Only these keys are copied (a CA Secret may hold a private key beside its ca.crt); all when unset. */
  keys?: string[];
}

/** The engine, Dockerfile, context path and target: a commit built with other settings is another image. */
export function buildSpecHash(app: App, defaults: BuildDefaults = {}): string {
  const build = app.spec.build;
  const git = app.spec.source?.git;
  const repository = imageRepository(app, defaults);
  const fields: unknown[] = [build?.engine, build?.dockerfile, repository, git?.url, git?.path];
  // Another CA Secret builds the commit again (a build that failed for want of one is retried);
  // appended only when set, so the Jobs of Apps without one keep their names.
  if (build?.caSecretRef) fields.push(build.caSecretRef);
  return sha(JSON.stringify(fields)).slice(0, 5);
}

/**
 * Deterministic per (App, commit, build settings), so a commit is built once;
 * a DNS-1123 label of at most 63 characters (Jobs label their pods with it).
 */
export function buildJobName(app: App, commit: string, defaults: BuildDefaults = {}, buildNamespace?: string): string {
  const prefix = jobNamePrefix(app.metadata.name);
  const spec = buildSpecHash(app, defaults);
  if (buildNamespace === undefined) return `${prefix}-build-${commit.slice(0, 10)}-${spec}`;
  // One namespace holds the builds of every App namespace: the App's namespace, hashed, keeps two Apps
  // of one name apart; it takes the place of "-build-" so the name stays within 63 characters.
  return `${prefix}-${sha(app.metadata.namespace ?? '').slice(0, 5)}-${commit.slice(0, 10)}-${spec}`;
}

/**
 * The Secrets a build in the build namespace reads, copied there from the App's namespace:
 * named after its Job (unique in that namespace), so a copy never collides with another App's.
 */
export function buildSecretCopies(
  jobName: string,
  gitSecret?: string,
  pushSecret?: string,
  caSecret?: KeyRef,
): BuildSecretCopy[] {
  return [
    ...(gitSecret ? [{ source: gitSecret, name: `${jobName}-git` }] : []),
    ...(pushSecret ? [{ source: pushSecret, name: `${jobName}-push` }] : []),
    ...(caSecret ? [{ source: caSecret.name, name: `${jobName}-ca`, keys: [caSecret.key] }] : []),
  ];
}

/** The git URL a build engine fetches, with the commit and the sub-directory. */
function buildkitContext(url: string, commit: string, path: string): string {
  const sub = path === '.' || path === '' ? '' : `:${path.replace(/^\.\//, '')}`;
  return `${gitContextUrl(url)}#${commit}${sub}`;
}

/**
 * BuildKit (v0.26) takes an http(s) context for a git repository only when its
 * path ends in ".git"; any other URL it downloads as a tarball, and the build
 * fails on the HTML it gets back. Git forges (GitHub, GitLab, Gitea, Bitbucket)
 * answer at the ".git" name too, so it is added. ssh URLs need no suffix.
 */
export function gitContextUrl(url: string): string {
  if (!/^https?:\/\//i.test(url)) return url;
  const parsed = new URL(url);
  if (parsed.pathname.endsWith('.git')) return url;
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}.git`;
  return parsed.toString();
}

/**
 * kaniko takes git://host/path#ref#commit and fetches over HTTPS, then checks the commit out by its SHA.
 * Its git (go-git) clones branches and tags only: a clone of another ref (a pull request's
 * refs/pull/N/head, refs/merge-requests/N/head) names a commit it never fetched. So for those
 * it fetches the commit itself (#commit#commit), which the forge serves: it is that ref's tip,
 * or reachable from it on a forge that allows such wants (GitHub, GitLab, Gitea).
 */
function kanikoContext(url: string, ref: string, commit: string): string {
  const clonable = !ref.startsWith('refs/') || ref.startsWith('refs/heads/') || ref.startsWith('refs/tags/');
  return `${url.replace(/^https:\/\//, 'git://')}#${clonable ? ref : commit}#${commit}`;
}

const secretEnv = (name: string, secret: string, key: string) => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key, optional: true } },
});

/** What the engine-specific parts of a build pod need. */
interface PodInput {
  image: string;
  engineImage: string;
  git: NonNullable<App['spec']['source']>['git'];
  dockerfile: string;
  ref: string;
  commit: string;
  pushSecret: string | undefined;
  gitSecret: string | undefined;
  gitSecretKeys: ReadonlySet<string>;
  /** The description of the build, for `kubectl describe` and the build script; no secret here. */
  describe: object[];
  /** The CAs to trust besides the system's: a projected volume of one file each. */
  ca: object | undefined;
  /** HTTP_PROXY and its kin, from the operator's flags. */
  proxy: { name: string; value: string }[];
}

/** The CA volume's name in a build pod. */
const CA_VOLUME = 'teal-ca';

/** The build's CAs, each a key of a Secret or ConfigMap (the copies in the build namespace, with --build-namespace). */
interface BuildCas {
  /** spec.build.caSecretRef. */
  secret?: KeyRef | undefined;
  /** --build-ca-configmap, read where the build runs. */
  configMap?: KeyRef | undefined;
  /** The git Secret, when it holds a ca.crt: the one Flux's users give for every clone of the repository. */
  gitSecret?: string | undefined;
}

/**
 * The build's CAs as one folder, a file each, all trusted beside the system's (never instead of them).
 * Undefined without any.
 */
function caVolume({ secret, configMap, gitSecret }: BuildCas): object | undefined {
  if (!secret && !configMap && !gitSecret) return undefined;
  const sources = [
    ...(secret ? [{ secret: { name: secret.name, items: [{ key: secret.key, path: 'app-ca.crt' }] } }] : []),
    ...(configMap
      ? [{ configMap: { name: configMap.name, items: [{ key: configMap.key, path: 'cluster-ca.crt' }] } }]
      : []),
    // Optional: the key was there when the Job was made; a Secret edited since leaves the pod able to start.
    ...(gitSecret
      ? [{ secret: { name: gitSecret, items: [{ key: SECRET_KEYS.caCert, path: 'git-ca.crt' }], optional: true } }]
      : []),
  ];
  return { name: CA_VOLUME, projected: { defaultMode: 0o444, sources } };
}

/** Where kaniko's executor image keeps the system CAs: its own SSL_CERT_DIR, which a pod's SSL_CERT_DIR replaces. */
const KANIKO_SYSTEM_CERTS = '/kaniko/ssl/certs';
/** Under /kaniko, which kaniko leaves out of the image it builds. */
const KANIKO_CA_DIR = '/kaniko/teal-ca';
const BUILDKIT_CA_DIR = '/home/user/.teal-ca';

interface BuildPod {
  container: object;
  volumes: object[];
  /** The pod's securityContext, when the engine needs one. */
  securityContext?: object;
}

/** The push Secret's .dockerconfigjson as config.json where the engine looks for it. */
function registryMount(pushSecret: string | undefined, mountPath: string) {
  if (!pushSecret) return { volumes: [], mounts: [] };
  return {
    volumes: [
      {
        name: 'registry',
        secret: { secretName: pushSecret, items: [{ key: '.dockerconfigjson', path: 'config.json' }] },
      },
    ],
    mounts: [{ name: 'registry', mountPath, readOnly: true }],
  };
}

/**
 * kaniko: its executor's own flags; git over https with the Secret's username and password.
 * Its git (go-git) and registry clients are Go's: SSL_CERT_DIR names the image's CA folder and
 * then the build's, so both are trusted; they take the proxy from the environment, and each
 * proxy variable is a --build-arg read from it for the Dockerfile's RUN steps.
 */
function kanikoPod(p: PodInput): BuildPod {
  const registry = registryMount(p.pushSecret, '/kaniko/.docker');
  const caMounts = p.ca ? [{ name: CA_VOLUME, mountPath: KANIKO_CA_DIR, readOnly: true }] : [];
  const container = {
    name: BUILD_CONTAINER,
    image: p.engineImage,
    args: [
      `--context=${kanikoContext(p.git.url, p.ref, p.commit)}`,
      `--context-sub-path=${p.git.path}`,
      `--dockerfile=${p.dockerfile}`,
      `--destination=${p.image}`,
      '--digest-file=/dev/termination-log',
      ...p.proxy.map((e) => `--build-arg=${e.name}`),
    ],
    env: [
      ...p.describe,
      ...(p.gitSecret
        ? [secretEnv('GIT_USERNAME', p.gitSecret, 'username'), secretEnv('GIT_PASSWORD', p.gitSecret, 'password')]
        : []),
      ...(p.ca ? [{ name: 'SSL_CERT_DIR', value: `${KANIKO_SYSTEM_CERTS}:${KANIKO_CA_DIR}` }] : []),
      ...p.proxy,
    ],
    volumeMounts: [...registry.mounts, ...caMounts],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  return { container, volumes: [...registry.volumes, ...(p.ca ? [p.ca] : [])] };
}

// A fixed script: every value comes from the environment, quoted, so nothing user-given is parsed by the shell.
const BUILDKIT_SCRIPT = [
  'set -eu',
  'set -- --frontend dockerfile.v0 --opt "context=$TEAL_CONTEXT" --opt "filename=$TEAL_DOCKERFILE"',
  'set -- "$@" --output "type=image,name=$TEAL_IMAGE,push=true" --metadata-file /tmp/metadata.json',
  // The proxy for the Dockerfile's RUN steps too: Docker's predefined proxy ARGs, kept out of the image's history.
  'for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do',
  '  x=$(printenv "$v" || true); if [ -n "$x" ]; then set -- "$@" --opt "build-arg:$v=$x"; fi',
  'done',
  // Private CAs: buildkitd's registry client (Go) and its git (curl) read the system bundle, and BuildKit runs
  // git with an environment of its own (no GIT_SSL_CAINFO gets through). So buildkitd starts through a wrapper
  // that binds the system bundle plus the build's CAs over the system bundle, in rootlesskit's own mount
  // namespace, where the image's user is root: the pod's filesystem is untouched.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  'if [ -n "${TEAL_CA_DIR:-}" ]; then',
  '  export TEAL_CA_BUNDLE="$HOME/.teal-ca-bundle.crt"',
  '  { cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null || true; cat "$TEAL_CA_DIR"/*.crt; } > "$TEAL_CA_BUNDLE"',
  String.raw`  printf '%s\n' '#!/bin/sh' 'mount -o bind "$TEAL_CA_BUNDLE" /etc/ssl/certs/ca-certificates.crt || exit 1' 'exec buildkitd "$@"' > "$HOME/.teal-buildkitd"`,
  '  chmod +x "$HOME/.teal-buildkitd"; export BUILDKITD="$HOME/.teal-buildkitd"',
  'fi',
  // The git Secret as BuildKit's GIT_AUTH_HEADER (its GIT_AUTH_TOKEN would send the user as x-access-token):
  // bearer with bearerToken, basic with username and password, else the password as a token.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  'if [ -n "${GIT_BEARER_TOKEN:-}" ]; then GIT_AUTH_HEADER="bearer $GIT_BEARER_TOKEN"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  'elif [ -n "${GIT_PASSWORD:-}" ] && [ -n "${GIT_USERNAME:-}" ]; then',
  '  GIT_AUTH_HEADER="basic $(printf \'%s:%s\' "$GIT_USERNAME" "$GIT_PASSWORD" | base64 | tr -d \'\\n\')"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  'elif [ -n "${GIT_PASSWORD:-}" ]; then GIT_AUTH_TOKEN="$GIT_PASSWORD"; export GIT_AUTH_TOKEN',
  '  set -- "$@" --secret "id=GIT_AUTH_TOKEN,env=GIT_AUTH_TOKEN"',
  'fi',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  'if [ -n "${GIT_AUTH_HEADER:-}" ]; then export GIT_AUTH_HEADER; set -- "$@" --secret "id=GIT_AUTH_HEADER,env=GIT_AUTH_HEADER"; fi',
  '[ -f /home/user/.ssh/identity ] && set -- "$@" --ssh default=/home/user/.ssh/identity',
  'buildctl-daemonless.sh build "$@"',
  `sed -n 's/.*"containerimage.digest": *"\\(sha256:[0-9a-f]*\\)".*/\\1/p' /tmp/metadata.json > /dev/termination-log`,
].join('\n');

/** The Secret's ssh key and known_hosts, when it has an ssh key. */
function sshMount(gitSecret: string) {
  return {
    volume: {
      name: 'git-ssh',
      secret: {
        secretName: gitSecret,
        // Readable by BuildKit's group (the pod's fsGroup), never by others: BuildKit runs as uid 1000, not root.
        defaultMode: 0o440,
        items: [
          { key: 'identity', path: 'identity' },
          { key: 'known_hosts', path: 'known_hosts' },
        ],
      },
    },
    mount: { name: 'git-ssh', mountPath: '/home/user/.ssh', readOnly: true },
  };
}

/** BuildKit rootless, daemonless: git over ssh with the Secret's key, else https with its token. */
function buildkitPod(p: PodInput): BuildPod {
  const registry = registryMount(p.pushSecret, '/home/user/.docker');
  const ssh = p.gitSecret && p.gitSecretKeys.has('identity') ? sshMount(p.gitSecret) : undefined;
  const container = {
    name: BUILD_CONTAINER,
    image: p.engineImage,
    command: ['sh', '-c', BUILDKIT_SCRIPT],
    env: [
      ...p.describe,
      { name: 'TEAL_CONTEXT', value: buildkitContext(p.git.url, p.commit, p.git.path) },
      { name: 'BUILDKITD_FLAGS', value: '--oci-worker-no-process-sandbox' },
      { name: 'DOCKER_CONFIG', value: '/home/user/.docker' },
      ...(p.ca ? [{ name: 'TEAL_CA_DIR', value: BUILDKIT_CA_DIR }] : []),
      ...p.proxy,
      ...(p.gitSecret && !ssh
        ? [
            secretEnv('GIT_USERNAME', p.gitSecret, 'username'),
            secretEnv('GIT_PASSWORD', p.gitSecret, 'password'),
            secretEnv('GIT_BEARER_TOKEN', p.gitSecret, 'bearerToken'),
          ]
        : []),
    ],
    securityContext: {
      runAsUser: 1000,
      runAsGroup: 1000,
      seccompProfile: { type: 'Unconfined' },
      appArmorProfile: { type: 'Unconfined' },
    },
    volumeMounts: [
      ...registry.mounts,
      ...(ssh ? [ssh.mount] : []),
      ...(p.ca ? [{ name: CA_VOLUME, mountPath: BUILDKIT_CA_DIR, readOnly: true }] : []),
      { name: 'buildkitd', mountPath: '/home/user/.local/share/buildkit' },
    ],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  const volumes = [
    ...registry.volumes,
    ...(ssh ? [ssh.volume] : []),
    ...(p.ca ? [p.ca] : []),
    { name: 'buildkitd', emptyDir: {} },
  ];
  // The Secret volumes' files are root's; fsGroup gives them BuildKit's group, so uid 1000 can read its ssh key.
  return { container, volumes, securityContext: { fsGroup: 1000 } };
}

/**
 * The build Job of an App's commit, from named parts: its labels, the Secrets its pod
 * reads (copies, in the build namespace), the engine's container and volumes, the pod
 * template around them, and the Job's own metadata and limits.
 */
export function buildJobManifest(input: BuildInput) {
  const { app, commit, ref, defaults = {}, buildNamespace } = input;
  const build = app.spec.build;
  const git = app.spec.source?.git;
  const repository = imageRepository(app, defaults);
  if (!build || !git || !repository) throw new Error('buildJobManifest needs spec.source, spec.build and a repository');
  const image = `${repository}:${commit}`;
  const name = buildJobName(app, commit, defaults, buildNamespace);
  const labels = jobLabels(app, commit, defaults, buildNamespace);
  const pod = enginePod(input, { build, git, image, secrets: podSecrets(input, name) });
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: buildNamespace ?? app.metadata.namespace,
      labels,
      annotations: { [ANN_TARGET_IMAGE]: image, 'teal.dev/ref': ref },
      ...(buildNamespace === undefined ? { ownerReferences: [ownerReference(app)] } : {}),
    },
    spec: {
      // In the build namespace the Job starts suspended: its Secret copies are made (owned by it) first.
      ...(buildNamespace === undefined ? {} : { suspend: true }),
      backoffLimit: 0,
      activeDeadlineSeconds: Math.max(1, Math.round(parseDuration(build.timeout) / 1000)),
      template: podTemplate(labels, pod),
    },
  };
}

/** The Job's labels, its pod's too: the App, the commit and the build settings (LABEL_BUILD_SPEC). */
function jobLabels(
  app: App,
  commit: string,
  defaults: BuildDefaults,
  buildNamespace: string | undefined,
): Record<string, string> {
  // Away from the App, no ownerReference can name it: its namespace and uid are labels instead.
  const away: Record<string, string> =
    buildNamespace === undefined
      ? {}
      : { [LABEL_APP_NAMESPACE]: app.metadata.namespace ?? '', [LABEL_APP_UID]: app.metadata.uid ?? '' };
  return {
    [LABEL_APP]: app.metadata.name,
    ...away,
    [LABEL_BUILD]: commit.slice(0, 12),
    [LABEL_COMMIT]: commit,
    [LABEL_BUILD_SPEC]: buildSpecHash(app, defaults),
    [LABEL_MANAGED_BY]: MANAGED_BY,
  };
}

/** The Secrets the build pod reads, by their names where it runs. */
interface PodSecrets {
  push: string | undefined;
  git: string | undefined;
  ca: KeyRef | undefined;
  /** The git Secret, when it holds a ca.crt to trust too. */
  gitCa: string | undefined;
}

/**
 * The build's Secrets as the pod names them: the App's own in its namespace; in the build
 * namespace their copies (buildSecretCopies), which the operator makes before the Job starts.
 */
function podSecrets(input: BuildInput, jobName: string): PodSecrets {
  const { app, defaults = {}, buildNamespace } = input;
  const gitSource = app.spec.source?.git.secretRef?.name;
  const pushSource = pushSecretName(app, defaults);
  const caSource = app.spec.build?.caSecretRef;
  const copies = buildNamespace === undefined ? [] : buildSecretCopies(jobName, gitSource, pushSource, caSource);
  const copyOf = (source: string | undefined) =>
    source === undefined ? undefined : (copies.find((c) => c.source === source)?.name ?? source);
  return {
    push: copyOf(pushSource),
    git: copyOf(gitSource),
    ca: caSource && { name: copies.find((c) => c.keys)?.name ?? caSource.name, key: caSource.key },
    // The git Secret's copy in the build namespace is whole (buildSecretCopies), its ca.crt with it.
    gitCa: input.gitSecretKeys?.includes(SECRET_KEYS.caCert) ? copyOf(gitSource) : undefined,
  };
}

/** What of the App the engine's part of the pod needs, checked present by buildJobManifest. */
interface EngineInput {
  build: NonNullable<App['spec']['build']>;
  git: PodInput['git'];
  /** The image to push, tagged with the commit. */
  image: string;
  secrets: PodSecrets;
}

/** The engine's container and volumes: kaniko's or BuildKit's, which differ in all but what they are given. */
function enginePod(input: BuildInput, { build, git, image, secrets }: EngineInput): BuildPod {
  const { commit, ref, images, network = {} } = input;
  const kaniko = build.engine === 'kaniko';
  return (kaniko ? kanikoPod : buildkitPod)({
    image,
    engineImage: kaniko ? images.kaniko : images.buildkit,
    git,
    dockerfile: build.dockerfile,
    ref,
    commit,
    pushSecret: secrets.push,
    gitSecret: secrets.git,
    gitSecretKeys: new Set(input.gitSecretKeys ?? []),
    ca: caVolume({ secret: secrets.ca, configMap: network.caConfigMap, gitSecret: secrets.gitCa }),
    proxy: proxyEnv(network.proxy),
    describe: [
      { name: 'TEAL_COMMIT', value: commit },
      { name: 'TEAL_IMAGE', value: image },
      { name: 'TEAL_DOCKERFILE', value: build.dockerfile },
    ],
  });
}

/** The build pod: run once; it runs the repository's Dockerfile, so it gets no API token, nor Services as variables. */
function podTemplate(labels: Record<string, string>, pod: BuildPod) {
  return {
    metadata: { labels },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers: [pod.container],
      volumes: pod.volumes,
      ...(pod.securityContext ? { securityContext: pod.securityContext } : {}),
    },
  };
}

export type BuildJobManifest = ReturnType<typeof buildJobManifest>;

/** LABEL_BUILD_SECRET on a Secret copy in the build namespace: the build Job it was made for. */
export const LABEL_BUILD_SECRET = 'teal.dev/build-secret';

/**
 * A copy of one of the build's Secrets in the build namespace, owned by its Job:
 * the garbage collector deletes it with the Job. Its data goes straight from the
 * source; nothing of it is logged.
 */
export function buildSecretCopyManifest(
  copy: BuildSecretCopy,
  job: { namespace: string; name: string; uid: string },
  source: { type?: string; data: Record<string, string> },
) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: copy.name,
      namespace: job.namespace,
      labels: { [LABEL_BUILD_SECRET]: job.name, [LABEL_MANAGED_BY]: MANAGED_BY },
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: job.name,
          uid: job.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    // Some keys only: a kubernetes.io/tls Secret's type would require the tls.key left behind.
    type: copy.keys ? 'Opaque' : (source.type ?? 'Opaque'),
    data: copy.keys
      ? Object.fromEntries(copy.keys.flatMap((k) => (k in source.data ? [[k, source.data[k]]] : [])))
      : source.data,
  };
}
