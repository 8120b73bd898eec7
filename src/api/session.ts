// Sessions: a bearer token given once (POST /api/v1/session) and kept by the
// browser in a sealed cookie (session-cookie.ts), so a page can call the API
// without holding the token in script-readable storage. A session's user is
// the TokenReview's and is authorized exactly like a bearer caller (a
// SubjectAccessReview per request, with name, groups and extra: no
// impersonation). The token is reviewed again at least every
// REVIEW_INTERVAL_MS, by whichever replica the request reaches, so a deleted
// ServiceAccount or a revoked token ends its sessions within that time.
//
// An OIDC login (oidc.ts) keeps no token: its user is what the id token's
// claims map to, and the session ends when the id token expires, which is
// when the API server stops accepting that token from kubectl too. There is
// no refresh: a refresh token sealed in the cookie would be spent by
// concurrent requests on several replicas at once, which providers that
// rotate refresh tokens treat as theft. Logging in again is one redirect
// while the provider's own session lasts.
import type { ApiAuth, UserInfo } from './auth.ts';
import { ApiError, unauthorized } from './errors.ts';
import {
  clearedCookie,
  MAX_COOKIE_BYTES,
  readCookie,
  type Session,
  type SessionKey,
  seal,
  sessionCookie,
  unseal,
} from './session-cookie.ts';

/** The longest a session's token goes without a TokenReview; --session-review-interval may only shorten it. */
export const REVIEW_INTERVAL_MS = 5 * 60_000;
/** A session ends this long after its login, however valid its token stays. */
export const SESSION_LIFETIME_MS = 8 * 60 * 60_000;

export interface SessionsOptions {
  key: SessionKey;
  auth: Pick<ApiAuth, 'reviewToken'>;
  /** Served over TLS: the cookie is Secure and __Host- prefixed. */
  tls: boolean;
  /** At most REVIEW_INTERVAL_MS (the default). */
  reviewIntervalMs?: number;
  now?: () => number;
}

/** A caller's user and how it came: a bearer header, a session cookie, or nothing (anonymous, reads only). */
export interface Caller {
  user: UserInfo;
  via: 'bearer' | 'session' | 'anonymous';
}

/** What a request shows of who sends it. */
export interface Credentials {
  authorization?: string | undefined;
  /** The Cookie header. */
  cookie?: string | undefined;
}

export class Sessions {
  readonly tls: boolean;
  private readonly key: SessionKey;
  private readonly auth: Pick<ApiAuth, 'reviewToken'>;
  private readonly reviewIntervalMs: number;
  private readonly now: () => number;

  constructor(opts: SessionsOptions) {
    const interval = opts.reviewIntervalMs ?? REVIEW_INTERVAL_MS;
    if (!(interval >= 0 && interval <= REVIEW_INTERVAL_MS)) {
      throw new Error(`sessions: the review interval must be between 0 and ${REVIEW_INTERVAL_MS} ms`);
    }
    this.key = opts.key;
    this.auth = opts.auth;
    this.tls = opts.tls;
    this.reviewIntervalMs = interval;
    this.now = opts.now ?? Date.now;
  }

  /** The session cookie's value in a Cookie header, if any. */
  cookieOf(cookieHeader: string | undefined): string | undefined {
    return readCookie(cookieHeader, this.tls);
  }

  /** A login: the token reviewed (401 when rejected, 503 when the review fails), then sealed into a Set-Cookie. */
  async login(token: string): Promise<{ user: UserInfo; setCookie: string }> {
    const user = await this.auth.reviewToken(token);
    const now = this.now();
    const setCookie = this.cookie({
      v: 1,
      kind: 'token',
      user,
      token,
      reviewedAt: now,
      expiresAt: now + SESSION_LIFETIME_MS,
    });
    return { user, setCookie };
  }

  /** An OIDC login's session: the user its claims map to, until the id token expires (ms since the epoch). */
  oidcLogin(user: UserInfo, idTokenExpiresAt: number): string {
    const expiresAt = Math.min(idTokenExpiresAt, this.now() + SESSION_LIFETIME_MS);
    return this.cookie({ v: 1, kind: 'oidc', user, expiresAt });
  }

  /**
   * The user of a session cookie, and a renewed cookie when its token was
   * reviewed again. A cookie that does not open, an ended session or a token
   * the API server now rejects: 401, with a Set-Cookie that clears it.
   */
  async resume(value: string): Promise<{ user: UserInfo; setCookie?: string }> {
    const session = unseal(this.key, value);
    if (!session)
      throw this.ended('the session cookie is not one of this operator (sealed with another key, or changed)');
    const now = this.now();
    if (session.expiresAt <= now) throw this.ended('the session has expired');
    if (session.kind === 'oidc') return { user: session.user };
    if (now - session.reviewedAt < this.reviewIntervalMs) return { user: session.user };
    let user: UserInfo;
    try {
      user = await this.auth.reviewToken(session.token);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) throw this.ended("the session's token is no longer valid");
      throw err;
    }
    return { user, setCookie: this.cookie({ ...session, user, reviewedAt: now }) };
  }

  /** The Set-Cookie of a logout. */
  logout(): string {
    return clearedCookie(this.tls);
  }

  private cookie(session: Session): string {
    const setCookie = sessionCookie(this.tls, seal(this.key, session));
    const size = setCookie.split(';')[0]?.length ?? 0;
    if (size > MAX_COOKIE_BYTES) {
      throw new ApiError(
        400,
        `the ${session.kind === 'token' ? 'token' : 'user'} is too long to keep in a session cookie (${size} bytes sealed, at most ${MAX_COOKIE_BYTES})`,
      );
    }
    return setCookie;
  }

  private ended(why: string): ApiError {
    return new ApiError(401, `${why}: log in again`, {
      'www-authenticate': 'Bearer',
      'set-cookie': clearedCookie(this.tls),
    });
  }
}

/**
 * Who calls: a bearer header when there is one (curl, kubectl teal), else
 * the session cookie; neither is a 401, or the anonymous user when given (a
 * read, with --dashboard-anonymous=read). Credentials that fail are a 401
 * even then: an ended session says so rather than turning anonymous. renew
 * receives the Set-Cookie of a session whose token was just reviewed again.
 */
export async function identify(
  credentials: Credentials,
  auth: Pick<ApiAuth, 'authenticate'>,
  sessions: Sessions,
  renew: (setCookie: string) => void,
  anonymous?: UserInfo,
): Promise<Caller> {
  if (credentials.authorization !== undefined && credentials.authorization !== '') {
    return { user: await auth.authenticate(credentials.authorization), via: 'bearer' };
  }
  const value = sessions.cookieOf(credentials.cookie);
  if (value === undefined && anonymous !== undefined) return { user: anonymous, via: 'anonymous' };
  if (value === undefined) {
    throw unauthorized('log in (POST /api/v1/session) or send an Authorization: Bearer <token> header');
  }
  const { user, setCookie } = await sessions.resume(value);
  if (setCookie !== undefined) renew(setCookie);
  return { user, via: 'session' };
}
