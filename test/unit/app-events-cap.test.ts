// controller/cache.ts's bound on the cache of Events about Apps: which Event it takes.
import { describe, expect, it } from 'vitest';
import { MAX_APP_EVENTS, takesAppEvent } from '../../src/controller/cache.ts';

describe('the cache of Events about Apps', () => {
  it('takes a new Event while it holds fewer than the most, and always updates one it holds', () => {
    expect(takesAppEvent(0, false)).toBe(true);
    expect(takesAppEvent(MAX_APP_EVENTS - 1, false)).toBe(true);
    expect(takesAppEvent(MAX_APP_EVENTS, false)).toBe(false);
    expect(takesAppEvent(MAX_APP_EVENTS, true)).toBe(true);
    expect(takesAppEvent(3, false, 3)).toBe(false);
  });
});
