// Errors of the HTTP API (DESIGN §3.3): JSON {error, message}, where error is
// the Kubernetes StatusReason of the code, so clients that already speak the
// Kubernetes API read them the same way.

export const REASONS = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
} as const;

export type ErrorStatus = keyof typeof REASONS;
export type ErrorReason = (typeof REASONS)[ErrorStatus];

export interface ErrorBody {
  error: ErrorReason;
  message: string;
}

export const errorBody = (status: ErrorStatus, message: string): ErrorBody => ({ error: REASONS[status], message });

/** Thrown anywhere in a request; the plugin's error handler replies with it. */
export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: ErrorStatus, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.headers = headers;
  }

  get body(): ErrorBody {
    return errorBody(this.status, this.message);
  }
}

export const unauthorized = (message: string) => new ApiError(401, message, { 'www-authenticate': 'Bearer' });

/** What was thrown while serving a request, as far as the answer depends on it: fastify's errors carry a code and a status. */
export interface ThrownError {
  message: string;
  code?: string;
  statusCode?: number;
}

/** The answer to a thrown error; unexpected when the fault is ours, to be logged, as the caller is told nothing of it. */
export interface ErrorAnswer {
  error: ApiError;
  unexpected: boolean;
}

/**
 * The answer to what a route or fastify threw: an ApiError as it is; fastify's
 * refusals of the request (a body over bodyLimit bytes, a media type other than
 * JSON, any other 4xx) as a 413 or a 400; anything else a 500 that says no more
 * than "internal error", as its message may hold what the caller must not see.
 */
export function errorAnswer(error: ThrownError, bodyLimit: number): ErrorAnswer {
  const answer = (status: ErrorStatus, message: string): ErrorAnswer => ({
    error: new ApiError(status, message),
    unexpected: false,
  });
  if (error instanceof ApiError) return { error, unexpected: false };
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) {
    return answer(413, `the request body exceeds ${bodyLimit} bytes`);
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return answer(400, 'the body must be application/json');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return answer(400, error.message);
  }
  return { error: new ApiError(500, 'internal error'), unexpected: true };
}
