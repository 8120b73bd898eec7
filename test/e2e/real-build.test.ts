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
import { manifestDigest, type Registry, startRegistry } from '../cluster/registry.ts';
import { getApp, phase, selectorHash, waitForApp } from '../support/apps.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, kubeConfig } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const { core, batch, custom } = clients();
/** A cold toolchain build compiles BuildKit and kaniko: a bound against a hang only. */
const TOOLCHAIN_MS = 40 * 60_000;
let ns: string;
let removeNs: () => Promise<void>;
let registry: Registry;
let runner: BuildRunner;
let operator: Operator;
let root: string;
let server: GitHttpsServer;
let repo: TestRepo;
let kanikoRepo: TestRepo;

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools();
  ({ name: ns, remove: removeNs } = await createNamespace('real-build'));
  registry = await startRegistry();
  await pushBusyboxBase(registry, 'base/busybox', '1');
  root = await mkdtemp(join(tmpdir(), 'teal-real-build-git-'));
  // URLs ending in .git: BuildKit takes an https:// context without it (or a
  // known host) for a tarball to download, not a repository to clone.
  const dockerfile = `FROM ${registry.address}/base/busybox:1\nCOPY hello.txt /hello.txt\nRUN grep -q hello /hello.txt\n`;
  repo = await createRepo(join(root, 'hello.git'));
  await repo.commit('a Dockerfile on the busybox base', { Dockerfile: dockerfile, 'hello.txt': 'hello\n' });
  kanikoRepo = await createRepo(join(root, 'hello-kaniko.git'));
  await kanikoRepo.commit('a Dockerfile on the busybox base', { Dockerfile: dockerfile, 'hello.txt': 'hello\n' });
  server = await startGitHttpsServer({ root });
  // The operator trusts the git server's CA through the Secret; the build
  // image, as a company's own would, through its CA bundle.
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'hello-git' }, data: { 'ca.crt': Buffer.from(server.caPem).toString('base64') } },
  });
  runner = startBuildRunner({
    kc: kubeConfig(),
    namespace: ns,
    toolsDir,
    extraCaPem: server.caPem,
    log: (line) => console.error(`build-runner: ${line}`),
  });
  operator = await startOperator({ namespace: ns });
}, TOOLCHAIN_MS);

afterAll(async () => {
  await operator?.stop();
  await runner?.stop();
  await server?.stop();
  await registry?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

async function createApp(name: string, engine: 'buildkit' | 'kaniko'): Promise<void> {
  const body: AppInput = {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: { url: server.url(`${name}.git`), ref: 'main', secretRef: { name: 'hello-git' }, pollInterval: '2s' },
      },
      build: { engine, image: `${registry.address}/${ns}/${name}` },
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

/** The first release of a new App built for real: its image is the registry's digest for <repository>:<commit>. */
async function expectRealRelease(name: string, engine: 'buildkit' | 'kaniko', head: string): Promise<void> {
  await createApp(name, engine);
  const app = await waitForApp(ns, name, `first real ${engine} build released`, phase('Healthy'));
  expect(app.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
  const digest = await manifestDigest(registry.address, `${ns}/${name}`, head);
  expect(app.status?.active?.image).toBe(`${registry.address}/${ns}/${name}@${digest}`);
  const jobName = app.status?.build?.job ?? '';
  const build = runner.finished.find((b) => b.pod.startsWith(`${jobName}-`));
  expect(build?.exitCode).toBe(0);
  expect(build?.message.trim()).toBe(digest);
  const job = await batch.readNamespacedJob({ name: jobName, namespace: ns });
  const jobSeconds = (Number(job.status?.completionTime) - Number(job.status?.startTime)) / 1000;
  console.error(
    `one real ${engine} build: ${build?.durationMs} ms in the container, Job ${jobSeconds} s start to completion`,
  );
}

describe('real builds through the build Job', () => {
  it('builds the commit with BuildKit, pushes it, and deploys the digest the registry gives for its tag', async () => {
    await expectRealRelease('hello', 'buildkit', await repo.revParse('HEAD'));
  });

  it('does the same with kaniko, inside a runc container', async () => {
    await expectRealRelease('hello-kaniko', 'kaniko', await kanikoRepo.revParse('HEAD'));
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
});
