// Failed logins, counted per client address: past MAX_FAILURES in a window,
// every login from that address is refused with 429 until the window ends,
// before any TokenReview. With the negative cache of KubeAuth (a rejected
// token is not reviewed again for a minute), guessing tokens costs the API
// server at most MAX_FAILURES reviews per address and window.
//
// Only failures count, unlike @fastify/rate-limit, which counts every
// request: people behind one NAT who log in fine do not lock each other out.
// In memory, per replica, like the sessions' other state.

export const LOGIN_FAILURES = {
  /** Failed logins allowed per address and window. */
  max: 10,
  windowMs: 60_000,
  /** Addresses remembered at once; the oldest are forgotten first. */
  maxAddresses: 10_000,
} as const;

export interface LoginLimits {
  max: number;
  windowMs: number;
  maxAddresses: number;
}

interface Window {
  start: number;
  failures: number;
}

export class LoginThrottle {
  private readonly windows = new Map<string, Window>();
  private readonly limits: LoginLimits;
  private readonly now: () => number;

  constructor(limits: Partial<LoginLimits> = {}, now: () => number = Date.now) {
    this.limits = { ...LOGIN_FAILURES, ...limits };
    this.now = now;
  }

  /** Seconds until this address may try again, or 0 when it may now. */
  retryAfter(address: string): number {
    const window = this.current(address);
    if (!window || window.failures < this.limits.max) return 0;
    return Math.max(1, Math.ceil((window.start + this.limits.windowMs - this.now()) / 1000));
  }

  /** A login from this address failed: its token was rejected. */
  failed(address: string): void {
    const window = this.current(address);
    if (window) {
      window.failures++;
      return;
    }
    this.prune();
    this.windows.set(address, { start: this.now(), failures: 1 });
  }

  private current(address: string): Window | undefined {
    const window = this.windows.get(address);
    if (window && window.start + this.limits.windowMs <= this.now()) {
      this.windows.delete(address);
      return undefined;
    }
    return window;
  }

  // Ended windows first, then the oldest, to stay under maxAddresses (a Map keeps insertion order).
  private prune(): void {
    if (this.windows.size < this.limits.maxAddresses) return;
    const now = this.now();
    for (const [address, w] of this.windows) if (w.start + this.limits.windowMs <= now) this.windows.delete(address);
    while (this.windows.size >= this.limits.maxAddresses) {
      const oldest = this.windows.keys().next();
      if (oldest.done) break;
      this.windows.delete(oldest.value);
    }
  }
}
