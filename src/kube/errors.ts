// What an API server's answer says when a request fails: its status code, the
// Status reason and message, and whether trying again can help. Every room
// that talks to the API server reads errors through these helpers.
/** The parts of a Kubernetes Status body Teal reads. */
export interface ApiStatus {
  code: number;
  /** Status.reason, e.g. Forbidden, Invalid, AlreadyExists. */
  reason?: string;
  message: string;
  /** Status.details: the object the answer is about. A 404 without it means the resource type itself is missing. */
  details?: { name?: string; kind?: string };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * client-node's ApiException, known by its shape: a numeric HTTP code (a system
 * error's code is a string), the body and the headers. Not by instanceof, so
 * that reading an error does not load client-node (the CLI's fast reads do not).
 */
function isApiException(err: Error): err is Error & { code: number; body: unknown; headers: unknown } {
  return typeof (err as { code?: unknown }).code === 'number' && 'body' in err && 'headers' in err;
}

/**
 * The Kubernetes Status in an error or its causes, if the API server answered at all.
 * client-node's Watch (and the informer's list) fail with a plain Error that
 * carries only the HTTP status, as statusCode.
 */
export function apiStatusOf(error: unknown): ApiStatus | undefined {
  // Through the causes a caller wrapped the answer in (e.g. the executor's ActionFailed).
  for (let err = error, depth = 0; err instanceof Error && depth < 8; err = err.cause, depth++) {
    if (isApiException(err)) return statusFromBody(err.code, err.body);
    const code: unknown = (err as { statusCode?: unknown }).statusCode;
    if (typeof code === 'number') {
      // An HTTP answer read without client-node (the CLI's rest.ts) carries its body.
      const body: unknown = (err as { body?: unknown }).body;
      return body === undefined ? { code, message: err.message } : statusFromBody(code, body);
    }
  }
  return undefined;
}

/** An HTTP answer read as a Status: its body may be a Status object, JSON text of one, or other text. */
export function statusFromBody(code: number, raw: unknown): ApiStatus {
  let body = raw;
  if (typeof raw === 'string') {
    try {
      body = JSON.parse(raw);
    } catch {
      return { code, message: raw.slice(0, 300) };
    }
  }
  if (!isRecord(body)) return { code, message: '' };
  const details = isRecord(body.details) ? body.details : undefined;
  return {
    code,
    ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
    message: typeof body.message === 'string' ? body.message : '',
    ...(details ? { details: { name: text(details.name), kind: text(details.kind) } } : {}),
  };
}

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export const isNotFound = (err: unknown): boolean => apiStatusOf(err)?.code === 404;
export const isConflict = (err: unknown): boolean => apiStatusOf(err)?.code === 409;

/** The value, or undefined when the API server says the object is not there. */
export async function ignoreNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Answers that the same request will get again until a person changes
 * something (RBAC, a quota, a policy, the spec): retrying them soon only
 * loads the API server. 409 (a stale read), 429 and 5xx pass with time.
 */
const TERMINAL_CODES = new Set([400, 401, 403, 405, 406, 413, 415, 422]);

export function isTerminal(err: unknown): boolean {
  const status = apiStatusOf(err);
  return status !== undefined && TERMINAL_CODES.has(status.code);
}

/** One line for logs and status: the API server's own message rather than the whole response. */
export function errorMessage(err: unknown): string {
  // A wrapped error already says what it was doing, with its cause's line.
  const status = err instanceof Error && isApiException(err) ? apiStatusOf(err) : undefined;
  if (status) return status.message ? `${status.code}: ${status.message}` : `HTTP ${status.code}`;
  return err instanceof Error ? err.message : String(err);
}
