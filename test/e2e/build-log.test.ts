// The dashboard's build log (issue #25 item 9) on the real control plane: a
// real BuildKit build (the build runner runs the build pod's own container;
// KWOK serves its log through a Logs object, test/cluster/build-runner), an
// operator as a child process whose every API request goes through a recorder
// (test/support/api-recorder.ts), and users who are ServiceAccounts with and
// without get pods/log. The build's RUN waits for the test to open a gate, so
// "while it runs" is a state the test holds, not a race it hopes to win.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { pushBusyboxBase } from '../cluster/base-images.ts';
import { type BuildRunner, startBuildRunner } from '../cluster/build-runner.ts';
import { ensureBuildTools } from '../cluster/build-tools.ts';
import { type Registry, startRegistry } from '../cluster/registry.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { getApp, phase, waitForApp } from '../support/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { tealIn } from '../support/cli.ts';
import { createRepo, type GitHttpsServer, startGitHttpsServer, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { bind, serviceAccount } from '../support/users.ts';

/** A cold toolchain build compiles BuildKit and kaniko: a bound against a hang only. */
const TOOLCHAIN_MS = 40 * 60_000;
const TOKEN_USER = 'teal-bot';
/** The git Secret's password, which the build echoes and the log must never show. */
const TOKEN = 'glpat-build-log-secret-0123456789';

const { core, rbac, batch, custom } = clients();
let ns: string;
let removeNs: () => Promise<void>;
let root: string;
let registry: Registry;
let git: GitHttpsServer;
let repo: TestRepo;
let runner: BuildRunner;
let recorder: ApiRecorder;
let operator: Operator;
let base: string;
let gate: Gate;
let browser: Browser | undefined;
let page: TestPage | undefined;
/** Where the screenshots go: docs/img to refresh the docs' (TEAL_SCREENSHOT_DIR=docs/img), else a temporary folder. */
const SHOTS = process.env.TEAL_SCREENSHOT_DIR;
/** A user with get and list on Apps and get pods/log; one with get and list on Apps only. */
let reader: string;
let noLogs: string;

/** Paths a build's RUN polls on 127.0.0.1: each answers 503 until opened. */
interface Gate {
  port: number;
  open(name: string): void;
  server: Server;
}

async function startGate(): Promise<Gate> {
  const opened = new Set<string>();
  const server = createServer((req, res) => {
    res.writeHead(opened.has(req.url?.slice(1) ?? '') ? 200 : 503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, open: (n) => opened.add(n), server };
}

/** A Dockerfile whose RUN says it started, echoes the git token, waits for its gate, then says it is released. */
const gatedDockerfile = (gateName: string) =>
  [
    `FROM ${registry.address}/base/busybox:1`,
    `RUN echo "build-log: started" && echo "the token is ${TOKEN}" && until wget -q -O /dev/null http://127.0.0.1:${gate.port}/${gateName}; do sleep 0.2; done && echo "build-log: released"`,
    '',
  ].join('\n');

const base64 = (text: string) => Buffer.from(text).toString('base64');
/** A line the RUN printed, as BuildKit's plain progress shows it (`#5 0.123 text`), not the RUN's own command line. */
const printed = (text: string) => new RegExp(`^#\\d+ [\\d.]+ ${text}$`);

beforeAll(async () => {
  const { bin: toolsDir } = await ensureBuildTools();
  ({ name: ns, remove: removeNs } = await createNamespace('real-build'));
  root = await mkdtemp(join(tmpdir(), 'teal-build-log-'));
  registry = await startRegistry();
  await pushBusyboxBase(registry, 'base/busybox', '1');
  gate = await startGate();
  git = await startGitHttpsServer({ root: join(root, 'git'), username: TOKEN_USER, password: TOKEN });
  repo = await createRepo(join(root, 'git', 'web.git'));
  await repo.commit('a build that waits for its gate', { Dockerfile: gatedDockerfile('first') });
  await core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: 'web-git' },
      data: { username: base64(TOKEN_USER), password: base64(TOKEN), 'ca.crt': base64(git.caPem) },
    },
  });
  runner = startBuildRunner({
    kc: clients().kc,
    namespace: ns,
    toolsDir,
    extraCaPem: git.caPem,
    log: (line) => console.error(`build-runner: ${line}`),
  });
  recorder = await startApiRecorder(root);
  reader = await serviceAccount(ns, 'reader', ['get', 'list']);
  await rbac.createNamespacedRole({
    namespace: ns,
    body: { metadata: { name: 'pod-logs' }, rules: [{ apiGroups: [''], resources: ['pods/log'], verbs: ['get'] }] },
  });
  await bind(ns, 'reader', 'Role', 'pod-logs');
  noLogs = await serviceAccount(ns, 'no-logs', ['get', 'list']);
  const ui = await bundleUi(join(root, 'ui'));
  operator = await startOperator({
    namespace: ns,
    kubeconfig: recorder.kubeconfig,
    extraArgs: ['--dashboard-dir', ui.outdir],
  });
  base = `http://127.0.0.1:${operator.healthPort}`;
}, TOOLCHAIN_MS);

afterAll(async () => {
  await page?.close();
  await browser?.close();
  await operator?.stop();
  await runner?.stop();
  await recorder?.stop();
  await git?.stop();
  await registry?.stop();
  gate?.server.close();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

async function createApp(name: string): Promise<void> {
  const body: AppInput = {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: {
        git: { url: git.url(`${name}.git`), ref: 'main', secretRef: { name: `${name}-git` }, pollInterval: '2s' },
      },
      build: { engine: 'buildkit', image: `${registry.address}/${ns}/${name}` },
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

interface SseEvent {
  event: string;
  id?: string;
  data: string;
}

/** An open SSE stream: its events so far, and whether it has ended. */
interface Stream {
  status: number;
  events: SseEvent[];
  ended: boolean;
  lines: () => string[];
  close: () => void;
}

/** GET path with the token, read as SSE in the background (a plain reader of the format, not the UI's). */
async function openStream(path: string, token: string, headers: Record<string, string> = {}): Promise<Stream> {
  const abort = new AbortController();
  const res = await fetch(`${base}${path}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    signal: abort.signal,
  });
  const stream: Stream = {
    status: res.status,
    events: [],
    ended: false,
    lines: () => stream.events.filter((e) => e.event === 'message').map((e) => e.data),
    close: () => abort.abort(),
  };
  if (res.status !== 200 || !res.body) {
    stream.events.push({ event: 'answer', data: await res.text() });
    stream.ended = true;
    return stream;
  }
  const body = res.body;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = { event: 'message', data: '' };
          for (const line of block.split('\n')) {
            const [field, ...rest] = line.split(': ');
            const value = rest.join(': ');
            if (field === 'event') event.event = value;
            else if (field === 'id') event.id = value;
            else if (field === 'data') event.data = value;
          }
          if (!block.startsWith(':')) stream.events.push(event);
        }
      }
    } catch {
      // closed by the test
    }
    stream.ended = true;
  })();
  return stream;
}

const logPath = (name: string, commit?: string) =>
  `/api/v1/namespaces/${ns}/apps/${name}/${commit ? `builds/${commit}` : 'build'}/log`;
const podLogPath = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/log$/;
const podLogRequests = () => recorder.requests.filter((r) => podLogPath.test(r.path));
const podReads = () => recorder.requests.filter((r) => r.method === 'GET' && /\/pods\/[^/]+$/.test(r.path));

/** How many processes of this machine have the marker in their command line (read from /proc). */
async function processesWith(marker: string): Promise<number> {
  let found = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(marker)) found++;
  }
  return found;
}

/** The build Job of the App's first build, running: its pod's container started and not ended. */
async function runningBuild(name: string): Promise<string> {
  return waitFor(`the build of ${name} running`, async () => {
    const job = (await getApp(ns, name)).status?.build?.job;
    if (!job) return undefined;
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `batch.kubernetes.io/job-name=${job}` });
    return pods.items.some((p) => p.status?.phase === 'Running') ? job : undefined;
  });
}

describe('build logs in the dashboard', () => {
  it('a user without get pods/log gets 403 naming that right, and the operator reads no pod and no log for it', async () => {
    await createApp('web');
    await runningBuild('web');
    const before = { logs: podLogRequests().length, pods: podReads().length };
    const forbidden = await openStream(logPath('web'), noLogs);
    expect(forbidden.status).toBe(403);
    const body = JSON.parse(forbidden.events[0]?.data ?? '{}') as { message?: string };
    expect(body.message).toBe(
      `User "system:serviceaccount:${ns}:no-logs" cannot get resource "pods/log" in API group "" in the namespace "${ns}"`,
    );
    // Unknown Apps and builds are answered the same: the right is asked before anything of the App.
    expect((await openStream(logPath('nothing-here'), noLogs)).status).toBe(403);
    expect(podLogRequests().length).toBe(before.logs);
    expect(podReads().length).toBe(before.pods);
    expect(operator.logs()).toContain('API request forbidden');
  });

  it('a user with it receives the lines while the build runs, the token masked, then the end', async () => {
    const stream = await openStream(logPath('web'), reader);
    expect(stream.status).toBe(200);
    await waitFor(
      'the first line of the RUN',
      async () => stream.lines().some((l) => printed('build-log: started').test(l)) || undefined,
    ).catch((err: unknown) => {
      console.error(`the stream so far: ${JSON.stringify(stream.events, null, 1)}`);
      throw err;
    });
    // The build is held at its gate: the lines came while it ran.
    const job = (await getApp(ns, 'web')).status?.build?.job ?? '';
    const running = await batch.readNamespacedJob({ namespace: ns, name: job });
    expect(running.status?.completionTime).toBeUndefined();
    expect(stream.ended).toBe(false);
    expect(stream.events.some((e) => e.event === 'end')).toBe(false);
    // The operator read it (asked again while KWOK had no log for the pod yet: the runner publishes it as it starts).
    expect(podLogRequests().length).toBeGreaterThan(0);

    // Four streams per user at most; one closed frees its place (its upstream read stopped with it).
    const more = await Promise.all([1, 2, 3].map(() => openStream(logPath('web'), reader)));
    expect(more.map((m) => m.status)).toEqual([200, 200, 200]);
    const fifth = await openStream(logPath('web'), reader);
    expect(fifth.status).toBe(429);
    expect(fifth.events[0]?.data).toContain('has 4 build logs open, the most one user may');
    more[0]?.close();
    const again = await waitFor('a place freed by the closed stream', async () => {
      const next = await openStream(logPath('web'), reader);
      return next.status === 200 ? next : undefined;
    });
    const openLogReads = () => [...recorder.open].filter((r) => podLogPath.test(r.path)).length;
    await waitFor('a log read for each of the four open streams', async () =>
      openLogReads() === 4 ? true : undefined,
    );
    // The browser going stops the operator's read of the log from the API server.
    for (const m of [...more, again]) m.close();
    await waitFor('the reads of the closed streams stopped', async () => (openLogReads() === 1 ? true : undefined));

    gate.open('first');
    await waitFor('the end of the log', async () => (stream.ended ? true : undefined));
    const lines = stream.lines();
    console.error(`the build log as the dashboard got it:\n${lines.join('\n')}`);
    expect(lines.some((l) => printed('build-log: released').test(l))).toBe(true);
    expect(lines.some((l) => printed('the token is \\*{5}').test(l))).toBe(true);
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(lines.join('\n')).not.toContain(base64(`${TOKEN_USER}:${TOKEN}`).slice(8, 24));
    expect(stream.events.at(-1)).toEqual({ event: 'end', data: JSON.stringify({ outcome: 'Succeeded' }) });
    // Lines are numbered from 1, in order: a reconnecting client asks for those after the last it has.
    const ids = stream.events.filter((e) => e.event === 'message').map((e) => Number(e.id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    await waitForApp(ns, 'web', 'the build released', phase('Healthy'));

    const resumed = await openStream(logPath('web'), reader, { 'last-event-id': String(ids.length - 2) });
    await waitFor('the resumed log to end', async () => (resumed.ended ? true : undefined));
    expect(resumed.events.filter((e) => e.event === 'message').map((e) => e.id)).toEqual([
      String(ids.length - 1),
      String(ids.length),
    ]);
  });

  it('a user who loses get pods/log while reading sees the stream end with a problem naming that right, and its read of the log stops', async () => {
    // An App of its own, so that this test runs alone too (vitest -t).
    const losing = await serviceAccount(ns, 'loses-logs', ['get', 'list']);
    await bind(ns, 'loses-logs', 'Role', 'pod-logs');
    const own = await createRepo(join(root, 'git', 'revoked.git'));
    await own.commit('a build held until the right is gone', { Dockerfile: gatedDockerfile('revoked') });
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'revoked-git' },
        data: { username: base64(TOKEN_USER), password: base64(TOKEN), 'ca.crt': base64(git.caPem) },
      },
    });
    await createApp('revoked');
    const job = await runningBuild('revoked');
    // The binding reaches the API server's authorizer in a moment.
    const stream = await waitFor('the log stream open for loses-logs', async () => {
      const opened = await openStream(logPath('revoked'), losing);
      return opened.status === 200 ? opened : undefined;
    });
    await waitFor('the first line of the RUN', async () =>
      stream.lines().some((l) => printed('build-log: started').test(l)) ? true : undefined,
    );
    const readsOfThisLog = () =>
      [...recorder.open].filter((r) => podLogPath.test(r.path) && r.path.includes(`/pods/${job}-`)).length;
    expect(readsOfThisLog()).toBe(1);

    await rbac.deleteNamespacedRoleBinding({ namespace: ns, name: 'loses-logs-pod-logs' });
    // Reviewed again within 30 s (the live stream's rule, reviews cached 10 s of it); the deadline is generous.
    await waitFor('the stream to end', async () => (stream.ended ? true : undefined), { timeoutMs: 120_000 });
    expect(stream.events.at(-1)).toEqual({
      event: 'problem',
      data: JSON.stringify({
        message: `the log stopped: User "system:serviceaccount:${ns}:loses-logs" cannot get resource "pods/log" in API group "" in the namespace "${ns}"`,
      }),
    });
    expect(stream.events.some((e) => e.event === 'end')).toBe(false);
    // The right ended it, not the build, which still waits at its gate; the operator's read stopped with it.
    const held = await batch.readNamespacedJob({ namespace: ns, name: job });
    expect(held.status?.completionTime).toBeUndefined();
    await waitFor('the read of the log stopped', async () => (readsOfThisLog() === 0 ? true : undefined));
    expect(operator.logs()).toContain('build log ended: the right to read it was lost');
    gate.open('revoked');
  });

  it('a build pod deleted while its RUN waits leaves no process of that build behind', async () => {
    // The build runner plays the kubelet: a deleted pod's container is killed, and with it every
    // process it started, as a container runtime does. BuildKit's RUN steps run in sessions of
    // their own (runc), which a process group does not reach.
    const own = await createRepo(join(root, 'git', 'abandoned.git'));
    await own.commit('a build whose gate never opens', { Dockerfile: gatedDockerfile('abandoned') });
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'abandoned-git' },
        data: { username: base64(TOKEN_USER), password: base64(TOKEN), 'ca.crt': base64(git.caPem) },
      },
    });
    await createApp('abandoned');
    const job = await runningBuild('abandoned');
    const marker = `127.0.0.1:${gate.port}/abandoned`;
    await waitFor('the RUN waiting at its gate', async () => ((await processesWith(marker)) > 0 ? true : undefined));

    // The App first, so that no new build of it starts; then its Job, whose pod goes with it.
    await custom.deleteNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      name: 'abandoned',
    });
    await batch
      .deleteNamespacedJob({ namespace: ns, name: job, propagationPolicy: 'Background' })
      .catch(() => undefined);
    await waitFor('no process of the deleted build', async () =>
      (await processesWith(marker)) === 0 ? true : undefined,
    );
  });

  it('kubectl teal logs masks the token by the same rule', async () => {
    const out = await tealIn(ns, 'logs', 'web');
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout).toMatch(/^#\d+ [\d.]+ the token is \*{5}$/m);
    expect(out.stdout).not.toContain(TOKEN);
  });

  it("a commit's build is found by its SHA's prefix; no such build is a 404, and a bad commit a 400", async () => {
    const head = await repo.revParse('HEAD');
    const byCommit = await openStream(logPath('web', head.slice(0, 8)), reader);
    await waitFor('the log of the commit to end', async () => (byCommit.ended ? true : undefined));
    expect(byCommit.lines().some((l) => printed('build-log: released').test(l))).toBe(true);

    const none = await openStream(logPath('web', 'abcdef0'), reader);
    expect(none.status).toBe(404);
    expect(none.events[0]?.data).toContain(`App ${ns}/web has no build of commit abcdef0`);
    expect((await openStream(logPath('web', 'HEAD'), reader)).status).toBe(400);
    expect((await openStream(logPath('nothing-here'), reader)).status).toBe(404);
  });

  it('the App page shows the log of a new build live in the browser, the token masked, then that the build succeeded', async () => {
    browser = await launchBrowser();
    page = await openPage(browser, { baseURL: base });
    const { page: p } = page;
    expect((await p.request.post('/api/v1/session', { data: { token: reader } })).status()).toBe(200);
    const before = (await getApp(ns, 'web')).status?.build?.job;
    const second = await repo.commit('a second build, gated apart', { Dockerfile: gatedDockerfile('second') });
    await waitFor('the build of the second commit', async () => {
      const job = (await getApp(ns, 'web')).status?.build?.job;
      return job && job !== before ? job : undefined;
    });
    // The App page shows the log of the build its status names.
    await p.goto(`/apps/${ns}/web`);
    await p.getByRole('heading', { name: 'Build log' }).waitFor();
    await p.getByRole('button', { name: 'Show the build log' }).click();
    const log = p.getByRole('log');
    await log.getByText(printed('build-log: started')).waitFor({ timeout: 120_000 });
    await p.getByText('Live: lines appear as the build writes them').waitFor();
    expect(await log.getAttribute('aria-live')).toBe('polite');
    await log.getByText(printed('the token is \\*{5}')).waitFor();
    expect(await log.textContent()).not.toContain(TOKEN);
    expect(await log.getByText(printed('build-log: released')).count()).toBe(0);
    await page.screenshot(join(SHOTS ?? join(root, 'shots'), 'dashboard-build-log-light.png'));

    // Lines keep coming while the RUN waits (wget's 503s): the view follows them at the bottom,
    // until the user scrolls up to read, where it then stays.
    const lineCount = () => log.locator('.log-line').count();
    await waitFor('the log to outgrow its box', async () =>
      (await log.evaluate((el) => el.scrollHeight > el.clientHeight + 100)) ? true : undefined,
    );
    await waitFor('the view at the bottom', async () =>
      (await log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 8)) ? true : undefined,
    );
    await log.evaluate((el) => {
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
    });
    const seen = await lineCount();
    await waitFor('more lines', async () => ((await lineCount()) > seen + 3 ? true : undefined));
    expect(await log.evaluate((el) => el.scrollTop)).toBe(0);

    gate.open('second');
    await p.getByRole('status').getByText('The build succeeded').waitFor({ timeout: 120_000 });
    await log.getByText(printed('build-log: released')).waitFor();
    expect((await getApp(ns, 'web')).status?.build?.commit).toBe(second);
    expect(await seriousAxeViolations(p)).toEqual([]);
    expect(page.cspViolations).toEqual([]);
    expect(page.consoleErrors).toEqual([]);
  });

  it('a user without get pods/log is told on the App page why the log cannot be shown', async () => {
    if (!browser) throw new Error('the browser test before this one did not start the browser');
    const other = await openPage(browser, { baseURL: base });
    try {
      expect((await other.page.request.post('/api/v1/session', { data: { token: noLogs } })).status()).toBe(200);
      await other.page.goto(`/apps/${ns}/web`);
      await other.page.getByRole('button', { name: 'Show the build log' }).click();
      await other.page
        .getByText(
          `The build log cannot be shown: User "system:serviceaccount:${ns}:no-logs" cannot get resource "pods/log" in API group "" in the namespace "${ns}"`,
        )
        .waitFor();
      expect(await other.page.getByRole('log').locator('.log-line').count()).toBe(0);
    } finally {
      await other.close();
    }
  });
});
