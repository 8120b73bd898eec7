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
      awaitsPromotion: true,
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
    const view = { ns: 'shop', phase: 'Paused', q: 'a b&c', waiting: true, sort: 'preview', dir: 'desc' } as const;
    expect(urlOf(view)).toBe('/apps?ns=shop&phase=Paused&q=a+b%26c&waiting=me&sort=preview&dir=desc');
    const query = Object.fromEntries(new URL(urlOf(view), 'http://x').searchParams);
    expect(viewOf(query)).toEqual(view);
    expect(urlOf(DEFAULT_VIEW)).toBe('/apps');
    expect(viewOf({ sort: 'constructor', dir: 'sideways', waiting: 'you' })).toEqual(DEFAULT_VIEW);
  });

  it('"waiting for me" shows the previews awaiting a promote in the namespaces where the user may promote', () => {
    const waiting = [
      app('shop', 'web', 'Paused', 2, 3),
      { ...app('shop', 'checking', 'Paused', 2, 3), previewChecks: 'running' as const },
      { ...app('shop', 'passed', 'Paused', 2, 3), previewChecks: 'passed' as const },
      app('shop', 'api', 'Healthy', 7),
      app('blog', 'site', 'Paused', 1, 2),
    ].map(rowOf);
    const shown = (promoteIn: string[]) =>
      visibleRows(waiting, { ...DEFAULT_VIEW, waiting: true }, new Set(promoteIn)).map((r) => r.key);
    expect(shown(['shop'])).toEqual(['shop/passed', 'shop/web']);
    expect(shown(['shop', 'blog'])).toEqual(['blog/site', 'shop/passed', 'shop/web']);
    expect(shown([])).toEqual([]);
    // Off, the filter shows every row whatever the permissions.
    expect(visibleRows(waiting, DEFAULT_VIEW, new Set())).toHaveLength(5);
  });
});
