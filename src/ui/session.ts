// Who is logged in, shared by every page: undefined until the operator said,
// then a user or null (no session).
import { signal } from '@preact/signals';
import { currentUser, type User } from './api.ts';

export const user = signal<User | null | undefined>(undefined);
/** Why the session could not be read (the operator unreachable, a 503): shown instead of a login form. */
export const sessionError = signal<string | undefined>(undefined);

export async function loadSession(): Promise<void> {
  try {
    user.value = (await currentUser()) ?? null;
  } catch (err) {
    sessionError.value = (err as Error).message;
  }
}
