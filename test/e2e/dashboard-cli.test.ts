// `kubectl teal dashboard` (issue #25 item 3, test 10) on the real control
// plane, in a real browser. The operator runs as a child process on
// 127.0.0.1; to reach it the way a cluster does, through the API server with
// a port-forward, the test gives it a place in the cluster: a pod on KWOK's
// node and the chart's Service "teal" in front of it, and KWOK's PortForward
// object for that pod sends the kubelet's end of a port-forward to the
// operator's port (test/cluster/cluster.ts enables the PortForward CRD). The
// user is a ServiceAccount with a token kubeconfig and only the rights the
// docs list: read Apps, and the shipped ClusterRole teal-dashboard (get
// services, list endpointslices, get and create pods/portforward) bound in the
// operator's namespace.

import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy } from '@kubernetes/client-node';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { NODE_NAME } from '../cluster/cluster.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { launchBrowser, openPage, type TestPage } from '../support/browser.ts';
import { buildStandalone, CLI_FROM, type RunningTeal, startTeal, teal } from '../support/cli.ts';
import { selfSignedCertificate } from '../support/git-server.ts';
import { clients, createNamespace, tokenKubeconfig, waitFor } from '../support/kube.ts';
import { find, parseManifests } from '../support/manifests.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { bind, serviceAccount, userOf } from '../support/users.ts';
import { StopWaiting } from '../support/wait.ts';

/** The operator pod's port, as the chart's Deployment names it. */
const POD_PORT = 8081;
const DASHBOARD_ROLE = 'teal-dashboard';
const LOGIN_URL = /http:\/\/127\.0\.0\.1:(\d+)\/login#code=([A-Za-z0-9_-]{43})/;

let apps: { name: string; remove: () => Promise<void> };
let system: { name: string; remove: () => Promise<void> };
let root: string;
let operator: Operator;
let browser: Browser;
let token: string;
let kubeconfig: string;
const running: RunningTeal[] = [];
const pages: TestPage[] = [];
const contexts: BrowserContext[] = [];

/** The operator's place in the cluster: a pod on KWOK's node, Service "teal", and the kubelet's forward to the process. */
async function operatorInCluster(namespace: string, port: number): Promise<void> {
  const { core, custom } = clients();
  const labels = { 'app.kubernetes.io/name': 'teal', 'app.kubernetes.io/component': 'operator' };
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'teal-0', labels },
      spec: {
        nodeName: NODE_NAME,
        containers: [{ name: 'operator', image: 'teal', ports: [{ name: 'http', containerPort: POD_PORT }] }],
      },
    },
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: 'teal' },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
  });
  await custom.createNamespacedCustomObject({
    group: 'kwok.x-k8s.io',
    version: 'v1alpha1',
    plural: 'portforwards',
    namespace,
    body: {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'PortForward',
      metadata: { name: 'teal-0' },
      spec: { forwards: [{ ports: [POD_PORT], target: { port, address: '127.0.0.1' } }] },
    },
  });
  const discovery = clients().kc.makeApiClient((await import('@kubernetes/client-node')).DiscoveryV1Api);
  await waitFor('the operator pod to be a ready endpoint of Service teal', async () => {
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace,
      labelSelector: 'kubernetes.io/service-name=teal',
    });
    return slices.items.some((s) => s.endpoints?.some((e) => e.conditions?.ready === true)) ? true : undefined;
  });
}

/**
 * The shipped ClusterRole teal-dashboard (config/rbac/roles.yaml, the chart's too), bound in the
 * operator's namespace, as docs/dashboard.md says to.
 */
async function mayReachOperator(namespace: string, saNamespace: string, sa: string): Promise<void> {
  const roles = parseManifests(await readFile(new URL('../../config/rbac/roles.yaml', import.meta.url), 'utf8'));
  const [role] = find(roles, 'ClusterRole', DASHBOARD_ROLE);
  if (!role) throw new Error(`config/rbac/roles.yaml has no ${DASHBOARD_ROLE}`);
  await clients().objects.patch(role, undefined, undefined, 'teal-test', true, PatchStrategy.ServerSideApply);
  await bind(saNamespace, sa, 'ClusterRole', DASHBOARD_ROLE, namespace);
  await waitFor(`${sa} may port-forward in ${namespace}`, async () => {
    const review = await clients().authz.createSubjectAccessReview({
      body: {
        spec: {
          user: userOf(saNamespace, sa),
          groups: ['system:serviceaccounts', 'system:authenticated'],
          resourceAttributes: { resource: 'pods', subresource: 'portforward', verb: 'create', namespace },
        },
      },
    });
    return review.status?.allowed ? true : undefined;
  });
}

function dashboard(args: string[], options: { from?: (typeof CLI_FROM)[number]; env?: NodeJS.ProcessEnv } = {}) {
  const run = startTeal(['dashboard', ...args], kubeconfig, options.from ?? 'bundle', options.env ?? {});
  running.push(run);
  return run;
}

/** Stops a wait once the dashboard exited: it will print nothing more. */
function exitedEarly(run: RunningTeal): void {
  if (run.child.exitCode !== null) throw new StopWaiting(`it exited ${run.child.exitCode}: ${run.stderr()}`);
}

/** The login URL a running dashboard printed. */
const printedUrl = (run: RunningTeal) =>
  waitFor('kubectl teal dashboard to print its login URL', async () => {
    exitedEarly(run);
    return LOGIN_URL.exec(run.stdout())?.[0];
  });

async function page(base: string): Promise<TestPage> {
  const p = await openPage(browser, { baseURL: base });
  pages.push(p);
  return p;
}

/** A browser page opened at url, as the user's browser would be: logged in, at the Apps list. */
async function openLoggedIn(url: string): Promise<TestPage> {
  const p = await page(new URL(url).origin);
  await p.page.goto(url);
  await p.page.getByTestId('username').waitFor();
  return p;
}

beforeAll(async () => {
  [apps, system] = await Promise.all([createNamespace('dashcli-apps'), createNamespace('dashcli-system')]);
  root = await mkdtemp(join(tmpdir(), 'teal-dashcli-'));
  const ui = await bundleUi(join(root, 'ui'));
  token = await serviceAccount(apps.name, 'viewer', ['get', 'list']);
  kubeconfig = await tokenKubeconfig(join(root, 'viewer.kubeconfig'), 'viewer', token, apps.name);
  operator = await startOperator({ namespace: apps.name, extraArgs: ['--dashboard-dir', ui.outdir] });
  await Promise.all([
    operatorInCluster(system.name, operator.healthPort),
    mayReachOperator(system.name, apps.name, 'viewer'),
  ]);
  browser = await launchBrowser();
});

afterAll(async () => {
  await Promise.all(running.map((r) => r.interrupt()));
  await Promise.all(pages.map((p) => p.close()));
  await Promise.all(contexts.map((c) => c.close()));
  await browser?.close();
  await operator?.stop();
  await Promise.all([apps?.remove(), system?.remove()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe.each(CLI_FROM)('kubectl teal dashboard through a port-forward (%s)', (from) => {
  let run: RunningTeal;
  let url: string;

  beforeAll(async () => {
    if (from === 'standalone') await buildStandalone();
    // $BROWSER: a script that records the URL it is given, in place of the user's browser.
    const browserScript = join(root, `browser-${from}.sh`);
    const opened = join(root, `opened-${from}`);
    await writeFile(browserScript, `#!/bin/sh\nprintf '%s' "$1" > ${opened}\n`);
    await chmod(browserScript, 0o755);
    run = dashboard(['-n', system.name], { from, env: { BROWSER: browserScript } });
    url = await waitFor('the browser to be opened', async () => {
      exitedEarly(run);
      return readFile(opened, 'utf8').catch(() => undefined);
    }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nstdout: ${run.stdout()}\nstderr: ${run.stderr()}`);
    });
  });

  it('opens the browser at a login URL of 127.0.0.1 holding a single-use code, never the token', () => {
    expect(url).toMatch(new RegExp(`^${LOGIN_URL.source}$`));
    expect(url).not.toContain(token);
    expect(run.stdout()).not.toContain(token);
    expect(run.stdout()).toContain(`a port-forward to pod ${system.name}/teal-0, port ${POD_PORT}`);
  });

  it("the page it opens is logged in as the kubeconfig user, at the Apps list, with the login URL gone from the tab's history", async () => {
    const p = await openLoggedIn(url);
    await expect.poll(() => p.page.getByTestId('username').textContent()).toBe(userOf(apps.name, 'viewer'));
    await p.page.getByRole('table').waitFor();
    expect(p.page.url()).toBe(`${new URL(url).origin}/apps`);
    expect(p.consoleErrors).toEqual([]);
    expect(p.cspViolations).toEqual([]);
    // The tab's history holds the blank page it started on, then the list: the login URL is not kept.
    expect(await p.page.evaluate('history.length')).toBe(2);
    await p.page.goBack();
    expect(p.page.url()).toBe('about:blank');
  });

  it('the code works once: a second browser gets the login page, saying so, and no session', async () => {
    const second = await page(new URL(url).origin);
    await second.page.goto(url);
    await expect.poll(() => second.page.getByTestId('login-error').textContent()).toContain('already used or expired');
    expect(second.page.url()).not.toContain('code=');
    expect((await second.page.request.get('/api/v1/session')).status()).toBe(401);
  });

  it('listens on 127.0.0.1 only: the same port on another loopback address refuses', async () => {
    const port = Number(LOGIN_URL.exec(url)?.[1]);
    const refused = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.2', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('stops at Ctrl-C, with exit code 0', async () => {
    expect(await run.interrupt()).toBe(0);
  });
});

describe('kubectl teal dashboard --address (a local operator, as make dev runs it)', () => {
  it('--no-browser prints the login URL, which logs the browser in', async () => {
    const run = dashboard(['--address', `http://127.0.0.1:${operator.healthPort}`, '--no-browser']);
    const url = await printedUrl(run);
    const p = await openLoggedIn(url);
    await expect.poll(() => p.page.getByTestId('username').textContent()).toBe(userOf(apps.name, 'viewer'));
    expect(p.page.url()).not.toContain('code=');
    expect(await run.interrupt()).toBe(0);
  });

  it.each([
    ['a token file', 'tokenFile'],
    ['an exec plugin', 'exec'],
  ] as const)('logs the browser in with the token of %s, as kubectl would get it', async (_what, how) => {
    const dir = join(root, `kubeconfig-${how}`);
    await mkdir(dir, { recursive: true });
    let user: Record<string, unknown>;
    if (how === 'tokenFile') {
      await writeFile(join(dir, 'token'), token);
      user = { tokenFile: join(dir, 'token') };
    } else {
      // An exec credential plugin, as cloud providers and kubelogin are: it prints an ExecCredential.
      const plugin = join(dir, 'credential-plugin');
      const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } };
      await writeFile(plugin, `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify(credential)}\nEOF\n`);
      await chmod(plugin, 0o755);
      user = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } };
    }
    // The token kubeconfig's cluster, with this user instead of its static token.
    const base = JSON.parse(await readFile(kubeconfig, 'utf8')) as { users: { name: string; user: unknown }[] };
    const path = join(dir, 'kubeconfig');
    await writeFile(path, JSON.stringify({ ...base, users: base.users.map((u) => ({ ...u, user })) }));
    const run = startTeal(
      ['dashboard', '--address', `http://127.0.0.1:${operator.healthPort}`, '--no-browser'],
      path,
      'bundle',
      {},
    );
    running.push(run);
    const url = await printedUrl(run);
    expect(url).not.toContain(token);
    const p = await openLoggedIn(url);
    await expect.poll(() => p.page.getByTestId('username').textContent()).toBe(userOf(apps.name, 'viewer'));
    expect(await run.interrupt()).toBe(0);
  });

  it('an operator that serves TLS itself: exits 1, saying so and what to use instead', async () => {
    const dir = join(root, 'tls');
    await mkdir(dir);
    const { key, cert } = await selfSignedCertificate();
    await Promise.all([writeFile(join(dir, 'tls.crt'), cert), writeFile(join(dir, 'tls.key'), key)]);
    const tlsOperator = await startOperator({
      namespace: apps.name,
      tls: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), ca: cert },
    });
    try {
      const result = await teal(
        ['dashboard', '--address', `http://127.0.0.1:${tlsOperator.healthPort}`, '--no-browser'],
        kubeconfig,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `the operator at http://127.0.0.1:${tlsOperator.healthPort} serves TLS itself (--tls-cert-file, the chart's api.tls)`,
      );
      expect(result.stdout).not.toContain('login#code=');
    } finally {
      await tlsOperator.stop();
    }
  });

  it('refuses an address off this machine, where the token would cross the network in the clear', async () => {
    const result = await teal(['dashboard', '--address', 'http://192.0.2.1:8081', '--no-browser'], kubeconfig);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--address must be on this machine');
  });
});

describe('kubectl teal dashboard with a client-certificate kubeconfig', () => {
  it('exits 1, saying the user has a certificate, not a token, and how to get one', async () => {
    const result = await teal(['dashboard', '-n', system.name, '--no-browser'], inject('kubeconfig'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('logs in with a client certificate');
    expect(result.stderr).toContain('kubectl create token');
    expect(result.stderr).toContain('OIDC kubeconfig');
    expect(result.stdout).not.toContain('http://');
  });
});

describe('login codes on the server', () => {
  const base = () => `http://127.0.0.1:${operator.healthPort}`;
  const issue = (authorization?: string) =>
    fetch(`${base()}/api/v1/session/codes`, {
      method: 'POST',
      headers: authorization ? { authorization } : {},
    });
  const spend = (code: string) =>
    fetch(`${base()}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code }),
    });

  it('a code needs a token the TokenReview accepts: none, or a garbage one, gets 401', async () => {
    expect((await issue()).status).toBe(401);
    expect((await issue('Bearer garbage')).status).toBe(401);
  });

  it('a code gives a session cookie once; spent again, 401; no code reaches the log', async () => {
    const answer = await issue(`Bearer ${token}`);
    expect(answer.status).toBe(201);
    const { code, expiresInSeconds } = (await answer.json()) as { code: string; expiresInSeconds: number };
    expect(expiresInSeconds).toBe(30);
    const first = await spend(code);
    expect(first.status).toBe(200);
    expect(first.headers.get('set-cookie')).toMatch(/^teal_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict/);
    expect(await first.json()).toMatchObject({ user: { username: userOf(apps.name, 'viewer') } });
    const second = await spend(code);
    expect(second.status).toBe(401);
    expect(second.headers.get('set-cookie')).toBeNull();
    expect(operator.logs()).toContain('login code issued');
    expect(operator.logs()).not.toContain(code);
    expect(operator.logs()).not.toContain(token);
  });
});

describe('eight tabs over kubectl teal dashboard (issue #25 test 8)', () => {
  const liveState = (tab: Page) => tab.getByTestId('live-state').getAttribute('data-state');

  /** The streams the operator holds open (teal_dashboard_streams), read from it directly. */
  async function openStreams(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('teal_dashboard_streams '));
    return Number(line?.split(' ')[1] ?? Number.NaN);
  }

  async function hasRow(tab: Page, name: string): Promise<boolean> {
    for (const tr of await tab.locator('tbody tr').all()) {
      if ((await tr.locator('td').allTextContents())[1] === name) return true;
    }
    return false;
  }

  it("eight tabs of one browser, through the port-forward's plain HTTP/1.1, all stay live while the operator holds one stream", async () => {
    // The pages of the tests above are closed first, so the count below is of this browser's streams.
    // Their streams went through port-forwards already stopped, whose far end (KWOK's, then the
    // operator's connection) closed some seconds later in the runs seen (about 14 s), not at once.
    await Promise.all(pages.splice(0).map((p) => p.close()));
    await waitFor('no stream open', async () => ((await openStreams()) === 0 ? true : undefined));
    const run = dashboard(['-n', system.name, '--no-browser']);
    const url = await printedUrl(run);
    const context = await browser.newContext({ baseURL: new URL(url).origin });
    contexts.push(context);
    const tabs: Page[] = [];
    for (let i = 0; i < 8; i++) {
      const tab = await context.newPage();
      // The first tab logs in with the code; the others share its cookie, as tabs of one browser do.
      await tab.goto(i === 0 ? url : '/apps');
      await tab.getByRole('table').waitFor();
      tabs.push(tab);
    }
    for (const tab of tabs) {
      await waitFor('every tab live', async () => ((await liveState(tab)) === 'live' ? true : undefined));
    }
    expect(await openStreams()).toBe(1);

    await createApp(apps.name, e2eApp('eighth'));
    for (const tab of tabs) {
      await waitFor('the new App in every tab, without a reload', async () =>
        (await hasRow(tab, 'eighth')) ? true : undefined,
      );
    }
    expect(await openStreams()).toBe(1);
    expect(await run.interrupt()).toBe(0);
  });
});
