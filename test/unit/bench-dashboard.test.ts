// The figures of make bench-dashboard (bench/dashboard-figures.ts): what a
// window of requests adds to the one without tabs, which of them count as
// watches, lists and reviews, and the table against issue #25's targets.
import { describe, expect, it } from 'vitest';
import {
  added,
  type DashboardFigures,
  dashboardTable,
  operatorRequests,
  renewalKey,
} from '../../bench/dashboard-figures.ts';

describe('the dashboard bench', () => {
  it('splits requests into watches, lists, reviews and the rest', () => {
    expect(
      operatorRequests({
        'watch apps': 1,
        'list apps': 2,
        'create tokenreviews': 3,
        'create subjectaccessreviews': 4,
        'get leases': 5,
      }),
    ).toEqual({ watch: 1, list: 2, reviews: 7, renewals: {}, other: { 'get leases': 5 } });
    expect(operatorRequests({ 'renew watch jobs': 1, 'watch apps': 1 })).toMatchObject({
      watch: 1,
      renewals: { 'watch jobs': 1 },
    });
  });

  it("tells an informer's own renewal of its watch (timeoutSeconds 300 to 600) from any other watch", () => {
    const uri = (t: string) =>
      `/apis/batch/v1/namespaces/x/jobs?allowWatchBookmarks=true&resourceVersion=5&timeoutSeconds=${t}&watch=true`;
    expect(renewalKey('watch', 'jobs', uri('451'))).toBe('renew watch jobs');
    expect(renewalKey('watch', 'jobs', uri('30'))).toBeUndefined();
    expect(renewalKey('watch', 'apps', '/apis/teal.dev/v1alpha1/apps?watch=true')).toBeUndefined();
    expect(renewalKey('list', 'jobs', uri('451'))).toBeUndefined();
  });

  it('counts what a window adds to the window without tabs, never below zero', () => {
    expect(added({ 'get leases': 30, 'create subjectaccessreviews': 6 }, { 'get leases': 31 })).toEqual({
      'create subjectaccessreviews': 6,
    });
  });

  it('says each target met or not, and what was not measured', () => {
    const figures: DashboardFigures = {
      latency: { apps: 1000, samples: 0, missed: 3, p50: undefined, p99: undefined, p99FromSent: undefined, load: 2 },
      windows: [
        { tabs: 0, seconds: 60, load: 2, requests: { 'get leases': 30 } },
        { tabs: 50, seconds: 60, load: 3, requests: { 'get leases': 30, 'list apps': 1 } },
      ],
      opening: { 50: { 'create subjectaccessreviews': 2 } },
      snapshot: { bytes: 3_000_000, gzipped: 400_000, listBytes: 9_000_000, listGzipped: 900_000 },
      page: { apps: 10_000, firstScreenMs: 120, dataVia: 'stream snapshot', mostRows: 31, load: 4 },
      streams: {
        open: 100,
        heapBefore: 50 * 2 ** 20,
        heapWith: 51 * 2 ** 20,
        perStream: 10_485,
        rssPerStream: 20_000,
        load: 4,
      },
      operatorRss: 200 * 2 ** 20,
    };
    const table = dashboardTable(figures);
    expect(table).toContain(
      "| (a) requests added by 50 open tabs over 60 s | 0 watches, 1 lists, 0 reviews, other: none; informers' own watch renewals: none | 0 watches, 0 lists | **no** |",
    );
    expect(table).toContain(
      '| (a) opening 50 tabs (login, pages, first data) | 0 watches, 0 lists, 2 reviews, other: none | 0 watches, 0 lists | yes |',
    );
    expect(table).toContain('(3 not painted within 10 s) | p50 –, p99 –');
    expect(table).toMatch(/\(c\) snapshot of 10,000 Apps, gzipped \| 0\.38 MiB .*\| yes \|/);
    expect(table).toMatch(/first screen .* \| 120 ms \| ≤ 500 ms \| yes \|/);
    expect(table).toMatch(/at most 31 \| ≤ 50 \| yes \|/);
    expect(table).toMatch(/10\.2 KiB .*\| ≤ 64 KiB \| yes \|/);
  });
});
