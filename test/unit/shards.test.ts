// The pure rules of sharding (src/kube/shards.ts): a stable, well-spread shard
// per App, the fair share, and the moves a replica makes on each tick.
import { describe, expect, it } from 'vitest';
import {
  balance,
  fairShare,
  fnv1a32,
  memberLeaseName,
  preference,
  type ShardView,
  shardLeaseName,
  shardOf,
  strandedShards,
} from '../../src/kube/shards.ts';

describe('the shard of an App', () => {
  it('is FNV-1a of "namespace/name": the published test vectors, and the same values forever', () => {
    // From the FNV reference (draft-eastlake-fnv): "" and "a" and "foobar".
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    // A change here moves Apps between shards on upgrade: it must be deliberate.
    expect(shardOf('default/web', 6)).toBe(fnv1a32('default/web') % 6);
    expect([shardOf('shop/cart', 4), shardOf('shop/checkout', 4), shardOf('team-a/api', 16)]).toEqual([
      fnv1a32('shop/cart') % 4,
      fnv1a32('shop/checkout') % 4,
      fnv1a32('team-a/api') % 16,
    ]);
    expect(shardOf('default/web', 1)).toBe(0);
  });

  it('hashes UTF-8 bytes, so a name is the same shard whatever the platform', () => {
    expect(fnv1a32('é')).not.toBe(fnv1a32('e'));
    expect(fnv1a32('ns/é')).toBe(fnv1a32('ns/\u00e9'));
  });

  it('spreads 10,000 Apps evenly over 6, 16 and 256 shards', () => {
    for (const shards of [6, 16, 256]) {
      const counts = new Array<number>(shards).fill(0);
      for (let i = 0; i < 10_000; i++) {
        const key = `team-${i % 37}/app-${i}`;
        counts[shardOf(key, shards)] = (counts[shardOf(key, shards)] ?? 0) + 1;
      }
      const mean = 10_000 / shards;
      // Within 5 standard deviations of a uniform spread (binomial): a bad hash is far outside.
      const bound = 5 * Math.sqrt(mean);
      expect(Math.max(...counts) - mean).toBeLessThan(bound);
      expect(mean - Math.min(...counts)).toBeLessThan(bound);
    }
  });
});

describe('Lease names', () => {
  it('names one Lease per shard after the election id', () => {
    expect(shardLeaseName('teal-controller', 3)).toBe('teal-controller-shard-3');
  });

  it('names a member Lease after the identity, as a valid object name', () => {
    expect(memberLeaseName('teal-controller', 'teal-7d9f8-x2k4p_1a2b3c4d')).toBe(
      'teal-controller-member-teal-7d9f8-x2k4p-1a2b3c4d',
    );
    expect(memberLeaseName('t', 'My_Host.Local_ab')).toBe('t-member-my-host.local-ab');
    expect(memberLeaseName('t', '___')).toMatch(/^t-member-[0-9a-f]+$/);
    const long = memberLeaseName('t', 'h'.repeat(400));
    expect(long.length).toBeLessThanOrEqual(253);
  });
});

describe('the fair share', () => {
  it('is the shards over the live replicas, rounded up', () => {
    expect(fairShare(6, 1)).toBe(6);
    expect(fairShare(6, 3)).toBe(2);
    expect(fairShare(6, 4)).toBe(2);
    expect(fairShare(8, 3)).toBe(3);
    expect(fairShare(6, 0)).toBe(6);
  });
});

const view = (v: Partial<ShardView>): ShardView => ({
  shards: 6,
  members: 1,
  identity: 'a',
  held: [],
  candidates: [],
  free: [],
  ...v,
});

describe('the moves on each tick', () => {
  it('alone, tries for every free shard', () => {
    const moves = balance(view({ free: [0, 1, 2, 3, 4, 5] }));
    expect(moves.acquire.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(moves).toMatchObject({ abandon: [], handBack: [] });
  });

  it('with others, tries only up to its fair share, candidates included', () => {
    expect(balance(view({ members: 3, free: [0, 1, 2, 3, 4, 5] })).acquire).toHaveLength(2);
    expect(balance(view({ members: 3, held: [4], free: [0, 1, 2, 3, 5] })).acquire).toHaveLength(1);
    const trying = balance(view({ members: 3, held: [4], candidates: [0], free: [0, 1, 2, 3, 5] }));
    expect(trying).toEqual({ acquire: [], abandon: [], handBack: [] });
  });

  it('tries for free shards in its own order, which differs between replicas', () => {
    const free = [0, 1, 2, 3, 4, 5];
    const pick = (identity: string) => balance(view({ identity, members: 3, free })).acquire;
    const order = (identity: string) =>
      [...free].sort((x, y) => preference(identity, y) - preference(identity, x)).slice(0, 2);
    expect(pick('a')).toEqual(order('a'));
    const picks = ['a', 'b', 'c', 'd', 'e'].map((id) => pick(id).join());
    expect(new Set(picks).size).toBeGreaterThan(1);
  });

  it('abandons a candidate shard someone else got, and candidates beyond its share', () => {
    expect(balance(view({ members: 3, candidates: [0, 1], free: [1, 2] }))).toEqual({
      acquire: [2],
      abandon: [0],
      handBack: [],
    });
    expect(balance(view({ members: 3, held: [3, 4], candidates: [1], free: [1] })).abandon).toEqual([1]);
  });

  it('hands back one shard above its fair share per tick, its least preferred', () => {
    const held = [0, 1, 2, 3, 4, 5];
    const moves = balance(view({ members: 3, held }));
    const least = [...held].sort((x, y) => preference('a', y) - preference('a', x)).at(-1);
    expect(moves).toEqual({ acquire: [], abandon: [], handBack: [least] });
    expect(balance(view({ members: 3, held: [0, 1] })).handBack).toEqual([]);
    // 8 shards, 3 replicas: a share of 3; holding 3 is not too many.
    expect(balance(view({ shards: 8, members: 3, held: [0, 1, 2] })).handBack).toEqual([]);
  });
});

describe('shards held by a stranger (issue #24 S7)', () => {
  it('are those whose holder is no live member, in shard order, the holder cut short for logs and labels', () => {
    const holders = new Map([
      [3, 'stranger'],
      [0, 'a'],
      [1, 'gone'],
      [2, 'x'.repeat(300)],
    ]);
    const stranded = strandedShards('teal', holders, new Set(['a', 'b']));
    expect(stranded.map((s) => [s.shard, s.lease])).toEqual([
      [1, 'teal-shard-1'],
      [2, 'teal-shard-2'],
      [3, 'teal-shard-3'],
    ]);
    expect(stranded[0]?.holder).toBe('gone');
    expect(stranded[1]?.holder.length).toBe(128);
    expect(strandedShards('teal', new Map([[0, 'a']]), new Set(['a']))).toEqual([]);
  });
});
