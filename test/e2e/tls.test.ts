// The operator's HTTP server over TLS, from a certificate and key.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../support/git-server.ts';
import { createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

let dir: string;
let ca: string;
let operator: Operator;
let removeNs: () => Promise<void>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-tls-'));
  const { key, cert } = await selfSignedCertificate();
  await writeFile(join(dir, 'tls.key'), key);
  await writeFile(join(dir, 'tls.crt'), cert);
  ca = await readFile(join(dir, 'tls.crt'), 'utf8');
  const ns = await createNamespace('tls');
  removeNs = ns.remove;
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
});
