// The dashboard's files (issue #25), served from memory under /: index.html at
// each page's path (the UI's router shows the page), app.js and app.css under
// /ui/. No anonymous access: without a session, every page but the login page
// answers 401 (its body the same index.html, marked as served without a
// session, so the UI shows the login page and returns to the page asked for
// after it). With --dashboard-anonymous=read the caller without credentials
// is the anonymous user: its pages answer 200, marked so the UI shows them
// read-only. The pages hold no data: what they show comes from /api/v1, which
// authenticates and authorizes every call. The files are read once, at start.
// Registered by apiPlugin, so its caller, error handler and CSRF rule apply.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ANONYMOUS_META,
  DASHBOARD_ASSETS,
  DASHBOARD_PAGES,
  NO_SESSION_META,
  OIDC_META,
} from '../app/dashboard-pages.ts';
import { ApiError } from './errors.ts';
import type { Caller } from './session.ts';

/** The built files (scripts/bundle-ui.ts), read from a folder. */
export interface DashboardFiles {
  html: Buffer;
  js: Buffer;
  css: Buffer;
}

/** Reads the built dashboard from dir; throws, naming the file, when one is missing. */
export function readDashboardFiles(dir: string): DashboardFiles {
  const read = (name: string) => readFileSync(join(dir, name));
  return { html: read('index.html'), js: read('app.js'), css: read('app.css') };
}

/** index.html with this <meta> before its </head> (its content escaped); throws when it has none. */
export function markedWith(html: Buffer, mark: { name: string; content: string }): Buffer {
  const text = html.toString('utf8');
  const head = text.indexOf('</head>');
  if (head < 0) throw new Error('dashboard: index.html has no </head>');
  const meta = `<meta name="${mark.name}" content="${escapeAttribute(mark.content)}" />\n  `;
  return Buffer.from(`${text.slice(0, head)}${meta}${text.slice(head)}`);
}

const escapeAttribute = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** index.html with NO_SESSION_META before its </head>; throws when it has none. */
export const markedWithoutSession = (html: Buffer): Buffer => markedWith(html, NO_SESSION_META);

/** index.html naming the OIDC provider (OIDC_META), so the login page offers it. */
export const markedWithOidc = (html: Buffer, provider: string): Buffer =>
  markedWith(html, { name: OIDC_META.name, content: provider });

/** A page's answer: 200 to a caller with a session (or a bearer token); without one, 200 for the login page only. */
export const pageStatus = (path: string, signedIn: boolean): 200 | 401 =>
  signedIn || path === DASHBOARD_PAGES.login ? 200 : 401;

export interface DashboardRouteDeps {
  files: DashboardFiles;
  /**
   * Who calls (session.ts identify), the anonymous user included when reads allow it; throws
   * ApiError 401 without a session, 503 when a review fails.
   */
  caller: (request: FastifyRequest, reply: FastifyReply) => Promise<Caller>;
  /** The OIDC provider's name, when logins by OIDC are on: every page names it (OIDC_META). */
  oidcProvider?: string;
}

export function dashboardRoutes(fastify: FastifyInstance, { files, caller, oidcProvider }: DashboardRouteDeps): void {
  // On every page, not only the login page: the UI reaches its login page without a reload (after a logout).
  const html = oidcProvider === undefined ? files.html : markedWithOidc(files.html, oidcProvider);
  const withoutSession = markedWithoutSession(html);
  const anonymous = markedWith(html, ANONYMOUS_META);
  for (const path of Object.values(DASHBOARD_PAGES)) {
    fastify.get(path, async (request, reply) => {
      const via = await callerVia(request, reply, caller);
      // no-store: a new operator's page names its own script at once, and a page's answer depends on the cookie.
      return reply
        .code(pageStatus(path, via !== undefined))
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(via === undefined ? withoutSession : via === 'anonymous' ? anonymous : html);
    });
  }
  // The login page's script and style are public. Unhashed names: the browser asks again at each
  // load (no-cache), so an upgraded operator's files show at once.
  fastify.get(DASHBOARD_ASSETS.js, (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(files.js),
  );
  fastify.get(DASHBOARD_ASSETS.css, (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('text/css; charset=utf-8').send(files.css),
  );
}

/**
 * How the request's caller came, or undefined without one. Without one, the 401's headers
 * (WWW-Authenticate, and the Set-Cookie that clears an ended session) go on the reply; a failed
 * review (503) is thrown, for the API's error handler.
 */
async function callerVia(
  request: FastifyRequest,
  reply: FastifyReply,
  caller: DashboardRouteDeps['caller'],
): Promise<Caller['via'] | undefined> {
  try {
    return (await caller(request, reply)).via;
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) throw err;
    reply.headers(err.headers);
    return undefined;
  }
}
