// The HTTP API's logger: the part of a pino logger its steps use (the guard's
// refusals, the handlers' audit lines, the error handler's failures).

type LogFn = (obj: object, msg?: string) => void;

/** The part of a pino logger used by the API. */
export interface ApiLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}
