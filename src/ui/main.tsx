// The dashboard (issue #25): Preact with signals and preact-iso's router, every
// view at its own URL. Text is always rendered by Preact, which escapes it:
// this code never sets HTML.
import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso/router';
import { DASHBOARD_PAGES as PAGES } from '../app/dashboard-pages.ts';
import { logout } from './api.ts';
import { AppPage } from './app-page.tsx';
import { AppsPage } from './apps.tsx';
import { liveState, startLive, stopLive } from './live.ts';
import { LoginPage } from './login.tsx';
import { loadSession, sessionError, user } from './session.ts';
import './app.css';

/** A page that needs a session: sends to the login page without one, coming back here after it. */
function Authenticated({ children }: { children: preact.ComponentChildren }) {
  const { route, url } = useLocation();
  const who = user.value;
  useEffect(() => {
    if (who === null) route(`/login?next=${encodeURIComponent(url)}`, true);
  }, [who, url, route]);
  const identity = who ? `${who.anonymous ? 'anonymous:' : 'user:'}${who.username}` : undefined;
  useEffect(() => {
    if (identity) startLive(identity);
  }, [identity]);
  if (!who) return null;
  return (
    <>
      <header class="bar">
        <a class="brand" href="/apps">
          Teal
        </a>
        <LiveBadge />
        {who.anonymous ? <AnonymousBar username={who.username} next={url} /> : <UserBar username={who.username} />}
      </header>
      <main>{children}</main>
    </>
  );
}

/** Who is logged in, and the way out. */
function UserBar({ username }: { username: string }) {
  const { route } = useLocation();
  return (
    <>
      <span class="who">
        Logged in as <strong data-testid="username">{username}</strong>
      </span>
      <button
        type="button"
        onClick={async () => {
          stopLive();
          await logout();
          user.value = null;
          route('/login');
        }}
      >
        Log out
      </button>
    </>
  );
}

/** Viewing without a session (--dashboard-anonymous=read): read-only, and the way to log in, back to this page. */
function AnonymousBar({ username, next }: { username: string; next: string }) {
  return (
    <>
      <span class="who">
        Viewing as <strong data-testid="username">{username}</strong> (read only)
      </span>
      <a class="login-link" href={`/login?next=${encodeURIComponent(next)}`}>
        Log in
      </a>
    </>
  );
}

const LIVE_TEXT = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' } as const;

/** How the page stands with the live stream, always visible: rows are never shown stale silently. */
function LiveBadge() {
  const state = liveState.value;
  return (
    <span role="status" class={`live live-${state}`} data-testid="live-state" data-state={state}>
      {LIVE_TEXT[state]}
    </span>
  );
}

function Home() {
  const { route } = useLocation();
  useEffect(() => route('/apps', true), [route]);
  return null;
}

function NotFound() {
  return (
    <main>
      <h1>Not found</h1>
      <p>
        No page here. <a href="/apps">All Apps</a>
      </p>
    </main>
  );
}

function Apps() {
  return (
    <Authenticated>
      <AppsPage />
    </Authenticated>
  );
}

function App(props: { params?: { namespace?: string; name?: string } }) {
  const namespace = props.params?.namespace ?? '';
  const name = props.params?.name ?? '';
  return (
    <Authenticated>
      {/* keyed: another App's page starts afresh, not with this one's state */}
      <AppPage key={`${namespace}/${name}`} namespace={namespace} name={name} />
    </Authenticated>
  );
}

/**
 * The links the router takes over: the dashboard's pages, not /api/ (the OIDC login's start is a
 * link there, which must be a real navigation, to the provider and back).
 */
const NOT_API = /^\/(?!api\/)/;

function Dashboard() {
  if (sessionError.value) {
    return (
      <main>
        <h1>Teal</h1>
        <p role="alert">The operator did not answer: {sessionError.value}</p>
      </main>
    );
  }
  if (user.value === undefined) return null;
  return (
    <LocationProvider scope={NOT_API}>
      <Router>
        <Route path={PAGES.home} component={Home} />
        <Route path={PAGES.login} component={LoginPage} />
        <Route path={PAGES.apps} component={Apps} />
        <Route path={PAGES.app} component={App} />
        <Route default component={NotFound} />
      </Router>
    </LocationProvider>
  );
}

const root = document.getElementById('app');
if (root) {
  render(<Dashboard />, root);
  void loadSession();
}
