// charts/teal with the real helm (built from Go modules): lint and render with
// default and non-default values, a server-side dry-run of what it renders,
// and a helm install in each RBAC mode with the operator running under the
// chart's ServiceAccount token, using the flags the chart gives it.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { readCommandLine } from '../../src/config.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { CLUSTER_SCOPED, IN_APP_NAMESPACES, IN_OPERATOR_NAMESPACE, NEVER } from '../fixtures/operator-rbac.ts';
import { createApp, getApp, phase, releaseAndPromote, waitForApp } from '../support/apps.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { entrypointFlags } from '../support/dockerfile.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer } from '../support/git-server.ts';
import { CHART, helm, helmErrors, render, serviceMonitorCrd } from '../support/helm.ts';
import { canI, clients, createNamespace, kubectl, serviceAccountKubeconfig } from '../support/kube.ts';
import { find, type Manifest, operatorContainer, parseManifests, rulesOf } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const CONFIG = new URL('../../config', import.meta.url).pathname;
const NON_DEFAULT = new URL('../fixtures/chart-values.yaml', import.meta.url).pathname;
const removers: (() => Promise<void>)[] = [];
const operators: Operator[] = [];
const releases: [string, string][] = [];
let dir: string;

async function namespace(prefix: string): Promise<string> {
  const { name, remove } = await createNamespace(prefix);
  removers.push(remove);
  return name;
}

const configObjects = async (path: string) => parseManifests(await readFile(join(CONFIG, path), 'utf8'));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-chart-'));
  // kubectl auth can-i resolves httproutes.gateway.networking.k8s.io only once the API server serves it.
  await installGatewayApi();
});

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop()));
  for (const [release, ns] of releases) await helm(['uninstall', release, '--namespace', ns]);
  await Promise.all(removers.map((r) => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('helm lint', () => {
  it.each([
    ['default values', []],
    ['non-default values', ['--values', NON_DEFAULT, '--set', 'watchNamespaces={team-a,team-b}']],
  ])('passes with %s', async (_, args) => {
    const out = await helm(['lint', CHART, '--strict', ...args]);
    expect(out.stderr).toBe('');
    expect(out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(out.code).toBe(0);
  });

  it.each([
    ['--set', 'replicaCount=two', "at '/replicaCount': got string, want integer"],
    ['--set', 'watchNamespaces={Team_A}', "at '/watchNamespaces/0'"],
    ['--set', 'replicas=3', "additional properties 'replicas' not allowed"],
    ['--set', 'build.defaultRegistry=https://harbor.example.com', "at '/build/defaultRegistry'"],
    ['--set', 'leaderElection.enabled=false', 'replicaCount > 1 needs leaderElection.enabled'],
    // A bare word would be run by node as the script, in place of the operator.
    ['--set', 'nodeFlags={other.js}', "at '/nodeFlags/0'"],
    // Durations as the operator reads them: a bare number has no unit.
    ['--set-string', 'leaderElection.leaseDuration=15', "at '/leaderElection/leaseDuration'"],
    ['--set', 'leaderElection.retryPeriod=2sec', "at '/leaderElection/retryPeriod'"],
    ['--set', 'egress.allow={http://10.0.0.1/}', "at '/egress/allow/0'"],
    // The operator would refuse it at start: the chart says so at install.
    ['--set', 'sessionKey.value=short', "at '/sessionKey/value'"],
    ['--set', 'oidc.issuerURL=http://idp.example.com', "at '/oidc/issuerURL'"],
    ['--set', 'oidc.issuerURL=https://idp.example.com', 'oidc.clientID is required with oidc.issuerURL'],
    ['--set', 'oidc.redirectURLs={https://teal.example.com/callback}', "at '/oidc/redirectURLs/0'"],
  ])('rejects %s %s with a message naming it', async (flag, value, message) => {
    const out = await helm(['template', 'teal', CHART, flag, value]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

describe('the rendered chart', () => {
  it('with default values is the cluster-wide mode of config/: same operator rules, user roles and policy', async () => {
    const { objects } = await render('teal', 'teal-system');
    const [configRole] = find(await configObjects('rbac/cluster/operator.yaml'), 'ClusterRole', 'teal-operator');
    expect(rulesOf(find(objects, 'ClusterRole', 'teal-operator')[0])).toEqual(rulesOf(configRole));
    expect(find(objects, 'Role')).toEqual([]);
    for (const role of await configObjects('rbac/roles.yaml')) {
      const [rendered] = find(objects, 'ClusterRole', role.metadata.name);
      expect(rulesOf(rendered)).toEqual(rulesOf(role));
      expect(rendered?.metadata.labels).toMatchObject(role.metadata.labels ?? {});
    }
    const [policy] = find(await configObjects('policy/intents.yaml'), 'ValidatingAdmissionPolicy');
    expect(find(objects, 'ValidatingAdmissionPolicy')[0]?.spec).toEqual(policy?.spec);
    // Checks and notifications keep to the guarded default: no address is opened.
    expect(operatorContainer(objects).args.filter((a) => a.startsWith('--egress-allow'))).toEqual([]);

    const deployment = find(objects, 'Deployment', 'teal')[0] as Manifest & { spec: { replicas: number } };
    expect(deployment.spec.replicas).toBe(2);
    const container = operatorContainer(objects);
    expect(container.image).toBe('ghcr.io/teal-dev/teal:0.1.0');
    // NODE_OPTIONS cannot change the image's node flags, so the chart runs the ENTRYPOINT itself.
    expect(container.command).toEqual(['node', ...entrypointFlags(), 'dist/teal.js']);
    expect(container.args).toContain('--leader-elect=true');
    expect(container.args).toContain(`--buildkit-image=${DEFAULT_BUILD_IMAGES.buildkit}`);
    expect(container.args).toContain(`--kaniko-image=${DEFAULT_BUILD_IMAGES.kaniko}`);
    expect(container.args.some((a) => a.startsWith('--namespace'))).toBe(false);
    for (const kind of ['Ingress', 'ServiceMonitor', 'Secret']) expect(find(objects, kind)).toEqual([]);
  });

  it('with non-default values: namespaced RBAC, TLS, ingress, webhook secret, session key, OIDC, ServiceMonitor', async () => {
    const { objects } = await render('teal', 'platform', [
      '--values',
      NON_DEFAULT,
      '--set',
      'watchNamespaces={team-a,team-b}',
    ]);
    const [clusterRole] = find(await configObjects('rbac/cluster/operator.yaml'), 'ClusterRole', 'teal-operator');
    const all = rulesOf(clusterRole) ?? [];
    const namespaced = all.filter(
      (r) => !['coordination.k8s.io', 'authentication.k8s.io', 'authorization.k8s.io'].includes(r.apiGroups[0] ?? ''),
    );
    for (const ns of ['team-a', 'team-b']) {
      expect(rulesOf(find(objects, 'Role', 'teal-operator', ns)[0])).toEqual(namespaced);
      expect(find(objects, 'RoleBinding', 'teal-operator', ns)).toHaveLength(1);
    }
    expect(rulesOf(find(objects, 'Role', 'teal-leader-election', 'platform')[0])).toEqual(
      all.filter((r) => r.apiGroups[0] === 'coordination.k8s.io'),
    );
    // Nothing cluster-wide for the operator but the two review APIs.
    expect(find(objects, 'ClusterRole', 'teal-operator')).toEqual([]);
    expect(rulesOf(find(objects, 'ClusterRole', 'teal-auth-delegator')[0])).toEqual(
      all.filter((r) => ['authentication.k8s.io', 'authorization.k8s.io'].includes(r.apiGroups[0] ?? '')),
    );

    const container = operatorContainer(objects);
    expect(container.image).toBe('harbor.example.com/platform/teal:0.1.0-rc.1');
    expect(container.command).toEqual(['node', '--max-semi-space-size=16', '--max-old-space-size=384', 'dist/teal.js']);
    expect(container.args).toEqual(
      expect.arrayContaining([
        '--namespace=team-a,team-b',
        '--default-registry=harbor.example.com/apps',
        '--webhook-secret-file=/etc/teal/webhook/token',
        '--session-key-file=/etc/teal/session/session-key',
        '--tls-cert-file=/etc/teal/tls/tls.crt',
        '--concurrency=8',
        '--lease-duration=20s',
        '--egress-allow=10.0.0.0/8',
        '--egress-allow=*.monitoring.svc',
      ]),
    );
    expect(container.readinessProbe.httpGet.scheme).toBe('HTTPS');
    const [secret] = find(objects, 'Secret', 'teal-webhook') as (Manifest & { data: Record<string, string> })[];
    expect(Buffer.from(secret?.data.token ?? '', 'base64').toString()).toBe('a-global-webhook-secret');
    const [sessionKey] = find(objects, 'Secret', 'teal-session-key') as (Manifest & { data: Record<string, string> })[];
    expect(Buffer.from(sessionKey?.data['session-key'] ?? '', 'base64').toString()).toBe(
      'a-session-key-of-at-least-32-bytes-shared-by-replicas',
    );
    // OIDC: the flags the operator reads, with the client secret from a Secret and the CA from a ConfigMap.
    expect(readCommandLine(container.args, {})).toMatchObject({
      run: {
        oidcIssuerUrl: new URL('https://idp.example.com/realms/k8s'),
        oidcClientId: 'teal',
        oidcClientSecretFile: '/etc/teal/oidc/client-secret',
        oidcCaFile: '/etc/teal/oidc-ca/ca.crt',
        oidcUsernameClaim: 'email',
        oidcUsernamePrefix: 'oidc:',
        oidcGroupsClaim: 'groups',
        oidcGroupsPrefix: 'oidc:',
        oidcExtraScopes: ['email', 'groups'],
        oidcRedirectUrl: [new URL('https://teal.example.com/api/v1/session/oidc/callback')],
        oidcProviderName: 'Example SSO',
      },
    });
    const [oidcSecret] = find(objects, 'Secret', 'teal-oidc') as (Manifest & { data: Record<string, string> })[];
    expect(Buffer.from(oidcSecret?.data['client-secret'] ?? '', 'base64').toString()).toBe('an-oidc-client-secret');
    expect(find(objects, 'ConfigMap', 'teal-oidc-ca')).toHaveLength(1);
    const [ingress] = find(objects, 'Ingress', 'teal') as (Manifest & {
      spec: { rules: { http: { paths: { path: string }[] } }[] };
    })[];
    expect(ingress?.spec.rules[0]?.http.paths.map((p) => p.path)).toEqual(['/webhooks', '/api/v1']);
    expect(find(objects, 'ServiceMonitor', 'teal')[0]?.metadata.labels).toMatchObject({ release: 'prometheus' });
    expect(find(objects, 'PodDisruptionBudget', 'teal')).toHaveLength(1);
  });

  it('takes durations as the operator reads them (500ms, 1m30s), and the flags it renders read so', async () => {
    const { objects } = await render('teal', 'platform', [
      '--set',
      'leaderElection.leaseDuration=1m30s,leaderElection.renewDeadline=1m,leaderElection.retryPeriod=500ms',
    ]);
    const { args } = operatorContainer(objects);
    expect(args).toEqual(
      expect.arrayContaining(['--lease-duration=1m30s', '--renew-deadline=1m', '--retry-period=500ms']),
    );
    expect(readCommandLine(args, {})).toMatchObject({
      run: { leaseDurationMs: 90_000, renewDeadlineMs: 60_000, retryPeriodMs: 500, requestTimeoutMs: 30_000 },
    });
  });

  it('lets anonymous reads in only when dashboard.anonymous is read', async () => {
    const flag = async (set: string[]) =>
      operatorContainer((await render('teal', 'platform', set)).objects).args.filter((a: string) =>
        a.startsWith('--dashboard-anonymous'),
      );
    expect(await flag([])).toEqual([]);
    expect(await flag(['--set', 'dashboard.anonymous=read'])).toEqual(['--dashboard-anonymous=read']);
    const refused = await helm(['template', 'teal', CHART, '--set', 'dashboard.anonymous=write']);
    expect(refused.stderr).toContain("at '/dashboard/anonymous'");
  });

  it.each([
    ['default values', (_ns: string[]) => ['--include-crds']],
    ['non-default values', (ns: string[]) => ['--values', NON_DEFAULT, '--set', `watchNamespaces={${ns.join(',')}}`]],
  ])('with %s passes a server-side dry-run', async (_, args) => {
    const sm = await kubectl(['apply', '--server-side', '-f', '-'], await serviceMonitorCrd());
    expect(sm.stderr).toBe('');
    await kubectl(['wait', '--for=condition=Established', 'crd/servicemonitors.monitoring.coreos.com']);
    const [release, a, b] = await Promise.all([namespace('chart-dry'), namespace('chart-a'), namespace('chart-b')]);
    const { text } = await render('teal', release, args([a, b]));
    const out = await kubectl(
      ['apply', '--server-side', '--dry-run=server', '--force-conflicts', '--field-manager=chart-test', '-f', '-'],
      text,
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout.trim().split('\n').length).toBe(parseManifests(text).length);
  });
});

/** helm install, then the operator as the Deployment would run it, as the chart's ServiceAccount. */
async function install(release: string, ns: string, args: string[], extraArgs: string[] = []): Promise<Operator> {
  const out = await helm(['install', release, CHART, '--namespace', ns, ...args]);
  expect(helmErrors(out.stderr)).toEqual([]);
  expect(out.code).toBe(0);
  releases.push([release, ns]);
  const manifest = await helm(['get', 'manifest', release, '--namespace', ns]);
  const objects = parseManifests(manifest.stdout);
  const [sa] = find(objects, 'ServiceAccount');
  if (!sa) throw new Error('the chart made no ServiceAccount');
  const kubeconfig = await serviceAccountKubeconfig(ns, sa.metadata.name, join(dir, `${release}.kubeconfig`));
  const operator = await startOperator({
    namespace: release,
    kubeconfig,
    deployed: { args: operatorContainer(objects).args, podNamespace: ns },
    extraArgs,
  });
  operators.push(operator);
  return operator;
}

describe('helm install, cluster-wide mode', () => {
  let ns: string;
  let apps: string;
  let sa: string;
  beforeAll(async () => {
    [ns, apps] = await Promise.all([namespace('chart-cw'), namespace('chart-cw-apps')]);
    sa = `system:serviceaccount:${ns}:cw-teal`;
  });

  it('lets the ServiceAccount do what the operator does, everywhere, and nothing it must not', async () => {
    // The other test files' operators own their namespaces, so this one watches one
    // namespace of its own, with the cluster-wide rights the chart granted.
    const operator = await install('cw', ns, [], [`--namespace=${apps}`]);
    for (const [verb, resource] of [...IN_APP_NAMESPACES, ...CLUSTER_SCOPED]) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-A'])}`).toBe(`${verb} ${resource}: yes`);
    }
    for (const [verb, resource] of IN_OPERATOR_NAMESPACE) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', ns])}`).toBe(`${verb} ${resource}: yes`);
    }
    for (const [verb, resource] of NEVER) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-A'])}`).toBe(`${verb} ${resource}: no`);
    }
    await releaseAndPromote(apps, 'cw');
    expect(operator.logs()).not.toMatch(/forbidden/i);
  });
});

describe('helm install, namespaced mode', () => {
  let ns: string;
  let watched: string;
  let other: string;
  let sa: string;
  beforeAll(async () => {
    [ns, watched, other] = await Promise.all([
      namespace('chart-ns'),
      namespace('chart-ns-apps'),
      namespace('chart-ns-other'),
    ]);
    sa = `system:serviceaccount:${ns}:nsd-teal`;
  });

  it('grants the operator its rights in the watched namespaces only, and a release works with them', async () => {
    const operator = await install('nsd', ns, ['--set', `watchNamespaces={${watched}}`]);
    for (const [verb, resource] of IN_APP_NAMESPACES) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', watched])}`).toBe(
        `${verb} ${resource}: yes`,
      );
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', other])}`).toBe(`${verb} ${resource}: no`);
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-A'])}`).toBe(`${verb} ${resource}: no`);
    }
    for (const [verb, resource] of IN_OPERATOR_NAMESPACE) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', ns])}`).toBe(`${verb} ${resource}: yes`);
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', watched])}`).toBe(`${verb} ${resource}: no`);
    }
    for (const [verb, resource] of CLUSTER_SCOPED) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, [])}`).toBe(`${verb} ${resource}: yes`);
    }
    for (const [verb, resource] of NEVER) {
      expect(`${verb} ${resource}: ${await canI(verb, resource, sa, ['-n', watched])}`).toBe(`${verb} ${resource}: no`);
    }

    await createApp(other, e2eApp('elsewhere'));
    await releaseAndPromote(watched, 'nsd');
    // The App outside the watched namespaces was never touched.
    expect((await getApp(other, 'elsewhere')).status).toBeUndefined();
    expect(operator.logs()).not.toMatch(/forbidden/i);
    expect(operator.logs()).toContain(watched);
  });
});

describe('helm install, namespaced mode with a build namespace', () => {
  let ns: string;
  let watched: string;
  let builds: string;
  let root: string;
  let server: GitHttpsServer | undefined;
  beforeAll(async () => {
    [ns, watched, builds] = await Promise.all([
      namespace('chart-bn'),
      namespace('chart-bn-apps'),
      namespace('chart-bn-builds'),
    ]);
    root = await mkdtemp(join(tmpdir(), 'teal-chart-bn-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('renders the Role of config/build-namespace in buildNamespace, in namespaced mode only, and the flag', async () => {
    const [role] = find(await configObjects('build-namespace/rbac.yaml'), 'Role', 'teal-builds');
    const namespaced = await render('teal', 'platform', [
      '--set',
      'watchNamespaces={team-a}',
      '--set',
      'buildNamespace=b',
    ]);
    expect(rulesOf(find(namespaced.objects, 'Role', 'teal-builds', 'b')[0])).toEqual(rulesOf(role));
    expect(find(namespaced.objects, 'RoleBinding', 'teal-builds', 'b')).toHaveLength(1);
    expect(operatorContainer(namespaced.objects).args).toContain('--build-namespace=b');
    // Cluster-wide, the ClusterRole covers it: no Role.
    const clusterWide = await render('teal', 'platform', ['--set', 'buildNamespace=b']);
    expect(find(clusterWide.objects, 'Role', 'teal-builds', 'b')).toEqual([]);
  });

  it("builds in buildNamespace with only the chart's Roles, its Secret copied there, and releases", async () => {
    const operator = await install('bn', ns, [
      '--set',
      `watchNamespaces={${watched}}`,
      '--set',
      `buildNamespace=${builds}`,
    ]);
    const repo = await createRepo(join(root, 'web'));
    await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
    server = await startGitHttpsServer({ root, username: 'teal', password: 'chart-token' });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    await clients().core.createNamespacedSecret({
      namespace: watched,
      body: {
        metadata: { name: 'web-git' },
        data: { username: b64('teal'), password: b64('chart-token'), 'ca.crt': b64(server.caPem) },
      },
    });
    const url = server.url('web');
    await createApp(
      watched,
      e2eApp('web', {
        replicas: 1,
        blueGreen: { autoPromotionEnabled: true },
        spec: {
          image: undefined,
          source: { git: { url, ref: 'main', secretRef: { name: 'web-git' }, pollInterval: '0' } },
          build: { image: 'registry.example.com/team/web' },
        },
      }),
    );
    const app = await waitForApp(watched, 'web', 'built and released', phase('Healthy'));
    expect(app.status?.build).toMatchObject({ phase: 'Succeeded', namespace: builds });
    const job = app.status?.build?.job ?? '';
    expect((await clients().batch.readNamespacedJob({ namespace: builds, name: job })).metadata?.name).toBe(job);
    expect((await clients().core.readNamespacedSecret({ namespace: builds, name: `${job}-git` })).type).toBe('Opaque');
    expect(operator.logs()).not.toMatch(/forbidden/i);
  });
});
