// rest.ts's reading of kubeconfig files (issue #27 §2 "Fast": `kubectl teal get`
// without client-node): the context, cluster and user kubectl would use, merged
// across files as kubectl merges them, or undefined for what it leaves to client-node.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type KubeconfigFile, restTarget } from '../../src/cli/rest.ts';

const dir = mkdtempSync(join(tmpdir(), 'teal-rest-target-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cluster = (name: string, fields: Record<string, unknown>) => ({ name, cluster: fields });
const user = (name: string, fields: Record<string, unknown>) => ({ name, user: fields });
const context = (name: string, fields: Record<string, unknown>) => ({ name, context: fields });

/** One kubeconfig file in dir. */
function file(doc: Record<string, unknown>, folder = dir): KubeconfigFile {
  return { dir: folder, doc };
}

const base = {
  clusters: [cluster('c', { server: 'https://127.0.0.1:6443', 'certificate-authority-data': 'Q0E=' })],
  users: [user('u', { token: 'abc' })],
  contexts: [context('x', { cluster: 'c', user: 'u', namespace: 'team' })],
  'current-context': 'x',
};

describe('restTarget', () => {
  it('reads the current context: server, CA data, bearer token, namespace', () => {
    expect(restTarget([file(base)], {}, {})).toEqual({
      server: 'https://127.0.0.1:6443',
      namespace: 'team',
      user: 'u',
      ca: Buffer.from('CA'),
      insecure: false,
      authorization: 'Bearer abc',
    });
  });

  it('takes -n over the context namespace, and "default" without either', () => {
    expect(restTarget([file(base)], { namespace: 'other' }, {})?.namespace).toBe('other');
    const noNs = { ...base, contexts: [context('x', { cluster: 'c', user: 'u' })] };
    expect(restTarget([file(noNs)], {}, {})?.namespace).toBe('default');
  });

  it('reads files named relative to the kubeconfig, and a tokenFile trimmed', () => {
    const folder = mkdtempSync(join(dir, 'rel-'));
    writeFileSync(join(folder, 'ca.crt'), 'CA-FILE');
    writeFileSync(join(folder, 'token'), 'from-file\n');
    writeFileSync(join(folder, 'tls.crt'), 'CERT');
    writeFileSync(join(folder, 'tls.key'), 'KEY');
    const doc = {
      ...base,
      clusters: [cluster('c', { server: 'https://h:1', 'certificate-authority': 'ca.crt', 'tls-server-name': 'api' })],
      users: [user('u', { tokenFile: 'token', 'client-certificate': 'tls.crt', 'client-key': 'tls.key' })],
    };
    expect(restTarget([file(doc, folder)], {}, {})).toMatchObject({
      ca: Buffer.from('CA-FILE'),
      cert: Buffer.from('CERT'),
      key: Buffer.from('KEY'),
      servername: 'api',
      authorization: 'Bearer from-file',
    });
  });

  it('merges files as kubectl does: the first to name an entry or the current context wins', () => {
    const first = { users: [user('u', { token: 'first' })], 'current-context': 'x' };
    const second = {
      ...base,
      users: [user('u', { token: 'second' })],
      'current-context': 'y',
      contexts: [...base.contexts, context('y', { cluster: 'c', user: 'u', namespace: 'y' })],
    };
    expect(restTarget([file(first), file(second)], {}, {})).toMatchObject({
      namespace: 'team',
      authorization: 'Bearer first',
    });
    expect(restTarget([file(first), file(second)], { context: 'y' }, {})?.namespace).toBe('y');
  });

  it('sends basic auth, and an insecure cluster without a CA', () => {
    const doc = {
      ...base,
      clusters: [cluster('c', { server: 'https://h:1', 'insecure-skip-tls-verify': true })],
      users: [user('u', { username: 'admin', password: 'pw' })],
    };
    expect(restTarget([file(doc)], {}, {})).toMatchObject({
      insecure: true,
      authorization: `Basic ${Buffer.from('admin:pw').toString('base64')}`,
    });
  });

  it.each([
    ['an exec plugin', { ...base, users: [user('u', { exec: { command: 'aws' } })] }],
    ['an auth-provider', { ...base, users: [user('u', { 'auth-provider': { name: 'oidc' } })] }],
    ['impersonation', { ...base, users: [user('u', { token: 'abc', as: 'someone' })] }],
    ['a proxy-url', { ...base, clusters: [cluster('c', { server: 'https://h:1', 'proxy-url': 'http://p:3128' })] }],
    ['a context that is not there', { ...base, 'current-context': 'missing' }],
    ['no current context', { ...base, 'current-context': undefined }],
    ['a cluster without a server', { ...base, clusters: [cluster('c', {})] }],
    ['a tokenFile that cannot be read', { ...base, users: [user('u', { tokenFile: 'nowhere' })] }],
    ['a certificate without its key', { ...base, users: [user('u', { 'client-certificate-data': 'Qw==' })] }],
    ['client-node default server', { ...base, clusters: [cluster('c', { server: 'http://localhost:8080' })] }],
  ])('leaves %s to client-node', (_what, doc) => {
    expect(restTarget([file(doc)], {}, {})).toBeUndefined();
  });

  it('leaves a proxy in the environment to client-node', () => {
    expect(restTarget([file(base)], {}, { HTTPS_PROXY: 'http://proxy:3128' })).toBeUndefined();
  });
});
