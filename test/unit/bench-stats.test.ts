// The bench's figures (bench/stats.ts, bench/table.ts): nearest-rank
// percentiles and the cells of the table.
import { describe, expect, it } from 'vitest';
import { percentile, withLoad } from '../../bench/stats.ts';
import { resources, verbs } from '../../bench/table.ts';

describe('percentile', () => {
  const fifty = Array.from({ length: 50 }, (_, i) => 50 - i);

  it('is a real sample, by nearest rank, whatever the order', () => {
    expect(percentile(fifty, 0.5)).toBe(25);
    expect(percentile(fifty, 0.9)).toBe(45);
    expect(percentile(fifty, 0.99)).toBe(50);
    expect(percentile([7], 0.5)).toBe(7);
    expect(percentile([7], 0.99)).toBe(7);
  });

  it('is undefined without samples', () => {
    expect(percentile([], 0.5)).toBeUndefined();
  });
});

describe('table cells', () => {
  it('gives requests by verb per App, the largest first', () => {
    expect(verbs({ 'get services': 400, 'patch services': 200, 'get apps': 400 }, 100)).toBe('get 8.0 · patch 2.0');
    expect(verbs({})).toBe('0');
  });

  it('gives every verb and resource', () => {
    expect(resources({ 'list pods': 200, 'create events': 1_000 })).toBe('create events 1,000 · list pods 200');
  });

  it('puts the load average with the figure', () => {
    expect(withLoad('12 ms', 3.14)).toBe('12 ms (load 3.1)');
  });
});
