// A login by single-use code (kubectl teal dashboard opens /login#code=...):
// the code is taken out of the URL before anything else happens, so neither
// the address bar nor the browser's history keeps it, then spent once.
import { signal } from '@preact/signals';
import { loginCodeOf } from '../app/dashboard-pages.ts';
import { loginWithCode, type User } from './api.ts';

/** Why a login code did not log in (used, expired), for the login page to show. */
export const codeError = signal<string | undefined>(undefined);

/** This page's login code, removed from its URL; undefined without one. */
export function takeLoginCode(): string | undefined {
  const code = loginCodeOf(location.hash);
  if (code === undefined) return undefined;
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
  return code;
}

/** The user the code logs in, or null (with codeError set) when it does not. */
export async function spendLoginCode(code: string): Promise<User | null> {
  try {
    return await loginWithCode(code);
  } catch (err) {
    codeError.value = (err as Error).message;
    return null;
  }
}
