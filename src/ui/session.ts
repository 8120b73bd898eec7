// Who is logged in, shared by every page: undefined until known, then a user
// or null (no session).
import { signal } from '@preact/signals';
import { ANONYMOUS_META, ANONYMOUS_USER, NO_SESSION_META, OIDC_META } from '../app/dashboard-pages.ts';
import { currentUser, type User } from './api.ts';
import { spendLoginCode, takeLoginCode } from './login-code.ts';

export const user = signal<User | null | undefined>(undefined);
/** Why the session could not be read (the operator unreachable, a 503): shown instead of a login form. */
export const sessionError = signal<string | undefined>(undefined);

/**
 * Whether the operator served this page without a session (src/api/dashboard.ts marks it): then
 * nobody is logged in, and asking GET /api/v1/session would only get a 401, which the browser
 * reports as an error.
 */
const servedMark = () => document.querySelector(`meta[name="${NO_SESSION_META.name}"]`)?.getAttribute('content');

const ANONYMOUS: User = { username: ANONYMOUS_USER.username, groups: [...ANONYMOUS_USER.groups], anonymous: true };

/** The OIDC provider's name when the operator logs in by OIDC (src/api/dashboard.ts names it), else undefined. */
export const oidcProvider = (): string | undefined =>
  document.querySelector(`meta[name="${OIDC_META.name}"]`)?.getAttribute('content') ?? undefined;

export async function loadSession(): Promise<void> {
  const code = takeLoginCode();
  if (code !== undefined) {
    user.value = await spendLoginCode(code);
    return;
  }
  const mark = servedMark();
  if (mark === NO_SESSION_META.content || mark === ANONYMOUS_META.content) {
    user.value = mark === ANONYMOUS_META.content ? ANONYMOUS : null;
    return;
  }
  try {
    user.value = (await currentUser()) ?? null;
  } catch (err) {
    sessionError.value = (err as Error).message;
  }
}
