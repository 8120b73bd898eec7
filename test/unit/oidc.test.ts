// Login by OIDC without a provider (src/api/oidc-claims.ts, oidc.ts, the
// session of an OIDC login in session.ts, the --oidc-* flags in config.ts):
// claims mapped to a user as kube-apiserver's JWT authenticator maps them,
// the flow's small rules, and the flags' checks. The real provider, browser
// and API server: test/e2e/dashboard-oidc.test.ts.
import { describe, expect, it } from 'vitest';
import { localPath, redirectUrlFor } from '../../src/api/oidc.ts';
import { AUTHENTICATED_GROUP, type OidcClaimMapping, userOfClaims } from '../../src/api/oidc-claims.ts';
import { SESSION_LIFETIME_MS, Sessions } from '../../src/api/session.ts';
import { randomSessionKey, readCookie } from '../../src/api/session-cookie.ts';
import { parseConfig } from '../../src/config.ts';

const mapping = (m: Partial<OidcClaimMapping> = {}): OidcClaimMapping => ({
  usernameClaim: 'sub',
  usernamePrefix: '',
  groupsPrefix: '',
  ...m,
});

describe('claims mapped to a user, as the API server maps them', () => {
  it('takes the username claim with its prefix, and the groups claim with its prefix, plus system:authenticated', () => {
    const claims = { sub: '1234', email: 'ann@example.com', email_verified: true, groups: ['dev', 'ops'] };
    expect(
      userOfClaims(
        claims,
        mapping({ usernameClaim: 'email', usernamePrefix: 'oidc:', groupsClaim: 'groups', groupsPrefix: 'oidc:' }),
      ),
    ).toEqual({ username: 'oidc:ann@example.com', groups: ['oidc:dev', 'oidc:ops', AUTHENTICATED_GROUP] });
    // An empty prefix is no prefix; no groups claim configured: no groups but system:authenticated.
    expect(userOfClaims(claims, mapping())).toEqual({ username: '1234', groups: [AUTHENTICATED_GROUP] });
  });

  it('reads a groups claim that is a single string as one group, and an absent one as none', () => {
    const m = mapping({ groupsClaim: 'role', groupsPrefix: 'idp:' });
    expect(userOfClaims({ sub: 'a', role: 'admin' }, m).groups).toEqual(['idp:admin', AUTHENTICATED_GROUP]);
    expect(userOfClaims({ sub: 'a' }, m).groups).toEqual([AUTHENTICATED_GROUP]);
  });

  it('refuses, naming the claim: no username claim, a username that is not a string, groups that are not strings', () => {
    expect(() => userOfClaims({ sub: 'a' }, mapping({ usernameClaim: 'email' }))).toThrow(
      'the id token has no "email" claim (the username claim)',
    );
    expect(() => userOfClaims({ sub: 42 }, mapping())).toThrow('"sub" claim (the username claim) is not a string');
    expect(() => userOfClaims({ sub: 'a', groups: ['dev', 7] }, mapping({ groupsClaim: 'groups' }))).toThrow(
      '"groups" claim (the groups claim) is neither a string nor a list of strings',
    );
    expect(() => userOfClaims({ sub: '' }, mapping())).toThrow('"sub" claim (the username claim) is empty');
  });

  it('with the email claim, refuses an email whose email_verified claim is there and not true', () => {
    const m = mapping({ usernameClaim: 'email' });
    expect(() => userOfClaims({ email: 'ann@example.com', email_verified: false }, m)).toThrow(
      "the id token's email is not verified",
    );
    expect(() => userOfClaims({ email: 'ann@example.com', email_verified: 'true' }, m)).toThrow('not verified');
    // Absent, it is not checked (as the API server does); other username claims never check it.
    expect(userOfClaims({ email: 'ann@example.com' }, m).username).toBe('ann@example.com');
    expect(userOfClaims({ sub: 'a', email_verified: false }, mapping()).username).toBe('a');
  });
});

describe('the OIDC flow', () => {
  it('returns only to a page of this dashboard after the login', () => {
    expect(localPath('/apps?ns=team-a')).toBe('/apps?ns=team-a');
    for (const next of ['//evil.example.com/', '/\\evil.example.com', 'https://evil.example.com/', '', undefined]) {
      expect(localPath(next)).toBe('/apps');
    }
  });

  it('uses the redirect URL of the host the dashboard was opened at, and none for another host', () => {
    const urls = [
      'https://teal.example.com/api/v1/session/oidc/callback',
      'http://localhost:8081/api/v1/session/oidc/callback',
    ].map((u) => new URL(u));
    expect(redirectUrlFor(urls, 'localhost:8081')?.href).toBe(urls[1]?.href);
    expect(redirectUrlFor(urls, 'TEAL.example.com')?.href).toBe(urls[0]?.href);
    expect(redirectUrlFor(urls, 'evil.example.com')).toBeUndefined();
    expect(redirectUrlFor(urls, undefined)).toBeUndefined();
  });

  it("keeps an OIDC session until the id token's expiry (at most the session lifetime), with no review", async () => {
    let now = 1_000_000;
    const reviews: string[] = [];
    const auth = {
      reviewToken: async (token: string) => {
        reviews.push(token);
        throw new Error('an OIDC session has no token to review');
      },
    };
    const s = new Sessions({ key: randomSessionKey(), auth, tls: false, now: () => now });
    const user = { username: 'oidc:ann@example.com', groups: ['oidc:dev', AUTHENTICATED_GROUP] };
    const value = readCookie(s.oidcLogin(user, now + 60 * 60_000).split(';')[0], false) ?? '';
    now += 60 * 60_000 - 1;
    expect(await s.resume(value)).toEqual({ user });
    now += 1;
    await expect(s.resume(value)).rejects.toMatchObject({
      status: 401,
      message: 'the session has expired: log in again',
    });
    expect(reviews).toEqual([]);
    // An id token valid for days still gives a session of at most SESSION_LIFETIME_MS.
    const long = readCookie(s.oidcLogin(user, now + 7 * 24 * 60 * 60_000).split(';')[0], false) ?? '';
    now += SESSION_LIFETIME_MS;
    await expect(s.resume(long)).rejects.toMatchObject({ status: 401 });
  });
});

describe('--oidc-* flags', () => {
  const ISSUER = ['--oidc-issuer-url', 'https://idp.example.com/realms/k8s'];
  const GOOD = [
    ...ISSUER,
    ...['--oidc-client-id', 'teal', '--oidc-username-prefix=oidc:'],
    ...['--oidc-redirect-url', 'https://teal.example.com/api/v1/session/oidc/callback'],
  ];
  const problem = (args: string[]) => {
    try {
      parseConfig(args, {});
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('read together into the settings, with the defaults filled in', () => {
    const config = parseConfig([...GOOD, '--oidc-extra-scopes', 'email, groups,email'], {});
    expect(config).toMatchObject({
      oidcIssuerUrl: new URL('https://idp.example.com/realms/k8s'),
      oidcClientId: 'teal',
      oidcUsernameClaim: 'sub',
      oidcUsernamePrefix: 'oidc:',
      oidcExtraScopes: ['email', 'groups'],
      oidcRedirectUrl: [new URL('https://teal.example.com/api/v1/session/oidc/callback')],
    });
    // An empty prefix is a prefix given: none.
    expect(problem([...GOOD.filter((a) => !a.startsWith('--oidc-username-prefix')), '--oidc-username-prefix='])).toBe(
      undefined,
    );
    // No OIDC flag: no OIDC login.
    expect(parseConfig([], {})).toMatchObject({ oidcIssuerUrl: undefined, oidcRedirectUrl: [] });
  });

  it.each([
    [['--oidc-issuer-url', 'http://idp.example.com'], '--oidc-issuer-url: "http://idp.example.com" must be https://'],
    [['--oidc-issuer-url', 'idp.example.com'], '--oidc-issuer-url: "idp.example.com" is not a URL'],
    [
      ['--oidc-issuer-url', 'https://idp.example.com/?a=b'],
      '--oidc-issuer-url: "https://idp.example.com/?a=b" must have no query',
    ],
    [['--oidc-client-id', 'teal'], '--oidc-client-id: needs --oidc-issuer-url'],
    [['--oidc-username-claim', 'email'], '--oidc-username-claim: needs --oidc-issuer-url'],
    [[...ISSUER], '--oidc-client-id: required with --oidc-issuer-url'],
    [[...ISSUER, '--oidc-client-id', 'teal'], '--oidc-redirect-url: required with --oidc-issuer-url'],
    [
      [
        ...ISSUER,
        '--oidc-client-id',
        'teal',
        '--oidc-redirect-url',
        'https://teal.example.com/api/v1/session/oidc/callback',
      ],
      '--oidc-username-prefix: required with --oidc-issuer-url',
    ],
    [[...GOOD, '--oidc-groups-claim', 'groups'], '--oidc-groups-prefix: required with --oidc-groups-claim'],
    [[...GOOD, '--oidc-groups-prefix=oidc:'], '--oidc-groups-prefix: needs --oidc-groups-claim'],
    [
      [...GOOD.slice(0, -1), 'https://teal.example.com/callback'],
      '--oidc-redirect-url: https://teal.example.com/callback must end in /api/v1/session/oidc/callback',
    ],
    [[...GOOD, '--oidc-extra-scopes', 'email,"groups"'], '--oidc-extra-scopes: each scope must be printable ASCII'],
  ])('%j is refused: %s', (args, message) => {
    expect(problem(args)?.split('\n')[0]).toContain(message);
  });
});
