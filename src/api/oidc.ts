// Login by OIDC (issue #25): the authorization code flow with PKCE (S256),
// through openid-client, which verifies the id token (signature by the
// issuer's keys, issuer, audience, nonce, expiry, issued-at with a small
// clock tolerance). The token's claims then map to a user exactly as the API
// server maps them for the same settings (oidc-claims.ts), and the session
// cookie holds that user until the id token expires (session.ts).
//
// Between start and callback the browser keeps the flow (state, nonce, PKCE
// verifier, where to go after) in a short-lived cookie sealed with the session
// key, so any replica can finish a login another started and nothing is
// stored. The callback's state must equal the cookie's: another site cannot
// make a browser finish a login it did not start.
import { timingSafeEqual } from 'node:crypto';
import * as client from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { z } from 'zod';
import { OIDC_CALLBACK, OIDC_START } from '../app/dashboard-pages.ts';
import type { UserInfo } from './auth.ts';
import { ClaimsRejected, type OidcClaimMapping, userOfClaims } from './oidc-claims.ts';
import { readNamedCookie, type SessionKey, sealValue, unsealValue } from './session-cookie.ts';

/** What --oidc-* give, read (the client secret and the CA are the files' contents). */
export interface OidcSettings {
  issuer: URL;
  clientId: string;
  /** None: a public client, PKCE alone (token_endpoint_auth_method none). */
  clientSecret?: string | undefined;
  /** PEM certificates the issuer's TLS certificate must chain to; none: the system's. */
  ca?: Buffer | undefined;
  mapping: OidcClaimMapping;
  /** Scopes asked besides openid. */
  extraScopes: readonly string[];
  /** The callback URLs registered at the provider; a login uses the one of the host it was started on. */
  redirectUrls: readonly URL[];
  /** Shown on the login page: "Log in with <name>". */
  providerName: string;
}

/** Where a login starts and where the provider sends the browser back. */
export const OIDC_PATHS = { start: OIDC_START, callback: OIDC_CALLBACK } as const;

/** How long a started login may take at the provider before its flow cookie is gone. */
export const FLOW_LIFETIME_MS = 10 * 60_000;

/** How an OIDC login ended, besides 'ok': the result label of teal_dashboard_logins_total. */
export type OidcFailure = 'bad_state' | 'bad_token' | 'provider_error';

/** A login that ends without a session: the page's status and message, the metric's result. */
export class OidcLoginFailed extends Error {
  readonly result: OidcFailure;
  readonly status: 400 | 401 | 503;

  constructor(result: OidcFailure, status: 400 | 401 | 503, message: string) {
    super(message);
    this.result = result;
    this.status = status;
  }
}

const FlowSchema = z.strictObject({
  v: z.literal(1),
  kind: z.literal('oidc-flow'),
  state: z.string().min(1),
  nonce: z.string().min(1),
  verifier: z.string().min(1),
  redirectUri: z.string().min(1),
  next: z.string(),
  expiresAt: z.int(),
});
type Flow = z.output<typeof FlowSchema>;

/** The flow cookie's name and path: the browser sends it to the two OIDC routes only. */
export const FLOW_COOKIE = 'teal_oidc_flow';
const FLOW_PATH = OIDC_START.slice(0, OIDC_START.lastIndexOf('/') + 1);

/**
 * SameSite=Lax, not Strict as the session cookie: the provider sends the
 * browser back with a top-level cross-site GET navigation, on which a browser
 * sends Lax cookies but not Strict ones. Lax still keeps it off cross-site
 * subrequests and POSTs, and it holds nothing usable without the provider's
 * code for this browser.
 */
function flowCookie(tls: boolean, value: string, maxAgeS: number): string {
  return `${FLOW_COOKIE}=${value}; Path=${FLOW_PATH}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${tls ? '; Secure' : ''}`;
}

/** A page of this dashboard to go to after the login, never another origin: / and not // or /\. */
export const localPath = (next: string | undefined): string =>
  next !== undefined && /^\/(?![/\\])/.test(next) ? next : '/apps';

/** The redirect URL of the host the login was started on (the Host header), or undefined. */
export function redirectUrlFor(urls: readonly URL[], host: string | undefined): URL | undefined {
  if (host === undefined) return undefined;
  return urls.find((u) => u.host === host.toLowerCase());
}

export interface OidcLoginOptions {
  key: SessionKey;
  /** Served over TLS: the flow cookie is Secure. */
  tls: boolean;
  now?: () => number;
}

export class OidcLogin {
  readonly providerName: string;
  private readonly settings: OidcSettings;
  private readonly key: SessionKey;
  private readonly tls: boolean;
  private readonly now: () => number;
  private discovered: Promise<client.Configuration> | undefined;

  constructor(settings: OidcSettings, opts: OidcLoginOptions) {
    this.settings = settings;
    this.providerName = settings.providerName;
    this.key = opts.key;
    this.tls = opts.tls;
    this.now = opts.now ?? Date.now;
  }

  /** The provider's authorization URL for a new login, and the flow cookie that goes with it. */
  async start(host: string | undefined, next: string | undefined): Promise<{ location: string; setCookie: string }> {
    const redirect = redirectUrlFor(this.settings.redirectUrls, host);
    if (redirect === undefined) {
      const hosts = this.settings.redirectUrls.map((u) => u.host).join(', ');
      throw new OidcLoginFailed(
        'bad_state',
        400,
        `this dashboard was opened at ${host ?? 'an unknown host'}, which no --oidc-redirect-url names (${hosts}): open it at one of those`,
      );
    }
    const config = await this.configuration();
    const flow: Flow = {
      v: 1,
      kind: 'oidc-flow',
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      redirectUri: redirect.href,
      next: localPath(next),
      expiresAt: this.now() + FLOW_LIFETIME_MS,
    };
    const location = client.buildAuthorizationUrl(config, {
      redirect_uri: flow.redirectUri,
      scope: ['openid', ...this.settings.extraScopes].join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    const setCookie = flowCookie(this.tls, sealValue(this.key, flow), FLOW_LIFETIME_MS / 1000);
    return { location: location.href, setCookie };
  }

  /** The Set-Cookie that makes the browser forget the flow: once a callback is served, it is spent. */
  clearFlow(): string {
    return flowCookie(this.tls, '', 0);
  }

  /**
   * The provider's answer at the callback (its query string): the flow cookie
   * must be there and its state match, then the code is exchanged and the id
   * token verified. Throws OidcLoginFailed.
   */
  async finish(
    query: string,
    cookieHeader: string | undefined,
  ): Promise<{ user: UserInfo; idTokenExpiresAt: number; next: string }> {
    const flow = this.flowOf(cookieHeader);
    const params = new URLSearchParams(query);
    const state = params.get('state') ?? '';
    if (!sameText(state, flow.state)) {
      throw new OidcLoginFailed('bad_state', 401, "the provider's answer is not for the login this browser started");
    }
    const providerError = params.get('error');
    if (providerError !== null) {
      const description = params.get('error_description');
      throw new OidcLoginFailed(
        'provider_error',
        401,
        `${this.providerName} refused the login: ${providerError}${description ? ` (${description})` : ''}`,
      );
    }
    const config = await this.configuration();
    const current = new URL(flow.redirectUri);
    current.search = params.toString();
    let claims: client.IDToken;
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idClaims = tokens.claims();
      if (idClaims === undefined) throw new Error('no id token');
      claims = idClaims;
    } catch (err) {
      throw grantFailure(err, this.providerName);
    }
    try {
      return {
        user: userOfClaims(claims, this.settings.mapping),
        idTokenExpiresAt: claims.exp * 1000,
        next: flow.next,
      };
    } catch (err) {
      if (err instanceof ClaimsRejected) throw new OidcLoginFailed('bad_token', 401, err.message);
      throw err;
    }
  }

  private flowOf(cookieHeader: string | undefined): Flow {
    const value = readNamedCookie(cookieHeader, FLOW_COOKIE);
    const flow = value === undefined ? undefined : unsealValue(this.key, value, FlowSchema);
    if (flow === undefined || flow.expiresAt <= this.now()) {
      throw new OidcLoginFailed(
        'bad_state',
        401,
        'this browser has no login in progress (none started here, or it took over 10 minutes): log in again',
      );
    }
    return flow;
  }

  /** The provider's metadata, discovered once; a failed discovery is tried again at the next login. */
  private configuration(): Promise<client.Configuration> {
    if (this.discovered) return this.discovered;
    const { issuer, clientId, clientSecret, ca } = this.settings;
    const auth = clientSecret === undefined ? client.None() : client.ClientSecretBasic(clientSecret);
    const options: client.DiscoveryRequestOptions = ca ? { [client.customFetch]: fetchTrusting(ca) } : {};
    const discovered = client.discovery(issuer, clientId, undefined, auth, options).catch((err: unknown) => {
      this.discovered = undefined;
      throw new OidcLoginFailed(
        'provider_error',
        503,
        `${this.providerName} (${issuer.href}) could not be reached: ${errorText(err)}`,
      );
    });
    this.discovered = discovered;
    return discovered;
  }
}

/** What openid-client threw at the code exchange, as a failed login. */
function grantFailure(err: unknown, providerName: string): OidcLoginFailed {
  if (err instanceof OidcLoginFailed) return err;
  // The provider answered the token request with an OAuth error (a spent code, a wrong secret).
  if (err instanceof client.ResponseBodyError || err instanceof client.AuthorizationResponseError) {
    return new OidcLoginFailed('provider_error', 401, `${providerName} refused the code: ${err.error}`);
  }
  // The provider could not be reached.
  if (err instanceof TypeError || (err instanceof Error && err.name === 'AbortError')) {
    return new OidcLoginFailed('provider_error', 503, `${providerName} could not be reached: ${errorText(err)}`);
  }
  // The id token failed a check (issuer, audience, nonce, expiry, issued-at, signature).
  return new OidcLoginFailed('bad_token', 401, `the id token was refused: ${errorText(err)}`);
}

const errorText = (err: unknown): string => {
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err instanceof Error ? err.message : String(err)}${cause}`;
};

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * fetch trusting these CAs for the issuer (--oidc-ca-file): undici's own, as
 * Node's built-in fetch cannot take a dispatcher of this undici's major version.
 */
function fetchTrusting(ca: Buffer): client.CustomFetch {
  const dispatcher = new Agent({ connect: { ca } });
  return ((url: string, options: client.CustomFetchOptions) =>
    undiciFetch(url, {
      ...(options as unknown as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as client.CustomFetch;
}
