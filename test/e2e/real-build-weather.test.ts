// The unmodified examples/weather-app built for real, as a user would release
// it: its files in a git repository served over HTTPS, its app.yaml applied,
// the build Job's own BuildKit (then kaniko) container run by the build runner
// with the test registry standing in for Docker Hub (its python:3.12-slim is a
// debootstrapped stand-in, test/cluster/base-images.ts), and the image pulled
// back from the registry and run with runc as its non-root user: it answers
// /healthz.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AppInput } from '../../src/app/schema.ts';
import { pushPythonBase } from '../cluster/base-images.ts';
import { type BuildRunner, startBuildRunner } from '../cluster/build-runner.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import { pullImage, runImage } from '../cluster/image-run.ts';
import { manifestDigest, type Registry, startRegistry } from '../cluster/registry.ts';
import { createApp, patchSpec, phase, type StoredApp, waitForApp } from '../support/apps.ts';
import { tealIn } from '../support/cli.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer } from '../support/git-server.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';

const run = promisify(execFile);
const { core, batch } = clients();
const EXAMPLE = join(dirname(fileURLToPath(import.meta.url)), '../../examples/weather-app');
/**
 * Cold, the toolchain compiles BuildKit and kaniko and the python base runs
 * debootstrap (base-images.test.ts): a bound against a hang only.
 */
const SETUP_MS = 60 * 60_000;

let ns: string;
let removeNs: () => Promise<void>;
let registry: Registry;
let runner: BuildRunner;
let operator: Operator;
let root: string;
let server: GitHttpsServer;
let head: string;

beforeAll(async () => {
  const toolsStart = Date.now();
  const { bin: toolsDir } = await ensureBuildTools();
  console.error(`weather: toolchain ready in ${Date.now() - toolsStart} ms`);
  ({ name: ns, remove: removeNs } = await createNamespace('real-build-weather'));
  registry = await startRegistry();
  const baseStart = Date.now();
  // As Docker Hub's official image is named; the runner's mirror serves it for docker.io.
  await pushPythonBase(registry, 'library/python', '3.12-slim', (line) => console.error(line));
  console.error(`weather: python base pushed in ${Date.now() - baseStart} ms`);
  root = await mkdtemp(join(tmpdir(), 'teal-real-build-weather-'));
  // A URL ending in .git: BuildKit takes any other https:// context for a tarball.
  const repo = await createRepo(join(root, 'weather-app.git'));
  head = await repo.commit('the weather-app example', await exampleFiles());
  server = await startGitHttpsServer({ root });
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'weather-git' }, data: { 'ca.crt': Buffer.from(server.caPem).toString('base64') } },
  });
  runner = startBuildRunner({
    kc: kubeConfig(),
    namespace: ns,
    toolsDir,
    extraCaPem: server.caPem,
    dockerHubMirror: registry.address,
    log: (line) => console.error(`build-runner: ${line}`),
  });
  operator = await startOperator({ namespace: ns });
}, SETUP_MS);

afterAll(async () => {
  await operator?.stop();
  await runner?.stop();
  await server?.stop();
  await registry?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Every file of the example, as it is in this repository. */
async function exampleFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(EXAMPLE)) files[name] = await readFile(join(EXAMPLE, name), 'utf8');
  return files;
}

/**
 * examples/weather-app/app.yaml as it is, but for three fields a user points at
 * their own infrastructure: the source URL (the test's git server), the image
 * (the test registry), and the secretRef the file mentions, whose Secret holds
 * only the git server's throwaway CA (ca.crt) for the operator to trust it.
 */
async function weatherApp(): Promise<AppInput> {
  const app = parse(await readFile(join(EXAMPLE, 'app.yaml'), 'utf8')) as AppInput;
  const git = app.spec.source?.git;
  if (!git || !app.spec.build) throw new Error('app.yaml has no git source or build');
  git.url = server.url('weather-app.git');
  git.secretRef = { name: 'weather-git' };
  app.spec.build.image = `${registry.address}/${ns}/weather`;
  return app;
}

/** Pulls image@digest from the registry and runs it with runc: GET /healthz answers {"status": "ok"}. */
async function expectAnswersHealthz(digest: string, label: string): Promise<void> {
  const image = await pullImage(registry, `${ns}/weather`, digest, join(root, `image-${label}`));
  // The Dockerfile's USER: the image runs as 10001, not root.
  expect(image.config.User).toBe('10001:10001');
  expect(Object.keys(image.config.ExposedPorts ?? {})).toEqual(['8080/tcp']);
  // app.py reads HOST and PORT (default 0.0.0.0:8080): on the host's network, a
  // free loopback port keeps it off other interfaces and clear of other tests.
  const port = await freePort();
  const id = `teal-weather-${label}-${process.pid}`;
  const container = await runImage(image, id, {
    HOST: '127.0.0.1',
    PORT: String(port),
  });
  try {
    const body = await waitFor(
      `the ${label} image to answer /healthz`,
      async () => {
        if (container.process.exitCode !== null) throw new Error(`the app exited:\n${container.logs()}`);
        const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        return res?.ok ? ((await res.json()) as unknown) : undefined;
      },
      {},
    );
    expect(body).toEqual({ status: 'ok' });
    // The server is the container's first process: its real and effective uid are the image's user.
    const state = JSON.parse((await run('runc', ['state', id])).stdout) as { pid: number };
    const status = await readFile(`/proc/${state.pid}/status`, 'utf8');
    expect(status).toMatch(/^Uid:\t10001\t10001\t/m);
  } finally {
    await container.stop();
  }
}

async function reportBuild(app: StoredApp, engine: string): Promise<void> {
  const jobName = app.status?.build?.job ?? '';
  const build = runner.finished.find((b) => b.pod.startsWith(`${jobName}-`));
  expect(build?.exitCode).toBe(0);
  const job = await batch.readNamespacedJob({ name: jobName, namespace: ns });
  const jobSeconds = (Number(job.status?.completionTime) - Number(job.status?.startTime)) / 1000;
  console.error(`weather: one real ${engine} build: ${build?.durationMs} ms in the container, Job ${jobSeconds} s`);
}

describe('the weather-app example built for real', () => {
  let buildkitDigest: string;

  it('builds with BuildKit from the Docker Hub mirror, deploys the registry digest, and answers /healthz', async () => {
    await createApp(ns, await weatherApp());
    const app = await waitForApp(ns, 'weather', 'first real BuildKit build released', phase('Healthy'));
    expect(app.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
    buildkitDigest = await manifestDigest(registry.address, `${ns}/weather`, head);
    expect(app.status?.active?.image).toBe(`${registry.address}/${ns}/weather@${buildkitDigest}`);
    await reportBuild(app, 'buildkit');
    await expectAnswersHealthz(buildkitDigest, 'buildkit');
  });

  it('builds the same commit again with kaniko into preview, passes its check, is promoted, and answers /healthz', async () => {
    const app = await weatherApp();
    await patchSpec(ns, 'weather', { build: { ...app.spec.build, engine: 'kaniko' } });
    const paused = await waitForApp(
      ns,
      'weather',
      'the kaniko build in preview, its check passed',
      (a) => phase('Paused')(a) && a.status?.prePromotionAnalysis?.phase === 'Successful',
    );
    expect(paused.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
    const kanikoDigest = await manifestDigest(registry.address, `${ns}/weather`, head);
    expect(kanikoDigest).not.toBe(buildkitDigest);
    expect(paused.status?.preview?.image).toBe(`${registry.address}/${ns}/weather@${kanikoDigest}`);
    await reportBuild(paused, 'kaniko');
    await expectAnswersHealthz(kanikoDigest, 'kaniko');

    const promote = await tealIn(ns, 'promote', 'weather');
    expect(promote.code, promote.stderr).toBe(0);
    const promoted = await waitForApp(
      ns,
      'weather',
      'the kaniko build promoted',
      (a) => phase('Healthy')(a) && a.status?.active?.image === paused.status?.preview?.image,
    );
    expect(promoted.status?.active?.revision).toBe(2);
    const get = await tealIn(ns, 'get', 'weather');
    console.error(`weather: kubectl teal promote weather\n${promote.stdout}kubectl teal get weather\n${get.stdout}`);
  });
});
