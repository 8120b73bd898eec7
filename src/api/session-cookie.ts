// The session cookie: what a login leaves in the browser, sealed (encrypted
// and authenticated, AES-256-GCM) so the browser can neither read nor change
// it, and any replica holding the same key can open it: sessions need no
// store. Node's own crypto rather than @fastify/secure-session, whose
// libsodium is a native addon: the image runs one esbuild bundle without
// node_modules (Dockerfile), where a .node file cannot go.
//
// The cookie holds the user as the TokenReview named them and the token
// itself, which the session needs to review again (session.ts); a sealed
// token is as safe as the key that seals it. An OIDC login's cookie holds the
// user its id token's claims map to, and no token (oidc.ts). The same key
// seals an OIDC login's flow cookie (state, nonce, PKCE verifier), whose
// schema differs, so neither opens as the other.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';

/** The 32 bytes of an AES-256-GCM key. */
export type SessionKey = Buffer & { readonly __sessionKey: unique symbol };

/** At least this many bytes of secret in --session-key-file: as much as the key it becomes. */
export const MIN_KEY_SECRET_BYTES = 32;

/** The session key of a shared secret (the content of --session-key-file), through HKDF: any 32 bytes or more will do. */
export function sessionKeyOf(secret: Buffer): SessionKey {
  const trimmed = trimTrailingNewlines(secret);
  if (trimmed.length < MIN_KEY_SECRET_BYTES) {
    throw new Error(
      `the session key must hold at least ${MIN_KEY_SECRET_BYTES} bytes (it holds ${trimmed.length}); make one with \`openssl rand -base64 32\``,
    );
  }
  return Buffer.from(hkdfSync('sha256', trimmed, Buffer.alloc(0), 'teal session cookie v1', 32)) as SessionKey;
}

/** A key of this process alone: its sessions hold on this replica, until it restarts. */
export const randomSessionKey = (): SessionKey => randomBytes(32) as SessionKey;

// A Secret mounted from `kubectl create secret --from-file` or written by `echo` ends with a newline.
function trimTrailingNewlines(b: Buffer): Buffer {
  let end = b.length;
  while (end > 0 && (b[end - 1] === 0x0a || b[end - 1] === 0x0d)) end--;
  return b.subarray(0, end);
}

const UserSchema = z.strictObject({
  username: z.string().min(1),
  uid: z.string().optional(),
  groups: z.array(z.string()),
  extra: z.record(z.string(), z.array(z.string())).optional(),
});

/**
 * What a session cookie holds: a token login's user and token, which is
 * reviewed again (session.ts), or an OIDC login's user as its id token's
 * claims named them (oidc.ts), which holds until the id token expires.
 */
export const SessionSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    v: z.literal(1),
    kind: z.literal('token'),
    user: UserSchema,
    token: z.string().min(1),
    /** When the token was last reviewed (ms since the epoch): the next review is due REVIEW_INTERVAL after. */
    reviewedAt: z.int(),
    /** When the session ends whatever the reviews say (ms since the epoch). */
    expiresAt: z.int(),
  }),
  z.strictObject({
    v: z.literal(1),
    kind: z.literal('oidc'),
    user: UserSchema,
    /** The id token's expiry, or the session's longest lifetime if sooner (ms since the epoch). */
    expiresAt: z.int(),
  }),
]);
export type Session = z.output<typeof SessionSchema>;

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A value sealed, as a cookie value (base64url: no character a cookie must quote). */
export function sealValue(key: SessionKey, value: unknown): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/**
 * The value a cookie seals, as the schema reads it, or undefined when it was not sealed with
 * this key, was changed, or is not of the schema. Each kind of sealed cookie has a strict
 * schema of its own, so one kind never opens as another.
 */
export function unsealValue<T extends z.ZodType>(key: SessionKey, value: string, schema: T): z.output<T> | undefined {
  const raw = Buffer.from(value, 'base64url');
  if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The session sealed, as a cookie value. */
export const seal = (key: SessionKey, session: Session): string => sealValue(key, session);

/** The session a cookie value seals, or undefined when it was not sealed with this key, was changed, or is not a session. */
export const unseal = (key: SessionKey, value: string): Session | undefined => unsealValue(key, value, SessionSchema);

// ---- the cookie's header lines ----

/**
 * The cookie's name: over TLS with the __Host- prefix, which the browser only
 * accepts Secure, for Path=/ and without Domain, so no sibling host can set
 * or shadow it; over plain HTTP (kubectl teal dashboard's 127.0.0.1, a TLS
 * Ingress in front) a name without it, as a prefixed cookie must be Secure.
 */
export const cookieName = (tls: boolean): string => (tls ? '__Host-teal_session' : 'teal_session');

/** Browsers keep a cookie of at most 4096 bytes, name and value. */
export const MAX_COOKIE_BYTES = 4096;

/** Set-Cookie for a session: sent only to this origin's own requests, never readable by a script. */
export function sessionCookie(tls: boolean, value: string): string {
  return `${cookieName(tls)}=${value}; Path=/; HttpOnly; SameSite=Strict${tls ? '; Secure' : ''}`;
}

/** Set-Cookie that makes the browser forget the session. */
export function clearedCookie(tls: boolean): string {
  return `${cookieName(tls)}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${tls ? '; Secure' : ''}`;
}

/** The session cookie's value in a Cookie header, or undefined (the first one, as a browser sends the most specific first). */
export const readCookie = (header: string | undefined, tls: boolean): string | undefined =>
  readNamedCookie(header, cookieName(tls));

/** A cookie's value in a Cookie header, or undefined (the first one of that name). */
export function readNamedCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value === '' ? undefined : value;
  }
  return undefined;
}
