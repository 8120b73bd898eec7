// Per-key retry delays for the work queue, after client-go's
// workqueue rate limiters. All delays are in milliseconds.

export interface RateLimiter {
  /** How long the key should wait before it is retried; each call counts one more failure. */
  when(key: string): number;
  /** Clears the key's failure history, typically after it was processed successfully. */
  forget(key: string): void;
  /** Failures counted for the key since it was last forgotten. */
  numRequeues(key: string): number;
}

/** A monotonic clock in milliseconds. */
export type Clock = () => number;

const monotonicNow: Clock = () => performance.now();

export interface ExponentialBackoffOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/** baseDelayMs * 2^failures, capped at maxDelayMs (client-go's ItemExponentialFailureRateLimiter). */
export class ExponentialBackoffRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(options: ExponentialBackoffOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 1_000_000;
    if (!(this.baseDelayMs >= 0) || !(this.maxDelayMs >= 0)) {
      throw new RangeError('backoff delays must be non-negative numbers');
    }
  }

  when(key: string): number {
    const exponent = this.failures.get(key) ?? 0;
    this.failures.set(key, exponent + 1);
    // 2 ** exponent turns into Infinity long before it could wrap, so the cap still holds.
    return Math.min(this.baseDelayMs * 2 ** exponent, this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  qps?: number;
  burst?: number;
  now?: Clock;
}

/**
 * One bucket shared by all keys (client-go's BucketRateLimiter over
 * golang.org/x/time/rate): it starts full, refills at qps tokens a second up
 * to burst, and every call reserves a token, going into debt when empty so
 * that callers are spaced 1/qps apart.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: Clock;
  private tokens: number;
  private last: number;

  constructor(options: TokenBucketOptions = {}) {
    this.qps = options.qps ?? 10;
    this.burst = options.burst ?? 100;
    this.now = options.now ?? monotonicNow;
    if (!(this.qps > 0) || !(this.burst >= 1)) {
      throw new RangeError('token bucket needs qps > 0 and burst >= 1');
    }
    this.tokens = this.burst;
    this.last = this.now();
  }

  when(_key: string): number {
    const now = this.now();
    // A clock that steps back must not take tokens away.
    const elapsedMs = Math.max(0, now - this.last);
    this.last = Math.max(this.last, now);
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs / 1000) * this.qps) - 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_key: string): void {}

  numRequeues(_key: string): number {
    return 0;
  }
}

/** The longest delay of several limiters (client-go's MaxOfRateLimiter). */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must see the call, so no short-circuit.
    return Math.max(...this.limiters.map((limiter) => limiter.when(key)));
  }

  forget(key: string): void {
    for (const limiter of this.limiters) limiter.forget(key);
  }

  numRequeues(key: string): number {
    return Math.max(...this.limiters.map((limiter) => limiter.numRequeues(key)));
  }
}

export type ControllerRateLimiterOptions = ExponentialBackoffOptions & TokenBucketOptions;

/**
 * client-go's DefaultControllerRateLimiter: per-key backoff from 5 ms to
 * 1000 s, and overall no more than 10 retries a second with bursts of 100.
 */
export function defaultControllerRateLimiter(options: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(new ExponentialBackoffRateLimiter(options), new TokenBucketRateLimiter(options));
}
