// The rows a page holds from the live stream (src/ui/live-store.ts): what each
// event does to them, and what a tab that holds the stream tells one that joins.
import { describe, expect, it } from 'vitest';
import type { DashboardRow } from '../../src/app/dashboard-row.ts';
import { apply, emptyStore, type LiveMessage, messageOf, welcome } from '../../src/ui/live-store.ts';

const row = (name: string, message = '', version = '1'): DashboardRow => ({
  namespace: 'shop',
  name,
  version,
  phase: 'Healthy',
  message,
});

const keys = (store: ReturnType<typeof emptyStore>) => [...(store.rows?.keys() ?? [])].sort();

describe('the live store', () => {
  it('is connecting and holds nothing until a snapshot, which makes it live', () => {
    const store = emptyStore();
    expect(store).toEqual({ rows: undefined, state: 'connecting', lastId: undefined });
    expect(apply(store, { type: 'snapshot', rows: [row('web'), row('api')], id: 'e.1.s' })).toBe('all');
    expect(keys(store)).toEqual(['shop/api', 'shop/web']);
    expect(store.state).toBe('live');
    expect(store.lastId).toBe('e.1.s');
  });

  it('upserts and deletes rows by key, remembering the last id', () => {
    const store = emptyStore();
    apply(store, { type: 'snapshot', rows: [row('web'), row('api')], id: 'e.1.s' });
    expect(apply(store, { type: 'upsert', row: row('web', 'changed', '2'), id: 'e.2.s' })).toEqual(['shop/web']);
    expect(store.rows?.get('shop/web')?.message).toBe('changed');
    expect(apply(store, { type: 'delete', key: 'shop/api', id: 'e.3.s' })).toEqual(['shop/api']);
    expect(keys(store)).toEqual(['shop/web']);
    expect(store.lastId).toBe('e.3.s');
  });

  it('never keeps a row silently stale: a break shows reconnecting, and a snapshot replaces everything, a row gone included', () => {
    const store = emptyStore();
    apply(store, { type: 'snapshot', rows: [row('web'), row('gone')] });
    apply(store, { type: 'state', state: 'reconnecting' });
    expect(store.state).toBe('reconnecting');
    apply(store, { type: 'snapshot', rows: [row('web', 'fresh')] });
    expect(keys(store)).toEqual(['shop/web']);
    expect(store.rows?.get('shop/web')?.message).toBe('fresh');
    expect(store.state).toBe('live');
    apply(store, { type: 'reset' });
    expect(store.state).toBe('reconnecting');
    apply(store, { type: 'resumed', id: 'e.9.s' });
    expect(store.state).toBe('live');
  });

  it('reads the stream events it knows, and drops what it cannot read', () => {
    expect(
      messageOf(
        'snapshot',
        '{"rows":[{"namespace":"a","name":"b","version":"1","phase":"","message":""},{"x":1}]}',
        'i',
      ),
    ).toEqual({
      type: 'snapshot',
      rows: [{ namespace: 'a', name: 'b', version: '1', phase: '', message: '' }],
      id: 'i',
    });
    expect(messageOf('delete', '{"namespace":"a","name":"b","key":"a/b"}', 'i')).toEqual({
      type: 'delete',
      key: 'a/b',
      id: 'i',
    });
    expect(messageOf('upsert', '{"namespace":"a"}', 'i')).toBeUndefined();
    expect(messageOf('upsert', 'not json', 'i')).toBeUndefined();
    expect(messageOf('unknown', '{}', 'i')).toBeUndefined();
    expect(messageOf('reset', '{}', '')).toEqual({ type: 'reset' });
  });

  it('tells a tab that joins everything it holds as a snapshot with its last id, then how it stands', () => {
    const store = emptyStore();
    expect(welcome(store)).toEqual([{ type: 'state', state: 'connecting' }]);
    apply(store, { type: 'snapshot', rows: [row('web')], id: 'e.4.s' });
    apply(store, { type: 'state', state: 'reconnecting' });
    const told = welcome(store);
    expect(told).toEqual([
      { type: 'snapshot', rows: [row('web')], id: 'e.4.s' },
      { type: 'state', state: 'reconnecting' },
    ] satisfies LiveMessage[]);
    const joiner = emptyStore();
    for (const m of told) apply(joiner, m);
    expect(joiner).toEqual(store);
  });
});
