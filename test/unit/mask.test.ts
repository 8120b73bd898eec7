// src/app/mask.ts: a secret is masked in every form a URL library, a JSON
// writer or a Basic header turns it into, and a URL's userinfo never shows.
import { describe, expect, it } from 'vitest';
import { MASK, masker, withoutUserinfo } from '../../src/app/mask.ts';

const SECRET = 'Sp"e c<i>al/ünï+&=\\tok';
const mask = masker([SECRET]);

/** The forms the issue saw leak, and their kin. */
const forms: Record<string, string> = {
  plain: SECRET,
  encodeURIComponent: encodeURIComponent(SECRET),
  'encodeURIComponent, lower-case hex': encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
  encodeURI: encodeURI(SECRET),
  'form encoding (+ for space)': encodeURIComponent(SECRET).replaceAll('%20', '+'),
  URLSearchParams: new URLSearchParams({ q: SECRET }).toString().slice(2),
  'a URL password': (() => {
    const u = new URL('http://h/');
    u.password = SECRET;
    return u.password;
  })(),
  'JSON-escaped': JSON.stringify(SECRET).slice(1, -1),
  'JSON-escaped, ASCII only, with \\/': JSON.stringify(SECRET)
    .slice(1, -1)
    .replaceAll('/', '\\/')
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  base64: Buffer.from(SECRET).toString('base64'),
  'base64 url-safe': Buffer.from(SECRET).toString('base64url'),
};

describe('masker', () => {
  for (const [name, form] of Object.entries(forms)) {
    it(`masks the secret ${name}`, () => {
      const out = mask(`before ${form} after`);
      expect(out).toContain(MASK);
      expect(out).not.toContain(form);
      expect(out.startsWith('before ')).toBe(true);
    });
  }

  it('masks it inside a longer base64 text at each alignment (an echoed Basic or Bearer header)', () => {
    for (const prefix of ['u:', 'us:', 'use:', 'Bearer ']) {
      for (const encoding of ['base64', 'base64url'] as const) {
        const echoed = Buffer.from(`${prefix}${SECRET}!`).toString(encoding);
        const out = mask(`header ${echoed} end`);
        expect(out).toContain(MASK);
        // Nothing of the secret's own groups is left: every 4 characters of its core are gone.
        const core = Buffer.from(SECRET.slice(3, 15)).toString(encoding);
        expect(out).not.toContain(core.slice(0, 8));
      }
    }
  });

  it('masks the longer of two secrets whole, and leaves other text alone', () => {
    const both = masker(['abc123', 'xyzabc123789']);
    expect(both('a xyzabc123789 b abc123 c')).toBe(`a ${MASK} b ${MASK} c`);
    expect(both('nothing secret here: {"ok":true}')).toBe('nothing secret here: {"ok":true}');
  });

  it('removes the userinfo of every URL, with or without secrets', () => {
    expect(masker([])('GET http://user:p%40ss@127.0.0.1:9/x failed')).toBe('GET http://127.0.0.1:9/x failed');
    expect(withoutUserinfo('https://tok@host/a?b=c and ftp://a:b@c@d:1/')).toBe('https://host/a?b=c and ftp://d:1/');
    expect(withoutUserinfo('mail a@b, http://host/p@q')).toBe('mail a@b, http://host/p@q');
  });
});
