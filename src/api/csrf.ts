// Cross-site request forgery: a browser sends the session cookie with any
// request to the operator, including one another site's page makes. A request
// that changes something and carries the cookie must therefore show that the
// operator's own page made it:
// - Content-Type: application/json, which a cross-site page can only send
//   after a CORS preflight, which the operator never grants;
// - Sec-Fetch-Site: same-origin, or an Origin whose host is the one asked
//   (browsers set both, and a page cannot forge them).
// SameSite=Strict already keeps the cookie off cross-site requests; these
// hold where it does not (an old browser, a sibling subdomain's page, which
// is same-site but not same-origin). A request without the cookie (curl or
// kubectl teal with a bearer token) carries no ambient authority and passes.

/** What the rule reads of a request. */
export interface CsrfFacts {
  method: string;
  hasSessionCookie: boolean;
  contentType?: string | undefined;
  origin?: string | undefined;
  secFetchSite?: string | undefined;
  /** The Host header: the origin the browser asked. */
  host?: string | undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Why the request must be refused (the 403's message, naming what is missing), or undefined. */
export function csrfProblem(f: CsrfFacts): string | undefined {
  if (!f.hasSessionCookie || SAFE_METHODS.has(f.method.toUpperCase())) return undefined;
  const mediaType = f.contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    return `a ${f.method} with a session cookie needs Content-Type: application/json (got ${f.contentType === undefined ? 'none' : JSON.stringify(f.contentType)})`;
  }
  if (f.secFetchSite === 'same-origin') return undefined;
  if (f.origin !== undefined && f.host !== undefined && originHost(f.origin) === f.host.toLowerCase()) return undefined;
  const seen = [
    f.origin !== undefined ? `Origin ${JSON.stringify(f.origin)}` : 'no Origin',
    f.secFetchSite !== undefined ? `Sec-Fetch-Site ${JSON.stringify(f.secFetchSite)}` : 'no Sec-Fetch-Site',
  ].join(', ');
  return `a ${f.method} with a session cookie needs an Origin of this host (${f.host ?? 'unknown'}) or Sec-Fetch-Site: same-origin (got ${seen})`;
}

/** host[:port] of an Origin header, lower case, or undefined for "null" and anything not a URL. */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase() || undefined;
  } catch {
    return undefined;
  }
}
