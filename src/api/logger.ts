// The HTTP API's logger: the part of a pino logger its steps use (the guard's
// refusals, the handlers' audit lines, the error handler's failures), and what
// of a request its routes log.
import type { FastifyRequest } from 'fastify';

type LogFn = (obj: object, msg?: string) => void;

/** The part of a pino logger used by the API. */
export interface ApiLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

/**
 * Nothing of a request but these reaches a log line: never its headers (a
 * bearer token, a session cookie) nor its body (a login's token).
 */
export const logSerializers = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: req.url,
    remoteAddress: req.ip,
  }),
};
