// The one place secrets are masked in text Teal writes down or shows: status,
// Events, logs, API replies and notifications all carry text that went through
// a masker first. Matching only the exact value is not enough: a URL library
// percent-encodes a password (new URL() turns `p"w d` into `p%22w%20d`), a
// server echoes a header JSON-escaped or base64-encoded (Basic auth), and an
// error quotes the URL it was given. So a masker matches each secret in all of
// these forms, and removes any URL's userinfo (user:password@) whatever it is.

/** What a masked secret looks like. */
export const MASK = '*****';

/** A scheme's `//`, then the userinfo up to its last `@` before the host (as WHATWG URL reads it). */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#\\]*@/gi;

/** Text with the userinfo of every URL in it removed: a URL's user:password is never shown, masked or not. */
export function withoutUserinfo(text: string): string {
  return text.replace(USERINFO, '$1');
}

/**
 * A function that masks these secrets in text: each in its plain form, any
 * mix of percent-encoding (encodeURIComponent, encodeURI, a URL's userinfo,
 * path or query, `+` for a space, either case of hex), JSON escapes (`\"`,
 * `\/`, `\u00e9`), and base64 (standard and URL-safe) at any alignment within
 * a longer encoded text; and every URL's userinfo. The longest secret is
 * matched first, so one that contains another is masked whole.
 */
export function masker(secrets: Iterable<string>): (text: string) => string {
  const values = [...new Set(secrets)].filter((s) => s !== '').sort((a, b) => b.length - a.length);
  if (values.length === 0) return withoutUserinfo;
  const pattern = new RegExp(values.flatMap((s) => [encodedForms(s), ...base64Forms(s)]).join('|'), 'g');
  return (text) => withoutUserinfo(text.replace(pattern, MASK));
}

/** One pattern for the secret as written, percent-encoded or JSON-escaped, char by char (even mixed). */
function encodedForms(secret: string): string {
  return [...secret].map((char) => `(?:${charForms(char).join('|')})`).join('');
}

function charForms(char: string): string[] {
  const forms = [escapeRegExp(char), percentForm(char), unicodeEscape(char)];
  if (char === ' ') forms.push('\\+');
  const short = JSON_ESCAPES[char];
  if (short) forms.push(escapeRegExp(short));
  return forms;
}

// The short escapes JSON writers use; `\/` is optional in JSON and some writers use it.
const JSON_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '/': '\\/',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** The char's UTF-8 bytes as %XX, hex in either case. */
function percentForm(char: string): string {
  return [...Buffer.from(char, 'utf8')].map((byte) => `%${hexPattern(byte, 2)}`).join('');
}

/** The char as JSON's \uXXXX (a surrogate pair beyond the BMP), hex in either case. */
function unicodeEscape(char: string): string {
  const units = char.length === 2 ? [char.charCodeAt(0), char.charCodeAt(1)] : [char.charCodeAt(0)];
  return units.map((unit) => `\\\\u${hexPattern(unit, 4)}`).join('');
}

function hexPattern(value: number, digits: number): string {
  return [...value.toString(16).padStart(digits, '0')]
    .map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d))
    .join('');
}

const BASE64_CHAR = '[A-Za-z0-9+/_-]';

/**
 * The secret base64-encoded inside a longer text (`Basic base64(user:secret)`):
 * for each of the three alignments its whole 3-byte groups give the same
 * characters whatever surrounds them; the group on either side mixes in
 * neighbouring bytes, so up to 4 characters each side are masked with it.
 * A secret shorter than 5 bytes is not whole groups at every alignment: those
 * alignments have nothing of their own to match.
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = new Set<string>();
  for (const start of [0, 1, 2]) {
    const whole = Math.floor((bytes.length - start) / 3) * 3;
    if (whole < 3) continue;
    const core = bytes.subarray(start, start + whole).toString('base64');
    forms.add(core);
    forms.add(core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return [...forms].map((core) => `${BASE64_CHAR}{0,4}${escapeRegExp(core)}(?:${BASE64_CHAR}|=){0,4}`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
