// The dashboard's pages (issue #25): the paths the UI's router shows
// (src/ui/main.tsx) and the operator answers with its index.html
// (src/api/dashboard.ts), one list for both.
export const DASHBOARD_PAGES = { home: '/', login: '/login', apps: '/apps', app: '/apps/:namespace/:name' } as const;

/** The App page's URL of an App. */
export const appPageUrl = (namespace: string, name: string): string =>
  `/apps/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;

/** Where the page's script and stylesheet are served. */
export const DASHBOARD_ASSETS = { js: '/ui/app.js', css: '/ui/app.css' } as const;

/**
 * The <meta> of a page the operator served without a session (a 401, or the login page): the
 * UI then knows nobody is logged in without asking GET /api/v1/session, whose 401 the browser
 * would report as an error.
 */
export const NO_SESSION_META = { name: 'teal-session', content: 'none' } as const;

/**
 * The <meta> of a page served to a caller without credentials under --dashboard-anonymous=read:
 * the UI shows it read-only, as the anonymous user, with a way to log in.
 */
export const ANONYMOUS_META = { name: NO_SESSION_META.name, content: 'anonymous' } as const;

/**
 * Who calls without credentials when --dashboard-anonymous=read lets them read: the API server's
 * own names for an unauthenticated request, so RoleBindings written for anonymous kubectl reads
 * decide what the dashboard shows too.
 */
export const ANONYMOUS_USER: Readonly<{ username: string; groups: readonly string[] }> = {
  username: 'system:anonymous',
  groups: ['system:unauthenticated'],
};

/**
 * The name under which the login page's URL carries a single-use login code
 * (kubectl teal dashboard): in the fragment, /login#code=..., which the browser
 * never sends to a server, so no server or proxy can log it; the page takes it
 * out of the URL before it spends it.
 */
export const LOGIN_CODE_KEY = 'code';

/** The login page's path with a login code. */
export const loginCodePath = (code: string): string =>
  `${DASHBOARD_PAGES.login}#${LOGIN_CODE_KEY}=${encodeURIComponent(code)}`;

/** The login code of a URL's fragment (location.hash, with or without its #), or undefined. */
export function loginCodeOf(hash: string): string | undefined {
  const code = new URLSearchParams(hash.startsWith('#') ? hash.slice(1) : hash).get(LOGIN_CODE_KEY);
  return code === null || code === '' ? undefined : code;
}

/**
 * The <meta> on every page when the operator logs in by OIDC: its content is the provider's
 * name, and the login page then offers "Log in with <name>", a link to OIDC_START.
 */
export const OIDC_META = { name: 'teal-oidc' } as const;

/** Where an OIDC login starts (src/api/oidc-routes.ts), with ?next=<the page to return to>. */
export const OIDC_START = '/api/v1/session/oidc/start';

/** Where the provider sends the browser back: the path of every --oidc-redirect-url. */
export const OIDC_CALLBACK = '/api/v1/session/oidc/callback';
