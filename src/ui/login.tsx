// The login page: a bearer token pasted, sent once to POST /api/v1/session,
// which answers with a sealed HttpOnly cookie. The token is not kept: not in
// storage, not in the URL. When the operator logs in by OIDC, the page also
// offers "Log in with <provider>": a plain link, as the login is a run of
// top-level navigations (to the provider and back).
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { OIDC_START } from '../app/dashboard-pages.ts';
import { login } from './api.ts';
import { codeError } from './login-code.ts';
import { oidcProvider, user } from './session.ts';

/** Where to go after login: a page of this dashboard only, never another origin. */
const nextOf = (next: string | undefined) => (next?.startsWith('/') && !next.startsWith('//') ? next : '/apps');

type Route = ReturnType<typeof useLocation>['route'];

export function LoginPage() {
  const { route, query } = useLocation();
  const next = nextOf(query.next);
  const { error, busy, submit } = useTokenLogin(next, route);
  useLeaveWhenLoggedIn(next, route);
  const provider = oidcProvider();
  return (
    <main class="login">
      <h1>Teal</h1>
      {provider !== undefined ? <OidcLogin provider={provider} next={next} /> : null}
      <TokenForm submit={submit} error={error.value} busy={busy.value} />
    </main>
  );
}

/** A user logged in already (not the anonymous one) goes on to next. */
function useLeaveWhenLoggedIn(next: string, route: Route): void {
  useEffect(() => {
    if (user.value && !user.value.anonymous) route(next, true);
  }, [next, route]);
}

/** Sends the pasted token once, then forgets it and goes on to next; a refusal is the form's error. */
function useTokenLogin(next: string, route: Route) {
  // A login code that failed (login-code.ts) shows as this form's error.
  const error = useSignal<string | undefined>(codeError.peek());
  const busy = useSignal(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem('token') as HTMLTextAreaElement;
    const token = field.value.trim();
    if (token === '') {
      error.value = 'Paste a token first.';
      return;
    }
    busy.value = true;
    error.value = undefined;
    try {
      user.value = await login(token);
      field.value = '';
      route(next);
    } catch (err) {
      error.value = (err as Error).message;
    } finally {
      busy.value = false;
    }
  };
  return { error, busy, submit };
}

function OidcLogin({ provider, next }: { provider: string; next: string }) {
  return (
    <p class="oidc">
      <a class="button" href={`${OIDC_START}?next=${encodeURIComponent(next)}`}>
        Log in with {provider}
      </a>
    </p>
  );
}

function TokenForm(props: { submit: (event: Event) => Promise<void>; error: string | undefined; busy: boolean }) {
  return (
    <form onSubmit={props.submit} aria-describedby="login-help">
      <label for="token">Bearer token</label>
      <textarea id="token" name="token" rows={4} spellcheck={false} autocomplete="off" required />
      <p id="login-help" class="help">
        A token the cluster's API server accepts: a ServiceAccount's (<code>kubectl create token NAME</code>), a cloud
        provider's, or your OIDC kubeconfig's. What you may see and do is what Kubernetes RBAC allows you.
      </p>
      {props.error ? (
        <p role="alert" class="error" data-testid="login-error">
          {props.error}
        </p>
      ) : null}
      <button type="submit" disabled={props.busy}>
        Log in
      </button>
    </form>
  );
}
