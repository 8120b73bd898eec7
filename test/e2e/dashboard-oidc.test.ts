// Login by OIDC end to end (issue #25, test 2): a real OpenID Connect provider
// (oidc-provider) on 127.0.0.1 over HTTPS, which kube-apiserver trusts through
// its structured AuthenticationConfiguration, and an operator logging in to
// its dashboard with the same provider and the same claim mappings. The same
// identity is then the same user, with the same RBAC, to kubectl --token and
// to the dashboard.
//
// This file boots a control plane of its own, beside the suite's shared one:
// the API server reads --authentication-config from its start, and the
// issuer's URL and CA are known before this cluster boots, as in a real
// cluster's static configuration. A shared cluster started with a config file
// that a test fills in later would also work (the API server reloads the
// file), but only after the reload, and every other test would run against an
// API server whose authenticators a test changes.
//
// The browser opens the dashboard at http://localhost:<port> and the provider
// at https://127.0.0.1:<port>: two sites, so the login's return is a real
// cross-site navigation (the flow cookie must be SameSite=Lax, the session
// cookie stays Strict).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import * as oidcClient from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleUi } from '../../scripts/bundle-ui.ts';
import { OIDC_CALLBACK, OIDC_START } from '../../src/app/dashboard-pages.ts';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { type Cluster, kubectlOutput, startCluster, stopCluster } from '../cluster/cluster.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { launchBrowser, openPage, seriousAxeViolations, type TestPage } from '../support/browser.ts';
import { clients } from '../support/kube.ts';
import { makeTestPki, startOidcProvider, type TestOidcProvider, type TestPki } from '../support/oidc-provider.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';
import { waitFor } from '../support/wait.ts';
import { installCrds } from './global-setup.ts';

const CLIENT = { clientId: 'teal-dashboard', clientSecret: 'teal-dashboard-secret-0123456789' };
/** The claim mappings, the same on both sides: the API server's config and the operator's flags. */
const PREFIX = 'oidc:';
const ACCOUNTS = {
  alice: { email: 'alice@example.com', email_verified: true, groups: ['dev-team'] },
};
const ALICE = `${PREFIX}alice@example.com`;
/** Where the test's own login is sent back: a server of the test that keeps the URLs it gets. */
let testCallback: string;
let callbackServer: Server;
const callbacks: URL[] = [];

let root: string;
let pki: TestPki;
let provider: TestOidcProvider;
let cluster: Cluster;
let operator: Operator;
let browser: Browser;
let base: string;
const pages: TestPage[] = [];

/** The API server's structured authentication config: one JWT issuer, the claim mappings the operator is given. */
const authenticationConfig = (issuer: string, caPem: string) =>
  JSON.stringify({
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AuthenticationConfiguration',
    jwt: [
      {
        issuer: { url: issuer, audiences: [CLIENT.clientId], certificateAuthority: caPem },
        claimMappings: {
          username: { claim: 'email', prefix: PREFIX },
          groups: { claim: 'groups', prefix: PREFIX },
        },
      },
    ],
  });

/** Namespaces and what RBAC gives alice in each: by her group, by her name, nothing. */
const NS = { byGroup: 'oidc-by-group', byUser: 'oidc-by-user', none: 'oidc-none' };

async function setUpRbac(): Promise<void> {
  const { core, rbac, custom } = clients(kubeConfigOf(cluster));
  for (const ns of Object.values(NS)) await core.createNamespace({ body: { metadata: { name: ns } } });
  const subjects = {
    [NS.byGroup]: { kind: 'Group', name: `${PREFIX}dev-team` },
    [NS.byUser]: { kind: 'User', name: ALICE },
  };
  for (const [ns, subject] of Object.entries(subjects)) {
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'app-viewer' },
        rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'app-viewer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'app-viewer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', ...subject }],
      },
    });
  }
  const apps = { [NS.byGroup]: 'web', [NS.byUser]: 'api', [NS.none]: 'secret-plans' };
  for (const [namespace, name] of Object.entries(apps)) {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: e2eApp(name),
    });
  }
  // Another replica holds the Lease: this operator serves the dashboard and reconciles nothing.
  await clients(kubeConfigOf(cluster))
    .kc.makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: NS.none,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600 },
      },
    });
}

function kubeConfigOf(c: Cluster): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  return kc;
}

/** A kubeconfig of this cluster with no credentials: kubectl then authenticates with --token alone. */
async function anonymousKubeconfig(): Promise<string> {
  const c = kubeConfigOf(cluster).getCurrentCluster();
  if (!c) throw new Error('no cluster');
  const path = join(root, 'no-credentials.kubeconfig');
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: { server: c.server, 'certificate-authority': c.caFile, 'certificate-authority-data': c.caData },
        },
      ],
      users: [{ name: 'nobody', user: {} }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'nobody' } }],
      'current-context': 'c',
    }),
  );
  return path;
}

/** kubectl with this token and no other credential. */
async function kubectlWithToken(token: string, args: string[]): Promise<string> {
  const kubeconfig = await anonymousKubeconfig();
  return kubectlOutput({ binDir: cluster.binDir, env: { ...cluster.env, KUBECONFIG: kubeconfig } }, [
    `--token=${token}`,
    ...args,
  ]);
}

/** The rows the Apps page shows, as namespace/name. */
async function rowsOf(page: Page): Promise<string[]> {
  await page.getByRole('table').waitFor();
  const rows = await Promise.all(
    (await page.locator('tbody tr').all()).map((tr) => tr.locator('td').allTextContents()),
  );
  return rows.map((r) => `${r[0]}/${r[1]}`).sort();
}

async function page(): Promise<TestPage> {
  const p = await openPage(browser, { baseURL: base, ignoreHTTPSErrors: true });
  // Nothing leaves the machine: the provider's own pages name a web font, which is refused here.
  await p.page.context().route(
    (url) => !['127.0.0.1', 'localhost'].includes(url.hostname),
    (route) => route.abort(),
  );
  pages.push(p);
  return p;
}

/**
 * Through the provider's own login and consent pages, as alice, until the provider sends the
 * browser back; a browser already signed in there (and consented) is sent back at once.
 */
async function signInAtProvider(p: Page): Promise<void> {
  const login = p.locator('input[name="login"]');
  const consent = p.getByRole('button', { name: 'Continue' });
  for (;;) {
    const step = await waitFor('the provider to ask or to send the browser back', async () => {
      const url = new URL(p.url());
      // Still on the dashboard's login page: the navigation to the provider has not begun.
      if (url.origin !== provider.issuer) return url.pathname === '/login' ? undefined : 'back';
      if (await login.isVisible()) return 'login';
      if (await consent.isVisible()) return 'consent';
      return undefined;
    });
    if (step === 'back') return;
    if (step === 'login') {
      await login.fill('alice');
      await p.locator('input[name="password"]').fill('any password');
      await p.getByRole('button', { name: 'Sign-in' }).click();
      await login.waitFor({ state: 'detached' });
    } else {
      await consent.click();
      await consent.waitFor({ state: 'detached' });
    }
  }
}

/** The metric's value, 0 when absent. */
async function logins(method: string, result: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`teal_dashboard_logins_total{method="${method}",result="${result}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'teal-oidc-'));
  pki = await makeTestPki();
  const port = await freePort();
  base = `http://localhost:${port}`;
  const redirect = `${base}${OIDC_CALLBACK}`;
  callbackServer = createServer((req, res) => {
    callbacks.push(new URL(req.url ?? '/', testCallback));
    res.end('ok');
  });
  await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
  testCallback = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/test-callback`;
  provider = await startOidcProvider({ ...CLIENT, redirectUris: [redirect, testCallback] }, ACCOUNTS, pki);
  cluster = await startCluster({
    name: 'teal-oidc',
    authenticationConfig: authenticationConfig(provider.issuer, pki.caPem),
    log: (line) => console.error(line),
  });
  await installCrds(cluster);
  await setUpRbac();
  const ui = await bundleUi(join(root, 'ui'));
  const files = { secret: join(root, 'client-secret'), ca: join(root, 'ca.crt') };
  await writeFile(files.secret, `${CLIENT.clientSecret}\n`);
  await writeFile(files.ca, pki.caPem);
  operator = await startOperator({
    namespace: Object.values(NS).join(','),
    kubeconfig: cluster.kubeconfig,
    healthPort: port,
    extraArgs: [
      ...['--leader-election-namespace', NS.none, '--dashboard-dir', ui.outdir],
      ...['--oidc-issuer-url', provider.issuer, '--oidc-client-id', CLIENT.clientId],
      ...['--oidc-client-secret-file', files.secret, '--oidc-ca-file', files.ca],
      ...['--oidc-username-claim', 'email', `--oidc-username-prefix=${PREFIX}`],
      ...['--oidc-groups-claim', 'groups', `--oidc-groups-prefix=${PREFIX}`],
      ...['--oidc-extra-scopes', 'email,groups', '--oidc-redirect-url', redirect, '--oidc-provider-name', 'Test IdP'],
    ],
  });
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await operator?.stop();
  if (cluster) await stopCluster(cluster);
  await provider?.stop();
  callbackServer?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('login by OIDC', () => {
  it('offers "Log in with <provider>" on the login page, a link to the start, with no serious axe violation', async () => {
    const p = await page();
    await p.page.goto('/login?next=%2Fapps%3Fns%3Doidc-by-user');
    const link = p.page.getByRole('link', { name: 'Log in with Test IdP' });
    expect(await link.getAttribute('href')).toBe(`${OIDC_START}?next=%2Fapps%3Fns%3Doidc-by-user`);
    expect(await seriousAxeViolations(p.page)).toEqual([]);
    expect(p.cspViolations).toEqual([]);
    // TEAL_SCREENSHOT_DIR=docs/img refreshes the docs' picture of it.
    await p.screenshot(join(process.env.TEAL_SCREENSHOT_DIR ?? join(root, 'shots'), 'dashboard-login-oidc-light.png'));
  });

  it('logs in through the provider and shows exactly the Apps RBAC gives the OIDC user and group', async () => {
    const p = await page();
    const res = await p.page.goto('/apps');
    expect(res?.status()).toBe(401);
    await p.page.getByRole('link', { name: 'Log in with Test IdP' }).click();
    await signInAtProvider(p.page);
    await p.page.waitForURL(`${base}/apps`);
    expect(await rowsOf(p.page)).toEqual([`${NS.byGroup}/web`, `${NS.byUser}/api`]);
    expect(await p.page.getByTestId('username').textContent()).toBe(ALICE);
    expect(await p.page.content()).not.toContain(NS.none);
    // The session cookie is the token login's: sealed, HttpOnly, Strict; the flow cookie is spent.
    const cookies = await p.page.context().cookies(`${base}${OIDC_CALLBACK}`);
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([['teal_session', true, 'Strict']]);
    const session = await p.page.request.get('/api/v1/session');
    expect(await session.json()).toEqual({
      user: { username: ALICE, groups: [`${PREFIX}dev-team`, 'system:authenticated'] },
      via: 'session',
    });
    expect(await logins('oidc', 'ok')).toBe(1);
  });

  it('gives kubectl --token, with an id token of the same login, the same user and the same RBAC', async () => {
    const p = await page();
    const config = await oidcClient.discovery(
      new URL(provider.issuer),
      CLIENT.clientId,
      CLIENT.clientSecret,
      undefined,
      {
        [oidcClient.customFetch]: ((url: string, options: object) =>
          undiciFetch(url, {
            ...options,
            dispatcher: new Agent({ connect: { ca: pki.caPem } }),
          })) as unknown as oidcClient.CustomFetch,
      },
    );
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const authorize = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: testCallback,
      scope: 'openid email groups',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    await p.page.goto(authorize.href);
    await signInAtProvider(p.page);
    const returned = await waitFor('the provider to send the code back', async () =>
      callbacks.find((u) => u.searchParams.get('state') === state),
    );
    const tokens = await oidcClient.authorizationCodeGrant(config, returned, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const idToken = tokens.id_token;
    if (!idToken) throw new Error('no id token');

    // The API server's JWT authenticator may still be fetching the issuer's keys after its boot.
    const whoami = JSON.parse(
      await waitFor('the API server to accept the id token', () =>
        kubectlWithToken(idToken, ['auth', 'whoami', '-o', 'json']).catch(() => undefined),
      ),
    ) as { status: { userInfo: { username: string; groups: string[] } } };
    expect(whoami.status.userInfo).toEqual({ username: ALICE, groups: [`${PREFIX}dev-team`, 'system:authenticated'] });

    const canList = async (ns: string) =>
      kubectlWithToken(idToken, ['auth', 'can-i', 'list', `${PLURAL}.${GROUP}`, '-n', ns]).catch(
        (err: { stdout?: string }) => err.stdout?.trim() ?? 'error',
      );
    expect([await canList(NS.byGroup), await canList(NS.byUser), await canList(NS.none)]).toEqual(['yes', 'yes', 'no']);

    // The dashboard, logged in by OIDC in the same browser (the provider's session signs it in), agrees.
    await p.page.goto('/login');
    await p.page.getByRole('link', { name: 'Log in with Test IdP' }).click();
    await signInAtProvider(p.page);
    await p.page.waitForURL(`${base}/apps`);
    const session = (await (await p.page.request.get('/api/v1/session')).json()) as { user: unknown };
    expect(session.user).toEqual(whoami.status.userInfo);
    expect(await rowsOf(p.page)).toEqual([`${NS.byGroup}/web`, `${NS.byUser}/api`]);
  });

  it("refuses a callback with another login's state (a login forced on this browser): a 401 page, no session", async () => {
    const before = await logins('oidc', 'bad_state');
    // Another browser's login, its callback URL kept as it goes to the operator (code and state).
    const other = await page();
    const seen: string[] = [];
    other.page.on('request', (r) => void (r.url().includes('/api/v1/session/oidc/callback?') && seen.push(r.url())));
    await other.page.goto('/login');
    await other.page.getByRole('link', { name: 'Log in with Test IdP' }).click();
    await signInAtProvider(other.page);
    await other.page.waitForURL(`${base}/apps`);
    const forced = seen[0];
    if (forced === undefined) throw new Error('no callback seen');

    // This browser has started a login of its own (its flow cookie is set, it is at the
    // provider's login page) when it is sent to the other login's callback.
    const p = await page();
    await p.page.goto('/login');
    await p.page.getByRole('link', { name: 'Log in with Test IdP' }).click();
    await p.page.locator('input[name="login"]').waitFor();
    expect((await p.page.context().cookies(`${base}${OIDC_CALLBACK}`)).map((c) => c.name)).toEqual(['teal_oidc_flow']);
    const res = await p.page.goto(forced);
    expect(res?.status()).toBe(401);
    expect(await p.page.getByRole('alert').textContent()).toBe(
      "the provider's answer is not for the login this browser started",
    );
    // No session, and the flow cookie is spent.
    expect((await p.page.context().cookies(`${base}${OIDC_CALLBACK}`)).map((c) => c.name)).toEqual([]);
    expect((await p.page.request.get('/api/v1/session')).status()).toBe(401);
    expect(await logins('oidc', 'bad_state')).toBe(before + 1);
  });

  it('refuses a callback this browser did not start (no flow cookie): a 401 page, no session cookie', async () => {
    const res = await fetch(`http://127.0.0.1:${operator.healthPort}/api/v1/session/oidc/callback?code=stolen&state=x`);
    expect(res.status).toBe(401);
    expect(res.headers.get('set-cookie')).not.toContain('teal_session');
    expect(await res.text()).toContain('this browser has no login in progress');
  });
});
