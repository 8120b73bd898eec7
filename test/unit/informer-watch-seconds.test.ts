// The timeoutSeconds an informer asks for must end a watch before client-node's
// HTTP client gives up on a quiet response body (undici's bodyTimeout, 300 s by
// default): an Events watch in a quiet namespace gets no bookmarks, and it used to
// fail every 5 minutes with "informer watch failed; reconnecting" (issue #25 left it).
import { describe, expect, it } from 'vitest';
import { WATCH_SECONDS_DEFAULT, WATCH_SECONDS_MAX, watchRequestSeconds } from '../../src/kube/informer.ts';

/** undici's default bodyTimeout, which client-node's dispatcher keeps. */
const UNDICI_BODY_TIMEOUT_S = 300;

describe('watchRequestSeconds', () => {
  it('asks the server to end every watch before the HTTP body timeout, with the default base', () => {
    for (const random of [0, 0.25, 0.5, 0.75, 0.999_999]) {
      expect(watchRequestSeconds(WATCH_SECONDS_DEFAULT, random)).toBeLessThan(UNDICI_BODY_TIMEOUT_S);
    }
  });

  it('caps a configured base that would outlast the body timeout', () => {
    expect(watchRequestSeconds(600, 0.5)).toBe(WATCH_SECONDS_MAX);
    expect(WATCH_SECONDS_MAX).toBeLessThan(UNDICI_BODY_TIMEOUT_S);
  });

  it('still spreads watches between base and twice base below the cap', () => {
    expect(watchRequestSeconds(100, 0)).toBe(100);
    expect(watchRequestSeconds(100, 0.5)).toBe(150);
    expect(watchRequestSeconds(3, 0.999)).toBe(6);
  });
});
