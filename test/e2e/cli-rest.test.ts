// `kubectl teal get` reads through plain HTTPS (src/cli/rest.ts) when the
// kubeconfig allows it, and through client-node's Session otherwise (issue #27
// §2 "Fast"). Both must show the same: each reader draws the same App's tree
// on the real API server, for kubeconfigs of the kinds rest.ts reads (files
// relative to the kubeconfig, data inline, a token in a tokenFile, two files
// merged) and for a user whose lists are refused.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { AppReader, ConnectOptions } from '../../src/cli/app-object.ts';
import { loadView } from '../../src/cli/commands/get.ts';
import { Session } from '../../src/cli/kube.ts';
import { formatData } from '../../src/cli/output.ts';
import { RestReader, readKubeconfigFiles, restTarget } from '../../src/cli/rest.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, phase, waitForApp } from '../support/apps.ts';
import { createNamespace } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount } from '../support/users.ts';

const APP = 'rest';

/** The fast reader of these options; fails the test when rest.ts would leave them to client-node. */
async function fastReader(options: ConnectOptions): Promise<RestReader> {
  const files = readKubeconfigFiles(options);
  const target = files ? restTarget(files, options, {}) : undefined;
  if (!target) throw new Error(`rest.ts does not read ${JSON.stringify(options)}`);
  return RestReader.of(target);
}

async function view(reader: AppReader): Promise<{ json: string; warnings: string }> {
  const writes: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => {
    writes.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    // The three lists are read at once: their warnings come in either order.
    return {
      json: formatData(await loadView(reader, APP), 'json'),
      warnings: writes.join('').split('\n').sort().join('\n'),
    };
  } finally {
    process.stderr.write = write;
    if (reader instanceof RestReader) reader.close();
  }
}

describe('kubectl teal get: the HTTPS reader and client-node read the same tree', () => {
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;
  let dir: string;
  let operator: Operator | undefined;

  beforeAll(async () => {
    ({ name: ns, remove: removeNs } = await createNamespace('cli-rest'));
    dir = await mkdtemp(join(tmpdir(), 'teal-cli-rest-'));
    operator = await startOperator({ namespace: ns });
    await createApp(ns, e2eApp(APP));
    await waitForApp(ns, APP, 'first release Healthy', phase('Healthy'));
  });

  afterAll(async () => {
    await operator?.stop();
    await removeNs?.();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('with the test cluster kubeconfig (CA, client certificate and key in files)', async () => {
    const options = { kubeconfig: inject('kubeconfig'), namespace: ns };
    const fast = await view(await fastReader(options));
    expect(fast.json).toMatch(/"replicaSet": \{\s+"name": "rest-[0-9a-z]+"/);
    expect(fast.json).toMatch(/"status": "Running"/);
    expect(fast).toEqual(await view(new Session(options)));
  });

  it('with the same credentials inline, a token in a tokenFile, and two files merged', async () => {
    const admin = parse(await readFile(inject('kubeconfig'), 'utf8')) as {
      clusters: { name: string; cluster: Record<string, string> }[];
    };
    const [entry] = admin.clusters;
    if (!entry) throw new Error('no cluster in the test kubeconfig');
    const ca = await readFile(entry.cluster['certificate-authority'] ?? '');
    const token = await serviceAccount(ns, 'reader', ['get', 'list']);
    await writeFile(join(dir, 'token'), `${token}\n`);
    // The cluster and the user in one file, the context (and the current one) in another.
    await writeFile(
      join(dir, 'creds.yaml'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: entry.cluster.server, 'certificate-authority-data': ca.toString('base64') } },
        ],
        users: [{ name: 'reader', user: { tokenFile: 'token' } }],
      }),
    );
    await writeFile(
      join(dir, 'contexts.yaml'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        contexts: [{ name: 'r', context: { cluster: 'c', user: 'reader', namespace: ns } }],
        'current-context': 'r',
      }),
    );
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = `${join(dir, 'contexts.yaml')}:${join(dir, 'creds.yaml')}`;
    try {
      const fast = await view(await fastReader({}));
      // The reader may get Apps but not list ReplicaSets, pods or Jobs: the same refusals, worded the same.
      expect(fast.warnings).toContain('cannot list replicasets.apps');
      expect(fast).toEqual(await view(new Session({})));
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  it('explains a missing App in the same words', async () => {
    const options = { kubeconfig: inject('kubeconfig'), namespace: ns };
    const reader = await fastReader(options);
    const fast = await reader.getApp('missing').catch((err: Error) => err.message);
    reader.close();
    const slow = await new Session(options).getApp('missing').catch((err: Error) => err.message);
    expect(fast).toBe(`App "missing" not found in namespace "${ns}"`);
    expect(fast).toBe(slow);
  });
});
