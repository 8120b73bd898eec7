// The dashboard's Apps list without a browser: the table's rows made from the
// live stream's (app/dashboard-row.ts), filters, sort and the URL of each view
// (src/ui/rows.ts).
import { describe, expect, it } from 'vitest';
import type { DashboardRow } from '../../src/app/dashboard-row.ts';
import { DEFAULT_VIEW, rowOf, urlOf, viewOf, visibleRows } from '../../src/ui/rows.ts';

const app = (
  namespace: string,
  name: string,
  phase = '',
  active?: number,
  preview?: number,
  message = '',
): DashboardRow => ({
  namespace,
  name,
  version: '1',
  phase,
  message,
  ...(active ? { active } : {}),
  ...(preview ? { preview, previewChecks: 'none' as const } : {}),
});

const rows = [
  app('shop', 'web', 'Paused', 2, 3, 'revision 3 is in preview'),
  app('shop', 'api', 'Healthy', 7),
  app('blog', 'site', 'Degraded', 1, undefined, 'build failed'),
  app('blog', 'new'),
].map(rowOf);

const names = (view: Partial<typeof DEFAULT_VIEW>) => visibleRows(rows, { ...DEFAULT_VIEW, ...view }).map((r) => r.key);

describe('the Apps list', () => {
  it("makes the table's row of the stream's, what is missing as empty", () => {
    expect(rows[0]).toEqual({
      key: 'shop/web',
      namespace: 'shop',
      name: 'web',
      phase: 'Paused',
      active: 2,
      preview: 3,
      message: 'revision 3 is in preview',
    });
    expect(rowOf(app('a', 'b'))).toMatchObject({
      phase: '',
      active: undefined,
      message: '',
    });
  });

  it('filters by namespace, phase and text in any column, case-insensitive', () => {
    expect(names({ ns: 'blog' })).toEqual(['blog/new', 'blog/site']);
    expect(names({ phase: 'Healthy' })).toEqual(['shop/api']);
    expect(names({ q: 'BUILD' })).toEqual(['blog/site']);
    expect(names({ q: '7' })).toEqual(['shop/api']);
    expect(names({ ns: 'shop', q: 'preview' })).toEqual(['shop/web']);
  });

  it('sorts by any column either way, numbers as numbers, then by namespace/name', () => {
    expect(names({})).toEqual(['blog/new', 'blog/site', 'shop/api', 'shop/web']);
    expect(names({ sort: 'active', dir: 'desc' })).toEqual(['shop/api', 'shop/web', 'blog/site', 'blog/new']);
    expect(names({ sort: 'name' })).toEqual(['shop/api', 'blog/new', 'blog/site', 'shop/web']);
  });

  it('gives every view a URL, and reads it back; a wrong value is the default', () => {
    const view = { ns: 'shop', phase: 'Paused', q: 'a b&c', sort: 'preview', dir: 'desc' } as const;
    expect(urlOf(view)).toBe('/apps?ns=shop&phase=Paused&q=a+b%26c&sort=preview&dir=desc');
    const query = Object.fromEntries(new URL(urlOf(view), 'http://x').searchParams);
    expect(viewOf(query)).toEqual(view);
    expect(urlOf(DEFAULT_VIEW)).toBe('/apps');
    expect(viewOf({ sort: 'constructor', dir: 'sideways' })).toEqual(DEFAULT_VIEW);
  });
});
