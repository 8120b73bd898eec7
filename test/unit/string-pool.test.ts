import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { StringPool } from '../../src/kube/intern.ts';

// A full collection before each reading, so the heap holds only what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// Two equal strings built apart are two copies; only a pooled value is the same copy. V8 offers
// no identity check for strings, so sharing is seen through the heap a thousand copies take.
function heapOf(make: () => unknown[]): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = make();
  gc();
  const used = process.memoryUsage().heapUsed - before;
  expect(kept.length).toBeGreaterThan(0);
  return used;
}

describe('StringPool', () => {
  it('replaces short strings in place, everywhere in a parsed value, and keeps the rest', () => {
    const pool = new StringPool();
    const long = 'x'.repeat(65);
    const value = JSON.parse(
      JSON.stringify({ a: 'False', b: ['True', { c: 'False' }], n: 3, z: null, long, frozen: 'False' }),
    );
    expect(pool.intern(value)).toBe(value);
    expect(value).toEqual({ a: 'False', b: ['True', { c: 'False' }], n: 3, z: null, long, frozen: 'False' });
  });

  it('leaves a frozen object alone', () => {
    const pool = new StringPool();
    const frozen = Object.freeze({ a: 'x' });
    expect(() => pool.intern({ shared: frozen })).not.toThrow();
  });

  it('holds one copy of a string met in many objects, so they take less heap', () => {
    const pool = new StringPool();
    const fresh = (i: number) => JSON.parse(`{"reason":"${'NotAborted'.repeat(5)}","i":${i}}`);
    const apart = heapOf(() => Array.from({ length: 20_000 }, (_, i) => fresh(i)));
    const pooled = heapOf(() => Array.from({ length: 20_000 }, (_, i) => pool.intern(fresh(i))));
    expect(pooled).toBeLessThan(apart * 0.8);
  });

  it('stays bounded: strings met once do not pile up', () => {
    const pool = new StringPool();
    for (let i = 0; i < 100_000; i++) pool.string(`name-${i}`);
    expect(pool.size).toBeLessThanOrEqual(4096);
  });
});
