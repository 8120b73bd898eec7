// What a webhook delivery costs the API server, and where its secrets come
// from: the operator runs behind a recording proxy to the real API server, so
// its Secret reads are counted one by one; signatures are real HMACs.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SECRET_ERROR_TTL_MS, SECRET_TTL_MS } from '../../src/api/webhook-secret-cache.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { signSha256 } from '../../src/app/signature.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { createRepo } from '../support/git-server.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';

const { core, custom } = clients();
const GLOBAL_SECRET = 'the global webhook secret';
let ns: string;
let removeNs: () => Promise<void>;
let root: string;
/** Two repositories, so that forgeries for one never touch the other's Secret. */
let forgedRepo: string;
let rotatingRepo: string;
let deniedRepo: string;
let recorder: ApiRecorder;
let operator: Operator;

const b64 = (s: string) => Buffer.from(s).toString('base64');

function hookApp(name: string, url: string, secretName: string): AppInput {
  return {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    metadata: { name },
    spec: {
      source: { git: { url, ref: 'main', webhookSecretRef: { name: secretName }, pollInterval: '0' } },
      build: { image: 'registry.example.com/team/site' },
      replicas: 1,
      template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
    },
  };
}

/** A generic push delivery for repository, signed with secret. */
function deliver(repository: string, secret: string): Promise<Response> {
  const body = JSON.stringify({ repository, ref: 'refs/heads/main' });
  return fetch(`http://127.0.0.1:${operator.healthPort}/webhooks/generic`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-signature': signSha256(body, secret),
      'x-delivery-id': randomUUID(),
    },
    body,
  });
}

const secretReads = (name: string) => recorder.count('GET', `/api/v1/namespaces/${ns}/secrets/${name}`);

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('hook-secrets'));
  root = await mkdtemp(join(tmpdir(), 'teal-hook-secrets-'));
  forgedRepo = pathToFileURL((await createRepo(join(root, 'forged'))).dir).href;
  rotatingRepo = pathToFileURL((await createRepo(join(root, 'rotating'))).dir).href;
  deniedRepo = pathToFileURL((await createRepo(join(root, 'denied'))).dir).href;
  for (const [name, token] of [
    ['forged-hook', 'the forged App secret'],
    ['rotating-hook', 'before rotation'],
    ['denied-hook', 'never read'],
  ] as const) {
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name }, data: { token: b64(token) } } });
  }
  // Created before the operator starts: its readiness then means its App cache holds them.
  for (const [app, url, secret] of [
    ['forged', forgedRepo, 'forged-hook'],
    ['rotating', rotatingRepo, 'rotating-hook'],
    ['denied', deniedRepo, 'denied-hook'],
  ] as const) {
    await custom.createNamespacedCustomObject({
      group: 'teal.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'apps',
      body: hookApp(app, url, secret),
    });
  }
  // As an editor saves it: with a trailing newline that is not part of the secret.
  const secretFile = join(root, 'global-secret');
  await writeFile(secretFile, `${GLOBAL_SECRET}\n`, { mode: 0o600 });
  recorder = await startApiRecorder(root);
  // The API server answers the operator's reads of this Secret 403, for real.
  recorder.forbid('GET', `/api/v1/namespaces/${ns}/secrets/denied-hook`);
  operator = await startOperator({
    namespace: ns,
    kubeconfig: recorder.kubeconfig,
    extraArgs: ['--allow-file-git', `--webhook-secret-file=${secretFile}`],
  });
});

afterAll(async () => {
  await operator?.stop();
  await recorder?.stop();
  await removeNs?.();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('webhook secrets', () => {
  it('100 wrongly signed deliveries read the App webhook Secret at most twice per cache lifetime', async () => {
    const started = performance.now();
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) statuses.push((await deliver(forgedRepo, `forgery ${i}`)).status);
    const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => deliver(forgedRepo, `burst ${i}`)));
    statuses.push(...burst.map((r) => r.status));
    const elapsed = performance.now() - started;

    expect(statuses).toEqual(Array(100).fill(401));
    const reads = secretReads('forged-hook');
    // One read when the entry is missing or expired, at most one re-read while it lives.
    const bound = 2 * (Math.floor(elapsed / SECRET_TTL_MS) + 1);
    console.log(`${reads} Secret reads for 100 forged deliveries in ${(elapsed / 1000).toFixed(1)} s (bound ${bound})`);
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(bound);
  });

  it('a push signed with a just-rotated Secret is accepted at once, for one more read; the old secret no longer is', async () => {
    const primed = await deliver(rotatingRepo, 'before rotation');
    expect(primed.status).toBe(202);
    await core.replaceNamespacedSecret({
      namespace: ns,
      name: 'rotating-hook',
      body: { metadata: { name: 'rotating-hook' }, data: { token: b64('after rotation') } },
    });
    const before = secretReads('rotating-hook');
    const res = await deliver(rotatingRepo, 'after rotation');
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ matched: [`${ns}/rotating`] });
    expect(secretReads('rotating-hook') - before).toBe(1);
    expect((await deliver(rotatingRepo, 'before rotation')).status).toBe(401);
  });

  it('while the Secret read fails, deliveries get 503 and the read is retried at most every 2 s', async () => {
    const started = performance.now();
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) statuses.push((await deliver(deniedRepo, `forgery ${i}`)).status);
    const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => deliver(deniedRepo, `burst ${i}`)));
    statuses.push(...burst.map((r) => r.status), (await deliver(deniedRepo, 'never read')).status);
    const elapsed = performance.now() - started;

    // As before the cache: the push cannot be checked now, so "deliver it again later".
    expect(statuses).toEqual(Array(101).fill(503));
    const reads = secretReads('denied-hook');
    const bound = Math.floor(elapsed / SECRET_ERROR_TTL_MS) + 1;
    console.log(
      `${reads} refused Secret reads for 101 deliveries in ${(elapsed / 1000).toFixed(1)} s (bound ${bound})`,
    );
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(bound);
  });

  it('--webhook-secret-file ignores the trailing newline of the file', async () => {
    const unknown = pathToFileURL(join(root, 'no-app-follows-this')).href;
    const res = await deliver(unknown, GLOBAL_SECRET);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ matched: [] });
    expect((await deliver(unknown, `${GLOBAL_SECRET}\n`)).status).toBe(401);
  });

  it('an empty --webhook-secret-file stops the operator at start, naming the flag', async () => {
    const empty = join(root, 'empty-secret');
    await writeFile(empty, '\n');
    const port = await freePort();
    const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
    const args = [main, '--kubeconfig', inject('kubeconfig'), '--namespace', ns, '--leader-elect=false'];
    const flags = [`--http-addr=127.0.0.1:${port}`, `--webhook-secret-file=${empty}`];
    const child = spawn(process.execPath, [...args, ...flags], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // Whichever comes first: the process ends, or it serves HTTP (it started, which it must not).
    const outcome = await Promise.race([
      exited.then((code) => ({ exited: code })),
      waitFor('the operator to exit or to serve HTTP', async () => {
        if (child.exitCode !== null) return { exited: child.exitCode };
        return fetch(`http://127.0.0.1:${port}/healthz`).then(
          () => 'serving',
          () => undefined,
        );
      }),
    ]);
    if (child.exitCode === null) child.kill('SIGKILL');
    expect(outcome).toEqual({ exited: 1 });
    expect(stderr).toMatch(/--webhook-secret-file: \S*empty-secret is empty/);
  });
});
