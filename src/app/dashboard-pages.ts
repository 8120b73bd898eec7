// The dashboard's pages (issue #25): the paths the UI's router shows
// (src/ui/main.tsx) and the operator answers with its index.html
// (src/api/dashboard.ts), one list for both.
export const DASHBOARD_PAGES = { home: '/', login: '/login', apps: '/apps' } as const;

/** Where the page's script and stylesheet are served. */
export const DASHBOARD_ASSETS = { js: '/ui/app.js', css: '/ui/app.css' } as const;
