// When a git host may be asked again, decided from its last answer alone
// (issue #28 item 9). Pure: the executor (http.ts) holds the result and
// refuses to send before it, so a rate-limited host sees no storm of retries.
//
// The rules, as GitHub documents them and GitLab's headers follow:
// - a Retry-After (seconds or an HTTP date) is obeyed;
// - a rate-limit answer (429, or a 403 that says so) whose remaining count is 0
//   waits for its reset (x-ratelimit-reset on GitHub, RateLimit-Reset on
//   GitLab: epoch seconds; a small number is read as seconds from now, as the
//   IETF RateLimit fields mean it);
// - any other rate-limit answer (GitHub's secondary limits) waits at least a
//   minute, doubling while they go on;
// - 5xx and network errors back off exponentially with jitter;
// - a success that leaves nothing of the budget waits for the reset too, so
//   the next request is not spent on a refusal.
// Other answers (404, 422, ...) are about the request, not the host: no wait.

/** What of an answer the decision reads; undefined status: no answer (network error, timeout). */
export interface Answer {
  status: number | undefined;
  header: (name: string) => string | null;
  /** The body said "rate limit" (GitHub's secondary-limit 403s may carry no header to tell). */
  saysRateLimit?: boolean;
}

export interface Decision {
  /** Epoch ms before which nothing is sent; at or before now: go. */
  notBefore: number;
  /** Consecutive failures that count for backoff; 0 after an answer that is not one. */
  failures: number;
  /** This answer was a rate-limit refusal. */
  rateLimited: boolean;
  /** The rate-limit budget left, when the host told it. */
  remaining?: number;
}

const SECOND = 1000;
/** A broken proxy's Retry-After or a clock far off must not park previews for a day. */
export const MAX_WAIT_MS = 3600 * SECOND;
const SECONDARY_MS = 60 * SECOND;
const SECONDARY_MAX_MS = 15 * 60 * SECOND;
const BACKOFF_MS = 2 * SECOND;
const BACKOFF_MAX_MS = 5 * 60 * SECOND;
/** RateLimit-Reset below this is seconds from now, above it epoch seconds. */
const EPOCH_THRESHOLD_S = 1e9;

/** random in [0, 1): jitter, passed in so the decision stays pure. */
export function decide(answer: Answer, now: number, failures: number, random: number): Decision {
  const remaining = intHeader(answer, 'x-ratelimit-remaining', 'ratelimit-remaining');
  const told = remaining === undefined ? {} : { remaining };
  const status = answer.status;
  if (isRateLimit(answer, remaining)) {
    const wait = retryAfterMs(answer, now) ?? (remaining === 0 ? resetWaitMs(answer, now) : undefined);
    const secondary = Math.min(SECONDARY_MAX_MS, SECONDARY_MS * 2 ** failures);
    return { notBefore: now + cap(wait ?? secondary), failures: failures + 1, rateLimited: true, ...told };
  }
  if (status === undefined || status >= 500) {
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** failures);
    const jittered = ceiling / 2 + (random * ceiling) / 2;
    const wait = Math.max(jittered, retryAfterMs(answer, now) ?? 0);
    return { notBefore: now + cap(wait), failures: failures + 1, rateLimited: false, ...told };
  }
  const exhausted = remaining === 0 ? resetWaitMs(answer, now) : undefined;
  return { notBefore: now + cap(exhausted ?? 0), failures: 0, rateLimited: false, ...told };
}

function isRateLimit(answer: Answer, remaining: number | undefined): boolean {
  if (answer.status === 429) return true;
  if (answer.status !== 403) return false;
  return remaining === 0 || answer.header('retry-after') !== null || answer.saysRateLimit === true;
}

/** Retry-After: seconds, or an HTTP date. */
export function retryAfterMs(answer: Pick<Answer, 'header'>, now: number): number | undefined {
  const raw = answer.header('retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * SECOND;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

function resetWaitMs(answer: Answer, now: number): number | undefined {
  const reset = intHeader(answer, 'x-ratelimit-reset', 'ratelimit-reset');
  if (reset === undefined) return undefined;
  const at = reset < EPOCH_THRESHOLD_S ? now + reset * SECOND : reset * SECOND;
  // A reset already past (clocks apart): a second's grace, not a request at once.
  return Math.max(SECOND, at - now);
}

function intHeader(answer: Pick<Answer, 'header'>, ...names: string[]): number | undefined {
  for (const name of names) {
    const raw = answer.header(name)?.trim();
    if (raw && /^\d+$/.test(raw)) return Number(raw);
  }
  return undefined;
}

const cap = (ms: number) => Math.min(MAX_WAIT_MS, Math.max(0, ms));
