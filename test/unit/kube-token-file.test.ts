// A kubeconfig user's tokenFile, which client-node drops (src/kube/token-file.ts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyTokenFiles, tokenFilesOf } from '../../src/kube/token-file.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-token-file-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const kubeconfig = (users: unknown[]) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
    users,
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'ann' } }],
    'current-context': 'ctx',
  });

async function authorization(kc: KubeConfig): Promise<unknown> {
  const options: { headers?: Record<string, unknown> } = {};
  await kc.applyToHTTPSOptions(options);
  return options.headers?.Authorization;
}

describe("a kubeconfig user's tokenFile", () => {
  it('is sent as the bearer token, read from a path relative to its kubeconfig, trimmed', async () => {
    await writeFile(join(dir, 'ann.token'), 'ann-token\n');
    const path = join(dir, 'config');
    await writeFile(path, kubeconfig([{ name: 'ann', user: { tokenFile: 'ann.token' } }]));
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    expect(await authorization(kc)).toBeUndefined(); // what client-node does alone
    applyTokenFiles(kc, [path]);
    expect(await authorization(kc)).toBe('Bearer ann-token');
  });

  it("leaves a static token as it is; names the current user's tokenFile it cannot read, and skips another's", async () => {
    const path = join(dir, 'config');
    const users = [
      { name: 'ann', user: { token: 'static', tokenFile: 'ignored' } },
      { name: 'bob', user: { tokenFile: join(dir, 'missing') } },
    ];
    await writeFile(path, kubeconfig(users));
    expect(tokenFilesOf([path]).get('bob')).toBe(join(dir, 'missing'));
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    applyTokenFiles(kc, [path]);
    expect(await authorization(kc)).toBe('Bearer static');
    const asBob = join(dir, 'bob-config');
    await writeFile(asBob, kubeconfig(users).replace('"user":"ann"', '"user":"bob"'));
    const bob = new KubeConfig();
    bob.loadFromFile(asBob);
    expect(() => applyTokenFiles(bob, [asBob])).toThrow(
      `kubeconfig user "bob": cannot read its tokenFile ${join(dir, 'missing')}`,
    );
  });
});
