// The one door of the provider clients to the network (issue #28 items 2, 9):
// the token goes only to the API URL's origin, redirects elsewhere are never
// followed, GETs are conditional (If-None-Match; a 304 gives the answer kept
// from before), and the host's pace (etiquette.ts) is held here: a request
// before the time it allows fails at once, unsent. Failures come back typed,
// with a message that names the provider, the operation and the status only.
import { egressRefusalOf, refusalText } from '../../kube/egress.ts';
import type { PreviewProvider, ProviderErrorReason } from '../pull-request.ts';
import { sameOrigin } from './api-url.ts';
import { decide } from './etiquette.ts';
import { failed, type HostFailure, type HostResult, ok } from './host.ts';

export interface ProviderMetrics {
  /** One answer (or its absence: code network or timeout) from a provider's API. */
  request(provider: PreviewProvider, code: string): void;
  rateLimitRemaining(provider: PreviewProvider, remaining: number): void;
}

/** The pace of one token on one host; share it between clients that use the same token. */
export interface Budget {
  notBefore: number;
  failures: number;
  /** The wait is the host's rate limit (else a backoff after errors). */
  limited?: boolean;
}

export interface HttpOptions {
  provider: PreviewProvider;
  /** Checked by checkApiUrl. */
  apiUrl: URL;
  /** The header that carries the token, e.g. ['authorization', 'Bearer ...']; never logged. */
  auth: readonly [string, string];
  /** Headers every request carries (Accept, an API version). */
  headers?: Readonly<Record<string, string>>;
  fetch?: typeof fetch;
  timeoutMs?: number;
  metrics?: ProviderMetrics;
  budget?: Budget;
  now?: () => number;
  random?: () => number;
  /** Conditional answers kept, most recently used first out last. */
  cacheEntries?: number;
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface Call {
  /** What is being done, as failure messages name it: "listing pull requests". */
  op: string;
  method?: Method;
  /** A path under the API URL (segments already encoded), or a URL the host gave (checked: same origin). */
  path: string | URL;
  query?: Readonly<Record<string, string>>;
  body?: unknown;
  /** A refusal that means done (GitLab's 400 for a status already in that state). */
  alreadyDone?: (status: number, text: string) => boolean;
}

export interface Reply {
  status: number;
  json: unknown;
  header: (name: string) => string | null;
  /** A 304: json is the answer kept from the last 200. */
  notModified: boolean;
  url: URL;
}

interface Cached {
  etag: string;
  json: unknown;
  headers: Headers;
}

const DEFAULTS = { timeoutMs: 15_000, cacheEntries: 512 };
const MAX_REDIRECTS = 3;
/** 100 pages of 50 to 100 pull requests: far past any repository's open ones. */
const MAX_PAGES = 100;
/** Larger answers are refused: a list of pull requests is far smaller. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
export const USER_AGENT = 'teal-previews';

export class HttpExecutor {
  private readonly o: HttpOptions & typeof DEFAULTS;
  private readonly budget: Budget;
  private readonly cache = new Map<string, Cached>();

  constructor(options: HttpOptions) {
    this.o = { ...DEFAULTS, ...options };
    this.budget = options.budget ?? { notBefore: 0, failures: 0 };
  }

  get provider(): PreviewProvider {
    return this.o.provider;
  }

  notBefore(): number {
    return this.budget.notBefore;
  }

  /** The URL of a path under the API URL, with a query. */
  url(path: string, query: Readonly<Record<string, string>> = {}): URL {
    const url = new URL(this.o.apiUrl.href);
    url.pathname = `${url.pathname.replace(/\/$/, '')}/${path.replace(/^\//, '')}`;
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url;
  }

  async send(call: Call): Promise<HostResult<Reply>> {
    const now = this.now();
    if (now < this.budget.notBefore) {
      const at = new Date(this.budget.notBefore).toISOString();
      if (this.budget.limited)
        return failed(this.failure('RateLimited', call, `waiting for the rate limit until ${at}`));
      return failed(this.failure('Unavailable', call, `backing off after errors until ${at}`));
    }
    let url = typeof call.path === 'string' ? this.url(call.path, call.query) : call.path;
    if (!sameOrigin(url, this.o.apiUrl)) return failed(this.failure('NotFound', call, 'a link to another host'));
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const answer = await this.exchange(call, url);
      if (!answer.ok) return answer;
      const next = redirectOf(answer.value, url);
      if (next === undefined) return this.settle(call, url, answer.value);
      await answer.value.body?.cancel();
      if ((call.method ?? 'GET') !== 'GET' || !sameOrigin(next, this.o.apiUrl)) {
        return failed(this.failure('NotFound', call, `HTTP ${answer.value.status} to another host, not followed`));
      }
      url = next;
    }
    return failed(this.failure('NotFound', call, 'too many redirects'));
  }

  /**
   * Every page of a list, each a conditional GET. A failure on any page fails
   * the whole list: a partial list would read as pull requests closed.
   */
  async pages(
    call: Call,
    itemsOf: (json: unknown) => unknown[] | undefined,
    nextOf: (reply: Reply) => URL | undefined,
  ): Promise<HostResult<unknown[]>> {
    const items: unknown[] = [];
    let path: string | URL | undefined = call.path;
    for (let page = 0; path !== undefined; page++) {
      if (page === MAX_PAGES) return failed(this.failure('InvalidResponse', call, `more than ${MAX_PAGES} pages`));
      const reply = await this.send({ ...call, path, method: 'GET' });
      if (!reply.ok) return reply;
      const found = itemsOf(reply.value.json);
      if (found === undefined) return failed(this.failure('InvalidResponse', call, 'a page that is not a list'));
      items.push(...found);
      path = nextOf(reply.value);
    }
    return ok(items);
  }

  /** One request, its answer counted and the host's pace taken from it. */
  private async exchange(call: Call, url: URL): Promise<HostResult<Response>> {
    const timeout = AbortSignal.timeout(this.o.timeoutMs);
    try {
      const response = await (this.o.fetch ?? fetch)(url.href, {
        method: call.method ?? 'GET',
        headers: this.headersFor(call, url),
        ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
        redirect: 'manual',
        signal: timeout,
      });
      this.o.metrics?.request(this.o.provider, String(response.status));
      return ok(response);
    } catch (err) {
      const refused = egressRefusalOf(err);
      this.o.metrics?.request(this.o.provider, refused ? 'refused' : timeout.aborted ? 'timeout' : 'network');
      this.pace({ status: undefined, header: () => null });
      if (refused) return failed(this.failure('Unavailable', call, refusalText(refused.address, refused.why)));
      const why = timeout.aborted ? `no answer within ${this.o.timeoutMs / 1000}s` : networkError(err);
      return failed(this.failure('Unavailable', call, why));
    }
  }

  private headersFor(call: Call, url: URL): Headers {
    const headers = new Headers({ 'user-agent': USER_AGENT, accept: 'application/json', ...this.o.headers });
    headers.set(this.o.auth[0], this.o.auth[1]);
    if (call.body !== undefined) headers.set('content-type', 'application/json');
    const cached = (call.method ?? 'GET') === 'GET' ? this.cache.get(url.href) : undefined;
    if (cached) headers.set('if-none-match', cached.etag);
    return headers;
  }

  /** The answer read: its pace kept, a 304 answered from the cache, a failure typed. */
  private async settle(call: Call, url: URL, response: Response): Promise<HostResult<Reply>> {
    const text = await readText(response);
    const header = (name: string) => response.headers.get(name);
    const status = response.status;
    const decision = this.pace({ status, header, saysRateLimit: status === 403 && /rate limit/i.test(text ?? '') });
    if (decision.rateLimited) {
      const at = new Date(decision.notBefore).toISOString();
      return failed({ ...this.failure('RateLimited', call, `HTTP ${status}, rate limited until ${at}`), status });
    }
    if (status === 304) return this.fromCache(call, url);
    if (text === undefined) return failed(this.failure('InvalidResponse', call, `HTTP ${status}, an answer too large`));
    if (status >= 200 && status < 300) return this.parsed(call, url, response, text);
    if (call.alreadyDone?.(status, text)) return ok({ status, json: null, header, notModified: false, url });
    return failed({ ...this.failure(reasonOf(status), call, `HTTP ${status}`), status });
  }

  private pace(answer: Parameters<typeof decide>[0]) {
    const decision = decide(answer, this.now(), this.budget.failures, (this.o.random ?? Math.random)());
    this.budget.notBefore = decision.notBefore;
    this.budget.failures = decision.failures;
    this.budget.limited = decision.rateLimited || decision.remaining === 0;
    if (decision.remaining !== undefined) this.o.metrics?.rateLimitRemaining(this.o.provider, decision.remaining);
    return decision;
  }

  private parsed(call: Call, url: URL, response: Response, text: string): HostResult<Reply> {
    let json: unknown = null;
    try {
      if (text.trim() !== '') json = JSON.parse(text);
    } catch {
      return failed(this.failure('InvalidResponse', call, `HTTP ${response.status}, not JSON`));
    }
    const etag = response.headers.get('etag');
    if ((call.method ?? 'GET') === 'GET' && etag) this.remember(url.href, { etag, json, headers: response.headers });
    const header = (name: string) => response.headers.get(name);
    return ok({ status: response.status, json, header, notModified: false, url });
  }

  private fromCache(call: Call, url: URL): HostResult<Reply> {
    const cached = this.cache.get(url.href);
    if (!cached) return failed(this.failure('InvalidResponse', call, 'HTTP 304 to a request that was not conditional'));
    this.remember(url.href, cached);
    // The kept answer's Link header still names its next page.
    return ok({ status: 304, json: cached.json, header: (n) => cached.headers.get(n), notModified: true, url });
  }

  private remember(key: string, entry: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, entry);
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= this.o.cacheEntries) break;
      this.cache.delete(oldest);
    }
  }

  private failure(reason: ProviderErrorReason, call: Call, why: string): HostFailure {
    const wait = this.budget.notBefore > this.now();
    const retryAt = wait ? { retryAt: new Date(this.budget.notBefore).toISOString() } : {};
    return { reason, message: `${this.o.provider}: ${call.op}: ${why}`, ...retryAt };
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }
}

function redirectOf(response: Response, from: URL): URL | undefined {
  if (![301, 302, 303, 307, 308].includes(response.status)) return undefined;
  const location = response.headers.get('location');
  if (!location) return undefined;
  try {
    return new URL(location, from);
  } catch {
    return undefined;
  }
}

function reasonOf(status: number): ProviderErrorReason {
  if (status === 401 || status === 403) return 'Unauthorized';
  // A redirect not followed: the API URL is not where the API is.
  if (status === 404 || status === 410 || (status >= 300 && status < 400)) return 'NotFound';
  if (status >= 500) return 'Unavailable';
  return 'Rejected';
}

/** The body as text, or undefined past MAX_BODY_BYTES. */
async function readText(response: Response): Promise<string | undefined> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    await response.body?.cancel();
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The cause's code (ECONNREFUSED, ...) without its text, which may quote the URL. */
function networkError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code ? `network error ${code}` : 'network error';
}

/** The next page's URL from a Link header (GitHub, GitLab, Gitea). */
export function nextLink(link: string | null, base: URL): URL | undefined {
  if (!link) return undefined;
  for (const part of link.split(',')) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (match?.[1] === undefined || !/\brel\s*=\s*"?([^"]*\s)?next(\s[^"]*)?"?/i.test(match[2] ?? '')) continue;
    try {
      return new URL(match[1], base);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
