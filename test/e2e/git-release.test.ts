// From a git push to an active release: real repositories served over HTTPS
// with a token, a signed GitHub-shaped webhook, a build Job simulated by KWOK,
// the preview, the promote, and the new digest serving.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANN_REFRESH } from '../../src/app/intents.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { signSha256 } from '../../src/app/signature.ts';
import { getApp, intent, patchSpec, phase, selectorHash, waitForApp } from '../support/apps.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const { core, batch, custom } = clients();
const HOOK_SECRET = 'a webhook secret for e2e';
const DEFAULT_REGISTRY = 'registry.local:5000/apps';
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator;
let root: string;
let server: GitHttpsServer;
let repo: TestRepo;

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('git'));
  root = await mkdtemp(join(tmpdir(), 'teal-git-'));
  repo = await createRepo(join(root, 'weather'));
  await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
  server = await startGitHttpsServer({ root, username: 'teal', password: 's3cret-token' });
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'weather-git' },
      data: { username: b64('teal'), password: b64('s3cret-token'), 'ca.crt': b64(server.caPem) },
    },
  });
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: 'weather-hook' }, data: { token: b64(HOOK_SECRET) } },
  });
  // Apps here name their build.image, except the one that tests the default registry.
  operator = await startOperator({ namespace: ns, extraArgs: ['--default-registry', DEFAULT_REGISTRY] });
});

afterAll(async () => {
  await operator?.stop();
  await server?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

function gitApp(name: string, pollInterval: string, extra: { dockerfile?: string } = {}): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: {
          url: server.url('weather'),
          ref: 'main',
          secretRef: { name: 'weather-git' },
          webhookSecretRef: { name: 'weather-hook' },
          pollInterval,
        },
      },
      build: {
        image: 'registry.example.com/team/weather',
        ...(extra.dockerfile ? { dockerfile: extra.dockerfile } : {}),
      },
      replicas: 2,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      strategy: { blueGreen: { autoPromotionEnabled: false, previewReplicaCount: 1 } },
    },
  };
}

/** The weather App's refresh annotation, which a matched webhook delivery writes. */
const refreshRequest = async () =>
  ((await getApp(ns, 'weather')).metadata as { annotations?: Record<string, string> }).annotations?.[ANN_REFRESH];

const create = (body: AppInput) =>
  custom.createNamespacedCustomObject({ group: 'teal.dev', version: 'v1alpha1', namespace: ns, plural: 'apps', body });

/** The digest the KWOK build stage reports: sha256 of the Job name. */
const simulatedDigest = (job: string) => `sha256:${createHash('sha256').update(job).digest('hex')}`;

function githubPush(commit: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    ref: 'refs/heads/main',
    before: '0'.repeat(40),
    after: commit,
    repository: { full_name: 'team/weather', clone_url: server.url('weather'), html_url: server.url('weather') },
    head_commit: { id: commit, message: 'change' },
  });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'push',
      'x-github-delivery': `e2e-${commit}`,
      'x-hub-signature-256': signSha256(Buffer.from(body), Buffer.from(HOOK_SECRET)),
    },
  };
}

describe('git push to release', () => {
  it('builds the first commit and releases it, deploying by digest', async () => {
    await create(gitApp('weather', '0'));
    const app = await waitForApp(ns, 'weather', 'first release', phase('Healthy'));
    const head = await repo.revParse('HEAD');
    expect(app.status?.source).toMatchObject({ commit: head, ref: 'refs/heads/main', revision: `main@sha1:${head}` });
    const job = app.status?.build?.job ?? '';
    expect(app.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
    expect(app.status?.active?.image).toBe(`registry.example.com/team/weather@${simulatedDigest(job)}`);
    expect(app.status?.conditions?.find((c) => c.type === 'SourceResolved')?.status).toBe('True');
    expect(app.status?.conditions?.find((c) => c.type === 'BuildSucceeded')?.status).toBe('True');
    // Credentials went in a header, never in the URL.
    expect(server.authorizations.every((a) => a.startsWith('Basic '))).toBe(true);
  });

  it('a signed push webhook triggers the build of the new commit; promote makes its digest active', async () => {
    const before = await getApp(ns, 'weather');
    const c2 = await repo.commit('new forecast', { 'app.py': 'print("sunny")\n' });
    const push = githubPush(c2);
    const sent = performance.now();
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/github`, {
      method: 'POST',
      headers: push.headers,
      body: push.body,
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ matched: [`${ns}/weather`] });
    const job = await waitFor(
      'the build Job of the pushed commit',
      async () => (await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/commit=${c2}` })).items[0],
      { intervalMs: 20 },
    );
    const webhookToJobMs = performance.now() - sent;

    const preview = await waitForApp(
      ns,
      'weather',
      'preview of the new build',
      (a) => phase('Paused')(a) && a.status?.preview !== undefined,
    );
    const built = Date.parse(preview.status?.build?.finishedAt ?? '');
    const available = Date.parse(preview.status?.preview?.availableAt ?? '');
    expect(preview.status?.preview?.image).toBe(
      `registry.example.com/team/weather@${simulatedDigest(job.metadata?.name ?? '')}`,
    );
    expect(await selectorHash(ns, 'weather')).toBe(before.status?.active?.podTemplateHash);

    await intent(ns, 'weather', 'promote');
    const done = await waitForApp(
      ns,
      'weather',
      'new commit active',
      (a) => phase('Healthy')(a) && a.status?.active?.commit === c2,
    );
    expect(done.status?.active?.image).toBe(preview.status?.preview?.image);
    expect(done.status?.source?.commit).toBe(c2);
    console.log(
      `webhook accepted -> build Job seen: ${webhookToJobMs.toFixed(0)} ms; build finished -> preview available: ${available - built} ms (second resolution)`,
    );

    // A replayed delivery changes nothing.
    const again = await fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/github`, {
      method: 'POST',
      headers: push.headers,
      body: push.body,
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });
  });

  it('refuses a push with a bad signature and touches nothing', async () => {
    const c3 = await repo.commit('unsigned', { 'x.txt': 'x' });
    const push = githubPush(c3);
    const refreshBefore = await refreshRequest();
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/github`, {
      method: 'POST',
      headers: { ...push.headers, 'x-hub-signature-256': signSha256(Buffer.from(push.body), Buffer.from('wrong')) },
      body: push.body,
    });
    expect(res.status).toBe(401);
    // A delivery reaches the App only through its refresh annotation, written before the
    // answer (pollInterval 0: nothing else resolves the ref). Unchanged, no build can follow.
    expect(await refreshRequest()).toBe(refreshBefore);
    const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/commit=${c3}` });
    expect(jobs.items).toEqual([]);
  });

  it('a push delivered to the standby replica is acted on by the leader', async () => {
    // Same namespace, same Lease: the operator started in beforeAll leads, this one waits.
    const standby = await startOperator({ namespace: ns, extraArgs: ['--default-registry', DEFAULT_REGISTRY] });
    try {
      const c5 = await repo.commit('via the standby', { 'standby.txt': 'x' });
      const push = githubPush(c5);
      const res = await fetch(`http://127.0.0.1:${standby.healthPort}/webhooks/github`, {
        method: 'POST',
        headers: push.headers,
        body: push.body,
      });
      expect(res.status).toBe(202);
      expect(await res.json()).toEqual({ matched: [`${ns}/weather`] });
      // pollInterval 0: only the delivery can have started this build.
      await waitFor(
        'the build Job of the commit pushed to the standby',
        async () => (await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/commit=${c5}` })).items[0],
      );
      expect(standby.logs()).not.toContain('became leader');
    } finally {
      await standby.stop();
    }
  });

  it('two Apps on one repository share one ls-remote per poll interval', async () => {
    const { name: pollNs, remove } = await createNamespace('git-poll');
    try {
      const b64 = (s: string) => Buffer.from(s).toString('base64');
      await core.createNamespacedSecret({
        namespace: pollNs,
        body: {
          metadata: { name: 'weather-git' },
          data: { username: b64('teal'), password: b64('s3cret-token'), 'ca.crt': b64(server.caPem) },
        },
      });
      const op = await startOperator({ namespace: pollNs });
      try {
        for (const name of ['one', 'two']) {
          const body = gitApp(name, '1s');
          await custom.createNamespacedCustomObject({
            group: 'teal.dev',
            version: 'v1alpha1',
            namespace: pollNs,
            plural: 'apps',
            body,
          });
        }
        for (const name of ['one', 'two']) await waitForApp(pollNs, name, 'released', phase('Healthy'));
        const start = server.lsRemotes;
        const t0 = Date.now();
        // Six polls, however long a busy machine takes for them; unshared, they would
        // come twice as often as the seconds that passed.
        await waitFor('six more ls-remote requests', async () => (server.lsRemotes - start >= 6 ? true : undefined));
        const seconds = (Date.now() - t0) / 1000;
        const calls = server.lsRemotes - start;
        console.log(`${calls} ls-remote requests in ${seconds.toFixed(1)} s for two Apps polling every 1 s`);
        expect(calls).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
      } finally {
        await op.stop();
      }
    } finally {
      await remove();
    }
  });

  it('a failed build leaves the active revision serving, Degraded with the log line', async () => {
    await create(gitApp('flaky', '0'));
    const first = await waitForApp(ns, 'flaky', 'first release', phase('Healthy'));
    await patchSpec(ns, 'flaky', {
      build: { image: 'registry.example.com/team/weather', dockerfile: 'fail.Dockerfile' },
    });
    const c4 = await repo.commit('breaks the build', { 'broken.txt': 'x' });
    const push = githubPush(c4);
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/github`, {
      method: 'POST',
      headers: { ...push.headers, 'x-github-delivery': `e2e-flaky-${c4}` },
      body: push.body,
    });
    expect(res.status).toBe(202);
    const failed = await waitForApp(
      ns,
      'flaky',
      'build failure',
      (a) => phase('Degraded')(a) && a.status?.build?.commit === c4,
    );
    expect(failed.status?.build?.phase).toBe('Failed');
    expect(failed.status?.conditions?.find((c) => c.type === 'BuildSucceeded')).toMatchObject({
      status: 'False',
      reason: 'BuildFailed',
    });
    expect(failed.status?.message).toMatch(/failed to solve/);
    expect(await selectorHash(ns, 'flaky')).toBe(first.status?.active?.podTemplateHash);
    expect(failed.status?.active?.revision).toBe(1);
  });

  it.each([
    ['an unknown ref', { ref: 'no-such-branch' }, 'RefNotFound'],
    ['bad credentials', { secretRef: { name: 'wrong-git' } }, 'AuthenticationFailed'],
  ])('reports %s as SourceResolved=False and builds nothing', async (_title, git, reason) => {
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    await core
      .createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name: 'wrong-git' },
          data: { username: b64('teal'), password: b64('nope'), 'ca.crt': b64(server.caPem) },
        },
      })
      .catch(() => {});
    const name = `src-${reason.toLowerCase()}`;
    const body = gitApp(name, '0');
    Object.assign(body.spec.source?.git ?? {}, git);
    await create(body);
    const app = await waitForApp(
      ns,
      name,
      reason,
      (a) => a.status?.conditions?.find((c) => c.type === 'SourceResolved')?.reason === reason,
    );
    const cond = app.status?.conditions?.find((c) => c.type === 'SourceResolved');
    expect(cond?.status).toBe('False');
    expect(cond?.message).not.toContain('nope');
    expect(app.status?.phase).toBe('Degraded');
    const jobs = await batch.listNamespacedJob({ namespace: ns, labelSelector: `teal.dev/app=${name}` });
    expect(jobs.items).toEqual([]);
  });

  it('an App with only its source pushes to <--default-registry>/<namespace>/<name> and releases by digest', async () => {
    const body = gitApp('unnamed', '0');
    delete body.spec.build;
    await create(body);
    const app = await waitForApp(ns, 'unnamed', 'first release', phase('Healthy'));
    const head = await repo.revParse('HEAD');
    const repository = `${DEFAULT_REGISTRY}/${ns}/unnamed`;
    const jobName = app.status?.build?.job ?? '';
    const job = await batch.readNamespacedJob({ namespace: ns, name: jobName });
    expect(job.metadata?.annotations?.['teal.dev/target-image']).toBe(`${repository}:${head}`);
    expect(app.status?.build).toMatchObject({ commit: head, phase: 'Succeeded' });
    expect(app.status?.active?.image?.startsWith(`${repository}@sha256:`)).toBe(true);
    expect(app.status?.active?.image).toBe(`${repository}@${simulatedDigest(jobName)}`);
    expect(app.status?.conditions?.find((c) => c.type === 'InvalidSpec')?.status).toBe('False');
  });
});
