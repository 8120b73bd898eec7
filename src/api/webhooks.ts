// POST /webhooks/{github|gitlab|gitea|bitbucket|generic}: git push webhooks
// (DESIGN §3.4), and pull-request webhooks as a hint for previews (issue #28). A fastify plugin, kept encapsulated (no fastify-plugin) so
// its raw-body content-type parsers and error handler stay on its own routes.
// It only wires steps testable without fastify: Deliveries handles a
// delivery, failedDelivery answers what was thrown.
//
// Flow: check the signature header is there, parse the payload as a hint,
// ask the caller for the Apps on that repository and ref, and match only the
// Apps whose own secret (or the global one) verifies the exact bytes
// received (when none does, secrets that may have been rotated are re-read
// once, as the caller allows). Then drop replays, and hand the matches to
// onPush, which resolves the ref itself: the payload's SHAs are never used;
// or, for a pull-request event, to onPullRequest, which only asks the previews
// planner to list the pull requests sooner: nothing of the payload's pull
// request is used.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ThrownError } from './errors.ts';
import {
  type BodyEncoding,
  isProvider,
  type ParsedDelivery,
  PROVIDERS,
  type Provider,
  parseDelivery,
  requestVerifier,
  type Verifier,
  WebhookParseError,
} from './webhook-providers.ts';

/** An App the caller found for a hint's repository and ref, with its own webhook secret if it has one. */
export interface Candidate {
  namespace: string;
  name: string;
  secret: Buffer | undefined;
  /** For a pull-request event: its spec.previews follows the event's repository (the others only verify it). */
  previews?: boolean;
  /**
   * Called when no secret verified the delivery: a fresher value of this
   * App's secret to try (it may have been rotated since it was cached), or
   * undefined when a re-read is not due. Rejects when the read fails.
   */
  reread?: () => Promise<Buffer | undefined> | undefined;
}

/**
 * What a delivery says, for the caller to match Apps with normalizeRepoUrl.
 * For a push, match an App when any of repoUrls and any of refs equal its own;
 * for a pull-request event, the Apps whose spec.previews follows one of
 * repoUrls; for a ping or another event refs is empty: match on the
 * repository alone.
 */
export interface WebhookHint extends ParsedDelivery {
  provider: Provider;
}

/**
 * Per delivery, for teal_webhook_deliveries_total. accepted: a push or a pull
 * request triggered Apps (202); ignored: verified, nothing to do (ping, other
 * events, a push or pull request no App tracks); error: the lookup or onPush failed (503). Unknown providers are
 * not reported, so the label set stays bounded.
 */
export type WebhookResult =
  | 'accepted'
  | 'ignored'
  | 'duplicate'
  | 'unauthorized'
  | 'bad_request'
  | 'too_large'
  | 'error';

type LogFn = (obj: object, msg?: string) => void;

/** The part of a pino logger used here. */
export interface WebhookLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

export interface WebhookOptions {
  /** The Apps whose normalised repository URL and full ref match the hint (see WebhookHint). */
  candidates(hint: WebhookHint): Promise<Candidate[]>;
  /** Called once per verified, new push with the Apps it matched; awaited before replying 202. */
  onPush(matched: Candidate[], hint: WebhookHint): Promise<void>;
  /**
   * Called once per verified, new pull-request event with the Apps whose previews
   * follow its repository; awaited before replying 202. Without it those events are ignored.
   */
  onPullRequest?(matched: Candidate[], hint: WebhookHint): Promise<void>;
  /** Verifies deliveries for every App, in addition to each App's own secret. */
  globalSecret?: Buffer | undefined;
  /** Largest body accepted, in bytes; default 1 MiB. */
  bodyLimit?: number;
  /** Delivery IDs remembered per provider to drop replays; default 10,000. */
  maxDeliveryIds?: number;
  /** Defaults to the request's logger. */
  logger?: WebhookLogger;
  onResult?(provider: Provider, result: WebhookResult): void;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const DEFAULT_MAX_DELIVERY_IDS = 10_000;

/** A bounded set of the most recently seen IDs; the least recently seen is forgotten first. */
export class RecentIds {
  private readonly ids = new Set<string>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** True when id was seen before; otherwise remembers it. */
  checkAndAdd(id: string): boolean {
    const seen = this.ids.delete(id);
    this.ids.add(id);
    if (!seen && this.ids.size > this.max) {
      const oldest = this.ids.values().next();
      if (!oldest.done) this.ids.delete(oldest.value);
    }
    return seen;
  }

  delete(id: string): void {
    this.ids.delete(id);
  }

  get size(): number {
    return this.ids.size;
  }
}

// The body as received, for the signature; parsed only after that.
export class RawBody {
  readonly bytes: Buffer;
  readonly encoding: BodyEncoding;

  constructor(bytes: Buffer, encoding: BodyEncoding) {
    this.bytes = bytes;
    this.encoding = encoding;
  }
}

// One body for every failed check, so a reply never tells whether a repository is known.
const UNAUTHORIZED = { error: 'unauthorized', message: 'missing or invalid webhook signature' };
const UNAVAILABLE = { error: 'unavailable', message: 'the delivery could not be handled; deliver it again later' };

export const webhooksPlugin: FastifyPluginAsync<WebhookOptions> = async (fastify, opts) => {
  const { bodyLimit, maxDeliveryIds, globalSecret } = webhookSettings(opts);
  const deliveries = new Deliveries(opts, globalSecret, maxDeliveryIds);
  const logger = (request: FastifyRequest): WebhookLogger => opts.logger ?? request.log;
  const report = resultReporter(opts.onResult);
  acceptRawBodies(fastify);

  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    const provider = providerOf(request.params);
    const log = logger(request);
    const failed = failedDelivery(error, bodyLimit);
    report(provider, failed.result, log);
    if (failed.result === 'too_large') log.warn({ provider, bodyLimit }, 'webhook body too large');
    if (failed.result === 'error') log.error({ provider, err: error }, 'webhook handling failed');
    return reply.code(failed.status).send(failed.body);
  });

  fastify.post<{ Params: { provider: string } }>('/webhooks/:provider', { bodyLimit }, async (request, reply) => {
    const log = logger(request);
    const answer = await deliveries.handle(
      { provider: request.params.provider, headers: request.headers, body: request.body },
      log,
    );
    if (answer.result !== undefined) report(providerOf(request.params), answer.result, log);
    return reply.code(answer.status).send(answer.body);
  });
};

/** The plugin's settings from its options: the bounds checked, an empty global secret dropped, as it would let anyone sign. */
export function webhookSettings(opts: Pick<WebhookOptions, 'bodyLimit' | 'maxDeliveryIds' | 'globalSecret'>): {
  bodyLimit: number;
  maxDeliveryIds: number;
  globalSecret: Buffer | undefined;
} {
  const bodyLimit = opts.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const maxDeliveryIds = opts.maxDeliveryIds ?? DEFAULT_MAX_DELIVERY_IDS;
  for (const [option, value] of [
    ['bodyLimit', bodyLimit],
    ['maxDeliveryIds', maxDeliveryIds],
  ] as const) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`webhooks: ${option} must be a positive integer`);
  }
  const globalSecret = opts.globalSecret !== undefined && opts.globalSecret.length > 0 ? opts.globalSecret : undefined;
  return { bodyLimit, maxDeliveryIds, globalSecret };
}

/** Only the exact bytes received can be verified, so bodies stay Buffers here, parsed after the signature checks. */
function acceptRawBodies(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  for (const [type, encoding] of [
    ['application/json', 'json'],
    ['application/x-www-form-urlencoded', 'form'],
  ] as const) {
    fastify.addContentTypeParser(type, { parseAs: 'buffer' }, async (_request: FastifyRequest, body: Buffer) => {
      return new RawBody(body, encoding);
    });
  }
}

/** Tells onResult what a delivery to a known provider counted as; its failure never fails the delivery. */
function resultReporter(onResult: WebhookOptions['onResult']) {
  return (provider: Provider | undefined, result: WebhookResult, log: WebhookLogger): void => {
    if (provider === undefined || onResult === undefined) return;
    try {
      onResult(provider, result);
    } catch (err) {
      log.error({ err }, 'webhook onResult hook failed');
    }
  };
}

/**
 * The answer to what fastify or the route threw: a body over bodyLimit bytes is
 * a 413; fastify's other refusals of the request (a media type not taken, a bad
 * Content-Length, ...) a 400 with its own message; anything else a 500 that
 * tells nothing of it, as its message may hold what the sender must not see.
 */
export function failedDelivery(error: ThrownError, bodyLimit: number): DeliveryAnswer & { result: WebhookResult } {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) {
    return answer('too_large', 413, { error: 'payload_too_large', message: `request body exceeds ${bodyLimit} bytes` });
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return answer('bad_request', 400, { error: 'bad_request', message: error.message });
  }
  return answer('error', 500, { error: 'internal', message: 'internal error' });
}

/** A delivery as the route hands it over: the provider named in the path, the headers, the body as parsed (a RawBody). */
export interface DeliveryRequest {
  provider: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** The reply to a delivery, and what it counts as (none for an unknown provider). */
export interface DeliveryAnswer {
  status: number;
  body: object;
  result?: WebhookResult;
}

/**
 * The handling of a push webhook, without fastify: verify the signature
 * against the candidates' secrets (or the global one), drop a delivery seen
 * before, and hand a push to onPush. Its state is the delivery IDs seen.
 */
export class Deliveries {
  private readonly opts: Pick<WebhookOptions, 'candidates' | 'onPush' | 'onPullRequest'>;
  private readonly globalSecret: Buffer | undefined;
  private readonly recent: Map<Provider, RecentIds>;

  constructor(
    opts: Pick<WebhookOptions, 'candidates' | 'onPush' | 'onPullRequest'>,
    globalSecret: Buffer | undefined,
    maxIds: number,
  ) {
    this.opts = opts;
    this.globalSecret = globalSecret;
    this.recent = new Map(PROVIDERS.map((p) => [p, new RecentIds(maxIds)]));
  }

  /** Verified, new and a push: handed to onPush (a pull request: to onPullRequest). Every answer says what it counts as. */
  async handle(request: DeliveryRequest, log: WebhookLogger): Promise<DeliveryAnswer> {
    if (!isProvider(request.provider)) {
      return { status: 404, body: { error: 'not_found', message: 'unknown webhook provider' } };
    }
    const read = this.read(request.provider, request, log);
    if ('status' in read) return read;
    const matched = await this.match(read, log);
    if (!Array.isArray(matched)) return matched;
    return this.deliver(read, matched, log);
  }

  /** The delivery's body parsed, once its signature header is usable (no secret can verify one that is not). */
  private read(provider: Provider, request: DeliveryRequest, log: WebhookLogger): Delivery | DeliveryAnswer {
    const body = request.body;
    if (!(body instanceof RawBody)) {
      return answer('bad_request', 400, { error: 'bad_request', message: 'expected an application/json body' });
    }
    // Without a usable signature header no secret can verify: stop before any lookup.
    const verify = requestVerifier(provider, request.headers, body.bytes);
    if (verify === undefined) {
      log.warn({ provider }, 'webhook without a usable signature header');
      return answer('unauthorized', 401, UNAUTHORIZED);
    }
    let parsed: ParsedDelivery;
    try {
      parsed = parseDelivery(provider, request.headers, body.bytes, body.encoding);
    } catch (err) {
      if (!(err instanceof WebhookParseError)) throw err;
      log.info({ provider, reason: err.message }, 'malformed webhook');
      return answer('bad_request', 400, { error: 'bad_request', message: err.message });
    }
    const hint: WebhookHint = { provider, ...parsed };
    const context = { provider, event: hint.event, delivery: hint.deliveryId, repos: hint.repoUrls.map(redactUrl) };
    return { hint, verify, context };
  }

  /** The Apps whose secret (or the global one) verifies the signature; an answer when none does or a lookup failed. */
  private async match({ hint, verify, context }: Delivery, log: WebhookLogger): Promise<Candidate[] | DeliveryAnswer> {
    let candidates: Candidate[] = [];
    if (hint.repoUrls.length > 0) {
      try {
        candidates = await this.opts.candidates(hint);
      } catch (err) {
        log.error({ ...context, err }, 'looking up Apps for a webhook failed');
        return answer('error', 503, UNAVAILABLE);
      }
    }
    const global = this.globalSecret !== undefined && verify(this.globalSecret);
    let matched = uniqueApps(candidates.filter((c) => global || verifiedBy(c.secret, verify)));
    if (!global && matched.length === 0) {
      try {
        matched = await matchAfterReread(candidates, verify);
      } catch (err) {
        log.error({ ...context, err }, 'reading webhook secrets failed');
        return answer('error', 503, UNAVAILABLE);
      }
    }
    if (!global && matched.length === 0) {
      log.warn({ ...context, candidates: candidates.length }, 'webhook signature did not verify');
      return answer('unauthorized', 401, UNAUTHORIZED);
    }
    return matched;
  }

  /** A verified delivery: dropped if seen before, ignored unless a push (or pull request) that matched, else handed on. */
  private async deliver(
    { hint, context }: Delivery,
    verified: Candidate[],
    log: WebhookLogger,
  ): Promise<DeliveryAnswer> {
    // Recorded only now: an unverified request must not mark an ID as seen.
    const seen = this.recent.get(hint.provider);
    const id = hint.deliveryId;
    if (id !== undefined && seen?.checkAndAdd(id)) {
      log.info(context, 'duplicate webhook delivery ignored');
      return answer('duplicate', 200, { duplicate: true });
    }
    if (hint.kind === 'ping') {
      log.info(context, 'webhook ping');
      return answer('ignored', 200, { ping: true });
    }
    const onPullRequest = this.opts.onPullRequest;
    const handler = hint.kind === 'push' ? this.opts.onPush : hint.kind === 'pull_request' ? onPullRequest : undefined;
    if (handler === undefined) {
      log.debug(context, 'webhook event ignored');
      return answer('ignored', 200, { ignored: hint.event });
    }
    const what = hint.kind === 'push' ? 'push' : 'pull request';
    // A pull request concerns only the Apps whose previews follow its repository.
    const targets = hint.kind === 'pull_request' ? verified.filter((c) => c.previews === true) : verified;
    if (targets.length === 0) {
      log.info({ ...context, refs: hint.refs }, `webhook ${what} matched no App`);
      return answer('ignored', 200, { matched: [] });
    }
    const names = targets.map((c) => `${c.namespace}/${c.name}`);
    try {
      await handler(targets, hint);
    } catch (err) {
      // Let a redelivery of this ID try again.
      if (id !== undefined) seen?.delete(id);
      log.error({ ...context, refs: hint.refs, matched: names, err }, `triggering Apps for a webhook ${what} failed`);
      return answer('error', 503, UNAVAILABLE);
    }
    log.info({ ...context, refs: hint.refs, matched: names }, `webhook ${what} accepted`);
    return answer('accepted', 202, { matched: names });
  }
}

/** A delivery read: what it says, the check of its signature, and what every log line of it names. */
interface Delivery {
  hint: WebhookHint;
  verify: Verifier;
  context: { provider: Provider; event: string; delivery: string | undefined; repos: string[] };
}

const answer = (result: WebhookResult, status: number, body: object): DeliveryAnswer & { result: WebhookResult } => ({
  status,
  body,
  result,
});

function providerOf(params: unknown): Provider | undefined {
  if (typeof params !== 'object' || params === null || !('provider' in params)) return undefined;
  const value = params.provider;
  return typeof value === 'string' && isProvider(value) ? value : undefined;
}

// An empty key would let anyone sign.
const verifiedBy = (secret: Buffer | undefined, verify: Verifier): boolean =>
  secret !== undefined && secret.length > 0 && verify(secret);

/** The candidates whose re-read secret verifies; candidates not due a re-read are left out. */
async function matchAfterReread(candidates: Candidate[], verify: Verifier): Promise<Candidate[]> {
  const fresh = await Promise.all(
    candidates.map(async (c): Promise<Candidate | undefined> => {
      const reading = c.reread?.();
      if (reading === undefined) return undefined;
      return { ...c, secret: await reading };
    }),
  );
  return uniqueApps(fresh.filter((c): c is Candidate => c !== undefined && verifiedBy(c.secret, verify)));
}

function uniqueApps(apps: Candidate[]): Candidate[] {
  const byName = new Map<string, Candidate>();
  for (const app of apps) {
    const key = `${app.namespace}/${app.name}`;
    if (!byName.has(key)) byName.set(key, app);
  }
  return [...byName.values()];
}

/** A URL fit for logs: no user info (it may hold a token), no query or fragment. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1').replace(/[?#].*$/, '');
}

/**
 * The global secret from --webhook-secret-file's bytes, less one trailing
 * newline ("\n" or "\r\n"): editors and `echo` end files with one, and the
 * git host was given the secret without it. Only one, so a secret that truly
 * ends in a newline can still be written with two.
 */
export function secretFromFile(bytes: Buffer): Buffer {
  if (bytes.at(-1) !== 0x0a) return bytes;
  return bytes.subarray(0, bytes.length - (bytes.at(-2) === 0x0d ? 2 : 1));
}

/** Reads --webhook-secret-file; an unreadable or empty file is an error naming the flag, never showing the content. */
export function readWebhookSecretFile(path: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    const code = err instanceof Error && 'code' in err ? String(err.code) : 'read error';
    throw new Error(`--webhook-secret-file: cannot read ${path} (${code})`);
  }
  const secret = secretFromFile(bytes);
  if (secret.length === 0) throw new Error(`--webhook-secret-file: ${path} is empty: it must hold the secret`);
  return secret;
}
