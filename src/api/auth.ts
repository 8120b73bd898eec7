// Who may call the API: the caller's Kubernetes token, checked with a
// TokenReview, then a SubjectAccessReview per request whose verb is the
// action. RBAC stays the single source of truth: `kubectl auth can-i promote
// apps.teal.dev` answers for the API too.
//
// Tokens are secrets: they are never logged, and never kept (but sealed in a
// session cookie, session.ts). TokenReviews are cached under a sha256 of the
// token: a positive one for a few seconds, so a burst of calls costs one
// review, and a rejected one for a minute, so a garbage token sent again and
// again costs one review a minute. Access reviews that name no App (the
// list route's verb list, and what the dashboard asks of a namespace, such as
// whether the user may promote there) go through the same kind of cache, by
// user and request, for ACCESS_CACHE_TTL_MS: a list without a namespace asks
// one review per namespace holding Apps, and the dashboard lists often, so a
// RoleBinding changed shows in lists within that time (issue #25 bounds it at
// 30 s); a build log's get pods/log in a namespace is one of them. Every review naming an App (get, each action) is asked anew: a
// revoked right stops an action at once.
import { createHash } from 'node:crypto';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  type KubeConfig,
  type V1SubjectAccessReview,
} from '@kubernetes/client-node';
import { ANONYMOUS_USER as ANONYMOUS } from '../app/dashboard-pages.ts';
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

/** The anonymous user of --dashboard-anonymous=read (app/dashboard-pages.ts names it), as a caller. */
export const ANONYMOUS_USER: UserInfo = { username: ANONYMOUS.username, groups: [...ANONYMOUS.groups] };

/** A request on apps.teal.dev (verb get, list, watch or an action), or on another resource; no namespace means cluster-wide. */
export interface AccessRequest {
  verb: string;
  namespace?: string;
  name?: string;
  /** Another resource than apps.teal.dev, e.g. pods/log in the core group (""). */
  resource?: OtherResource;
}

export interface OtherResource {
  group: string;
  resource: string;
  subresource?: string;
}

/** get pods/log in a namespace: what reading a build's log asks of the caller (api/build-log.ts). */
export const podLogAccess = (namespace: string): AccessRequest => ({
  verb: 'get',
  namespace,
  resource: { group: '', resource: 'pods', subresource: 'log' },
});

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
  /** How long a list's access review (allowed or forbidden) is trusted; default ACCESS_CACHE_TTL_MS, 0 turns it off. */
  accessCacheTtlMs?: number;
  /** Most access reviews remembered at once (per user and namespace); default 10,000. */
  maxCachedAccessReviews?: number;
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

/** The default of KubeAuthOptions.accessCacheTtlMs: well under the 30 s in which issue #25 wants RBAC changes applied. */
export const ACCESS_CACHE_TTL_MS = 10_000;

/**
 * Whether an access review is cached: one that names no App (a list, or what the user may do in
 * a namespace, for the dashboard's filters). A review naming an App, as get and every action
 * do, is asked anew each time.
 */
export const cachedReview = (request: AccessRequest): boolean => request.name === undefined;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer +([^\s]+) *$/i);
  const token = match?.[1];
  return token !== undefined && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** An access review's key: everything of the user the review sends, and the request. */
const accessKey = (user: UserInfo, request: AccessRequest) =>
  sha256(JSON.stringify([user.username, user.uid, user.groups, user.extra, request]));

/** How long a review's answer is kept: okMs when it resolved, failedMs(err) when it threw (0: asked again). */
interface ReviewTtl {
  okMs: number;
  failedMs: (err: unknown) => number;
}

/**
 * Reviews by key, each until its expiry, at most max of them (the oldest dropped first). Holds
 * promises, so concurrent calls with one key share one review.
 */
export class ReviewCache<T> {
  private readonly entries = new Map<string, { expires: number; value: Promise<T> }>();
  private readonly max: number;
  private readonly now: () => number;

  constructor(max: number, now: () => number) {
    this.max = max;
    this.now = now;
  }

  /** The cached review of key, or review()'s, kept as ttl says; ttl.okMs 0 keeps nothing. */
  get(key: string, ttl: ReviewTtl, review: () => Promise<T>): Promise<T> {
    const now = this.now();
    const cached = this.entries.get(key);
    if (cached && cached.expires > now) return cached.value;
    if (cached) this.entries.delete(key);
    const value = review();
    if (ttl.okMs <= 0) return value;
    this.prune(now);
    this.entries.set(key, { expires: now + ttl.okMs, value });
    value.catch((err: unknown) => {
      if (this.entries.get(key)?.value !== value) return;
      const failedMs = ttl.failedMs(err);
      if (failedMs > 0) this.entries.set(key, { expires: this.now() + failedMs, value });
      else this.entries.delete(key);
    });
    return value;
  }

  // Drops expired entries, then the oldest ones, to stay under max.
  private prune(now: number): void {
    for (const [key, entry] of this.entries) if (entry.expires <= now) this.entries.delete(key);
    while (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }
}

export class KubeAuth implements ApiAuth {
  private readonly authn: AuthenticationV1Api;
  private readonly authz: AuthorizationV1Api;
  private readonly tokenTtl: ReviewTtl;
  private readonly accessTtl: ReviewTtl;
  private readonly audiences: string[] | undefined;
  private readonly reviews: ReviewCache<UserInfo>;
  private readonly access: ReviewCache<void>;

  constructor(options: KubeAuthOptions) {
    this.authn = options.kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authz = options.kubeConfig.makeApiClient(AuthorizationV1Api);
    const now = options.now ?? Date.now;
    const rejectedMs = options.rejectedTokenTtlMs ?? REJECTED_TOKEN_TTL_MS;
    const accessMs = options.accessCacheTtlMs ?? ACCESS_CACHE_TTL_MS;
    // A rejected token stays rejected for rejectedMs, a forbidden request forbidden as long as an
    // allowed one stays allowed; a review that failed (503) is asked again next time.
    this.tokenTtl = {
      okMs: options.tokenCacheTtlMs ?? 10_000,
      failedMs: (err) => (isStatus(err, 401) ? rejectedMs : 0),
    };
    this.accessTtl = { okMs: accessMs, failedMs: (err) => (isStatus(err, 403) ? accessMs : 0) };
    this.audiences = options.audiences;
    this.reviews = new ReviewCache(options.maxCachedTokens ?? 1000, now);
    this.access = new ReviewCache(options.maxCachedAccessReviews ?? 10_000, now);
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
    return this.reviews.get(sha256(token), this.tokenTtl, () => this.review(token));
  }

  async authorize(user: UserInfo, request: AccessRequest): Promise<void> {
    if (!cachedReview(request)) return this.reviewAccess(user, request);
    return this.access.get(accessKey(user, request), this.accessTtl, () => this.reviewAccess(user, request));
  }

  private async reviewAccess(user: UserInfo, request: AccessRequest): Promise<void> {
    const body: V1SubjectAccessReview = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.username,
        groups: user.groups,
        ...(user.uid !== undefined ? { uid: user.uid } : {}),
        ...(user.extra !== undefined ? { extra: user.extra } : {}),
        resourceAttributes: {
          group: request.resource?.group ?? GROUP,
          resource: request.resource?.resource ?? PLURAL,
          ...(request.resource?.subresource !== undefined ? { subresource: request.resource.subresource } : {}),
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
}

const isStatus = (err: unknown, status: number) => err instanceof ApiError && err.status === status;

/** Worded as the API server words its own 403s. */
export function forbiddenMessage(username: string, request: AccessRequest): string {
  const { group = GROUP, resource = PLURAL, subresource } = request.resource ?? {};
  const kind = group === '' ? resource : `${resource}.${group}`;
  const subject = request.name !== undefined ? `${kind} "${request.name}" is forbidden: ` : '';
  const scope = request.namespace !== undefined ? `in the namespace "${request.namespace}"` : 'at the cluster scope';
  const what = subresource !== undefined ? `${resource}/${subresource}` : resource;
  return `${subject}User "${username}" cannot ${request.verb} resource "${what}" in API group "${group}" ${scope}`;
}
