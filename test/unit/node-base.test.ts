// The node:24-slim stand-in's recipe (test/cluster/base-images.ts): the machine's own
// CA certificates it trusts, and the cache file its recipe names.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localCaPem, type NodeBaseRecipe, nodeLayerFile } from '../cluster/base-images.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'teal-local-ca-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const pem = (name: string) => `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`;

describe('localCaPem', () => {
  it('is undefined for a machine with no CA certificates of its own', async () => {
    expect(await localCaPem(join(dir, 'missing'))).toBeUndefined();
    await mkdir(join(dir, 'empty'));
    expect(await localCaPem(join(dir, 'empty'))).toBeUndefined();
  });

  it('joins the .crt files of the folder and its subfolders in name order, and nothing else', async () => {
    const root = join(dir, 'cas');
    await mkdir(join(root, 'corp'), { recursive: true });
    await writeFile(join(root, 'proxy.crt'), pem('proxy'));
    await writeFile(join(root, 'corp', 'root.crt'), pem('corp'));
    await writeFile(join(root, 'README'), 'not a certificate');
    expect(await localCaPem(root)).toBe(`${pem('corp')}${pem('proxy')}`);
  });
});

describe('nodeLayerFile', () => {
  const recipe: NodeBaseRecipe = {
    suite: 'bookworm',
    include: [],
    node: { binary: '/x/node', version: '24.21.0' },
    npm: '11.19.0',
  };

  it('names the versions, and changes with the versions and the CA certificates', () => {
    const file = nodeLayerFile(recipe, '/cache');
    expect(file).toMatch(/^\/cache\/bookworm-node-24\.21\.0-npm-11\.19\.0-[0-9a-f]{12}\.tar\.gz$/);
    expect(nodeLayerFile({ ...recipe, extraCaPem: pem('proxy') }, '/cache')).not.toBe(file);
    expect(nodeLayerFile({ ...recipe, npm: '11.19.1' }, '/cache')).not.toBe(file);
    // The binary's path is where this checkout has it, not what it is.
    expect(nodeLayerFile({ ...recipe, node: { ...recipe.node, binary: '/y/node' } }, '/cache')).toBe(file);
  });
});
