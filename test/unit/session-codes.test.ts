// Single-use login codes (src/api/session-codes.ts, issue #25 item 3): once,
// for 30 s of an injected clock, and a bounded number of them; and how the
// login page's URL carries one (src/app/dashboard-pages.ts).
import { describe, expect, it } from 'vitest';
import { LOGIN_CODE_TTL_MS, LoginCodes } from '../../src/api/session-codes.ts';
import { loginCodeOf, loginCodePath } from '../../src/app/dashboard-pages.ts';

function clock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('login codes', () => {
  it('a code gives its token once: a second spend gets nothing', () => {
    const codes = new LoginCodes();
    const { code, expiresInSeconds } = codes.issue('token-a');
    expect(expiresInSeconds).toBe(30);
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(codes.spend(code)).toBe('token-a');
    expect(codes.spend(code)).toBeUndefined();
  });

  it('works until 30 s after it was issued, not at 30 s', () => {
    const t = clock();
    const codes = new LoginCodes({ now: t.now });
    const early = codes.issue('token-a').code;
    const late = codes.issue('token-b').code;
    t.advance(LOGIN_CODE_TTL_MS - 1);
    expect(codes.spend(early)).toBe('token-a');
    t.advance(1);
    expect(codes.spend(late)).toBeUndefined();
  });

  it('an unknown code gets nothing; codes are distinct', () => {
    const codes = new LoginCodes();
    const issued = new Set(Array.from({ length: 100 }, () => codes.issue('token').code));
    expect(issued.size).toBe(100);
    expect(codes.spend('not-a-code')).toBeUndefined();
  });

  it('holds at most max codes: expired ones go first, then the oldest', () => {
    const t = clock();
    const codes = new LoginCodes({ now: t.now, max: 3 });
    const first = codes.issue('t1').code;
    t.advance(LOGIN_CODE_TTL_MS);
    const second = codes.issue('t2').code;
    expect(codes.size).toBe(1);
    const third = codes.issue('t3').code;
    const fourth = codes.issue('t4').code;
    const fifth = codes.issue('t5').code;
    expect(codes.size).toBe(3);
    expect(codes.spend(first)).toBeUndefined();
    expect(codes.spend(second)).toBeUndefined();
    expect([third, fourth, fifth].map((c) => codes.spend(c))).toEqual(['t3', 't4', 't5']);
    expect(codes.size).toBe(0);
  });
});

describe("the login page's URL", () => {
  it('carries the code in its fragment, which the browser never sends', () => {
    expect(loginCodePath('abc_-9')).toBe('/login#code=abc_-9');
    expect(new URL(`http://127.0.0.1:1234${loginCodePath('abc')}`).search).toBe('');
  });

  it('reads the code back from location.hash, with or without #; none is undefined', () => {
    expect(loginCodeOf('#code=abc_-9')).toBe('abc_-9');
    expect(loginCodeOf('code=x')).toBe('x');
    expect(loginCodeOf('')).toBeUndefined();
    expect(loginCodeOf('#code=')).toBeUndefined();
    expect(loginCodeOf('#other=1')).toBeUndefined();
  });
});
