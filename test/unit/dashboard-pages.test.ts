// How the operator answers the dashboard's pages (src/api/dashboard.ts): no anonymous access but
// the login page, and a page served without a session says so to the UI.
import { describe, expect, it } from 'vitest';
import { markedWithoutSession, pageStatus } from '../../src/api/dashboard.ts';

describe('dashboard pages', () => {
  it('answers 401 for every page but the login page without a session, 200 with one', () => {
    expect(['/', '/login', '/apps'].map((path) => [pageStatus(path, false), pageStatus(path, true)])).toEqual([
      [401, 200],
      [200, 200],
      [401, 200],
    ]);
  });

  it('marks index.html as served without a session, in its head; refuses a page without one', () => {
    const html = Buffer.from('<html><head><title>Teal</title></head><body></body></html>');
    expect(markedWithoutSession(html).toString()).toBe(
      '<html><head><title>Teal</title><meta name="teal-session" content="none" />\n  </head><body></body></html>',
    );
    expect(() => markedWithoutSession(Buffer.from('<html></html>'))).toThrow('index.html has no </head>');
  });
});
