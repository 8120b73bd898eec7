// The cache of src/api/auth.ts's reviews (TokenReviews and the list's SubjectAccessReviews):
// a review is kept for its time, shared while in flight, and the cache stays within its bound.
import { describe, expect, it } from 'vitest';
import { ReviewCache } from '../../src/api/auth.ts';
import { ApiError } from '../../src/api/errors.ts';

const ttl = { okMs: 1000, failedMs: (err: unknown) => (err instanceof ApiError && err.status === 403 ? 1000 : 0) };

describe('ReviewCache', () => {
  it('keeps an answer, allowed or forbidden, until its time is over, then asks again', async () => {
    let now = 0;
    const cache = new ReviewCache<void>(10, () => now);
    let asked = 0;
    const forbidden = () => {
      asked++;
      return Promise.reject(new ApiError(403, 'no'));
    };
    await expect(cache.get('k', ttl, forbidden)).rejects.toThrow('no');
    await expect(cache.get('k', ttl, forbidden)).rejects.toThrow('no');
    expect(asked).toBe(1);
    now = 1000;
    await expect(cache.get('k', ttl, forbidden)).rejects.toThrow('no');
    expect(asked).toBe(2);
  });

  it('asks again after a review that failed (not a forbidden one)', async () => {
    const cache = new ReviewCache<void>(10, () => 0);
    let asked = 0;
    const failing = () => {
      asked++;
      return Promise.reject(new ApiError(503, 'down'));
    };
    await expect(cache.get('k', ttl, failing)).rejects.toThrow('down');
    await expect(cache.get('k', ttl, failing)).rejects.toThrow('down');
    expect(asked).toBe(2);
  });

  it('holds at most its bound, dropping the oldest', async () => {
    const cache = new ReviewCache<number>(3, () => 0);
    let asked = 0;
    const review = () => Promise.resolve(++asked);
    for (const key of ['a', 'b', 'c', 'd']) await cache.get(key, ttl, review);
    expect(await cache.get('d', ttl, review)).toBe(4);
    expect(await cache.get('a', ttl, review)).toBe(5);
  });
});
