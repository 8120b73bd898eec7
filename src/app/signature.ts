// The HMAC-SHA256 signature in its `sha256=<hex>` form: what Teal checks on a
// push webhook (api/webhook-providers.ts) and puts on the notifications it sends
// (notify/bodies.ts). Shared by the API and the notifier, so it lives in the
// App's room, below both.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Compares in constant time; different lengths are simply unequal (timingSafeEqual would throw). */
export function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function hmacSha256(secret: Buffer | string, body: Buffer | string): Buffer {
  return createHmac('sha256', secret).update(body).digest();
}

/** The `sha256=<hex>` form GitHub, Bitbucket Server and the generic provider send. */
export function signSha256(body: Buffer | string, secret: Buffer | string): string {
  return `sha256=${hmacSha256(secret, body).toString('hex')}`;
}
