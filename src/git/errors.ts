/** Why a source could not be resolved; these become the SourceResolved condition's reason. */
export type GitErrorReason = 'Unreachable' | 'AuthenticationFailed' | 'RefNotFound' | 'InvalidSource';

export interface GitErrorContext {
  /** The repository URL as configured (never holds credentials: checkGitUrl refuses them). */
  url?: string;
  ref?: string;
  cause?: unknown;
}

/** A one-line, secret-free error, safe for status, events and logs. */
export class GitError extends Error {
  override name = 'GitError';
  readonly reason: GitErrorReason;
  readonly url: string | undefined;
  readonly ref: string | undefined;

  constructor(reason: GitErrorReason, message: string, context: GitErrorContext = {}) {
    super(message.replace(/\s*[\r\n]+\s*/g, ' ').trim(), context.cause === undefined ? {} : { cause: context.cause });
    this.reason = reason;
    this.url = context.url;
    this.ref = context.ref;
  }
}

export function isGitError(value: unknown): value is GitError {
  return value instanceof GitError;
}
