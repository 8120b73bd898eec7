// --build-namespace: build Jobs run in a namespace of their own, so the App's
// namespace can enforce Pod Security "restricted" (which refuses BuildKit's
// Unconfined seccomp and AppArmor). Real control plane, KWOK's simulated build
// (test/cluster/stages.yaml), a real git server over HTTPS with a token.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { buildJobName } from '../../src/build/job.ts';
import { readApp } from '../../src/cli/app-object.ts';
import { Session } from '../../src/cli/kube.ts';
import { restReader } from '../../src/cli/rest.ts';
import { phase, waitForApp } from '../support/apps.ts';
import { startTeal, tealIn } from '../support/cli.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { bind, serviceAccount } from '../support/users.ts';

const { core, batch, custom } = clients();
const TOKEN = 's3cret-build-ns-token';
let ns: string;
let buildNs: string;
const removals: (() => Promise<void>)[] = [];
let operator: Operator | undefined;
let root: string;
let server: GitHttpsServer;
let repo: TestRepo;

const b64 = (s: string) => Buffer.from(s).toString('base64');
const start = () => startOperator({ namespace: ns, extraArgs: ['--build-namespace', buildNs] });

beforeAll(async () => {
  const app = await createNamespace('buildns-app');
  const builds = await createNamespace('buildns-builds');
  ns = app.name;
  buildNs = builds.name;
  removals.push(app.remove, builds.remove);
  // The App namespace as a platform team leaves it: Pod Security "restricted", enforced.
  await core.patchNamespace(
    { name: ns, body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  root = await mkdtemp(join(tmpdir(), 'teal-buildns-'));
  repo = await createRepo(join(root, 'weather'));
  await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
  server = await startGitHttpsServer({ root, username: 'teal', password: TOKEN });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'weather-git' },
      data: { username: b64('teal'), password: b64(TOKEN), 'ca.crt': b64(server.caPem) },
    },
  });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'weather-push' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'registry.example.com': { auth: b64('u:p') } } })) },
    },
  });
  operator = await start();
});

afterAll(async () => {
  await operator?.stop();
  await server?.stop();
  for (const remove of removals) await remove();
  if (root) await rm(root, { recursive: true, force: true });
});

/** An App whose pods pass Pod Security "restricted". */
function gitApp(name: string): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name, namespace: ns },
    spec: {
      source: {
        git: { url: server.url('weather'), ref: 'main', secretRef: { name: 'weather-git' }, pollInterval: '0' },
      },
      build: { image: 'registry.example.com/team/weather', pushSecretRef: { name: 'weather-push' } },
      replicas: 1,
      template: {
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'app',
              ports: [{ containerPort: 8080 }],
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
      strategy: { blueGreen: { autoPromotionEnabled: true } },
    },
  };
}

const create = (body: AppInput) =>
  custom.createNamespacedCustomObject({ group: 'teal.dev', version: 'v1alpha1', namespace: ns, plural: 'apps', body });
const deleteApp = (name: string) =>
  custom.deleteNamespacedCustomObject({ group: 'teal.dev', version: 'v1alpha1', namespace: ns, plural: 'apps', name });

/** The digest the KWOK build stage reports: sha256 of the Job name. */
const simulatedDigest = (job: string) => `sha256:${createHash('sha256').update(job).digest('hex')}`;

const jobsOf = async (namespace: string, app: string) =>
  (await batch.listNamespacedJob({ namespace, labelSelector: `teal.dev/app=${app},teal.dev/build` })).items;
const secretsIn = async (namespace: string) =>
  (await core.listNamespacedSecret({ namespace, labelSelector: 'teal.dev/build-secret' })).items;

describe('--build-namespace', () => {
  it('a push builds in the build namespace with the Secrets copied there, and the restricted App namespace releases', async () => {
    await create(gitApp('weather'));
    const app = await waitForApp(ns, 'weather', 'first release', phase('Healthy'));
    const job = app.status?.build?.job ?? '';
    expect(app.status?.build).toMatchObject({ phase: 'Succeeded', namespace: buildNs });
    expect(app.status?.active?.image).toBe(`registry.example.com/team/weather@${simulatedDigest(job)}`);
    expect(await jobsOf(ns, 'weather')).toEqual([]);
    const [built] = await jobsOf(buildNs, 'weather');
    expect(built?.metadata?.name).toBe(job);
    expect(built?.metadata?.ownerReferences ?? []).toEqual([]);
    expect(built?.metadata?.labels).toMatchObject({
      'teal.dev/app-namespace': ns,
      'teal.dev/app-uid': app.metadata.uid,
    });
    // The copies: owned by the Job, named after it, with the source's data; none in the App namespace.
    const copies = (await secretsIn(buildNs)).filter((s) => s.metadata?.labels?.['teal.dev/build-secret'] === job);
    expect(copies.map((s) => s.metadata?.name).sort()).toEqual([`${job}-git`, `${job}-push`]);
    for (const copy of copies) {
      expect(copy.metadata?.ownerReferences).toMatchObject([{ kind: 'Job', name: job, uid: built?.metadata?.uid }]);
    }
    expect(copies.find((s) => s.metadata?.name === `${job}-git`)?.data?.password).toBe(b64(TOKEN));
    expect(await secretsIn(ns)).toEqual([]);
    // Nothing secret in the App's status or the operator's log.
    expect(JSON.stringify(app.status)).not.toContain(TOKEN);
    expect(operator?.logs()).not.toContain(TOKEN);
  });

  it('kubectl teal logs and get find the build in the build namespace', async () => {
    const app = await waitForApp(ns, 'weather', 'released', phase('Healthy'));
    const out = await tealIn(ns, 'logs', 'weather');
    expect(out.stderr).not.toMatch(/is gone|not found/i);
    expect(out.stdout).toContain(simulatedDigest(app.status?.build?.job ?? ''));
    // get's two readers (rest.ts, and client-node's Session) find the App's Job there.
    const options = { kubeconfig: inject('kubeconfig'), namespace: ns };
    const fast = await restReader(options);
    if (!fast) throw new Error('rest.ts does not read the test kubeconfig');
    const raw = readApp(app);
    try {
      for (const reader of [fast, new Session(options)]) {
        const jobs = await reader.jobs(raw);
        expect(jobs.map((j) => `${j.metadata?.namespace}/${j.metadata?.name}`)).toContain(
          `${buildNs}/${app.status?.build?.job}`,
        );
        const pods = await reader.buildPods(raw);
        expect(pods.map((p) => `${p.metadata?.namespace}/${p.metadata?.labels?.['job-name']}`)).toContain(
          `${buildNs}/${app.status?.build?.job}`,
        );
      }
    } finally {
      fast.close();
    }
  });

  it('get --watch shows the build pod in the build namespace, and draws again without it once it goes', async () => {
    await create(gitApp('watched'));
    const app = await waitForApp(ns, 'watched', 'first release', phase('Healthy'));
    const job = app.status?.build?.job ?? '';
    const [pod] = (await core.listNamespacedPod({ namespace: buildNs, labelSelector: `job-name=${job}` })).items;
    const podName = pod?.metadata?.name ?? '';
    expect(podName).not.toBe('');
    // No periodic redraw: only the watches draw again.
    const watching = startTeal(['get', 'watched', '--watch', '-n', ns], inject('kubeconfig'), 'bundle', {
      TEAL_REDRAW_SECONDS: '0',
    });
    // The draws printed since `from`, each from its Name: line; one that reached its revisions has
    // its build Job and pods whole (the tree draws them first).
    const draws = (from: number) =>
      watching
        .stdout()
        .slice(from)
        .split(/^(?=Name:)/m)
        .filter((d) => d.includes('# revision:'));
    try {
      await waitFor('the first draw, with the build pod under its Job', async () => {
        const [first] = draws(0);
        return first?.includes(`⚙ ${job}`) && first.includes(podName) ? true : undefined;
      });
      const drawn = watching.stdout().length;
      await core.deleteNamespacedPod({ name: podName, namespace: buildNs, gracePeriodSeconds: 0 });
      await waitFor('a draw without the deleted build pod', async () =>
        draws(drawn).some((d) => d.includes(`⚙ ${job}`) && !d.includes(podName)) ? true : undefined,
      );
    } finally {
      expect(await watching.interrupt()).toBe(0);
      await deleteApp('watched');
    }
    expect(watching.stderr()).toBe('');
  });

  it("the dashboard's build log (the HTTP API) finds the build there for a developer with no right in it", async () => {
    const token = await serviceAccount(ns, 'dev', ['get', 'list']);
    await clients().rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'pod-logs' }, rules: [{ apiGroups: [''], resources: ['pods/log'], verbs: ['get'] }] },
    });
    await bind(ns, 'dev', 'Role', 'pod-logs');
    const res = await fetch(`http://127.0.0.1:${operator?.healthPort}/api/v1/namespaces/${ns}/apps/weather/build/log`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    // The stream ends once the build's outcome is sent.
    const body = await res.text();
    expect(body).not.toContain('the build Job is gone');
    expect(body).toMatch(/"outcome":"Succeeded"/);
  });

  it('deleting the App deletes its build Jobs there, and with them the Secret copies', async () => {
    const job = (await jobsOf(buildNs, 'weather'))[0]?.metadata?.name ?? '';
    expect(job).not.toBe('');
    await deleteApp('weather');
    await waitFor('the build Jobs of the deleted App to go', async () =>
      (await jobsOf(buildNs, 'weather')).length === 0 ? true : undefined,
    );
    await waitFor('the Secret copies to go with their Job', async () =>
      (await secretsIn(buildNs)).some((s) => s.metadata?.labels?.['teal.dev/build-secret'] === job) ? undefined : true,
    );
  });

  it('kill -9 while a Job waits for its copies: the next operator copies, starts it and releases', async () => {
    // A Secret of the copy's name that is not the Job's keeps the Job suspended (Teal does not use it).
    const head = await repo.revParse('HEAD');
    const input = gitApp('killed');
    const validation = validateApp({ ...input, metadata: { ...input.metadata, uid: 'x' } });
    if (!validation.ok) throw new Error(validation.errors.join('\n'));
    const job = buildJobName(validation.app, head, {}, buildNs);
    await core.createNamespacedSecret({
      namespace: buildNs,
      body: { metadata: { name: `${job}-git` }, data: { password: b64('not the copy') } },
    });
    await create(input);
    await waitFor('the Job to be made and held suspended', async () => {
      const [made] = await jobsOf(buildNs, 'killed');
      return made?.spec?.suspend === true && operator?.logs().includes(`${job}-git exists`) ? true : undefined;
    });
    await operator?.kill();
    await core.deleteNamespacedSecret({ namespace: buildNs, name: `${job}-git` });
    operator = await start();
    const app = await waitForApp(ns, 'killed', 'release after the restart', phase('Healthy'));
    expect(app.status?.build).toMatchObject({ job, phase: 'Succeeded', namespace: buildNs });
  });

  it('kill -9, then the App deleted while no operator runs: the next one deletes its Jobs', async () => {
    expect((await jobsOf(buildNs, 'killed')).length).toBeGreaterThan(0);
    await operator?.kill();
    await deleteApp('killed');
    operator = await start();
    await waitFor('the Jobs of the App deleted while down to go', async () =>
      (await jobsOf(buildNs, 'killed')).length === 0 ? true : undefined,
    );
  });
});
