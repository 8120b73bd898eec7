// When a git host may be asked again, from its answer alone (issue #28 item 9).
import { describe, expect, it } from 'vitest';
import { type Answer, decide, MAX_WAIT_MS } from '../../src/previews/providers/etiquette.ts';

const NOW = Date.parse('2026-11-27T06:00:00Z');
const S = 1000;

function answer(status: number | undefined, headers: Record<string, string> = {}, saysRateLimit = false): Answer {
  return { status, header: (n) => headers[n.toLowerCase()] ?? null, saysRateLimit };
}

describe('decide', () => {
  it('a 200 with budget left: go at once, the remaining budget told, failures forgotten', () => {
    const d = decide(answer(200, { 'x-ratelimit-remaining': '4999', 'x-ratelimit-reset': '1795000000' }), NOW, 3, 0.5);
    expect(d).toEqual({ notBefore: NOW, failures: 0, rateLimited: false, remaining: 4999 });
  });

  it('a 200 that spent the last of the budget: wait for the reset, the next request is not wasted on a refusal', () => {
    const reset = NOW / S + 1200;
    const d = decide(answer(200, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) }), NOW, 0, 0.5);
    expect(d).toEqual({ notBefore: reset * S, failures: 0, rateLimited: false, remaining: 0 });
  });

  it("GitHub's primary limit: 403 with x-ratelimit-remaining 0 waits until x-ratelimit-reset", () => {
    const reset = NOW / S + 600;
    const d = decide(answer(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) }), NOW, 0, 0.5);
    expect(d).toEqual({ notBefore: reset * S, failures: 1, rateLimited: true, remaining: 0 });
  });

  it('Retry-After wins over the reset, in seconds or as an HTTP date', () => {
    const headers = { 'retry-after': '30', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / S + 600) };
    expect(decide(answer(429, headers), NOW, 0, 0.5).notBefore).toBe(NOW + 30 * S);
    const date = new Date(NOW + 90 * S).toUTCString();
    expect(decide(answer(503, { 'retry-after': date }), NOW, 0, 0).notBefore).toBe(NOW + 90 * S);
  });

  it("GitHub's secondary limit without a header (a 403 saying so): a minute, doubling while it goes on", () => {
    const secondary = answer(403, { 'x-ratelimit-remaining': '4000' }, true);
    expect(decide(secondary, NOW, 0, 0.5)).toEqual({
      notBefore: NOW + 60 * S,
      failures: 1,
      rateLimited: true,
      remaining: 4000,
    });
    expect(decide(secondary, NOW, 2, 0.5).notBefore).toBe(NOW + 240 * S);
    expect(decide(secondary, NOW, 10, 0.5).notBefore).toBe(NOW + 900 * S);
  });

  it('a 403 that is not a rate limit (a missing scope) sets no wait', () => {
    expect(decide(answer(403, { 'x-ratelimit-remaining': '4000' }), NOW, 0, 0.5)).toEqual({
      notBefore: NOW,
      failures: 0,
      rateLimited: false,
      remaining: 4000,
    });
  });

  it("GitLab's RateLimit-* headers: epoch reset, and a small reset read as seconds from now", () => {
    const epoch = decide(
      answer(429, { 'ratelimit-remaining': '0', 'ratelimit-reset': String(NOW / S + 45) }),
      NOW,
      0,
      0,
    );
    expect(epoch).toMatchObject({ notBefore: NOW + 45 * S, rateLimited: true, remaining: 0 });
    const delta = decide(answer(429, { 'ratelimit-remaining': '0', 'ratelimit-reset': '20' }), NOW, 0, 0);
    expect(delta.notBefore).toBe(NOW + 20 * S);
  });

  it('a reset already past (clocks apart) still waits a second, not zero', () => {
    const d = decide(
      answer(429, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / S - 100) }),
      NOW,
      0,
      0,
    );
    expect(d.notBefore).toBe(NOW + S);
  });

  it('5xx and network errors: exponential backoff with jitter in [ceiling/2, ceiling], capped', () => {
    expect(decide(answer(502), NOW, 0, 0).notBefore).toBe(NOW + 1 * S);
    expect(decide(answer(502), NOW, 0, 0.999999).notBefore).toBeCloseTo(NOW + 2 * S, -1);
    expect(decide(answer(undefined), NOW, 3, 0)).toEqual({ notBefore: NOW + 8 * S, failures: 4, rateLimited: false });
    expect(decide(answer(undefined), NOW, 30, 1).notBefore).toBe(NOW + 300 * S);
  });

  it('404 and 422 are about the request, not the host: no wait', () => {
    expect(decide(answer(404), NOW, 2, 0.5)).toEqual({ notBefore: NOW, failures: 0, rateLimited: false });
    expect(decide(answer(422), NOW, 0, 0.5).notBefore).toBe(NOW);
  });

  it('a Retry-After of a day (a broken proxy) is held to an hour', () => {
    expect(decide(answer(429, { 'retry-after': '86400' }), NOW, 0, 0).notBefore).toBe(NOW + MAX_WAIT_MS);
  });
});
