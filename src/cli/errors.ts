// Errors the CLI prints as one line, with the exit code they end in. Every
// command loads this file, so it imports nothing: API server errors are put in
// words by explain.ts, which only the commands that talk to a cluster load.

/** Exit codes; `status` and `lint` add their own (see docs/cli.md). */
export const EXIT = {
  ok: 0,
  error: 1,
  paused: 2,
  timeout: 3,
} as const;

/** `lint`'s exit codes, as `kubectl diff`'s: 0 nothing found, 1 findings, 2 an error (usage included). */
export const LINT_EXIT = {
  clean: 0,
  findings: 1,
  error: 2,
} as const;

export class CliError extends Error {
  readonly exitCode: number;
  /** The HTTP status of the API server's refusal, if that is the cause. */
  readonly httpStatus: number | undefined;

  constructor(message: string, exitCode: number = EXIT.error, httpStatus?: number) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.httpStatus = httpStatus;
  }
}

/** A bad command line: the message is followed by a pointer to the help. */
export class UsageError extends CliError {
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}
