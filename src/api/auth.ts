// Who may call the API: the caller's Kubernetes token, checked with a
// TokenReview, then a SubjectAccessReview per request whose verb is the
// action. RBAC stays the single source of truth: `kubectl auth can-i promote
// apps.teal.dev` answers for the API too.
//
// Tokens are secrets: they are never logged, and never kept (but sealed in a
// session cookie, session.ts). TokenReviews are cached under a sha256 of the
// token: a positive one for a few seconds, so a burst of calls costs one
// review, and a rejected one for a minute, so a garbage token sent again and
// again costs one review a minute. Access reviews are not cached: a revoked
// RoleBinding takes effect on the next call.
import { createHash } from 'node:crypto';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  type KubeConfig,
  type V1SubjectAccessReview,
} from '@kubernetes/client-node';
import { GROUP, PLURAL } from '../app/schema.ts';
import { errorMessage } from '../kube/errors.ts';
import { ApiError, unauthorized } from './errors.ts';

/** The authenticated caller, as the TokenReview named it. */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** A request on apps.teal.dev: verb get, list, watch or an action; no namespace means cluster-wide. */
export interface AccessRequest {
  verb: string;
  namespace?: string;
  name?: string;
}

/** What the API needs of authentication and authorization; KubeAuth does both against the API server. */
export interface ApiAuth {
  /** Throws ApiError 401 for a missing or invalid token, 503 when the review itself fails. */
  authenticate(authorization: string | undefined): Promise<UserInfo>;
  /** The same for a token given alone (a login's body, a session's token reviewed again). */
  reviewToken(token: string): Promise<UserInfo>;
  /** Throws ApiError 403 when not allowed, 503 when the review itself fails. */
  authorize(user: UserInfo, request: AccessRequest): Promise<void>;
}

export interface KubeAuthOptions {
  /** The operator's own identity: it needs create on tokenreviews and subjectaccessreviews (system:auth-delegator). */
  kubeConfig: KubeConfig;
  /** How long a positive TokenReview is trusted; default 10 s, 0 turns the cache off (the negative one too). */
  tokenCacheTtlMs?: number;
  /** How long a token the API server rejected is rejected without asking again; default 60 s. */
  rejectedTokenTtlMs?: number;
  /** Most tokens remembered at once; default 1,000. */
  maxCachedTokens?: number;
  /** Audiences the token must be meant for; default the API server's own. */
  audiences?: string[];
  now?: () => number;
}

/**
 * Pino redact paths for servers that log request or answer headers: neither a
 * token nor a session cookie (which holds one, sealed) may reach a log.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'request.headers.authorization',
  'req.headers.cookie',
  'headers.cookie',
  'request.headers.cookie',
  'res.headers["set-cookie"]',
  'headers["set-cookie"]',
];

// Real tokens are well under this (JWTs of a few KB); longer ones are not worth a review.
export const MAX_TOKEN_LENGTH = 16 * 1024;

/** The default of KubeAuthOptions.rejectedTokenTtlMs. */
export const REJECTED_TOKEN_TTL_MS = 60_000;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer +([^\s]+) *$/i);
  const token = match?.[1];
  return token !== undefined && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

const tokenKey = (token: string) => createHash('sha256').update(token).digest('hex');

interface CachedReview {
  expires: number;
  user: Promise<UserInfo>;
}

export class KubeAuth implements ApiAuth {
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  private readonly ttlMs: number;
  private readonly rejectedTtlMs: number;
  private readonly maxTokens: number;
  private readonly audiences: string[] | undefined;
  private readonly now: () => number;
  // Holds promises, so concurrent calls with one token share one review.
  private readonly reviews = new Map<string, CachedReview>();

  constructor(options: KubeAuthOptions) {
    this.authn = options.kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authz = options.kubeConfig.makeApiClient(AuthorizationV1Api);
    this.ttlMs = options.tokenCacheTtlMs ?? 10_000;
    this.rejectedTtlMs = options.rejectedTokenTtlMs ?? REJECTED_TOKEN_TTL_MS;
    this.maxTokens = options.maxCachedTokens ?? 1000;
    this.audiences = options.audiences;
    this.now = options.now ?? Date.now;
  }

  async authenticate(authorization: string | undefined): Promise<UserInfo> {
    if (authorization === undefined || authorization === '') {
      throw unauthorized('an Authorization: Bearer <token> header is required');
    }
    const token = bearerToken(authorization);
    if (token === undefined) throw unauthorized('the Authorization header must be "Bearer <token>"');
    return this.reviewToken(token);
  }

  async reviewToken(token: string): Promise<UserInfo> {
    if (token === '' || token.length > MAX_TOKEN_LENGTH) throw unauthorized('the token is invalid or expired');
    const key = tokenKey(token);
    const now = this.now();
    const cached = this.reviews.get(key);
    if (cached && cached.expires > now) return cached.user;
    if (cached) this.reviews.delete(key);

    const user = this.review(token);
    if (this.ttlMs > 0) {
      this.prune(now);
      this.reviews.set(key, { expires: now + this.ttlMs, user });
      // A rejected token stays rejected for rejectedTtlMs; a review that failed is asked again next time.
      user.catch((err: unknown) => {
        if (this.reviews.get(key)?.user !== user) return;
        if (err instanceof ApiError && err.status === 401 && this.rejectedTtlMs > 0) {
          this.reviews.set(key, { expires: this.now() + this.rejectedTtlMs, user });
        } else {
          this.reviews.delete(key);
        }
      });
    }
    return user;
  }

  async authorize(user: UserInfo, request: AccessRequest): Promise<void> {
    const body: V1SubjectAccessReview = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.username,
        groups: user.groups,
        ...(user.uid !== undefined ? { uid: user.uid } : {}),
        ...(user.extra !== undefined ? { extra: user.extra } : {}),
        resourceAttributes: {
          group: GROUP,
          resource: PLURAL,
          verb: request.verb,
          ...(request.namespace !== undefined ? { namespace: request.namespace } : {}),
          ...(request.name !== undefined ? { name: request.name } : {}),
        },
      },
    };
    let review: V1SubjectAccessReview;
    try {
      review = await this.authz.createSubjectAccessReview({ body });
    } catch (err) {
      throw new ApiError(503, `the access review failed: ${errorMessage(err)}`);
    }
    if (review.status?.allowed === true && review.status.denied !== true) return;
    throw new ApiError(403, forbiddenMessage(user.username, request));
  }

  private async review(token: string): Promise<UserInfo> {
    let status: { authenticated?: boolean; user?: UserInfo | { username?: string } } | undefined;
    try {
      const review = await this.authn.createTokenReview({
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(this.audiences ? { audiences: this.audiences } : {}) },
        },
      });
      // The response echoes the token in spec: only status is read, and nothing of it is logged.
      status = review.status as typeof status;
    } catch (err) {
      throw new ApiError(503, `the token review failed: ${errorMessage(err)}`);
    }
    const user = status?.user as Partial<UserInfo> | undefined;
    if (status?.authenticated !== true || !user?.username) throw unauthorized('the token is invalid or expired');
    return {
      username: user.username,
      groups: user.groups ?? [],
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    };
  }

  // Drops expired entries, then the oldest ones, to stay under maxCachedTokens.
  private prune(now: number): void {
    for (const [key, entry] of this.reviews) if (entry.expires <= now) this.reviews.delete(key);
    while (this.reviews.size >= this.maxTokens) {
      const oldest = this.reviews.keys().next();
      if (oldest.done) break;
      this.reviews.delete(oldest.value);
    }
  }
}

/** Worded as the API server words its own 403s. */
export function forbiddenMessage(username: string, request: AccessRequest): string {
  const subject = request.name !== undefined ? `apps.${GROUP} "${request.name}" is forbidden: ` : '';
  const scope = request.namespace !== undefined ? `in the namespace "${request.namespace}"` : 'at the cluster scope';
  return `${subject}User "${username}" cannot ${request.verb} resource "${PLURAL}" in API group "${GROUP}" ${scope}`;
}
