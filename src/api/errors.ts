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
