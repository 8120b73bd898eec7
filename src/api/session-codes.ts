// Single-use login codes (issue #25 item 3): how `kubectl teal dashboard`
// logs a browser in with the kubeconfig's bearer token without putting the
// token in a URL. The CLI, which holds the token, trades it for a code
// (POST /api/v1/session/codes, the token reviewed like any bearer caller's);
// the browser opens the login page with the code and spends it
// (POST /api/v1/session {"code"}), which starts an ordinary token session:
// the token sealed in the cookie, reviewed again like every other.
//
// A code is 256 random bits, works once, ends after LOGIN_CODE_TTL_MS, and
// lives in this process's memory only. That is enough across replicas: the
// CLI reaches the operator through a port-forward to one pod and keeps to
// that pod, so the code is spent on the replica that issued it. The store is
// bounded: past MAX_LOGIN_CODES, the oldest code is forgotten (its login then
// fails and the CLI is run again), so a caller minting codes in a loop costs
// memory for at most that many. A code is a credential for 30 s: it is never
// logged (the login page sends it in a JSON body; the CLI puts it in the
// URL's fragment, which the browser never sends).
import { randomBytes } from 'node:crypto';

/** How long a code may be spent after it was issued. */
export const LOGIN_CODE_TTL_MS = 30_000;
/** Codes kept at once, per process. */
export const MAX_LOGIN_CODES = 1_000;
/** Random bytes in a code (base64url: 43 characters). */
const CODE_BYTES = 32;
/** Longer than any code this store makes: a longer body is refused before any lookup. */
export const MAX_LOGIN_CODE_LENGTH = 64;

export interface LoginCodesOptions {
  ttlMs?: number;
  max?: number;
  now?: () => number;
}

interface Pending {
  token: string;
  expiresAt: number;
}

export class LoginCodes {
  private readonly pending = new Map<string, Pending>();
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly now: () => number;

  constructor(opts: LoginCodesOptions = {}) {
    this.ttlMs = opts.ttlMs ?? LOGIN_CODE_TTL_MS;
    this.max = opts.max ?? MAX_LOGIN_CODES;
    this.now = opts.now ?? Date.now;
  }

  /** A new code for this (already reviewed) token, and how long it may be spent. */
  issue(token: string): { code: string; expiresInSeconds: number } {
    const now = this.now();
    this.prune(now);
    const code = randomBytes(CODE_BYTES).toString('base64url');
    this.pending.set(code, { token, expiresAt: now + this.ttlMs });
    return { code, expiresInSeconds: Math.floor(this.ttlMs / 1000) };
  }

  /** The token a code was issued for, once: undefined for a code unknown, already spent or expired. */
  spend(code: string): string | undefined {
    const entry = this.pending.get(code);
    if (entry === undefined) return undefined;
    this.pending.delete(code);
    return entry.expiresAt > this.now() ? entry.token : undefined;
  }

  /** Codes held now (the tests' view of the bound). */
  get size(): number {
    return this.pending.size;
  }

  // Expired codes, then the oldest, to make room for one more. A Map keeps insertion order, which
  // is also expiry order (one TTL for all): the expired ones come first.
  private prune(now: number): void {
    for (const [code, entry] of this.pending) {
      if (entry.expiresAt > now) break;
      this.pending.delete(code);
    }
    while (this.pending.size >= this.max) {
      const oldest = this.pending.keys().next();
      if (oldest.done) break;
      this.pending.delete(oldest.value);
    }
  }
}
