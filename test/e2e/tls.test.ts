// The operator's HTTP server over TLS, from a certificate and key.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

let dir: string;
let ca: string;
let operator: Operator;
let removeNs: () => Promise<void>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-tls-'));
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    join(dir, 'tls.key'),
    '-out',
    join(dir, 'tls.crt'),
  ]);
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
