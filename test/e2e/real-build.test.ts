// Real image builds through the operator: git repositories served over HTTPS,
// the build Job's own BuildKit or kaniko container run for real by the build runner
// (test/cluster/build-runner.ts; KWOK leaves build pods in real-build-*
// namespaces to it), a real registry on 127.0.0.1, and the App deployed by the
// digest the registry gives for the tag the build pushed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { pushBusyboxBase } from '../cluster/base-images.ts';
import { type BuildRunner, startBuildRunner } from '../cluster/build-runner.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import { manifestDigest, type Registry, type RegistryAuth, startRegistry } from '../cluster/registry.ts';
import { conditionOf } from '../support/analysis.ts';
import { getApp, phase, selectorHash, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { createRepo, type GitHttpsServer, git, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { readRegistryImage } from '../support/registry-image.ts';

const { core, batch, custom } = clients();
/** A cold toolchain build compiles BuildKit and kaniko: a bound against a hang only. */
const TOOLCHAIN_MS = 40 * 60_000;
/**
 * The private repository's user and token. The server checks both, so a build
 * that sent BuildKit's default user (x-access-token) instead of the Secret's is refused.
 */
const TOKEN_USER = 'teal-bot';
const TOKEN = 'a-token-for-the-private-repo';
const PUSH_AUTH: RegistryAuth = { user: 'teal-push', password: 'the-registry-password' };
const WRONG = 'not-the-right-one';
let ns: string;
let removeNs: () => Promise<void>;
/** Open: the base image, and the pushes of public builds. */
let registry: Registry;
/** htpasswd auth: pushes need the App's push Secret. */
let pushRegistry: Registry;
let runner: BuildRunner;
let operator: Operator;
let root: string;
/** Public repositories; the private one (token auth); and those whose only reader is the build (no polling App). */
let server: GitHttpsServer;
let privateServer: GitHttpsServer;
let tipServer: GitHttpsServer;
let repo: TestRepo;
let kanikoRepo: TestRepo;
const firstBuilds = new Map<string, string>();

/** A busybox image with one file of the commit in it, and its content in a label from the Dockerfile. */
const versionDockerfile = (version: string) =>
  `FROM ${registry.address}/base/busybox:1\nCOPY version.txt /version.txt\nLABEL teal.test.version=${version}\n`;

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools();
  ({ name: ns, remove: removeNs } = await createNamespace('real-build'));
  registry = await startRegistry();
  pushRegistry = await startRegistry({ auth: PUSH_AUTH });
  await pushBusyboxBase(registry, 'base/busybox', '1');
  root = await mkdtemp(join(tmpdir(), 'teal-real-build-git-'));
  // URLs ending in .git: BuildKit takes an https:// context without it (or a
  // known host) for a tarball to download, not a repository to clone.
  const dockerfile = `FROM ${registry.address}/base/busybox:1\nCOPY hello.txt /hello.txt\nRUN grep -q hello /hello.txt\n`;
  repo = await createRepo(join(root, 'public', 'hello.git'));
  await repo.commit('a Dockerfile on the busybox base', { Dockerfile: dockerfile, 'hello.txt': 'hello\n' });
  kanikoRepo = await createRepo(join(root, 'public', 'hello-kaniko.git'));
  await kanikoRepo.commit('a Dockerfile on the busybox base', { Dockerfile: dockerfile, 'hello.txt': 'hello\n' });
  server = await startGitHttpsServer({ root: join(root, 'public') });
  privateServer = await startGitHttpsServer({ root: join(root, 'private'), username: TOKEN_USER, password: TOKEN });
  tipServer = await startGitHttpsServer({ root: join(root, 'tip') });
  await createSecrets();
  runner = startBuildRunner({
    kc: kubeConfig(),
    namespace: ns,
    toolsDir,
    // The build image trusts the git servers' CAs, as a company's own would through its CA bundle.
    extraCaPem: [server, privateServer, tipServer].map((s) => s.caPem).join('\n'),
    log: (line) => console.error(`build-runner: ${line}`),
  });
  operator = await startOperator({ namespace: ns });
}, TOOLCHAIN_MS);

afterAll(async () => {
  await operator?.stop();
  await runner?.stop();
  await server?.stop();
  await privateServer?.stop();
  await tipServer?.stop();
  await registry?.stop();
  await pushRegistry?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

const base64 = (text: string) => Buffer.from(text).toString('base64');

async function putSecret(name: string, data: Record<string, string>, type?: string): Promise<void> {
  const body = {
    metadata: { name },
    ...(type ? { type } : {}),
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, base64(v)])),
  };
  const exists = await core.readNamespacedSecret({ name, namespace: ns }).then(
    () => true,
    () => false,
  );
  if (exists) await core.replaceNamespacedSecret({ name, namespace: ns, body });
  else await core.createNamespacedSecret({ namespace: ns, body });
}

/** A kubernetes.io/dockerconfigjson Secret for the push registry. */
const pushSecret = (name: string, password: string) =>
  putSecret(
    name,
    {
      '.dockerconfigjson': JSON.stringify({
        auths: { [pushRegistry.address]: { auth: base64(`${PUSH_AUTH.user}:${password}`) } },
      }),
    },
    'kubernetes.io/dockerconfigjson',
  );

/** The git Secret of the private repository, with a token (right or not). */
const tokenSecret = (name: string, token: string) =>
  putSecret(name, { username: TOKEN_USER, password: token, 'ca.crt': privateServer.caPem });

async function createSecrets(): Promise<void> {
  // The operator trusts each git server's CA through the App's Secret.
  await putSecret('hello-git', { 'ca.crt': server.caPem });
  await putSecret('tip-git', { 'ca.crt': tipServer.caPem });
  await tokenSecret('private-git', TOKEN);
  await pushSecret('push', PUSH_AUTH.password);
  await pushSecret('push-wrong', WRONG);
}

interface AppOptions {
  engine: 'buildkit' | 'kaniko';
  url: string;
  gitSecret: string;
  path?: string;
  pollInterval?: string;
  /** Default: the open registry. */
  pushTo?: Registry;
  pushSecret?: string;
}

async function createApp(name: string, o: AppOptions): Promise<void> {
  const body: AppInput = {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: {
          url: o.url,
          ref: 'main',
          secretRef: { name: o.gitSecret },
          pollInterval: o.pollInterval ?? '2s',
          ...(o.path ? { path: o.path } : {}),
        },
      },
      build: {
        engine: o.engine,
        image: `${(o.pushTo ?? registry).address}/${ns}/${name}`,
        ...(o.pushSecret ? { pushSecretRef: { name: o.pushSecret } } : {}),
      },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
    },
  };
  await custom.createNamespacedCustomObject({
    group: 'teal.dev',
    version: 'v1alpha1',
    namespace: ns,
    plural: 'apps',
    body,
  });
}

/** Waits for the App's first release and checks it deploys the registry's digest for <repository>:<commit>. */
async function expectReleased(name: string, commit: string, from: Registry = registry): Promise<void> {
  const app = await waitForApp(ns, name, `${commit.slice(0, 12)} built for real and released`, phase('Healthy'));
  expect(app.status?.build).toMatchObject({ commit, phase: 'Succeeded' });
  const digest = await manifestDigest(from.address, `${ns}/${name}`, commit, from.auth);
  expect(app.status?.active?.image).toBe(`${from.address}/${ns}/${name}@${digest}`);
}

/** The first release of a new App built for real: its image is the registry's digest for <repository>:<commit>. */
async function expectRealRelease(name: string, engine: 'buildkit' | 'kaniko', head: string): Promise<void> {
  await createApp(name, { engine, url: server.url(`${name}.git`), gitSecret: 'hello-git' });
  await expectReleased(name, head);
  firstBuilds.set(name, head);
  const app = await getApp(ns, name);
  const digest = await manifestDigest(registry.address, `${ns}/${name}`, head);
  const jobName = app.status?.build?.job ?? '';
  const build = runner.finished.find((b) => b.pod.startsWith(`${jobName}-`));
  expect(build?.exitCode).toBe(0);
  expect(build?.message.trim()).toBe(digest);
  const job = await batch.readNamespacedJob({ name: jobName, namespace: ns });
  const jobSeconds = (Number(job.status?.completionTime) - Number(job.status?.startTime)) / 1000;
  const createdToDone = (Number(job.status?.completionTime) - Number(job.metadata?.creationTimestamp)) / 1000;
  console.error(
    `one real ${engine} build: ${build?.durationMs} ms in the container, Job ${jobSeconds} s start to completion, ${createdToDone} s from creation`,
  );
}

/** Resolves once the build Job of the commit exists. */
const buildJobOf = (commit: string) =>
  waitFor(`the build Job of ${commit.slice(0, 12)}`, async () => {
    const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/commit=${commit}` });
    return jobs.items[0];
  });

/**
 * The commit Teal resolved is the one built though the branch has moved on:
 * commit B lands while A's Job runs, and the image tagged A holds A's file and
 * A's Dockerfile. The App resolves once (pollInterval 0), so the only fetch of
 * this repository after B is the build's.
 */
async function expectResolvedCommitBuilt(name: string, engine: 'buildkit' | 'kaniko'): Promise<void> {
  const tip = await createRepo(join(root, 'tip', `${name}.git`));
  const a = await tip.commit('A', { Dockerfile: versionDockerfile('A'), 'version.txt': 'A\n' });
  await createApp(name, { engine, url: tipServer.url(`${name}.git`), gitSecret: 'tip-git', pollInterval: '0s' });
  await buildJobOf(a);
  const fetchesBeforeB = tipServer.lsRemotes;
  const b = await tip.commit('B', { Dockerfile: versionDockerfile('B'), 'version.txt': 'B\n' });
  await expectReleased(name, a);
  // The build fetched the repository while B was main's tip.
  expect(tipServer.lsRemotes).toBeGreaterThan(fetchesBeforeB);
  expect(await tip.revParse('main')).toBe(b);
  const image = await readRegistryImage(registry.address, `${ns}/${name}`, a);
  expect(await image.readFile('/version.txt')).toBe('A\n');
  expect(image.config.config?.Labels?.['teal.test.version']).toBe('A');
}

/** Names the App's build Jobs. */
async function buildJobsOf(app: string): Promise<string[]> {
  const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/app=${app}` });
  return jobs.items.map((j) => j.metadata?.name ?? '');
}

describe('real builds through the build Job', () => {
  it('builds the commit with BuildKit, pushes it, and deploys the digest the registry gives for its tag', async () => {
    await expectRealRelease('hello', 'buildkit', await repo.revParse('HEAD'));
  });

  it('does the same with kaniko, inside a runc container', async () => {
    await expectRealRelease('hello-kaniko', 'kaniko', await kanikoRepo.revParse('HEAD'));
  });

  it('kubectl teal logs prints the real build log, with the Dockerfile steps the engine ran', async () => {
    for (const name of ['hello', 'hello-kaniko']) {
      const commit = firstBuilds.get(name) ?? '';
      const out = await tealIn(ns, 'logs', name, '--commit', commit);
      console.error(`kubectl teal logs ${name}:\n${out.stdout}\n${out.stderr}`);
      expect(out).toMatchObject({ code: 0 });
      expect(out.stdout).toContain('RUN grep -q hello /hello.txt');
      expect(out.stdout).toContain(`${registry.address}/${ns}/${name}:${commit}`);
    }
  });

  it("fails on a RUN that fails: Job Failed, App Degraded with the build's error line, active untouched", async () => {
    const before = await getApp(ns, 'hello');
    const broken = await repo.commit('a RUN that fails', {
      Dockerfile: `FROM ${registry.address}/base/busybox:1\nRUN echo about to fail && exit 3\n`,
    });
    const failed = await waitForApp(
      ns,
      'hello',
      'the broken build to fail',
      (a) => phase('Degraded')(a) && a.status?.build?.commit === broken,
    );
    expect(failed.status?.build?.phase).toBe('Failed');
    expect(failed.status?.conditions?.find((c) => c.type === 'BuildSucceeded')).toMatchObject({
      status: 'False',
      reason: 'BuildFailed',
    });
    expect(failed.status?.message).toMatch(/did not complete successfully: exit code: 3/);
    expect(failed.status?.active).toEqual(before.status?.active);
    expect(await selectorHash(ns, 'hello')).toBe(before.status?.active?.podTemplateHash);
  });

  it('builds the commit Teal resolved, not the branch tip at build time (BuildKit)', async () => {
    await expectResolvedCommitBuilt('tip', 'buildkit');
  });

  it('builds the commit Teal resolved, not the branch tip at build time (kaniko)', async () => {
    await expectResolvedCommitBuilt('tip-kaniko', 'kaniko');
  });

  it("builds source.git.path with that directory's Dockerfile and context, with both engines", async () => {
    const mono = await createRepo(join(root, 'public', 'mono.git'));
    const head = await mono.commit('an app in app/, and a root Dockerfile that must not be built', {
      Dockerfile: `FROM ${registry.address}/base/busybox:1\nRUN echo not this Dockerfile && exit 1\n`,
      'version.txt': 'root\n',
      'app/Dockerfile': versionDockerfile('app'),
      'app/version.txt': 'app\n',
    });
    await Promise.all(
      (['buildkit', 'kaniko'] as const).map(async (engine) => {
        const name = `mono-${engine}`;
        await createApp(name, { engine, url: server.url('mono.git'), gitSecret: 'hello-git', path: 'app' });
        await expectReleased(name, head);
        const image = await readRegistryImage(registry.address, `${ns}/${name}`, head);
        expect(await image.readFile('/version.txt')).toBe('app\n');
        expect(image.config.config?.Labels?.['teal.test.version']).toBe('app');
      }),
    );
  });

  it('a private repository: a wrong token is refused in the source condition; the right one builds, pushes with the push Secret and deploys (BuildKit)', async () => {
    const priv = await createRepo(join(root, 'private', 'private.git'));
    const head = await priv.commit('a private app', { Dockerfile: versionDockerfile('private'), 'version.txt': 'p\n' });
    await tokenSecret('private-wrong', WRONG);
    await createApp('private', {
      engine: 'buildkit',
      url: privateServer.url('private.git'),
      gitSecret: 'private-wrong',
      pushTo: pushRegistry,
      pushSecret: 'push',
    });
    const refused = await waitForApp(
      ns,
      'private',
      'the wrong token refused',
      (a) => conditionOf(a, 'SourceResolved')?.status === 'False',
    );
    console.error(
      `wrong token: ${JSON.stringify(conditionOf(refused, 'SourceResolved'))}; message ${refused.status?.message}`,
    );
    expect(conditionOf(refused, 'SourceResolved')).toMatchObject({ reason: 'AuthenticationFailed' });
    expect(conditionOf(refused, 'SourceResolved')?.message).toMatch(/authentication failed/i);
    expect(JSON.stringify(refused.status)).not.toContain(WRONG);
    expect(await buildJobsOf('private')).toEqual([]);

    await tokenSecret('private-wrong', TOKEN);
    await expectReleased('private', head, pushRegistry);
    const image = await readRegistryImage(pushRegistry.address, `${ns}/private`, head, PUSH_AUTH);
    expect(await image.readFile('/version.txt')).toBe('p\n');
  });

  it('a private repository with a token and an authenticated push, with kaniko', async () => {
    const head = await git(join(root, 'private', 'private.git'), 'rev-parse', 'HEAD');
    await createApp('private-kaniko', {
      engine: 'kaniko',
      url: privateServer.url('private.git'),
      gitSecret: 'private-git',
      pushTo: pushRegistry,
      pushSecret: 'push',
    });
    await expectReleased('private-kaniko', head, pushRegistry);
  });

  it("a wrong registry password fails the build, and the App's message says the registry refused the push", async () => {
    const pub = await createRepo(join(root, 'public', 'push.git'));
    const head = await pub.commit('an app', { Dockerfile: versionDockerfile('push'), 'version.txt': 'x\n' });
    await Promise.all(
      (['buildkit', 'kaniko'] as const).map(async (engine) => {
        const name = `push-${engine}`;
        await createApp(name, {
          engine,
          url: server.url('push.git'),
          gitSecret: 'hello-git',
          pushTo: pushRegistry,
          pushSecret: 'push-wrong',
        });
        const failed = await waitForApp(
          ns,
          name,
          'the push to be refused',
          (a) => phase('Degraded')(a) && a.status?.build?.phase === 'Failed',
        );
        console.error(`wrong registry password, ${engine}: ${failed.status?.message}`);
        expect(failed.status?.build?.commit).toBe(head);
        // The registry's own word for it, and which registry: not a git or Dockerfile problem.
        expect(failed.status?.message).toMatch(/unauthorized/i);
        expect(failed.status?.message).toContain(pushRegistry.address);
        expect(failed.status?.message).not.toContain(WRONG);
        await expect(manifestDigest(pushRegistry.address, `${ns}/${name}`, head, PUSH_AUTH)).rejects.toThrow(/404/);
      }),
    );
  });
});
