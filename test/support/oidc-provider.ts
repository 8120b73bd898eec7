// A real OpenID Connect provider for the tests (the oidc-provider package) on
// 127.0.0.1 over HTTPS, as kube-apiserver accepts only an https issuer: a CA
// and a certificate for 127.0.0.1 made with openssl for the test, an RSA
// signing key made with node's crypto. Its own login and consent pages
// (devInteractions: any password, the login names the account) are what a
// browser goes through; each account's claims are the test's.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Provider from 'oidc-provider';

const run = promisify(execFile);

/** A CA and a server certificate it signed for 127.0.0.1, all PEM. */
export interface TestPki {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A throwaway CA, and a certificate for IP 127.0.0.1 signed by it (with the SAN and usage Go's TLS client checks). */
export async function makeTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-oidc-pki-'));
  const at = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    await run('openssl', [
      ...['req', '-x509', ...ec, '-days', '1', '-subj', '/CN=teal test CA'],
      ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
      ...['-keyout', at('ca.key'), '-out', at('ca.crt')],
    ]);
    await run('openssl', ['req', ...ec, '-subj', '/CN=127.0.0.1', '-keyout', at('tls.key'), '-out', at('tls.csr')]);
    await writeFile(
      at('ext.cnf'),
      'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
    );
    await run('openssl', [
      ...['x509', '-req', '-in', at('tls.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial'],
      ...['-days', '1', '-out', at('tls.crt'), '-extfile', at('ext.cnf')],
    ]);
    const [caPem = '', certPem = '', keyPem = ''] = await Promise.all(
      ['ca.crt', 'tls.crt', 'tls.key'].map((f) => readFile(at(f), 'utf8')),
    );
    return { caPem, certPem, keyPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface OidcClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface TestOidcProvider {
  /** https://127.0.0.1:PORT, the issuer as its tokens name it. */
  issuer: string;
  caPem: string;
  stop(): Promise<void>;
}

/**
 * The provider, listening on 127.0.0.1 (a port of the OS's choice), for one
 * client; accounts maps a login name to the claims of its id tokens (sub is
 * the login). Claims go in the id token itself (conformIdTokenClaims off), as
 * the API server reads only the id token.
 */
export async function startOidcProvider(
  client: OidcClient,
  accounts: Readonly<Record<string, Record<string, unknown>>>,
  pki: TestPki,
): Promise<TestOidcProvider> {
  const server = createServer({ key: pki.keyPem, cert: pki.certPem });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'teal-test', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: ['teal-test-cookie-key-0123456789abcdef'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    findAccount: (_ctx, id) => {
      const claims = accounts[id];
      if (!claims) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...claims }) };
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    caPem: pki.caPem,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
