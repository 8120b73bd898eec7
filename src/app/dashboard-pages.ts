// The dashboard's pages (issue #25): the paths the UI's router shows
// (src/ui/main.tsx) and the operator answers with its index.html
// (src/api/dashboard.ts), one list for both.
export const DASHBOARD_PAGES = { home: '/', login: '/login', apps: '/apps' } as const;

/** Where the page's script and stylesheet are served. */
export const DASHBOARD_ASSETS = { js: '/ui/app.js', css: '/ui/app.css' } as const;

/**
 * The <meta> of a page the operator served without a session (a 401, or the login page): the
 * UI then knows nobody is logged in without asking GET /api/v1/session, whose 401 the browser
 * would report as an error.
 */
export const NO_SESSION_META = { name: 'teal-session', content: 'none' } as const;
