// Real builds behind a company's own CAs and proxy (issue #27 §3): a registry
// served over HTTPS with a certificate of CA A, reached by name; a git server
// over HTTPS with CA B; the build Job's own BuildKit or kaniko container run for
// real by the build runner, trusting only the system's CAs (the host's) and
// those the App or the operator give. Then, in the build namespace, with the
// operator's CA ConfigMap and a proxy that must carry the build's traffic to
// the registry. Everything listens on 127.0.0.1; the registry's name resolves
// to it through the build containers' /etc/hosts, or through the proxy.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { pushBusyboxBase } from '../cluster/base-images.ts';
import { type BuildRunner, startBuildRunner } from '../cluster/build-runner.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import { manifestDigest, type Registry, startRegistry } from '../cluster/registry.ts';
import { phase, type StoredApp, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import {
  createRepo,
  type GitHttpsServer,
  selfSignedCertificate,
  startGitHttpsServer,
  type TestRepo,
} from '../support/git-server.ts';
import { type HttpProxy, startHttpProxy } from '../support/http-proxy.ts';
import { clients, createNamespace, kubeConfig } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const { core, batch, custom } = clients();
/** A cold toolchain build compiles BuildKit and kaniko: a bound against a hang only. */
const TOOLCHAIN_MS = 40 * 60_000;
/** A real build on a busy machine: a bound against a hang only. */
const BUILD_MS = 10 * 60_000;
/** The name the TLS registry's certificate is for: BuildKit speaks plain HTTP to a loopback address. */
const REGISTRY_HOST = 'registry.teal.test';
const PROXY_USER = 'builds';
const PROXY_PASSWORD = 'the-proxy-password';

/** The build namespace (real-build-*: the runner plays its pods), and the App namespace of the second part. */
let ns: string;
let appNs: string;
const removals: (() => Promise<void>)[] = [];
/** Open, plain HTTP on 127.0.0.1: the base image. */
let base: Registry;
/** HTTPS with CA A's certificate for REGISTRY_HOST: where the builds push. */
let secure: Registry;
/** HTTPS with CA B's certificate for 127.0.0.1. */
let server: GitHttpsServer;
let runner: BuildRunner;
let root: string;
let repo: TestRepo;
let head: string;

const b64 = (text: string) => Buffer.from(text).toString('base64');

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools();
  const builds = await createNamespace('real-build-ca');
  const apps = await createNamespace('buildca-apps');
  ns = builds.name;
  appNs = apps.name;
  removals.push(builds.remove, apps.remove);
  base = await startRegistry();
  await pushBusyboxBase(base, 'base/busybox', '1');
  const { cert, key } = await selfSignedCertificate(REGISTRY_HOST);
  secure = await startRegistry({ tls: { host: REGISTRY_HOST, certPem: cert, keyPem: key } });
  root = await mkdtemp(join(tmpdir(), 'teal-real-build-ca-'));
  repo = await createRepo(join(root, 'hello.git'));
  head = await repo.commit('a Dockerfile that shows what its RUN steps get of the proxy', {
    Dockerfile: [
      `FROM ${base.address}/base/busybox:1`,
      'COPY hello.txt /hello.txt',
      // The proxy's password, as a RUN step that prints its environment would: the log must mask it.
      'RUN echo "proxy password: $(echo "$HTTPS_PROXY" | cut -d: -f3 | cut -d@ -f1)"',
      '',
    ].join('\n'),
    'hello.txt': 'hello\n',
  });
  server = await startGitHttpsServer({ root });
  runner = startBuildRunner({
    kc: kubeConfig(),
    namespace: ns,
    toolsDir,
    // No extraCaPem: the build containers trust the host's CAs only, and what the Job gives them.
    hosts: { [REGISTRY_HOST]: '127.0.0.1' },
    log: (line) => console.error(`build-runner: ${line}`),
  });
}, TOOLCHAIN_MS);

afterAll(async () => {
  await runner?.stop();
  await server?.stop();
  await base?.stop();
  await secure?.stop();
  for (const remove of removals) await remove();
  if (root) await rm(root, { recursive: true, force: true });
});

async function putSecret(namespace: string, name: string, data: Record<string, string>, type?: string) {
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name },
      ...(type ? { type } : {}),
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    },
  });
}

async function createApp(
  namespace: string,
  name: string,
  engine: 'buildkit' | 'kaniko',
  caSecretRef?: { name: string; key?: string },
) {
  const body: AppInput = {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        // The operator's ls-remote trusts CA B through the git Secret's ca.crt, and so does the build's clone.
        git: { url: server.url('hello.git'), ref: 'main', secretRef: { name: 'git' }, pollInterval: '0' },
      },
      build: { engine, image: `${secure.address}/${namespace}/${name}`, ...(caSecretRef ? { caSecretRef } : {}) },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
    },
  };
  await custom.createNamespacedCustomObject({
    group: 'teal.dev',
    version: 'v1alpha1',
    namespace,
    plural: 'apps',
    body,
  });
}

/** The App released the image its build pushed over TLS: the registry's digest for <repository>:<commit>. */
async function expectReleased(namespace: string, name: string): Promise<StoredApp> {
  const app = await waitForApp(
    namespace,
    name,
    `${head.slice(0, 12)} built for real and released`,
    phase('Healthy'),
    BUILD_MS,
  );
  expect(app.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
  const digest = await manifestDigest(secure.address, `${namespace}/${name}`, head, undefined, secure.caPem);
  expect(app.status?.active?.image).toBe(`${secure.address}/${namespace}/${name}@${digest}`);
  return app;
}

const failedBuild = (namespace: string, name: string, what: string) =>
  waitForApp(namespace, name, what, (a) => a.status?.build?.phase === 'Failed', BUILD_MS);

describe('spec.build.caSecretRef: the App gives the CAs of its registry and git server', () => {
  let operator: Operator;
  beforeAll(async () => {
    await putSecret(ns, 'git', { 'ca.crt': server.caPem });
    // Both CAs in one key, as a company bundle would hold them.
    await putSecret(ns, 'build-ca', { 'ca.crt': `${secure.caPem}\n${server.caPem}` });
    // The registry's CA only: the git server's is the git Secret's ca.crt.
    await putSecret(ns, 'registry-ca', { 'ca.crt': secure.caPem ?? '' });
    operator = await startOperator({ namespace: ns });
  });
  afterAll(async () => {
    await operator?.stop();
    // Another operator takes this namespace as its build namespace next: no App of this one stays.
    await custom
      .deleteCollectionNamespacedCustomObject({ group: 'teal.dev', version: 'v1alpha1', namespace: ns, plural: 'apps' })
      .catch(() => {});
  });

  it(
    'BuildKit clones over HTTPS with CA B, pushes over HTTPS with CA A, and the App releases the digest',
    async () => {
      await createApp(ns, 'ca-buildkit', 'buildkit', { name: 'build-ca' });
      await expectReleased(ns, 'ca-buildkit');
    },
    BUILD_MS,
  );

  it(
    'kaniko does the same, inside a runc container',
    async () => {
      await createApp(ns, 'ca-kaniko', 'kaniko', { name: 'build-ca' });
      await expectReleased(ns, 'ca-kaniko');
    },
    BUILD_MS,
  );

  it.each(['buildkit', 'kaniko'] as const)(
    "%s clones trusting the git Secret's ca.crt (CA B given there only), pushes trusting caSecretRef's CA A",
    async (engine) => {
      const name = `git-ca-${engine}`;
      await createApp(ns, name, engine, { name: 'registry-ca' });
      const built = await waitForApp(
        ns,
        name,
        'the build finished',
        (a) => a.status?.build?.phase === 'Succeeded' || a.status?.build?.phase === 'Failed',
        BUILD_MS,
      );
      expect(built.status?.build?.message).toBeUndefined();
      expect(built.status?.build?.phase).toBe('Succeeded');
      await expectReleased(ns, name);
    },
    BUILD_MS,
  );

  it.each([
    // The git Secret's ca.crt lets the clone through: the registry's certificate is what fails. BuildKit's
    // registry client (Go) refuses it at the push; kaniko's, as it checks its push permissions, before it builds.
    ['buildkit', new RegExp(`failed to push ${REGISTRY_HOST}:.*x509: certificate signed by unknown authority`)],
    [
      'kaniko',
      new RegExp(`error checking push permissions.*"${REGISTRY_HOST}:.*x509: certificate signed by unknown authority`),
    ],
  ] as const)(
    "without caSecretRef, the %s build clones (the git Secret's ca.crt) and fails on the registry's certificate, said in status",
    async (engine, said) => {
      await createApp(ns, `no-ca-${engine}`, engine);
      const failed = await failedBuild(ns, `no-ca-${engine}`, 'the build failed on an unknown CA');
      console.error(`no CA, ${engine}: ${failed.status?.build?.message}`);
      expect(failed.status?.build?.message).toMatch(said);
      expect(failed.status?.message).toMatch(said);
      expect(failed.status?.active).toBeUndefined();
    },
    BUILD_MS,
  );

  it.each([
    ['a missing Secret', 'absent', undefined, `spec.build.caSecretRef: Secret NS/absent not found`],
    [
      'a Secret without the key',
      'no-key',
      { other: 'x' },
      `spec.build.caSecretRef: Secret NS/no-key has no key "ca.crt"`,
    ],
    [
      'a key that holds no certificate',
      'not-pem',
      { 'ca.crt': 'a-private-key-by-mistake' },
      `spec.build.caSecretRef: Secret NS/not-pem key "ca.crt" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    ],
  ])('%s fails the build naming the field, without a Job or the content', async (_what, secret, data, message) => {
    if (data) await putSecret(ns, secret, data);
    const name = `bad-ca-${secret}`;
    await createApp(ns, name, 'buildkit', { name: secret });
    const failed = await failedBuild(ns, name, 'the build refused');
    const expected = message.replace('NS', ns);
    expect(failed.status?.build?.message).toBe(expected);
    expect(failed.status?.message).toContain(expected);
    expect(JSON.stringify(failed.status)).not.toContain('a-private-key-by-mistake');
    const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/app=${name}` });
    expect(jobs.items).toEqual([]);
  });
});

describe('--build-namespace, --build-ca-configmap and --build-https-proxy', () => {
  let operator: Operator;
  let proxy: HttpProxy;
  beforeAll(async () => {
    proxy = await startHttpProxy({
      credentials: { user: PROXY_USER, password: PROXY_PASSWORD },
      names: [REGISTRY_HOST],
    });
    await putSecret(appNs, 'git', { 'ca.crt': server.caPem });
    // A cert-manager Secret: the CA key is copied to the build namespace, its private key is not.
    const { cert, key } = await selfSignedCertificate();
    await putSecret(
      appNs,
      'registry-ca',
      { 'ca.crt': secure.caPem ?? '', 'tls.crt': cert, 'tls.key': key },
      'kubernetes.io/tls',
    );
    // The git server's CA for every build, where trust-manager would write it: the build namespace.
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'corp-bundle' }, data: { 'bundle.pem': server.caPem } },
    });
    operator = await startOperator({
      namespace: appNs,
      extraArgs: [
        '--build-namespace',
        ns,
        '--build-ca-configmap',
        'corp-bundle/bundle.pem',
        '--build-http-proxy',
        proxy.url,
        '--build-https-proxy',
        proxy.url,
        // Not the registry: its traffic goes through the proxy.
        '--build-no-proxy',
        '.cluster.local',
      ],
    });
  });
  afterAll(async () => {
    await operator?.stop();
    await proxy?.stop();
  });

  it.each(['buildkit', 'kaniko'] as const)(
    '%s: the push goes through the proxy with its credentials, trusting the App Secret copy and the ConfigMap',
    async (engine) => {
      const name = `proxied-${engine}`;
      const before = proxy.requests.length;
      await createApp(appNs, name, engine, { name: 'registry-ca' });
      const app = await expectReleased(appNs, name);
      const carried = proxy.requests.slice(before);
      console.error(`${engine} through the proxy: ${JSON.stringify(carried)}`);
      expect(carried).toContainEqual({ method: 'CONNECT', target: `${secure.address}`, authorized: true });
      // The CA Secret's copy in the build namespace, owned by the Job: its CA key only.
      const job = app.status?.build?.job ?? '';
      expect(app.status?.build?.namespace).toBe(ns);
      const copy = await core.readNamespacedSecret({ namespace: ns, name: `${job}-ca` });
      expect(copy.type).toBe('Opaque');
      expect(Object.keys(copy.data ?? {})).toEqual(['ca.crt']);
      expect(copy.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', name: job });
      // The git Secret's copy is whole: its ca.crt, which the build's clone trusts, with it.
      const gitCopy = await core.readNamespacedSecret({ namespace: ns, name: `${job}-git` });
      expect(gitCopy.data?.['ca.crt']).toBe(b64(server.caPem));
      // The RUN step got the proxy, and its log shows the password masked.
      const logs = await tealIn(appNs, 'logs', name, '--commit', head);
      expect(logs.stdout).toContain('proxy password: *****');
      expect(`${logs.stdout}${logs.stderr}`).not.toContain(PROXY_PASSWORD);
      expect(operator.logs()).not.toContain(PROXY_PASSWORD);
    },
    BUILD_MS,
  );
});
