// The operator's HTTP server over TLS, from a certificate and key.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../support/git-server.ts';
import { createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount, userOf } from '../support/users.ts';

let dir: string;
let ca: string;
let operator: Operator;
let removeNs: () => Promise<void>;
let nsName: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-tls-'));
  const { key, cert } = await selfSignedCertificate();
  await writeFile(join(dir, 'tls.key'), key);
  await writeFile(join(dir, 'tls.crt'), cert);
  ca = await readFile(join(dir, 'tls.crt'), 'utf8');
  const ns = await createNamespace('tls');
  removeNs = ns.remove;
  nsName = ns.name;
  operator = await startOperator({
    namespace: ns.name,
    tls: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), ca },
  });
});

afterAll(async () => {
  await operator?.stop();
  await removeNs?.();
  await rm(dir, { recursive: true, force: true });
});

describe('TLS', () => {
  it('serves health, metrics and the API over HTTPS only', async () => {
    const dispatcher = new Agent({ connect: { ca } });
    const base = `https://127.0.0.1:${operator.healthPort}`;
    expect((await fetch(`${base}/healthz`, { dispatcher })).status).toBe(200);
    expect((await fetch(`${base}/metrics`, { dispatcher })).status).toBe(200);
    expect((await fetch(`${base}/api/v1/apps`, { dispatcher })).status).toBe(401);
    await expect(fetch(`http://127.0.0.1:${operator.healthPort}/healthz`)).rejects.toThrow();
  });

  it('logs in to a Secure cookie with the __Host- prefix, and sends HSTS', async () => {
    const dispatcher = new Agent({ connect: { ca } });
    const base = `https://127.0.0.1:${operator.healthPort}`;
    const token = await serviceAccount(nsName, 'tls-user');
    const login = await fetch(`${base}/api/v1/session`, {
      dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    expect(login.status).toBe(200);
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^__Host-teal_session=[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
    expect(login.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
    const who = await fetch(`${base}/api/v1/session`, {
      dispatcher,
      headers: { cookie: setCookie.split(';')[0] ?? '' },
    });
    expect(await who.json()).toMatchObject({ user: { username: userOf(nsName, 'tls-user') }, via: 'session' });
  });
});
