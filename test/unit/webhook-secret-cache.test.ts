import { describe, expect, it } from 'vitest';
import { webhookCandidates } from '../../src/api/webhook-apps.ts';
import { isLive, mayReread, WebhookSecretCache } from '../../src/api/webhook-secret-cache.ts';
import type { WebhookHint } from '../../src/api/webhooks.ts';
import type { CachedApp } from '../../src/app/cached.ts';

const TTL = 15_000;
const ERROR_TTL = 2_000;

/** A cache on a hand-moved clock, with a loader that counts its reads and answers from `secrets`. */
function harness(opts: { maxEntries?: number } = {}) {
  let now = 1_000;
  const reads: string[] = [];
  const secrets = new Map<string, Buffer | undefined>();
  let failure: Error | undefined;
  const gates: (() => void)[] = [];
  let gated = false;
  const cache = new WebhookSecretCache({
    ttlMs: TTL,
    errorTtlMs: ERROR_TTL,
    ...opts,
    now: () => now,
    load: async (namespace, name) => {
      const key = `${namespace}/${name}`;
      reads.push(key);
      if (gated) await new Promise<void>((resolve) => gates.push(resolve));
      if (failure) throw failure;
      return secrets.get(key);
    },
  });
  return {
    cache,
    reads,
    secrets,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    fail: (err: Error | undefined) => {
      failure = err;
    },
    /** Holds reads until release(), to have them in flight. */
    hold: () => {
      gated = true;
    },
    release: () => {
      gated = false;
      for (const open of gates.splice(0)) open();
    },
  };
}

describe('webhook secret cache', () => {
  it('shares one read among 50 concurrent deliveries', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    h.hold();
    const all = Array.from({ length: 50 }, () => h.cache.get('shop', 'hook'));
    h.release();
    const values = await Promise.all(all);
    expect(values.every((v) => v?.toString() === 'k')).toBe(true);
    expect(h.reads).toEqual(['shop/hook']);
  });

  it('answers from memory for the TTL, then reads again', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    await h.cache.get('shop', 'hook');
    h.advance(TTL - 1);
    await h.cache.get('shop', 'hook');
    expect(h.reads).toHaveLength(1);
    h.advance(1);
    await h.cache.get('shop', 'hook');
    expect(h.reads).toHaveLength(2);
  });

  it('remembers a missing Secret or key as well', async () => {
    const h = harness();
    for (let i = 0; i < 20; i++) expect(await h.cache.get('shop', 'absent')).toBeUndefined();
    expect(h.reads).toEqual(['shop/absent']);
  });

  it('shares a failed read, answers its error for a short while, then tries again', async () => {
    const h = harness();
    h.fail(new Error('503 from the API server'));
    h.hold();
    const all = Array.from({ length: 50 }, () => h.cache.get('shop', 'hook'));
    h.release();
    const settled = await Promise.allSettled(all);
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
    await expect(h.cache.get('shop', 'hook')).rejects.toThrow('503 from the API server');
    expect(h.reads).toHaveLength(1);
    h.fail(undefined);
    h.secrets.set('shop/hook', Buffer.from('k'));
    h.advance(ERROR_TTL);
    expect((await h.cache.get('shop', 'hook'))?.toString()).toBe('k');
    expect(h.reads).toHaveLength(2);
  });

  it('re-reads a rotated secret for a delivery that started after it was read', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('old'));
    await h.cache.get('shop', 'hook');
    h.advance(10);
    h.secrets.set('shop/hook', Buffer.from('new'));
    const delivery = h.now();
    expect((await h.cache.get('shop', 'hook'))?.toString()).toBe('old');
    expect((await h.cache.reread('shop', 'hook', delivery))?.toString()).toBe('new');
    expect((await h.cache.get('shop', 'hook'))?.toString()).toBe('new');
    expect(h.reads).toHaveLength(2);
  });

  it('does not re-read a value read for the same delivery', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    const delivery = h.now();
    await h.cache.get('shop', 'hook');
    expect(h.cache.reread('shop', 'hook', delivery)).toBeUndefined();
    expect(h.reads).toHaveLength(1);
  });

  it('lets forged deliveries cost at most two reads per Secret per TTL, however many', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    const windows = 4;
    for (let t = 0; t < windows * TTL; t += 50) {
      // Each forgery: the cached value, then (it never verifies) a re-read if one is due.
      const delivery = h.now();
      await h.cache.get('shop', 'hook');
      await h.cache.reread('shop', 'hook', delivery);
      h.advance(50);
    }
    expect(h.reads.length).toBeGreaterThanOrEqual(windows);
    expect(h.reads.length).toBeLessThanOrEqual(2 * windows);
  });

  it('shares a re-read under way among concurrent deliveries', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    await h.cache.get('shop', 'hook');
    h.advance(1);
    const delivery = h.now();
    h.hold();
    const rereads = Array.from({ length: 10 }, () => h.cache.reread('shop', 'hook', delivery));
    h.release();
    expect(rereads.every((r) => r !== undefined)).toBe(true);
    await Promise.all(rereads);
    expect(h.reads).toHaveLength(2);
  });

  it('does not re-read a Secret it has not read, nor one whose read failed', async () => {
    const h = harness();
    expect(h.cache.reread('shop', 'never', h.now() + 1)).toBeUndefined();
    h.fail(new Error('forbidden'));
    await h.cache.get('shop', 'hook').catch(() => {});
    h.advance(1);
    expect(h.cache.reread('shop', 'hook', h.now())).toBeUndefined();
    expect(h.reads).toEqual(['shop/hook']);
  });

  it('keeps at most maxEntries Secrets, forgetting the least recently used', async () => {
    const h = harness({ maxEntries: 3 });
    for (const name of ['a', 'b', 'c']) await h.cache.get('ns', name);
    await h.cache.get('ns', 'a');
    for (let i = 0; i < 100; i++) await h.cache.get('ns', `hostile-${i}`);
    expect(h.cache.size).toBe(3);
    h.reads.length = 0;
    await h.cache.get('ns', 'hostile-99');
    expect(h.reads).toEqual([]);
    await h.cache.get('ns', 'a');
    expect(h.reads).toEqual(['ns/a']);
  });

  it('does not bring back an entry evicted while its read was under way', async () => {
    const h = harness({ maxEntries: 1 });
    h.hold();
    const first = h.cache.get('ns', 'a');
    h.release();
    h.hold();
    const second = h.cache.get('ns', 'b');
    h.release();
    await Promise.all([first, second]);
    expect(h.cache.size).toBe(1);
    h.reads.length = 0;
    await h.cache.get('ns', 'b');
    expect(h.reads).toEqual([]);
  });

  it('refuses a zero or fractional bound', () => {
    const load = async () => undefined;
    expect(() => new WebhookSecretCache({ load, ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => new WebhookSecretCache({ load, maxEntries: 1.5 })).toThrow(/maxEntries/);
  });
});

describe('webhook secret cache rules', () => {
  const value = { kind: 'value', value: Buffer.from('k') } as const;

  it('isLive: values for the TTL, errors for the error TTL, reads under way always', () => {
    expect(isLive({ readAt: 0, state: value }, TTL - 1, TTL, ERROR_TTL)).toBe(true);
    expect(isLive({ readAt: 0, state: value }, TTL, TTL, ERROR_TTL)).toBe(false);
    expect(isLive({ readAt: 0, state: { kind: 'error', error: new Error() } }, ERROR_TTL, TTL, ERROR_TTL)).toBe(false);
    const loading = { kind: 'loading', promise: Promise.resolve(undefined) } as const;
    expect(isLive({ readAt: 0, state: loading }, 10 * TTL, TTL, ERROR_TTL)).toBe(true);
  });

  it('mayReread: once per entry, only a value read before the delivery started', () => {
    expect(mayReread({ readAt: 5, reread: false, state: value }, 6)).toBe(true);
    expect(mayReread({ readAt: 5, reread: false, state: value }, 5)).toBe(false);
    expect(mayReread({ readAt: 5, reread: true, state: value }, 6)).toBe(false);
    expect(mayReread({ readAt: 5, reread: false, state: { kind: 'value', value: undefined } }, 6)).toBe(true);
    expect(mayReread({ readAt: 5, reread: false, state: { kind: 'error', error: new Error() } }, 6)).toBe(false);
  });
});

describe('webhook candidates', () => {
  const app = (name: string, secret?: string): CachedApp => ({
    metadata: { namespace: 'shop', name, resourceVersion: '1' },
    spec: {
      source: {
        git: {
          url: 'https://git.example.com/shop/site.git',
          ...(secret ? { webhookSecretRef: { name: secret } } : {}),
        },
      },
    },
  });
  const hint: WebhookHint = {
    provider: 'generic',
    kind: 'push',
    event: 'push',
    deliveryId: undefined,
    repoUrls: ['https://git.example.com/shop/site'],
    refs: ['refs/heads/main'],
  };

  it('reads a Secret shared by several Apps once, and an App without one not at all', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('k'));
    const apps = [app('web', 'hook'), app('api', 'hook'), app('docs')];
    const found = await webhookCandidates(h.cache, apps, hint);
    expect(found.map((c) => [c.name, c.secret?.toString()])).toEqual([
      ['web', 'k'],
      ['api', 'k'],
      ['docs', undefined],
    ]);
    expect(found[2]?.reread).toBeUndefined();
    expect(h.reads).toEqual(['shop/hook']);
  });

  it('offers a re-read only of a value read before this delivery', async () => {
    const h = harness();
    h.secrets.set('shop/hook', Buffer.from('old'));
    const first = await webhookCandidates(h.cache, [app('web', 'hook')], hint);
    expect(first[0]?.reread?.()).toBeUndefined();
    h.advance(1);
    h.secrets.set('shop/hook', Buffer.from('new'));
    const next = await webhookCandidates(h.cache, [app('web', 'hook')], hint);
    expect(next[0]?.secret?.toString()).toBe('old');
    expect((await next[0]?.reread?.())?.toString()).toBe('new');
    expect(h.reads).toHaveLength(2);
  });
});
