// Security headers on every answer of the operator's HTTP server (the API,
// the session routes, webhooks, health, metrics, and the dashboard to come):
// a strict Content-Security-Policy (scripts, styles and connections from this
// origin only; no inline script or style, no eval; never framed), nosniff,
// no Referer. @fastify/helmet rather than a hook of our own: it keeps the set
// of headers browsers need current (it dropped X-XSS-Protection when that
// became harmful, added Cross-Origin-Opener-Policy and Origin-Agent-Cluster)
// and checks the policy's directives at start.
import type { FastifyHelmetOptions } from '@fastify/helmet';

/** The Content-Security-Policy's directives; docs/dashboard.md lists them. */
export const CSP_DIRECTIVES = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  fontSrc: ["'self'"],
  objectSrc: ["'none'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
};

/**
 * @fastify/helmet's options, to register on the server itself (not in an
 * encapsulated plugin, whose hooks would not reach the others' routes). HSTS
 * only when the operator serves TLS: over plain HTTP browsers ignore it.
 */
export function securityHeaderOptions(tls: boolean): FastifyHelmetOptions {
  return {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: CSP_DIRECTIVES },
    referrerPolicy: { policy: 'no-referrer' },
    xFrameOptions: { action: 'deny' },
    strictTransportSecurity: tls ? { maxAge: 31_536_000 } : false,
  };
}
