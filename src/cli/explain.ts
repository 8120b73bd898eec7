// API server errors in words, so every command explains a 403, a 404 or an
// unreachable server the same way: one line, as a CliError (errors.ts).
import { APP_RESOURCE } from '../app/app-api.ts';
import { apiStatusOf } from '../kube/errors.ts';
import { CliError, EXIT } from './errors.ts';

/** What a request was doing, to say it in words when it fails. */
export interface Operation {
  /** The action as the user sees it: "promote", "list", "get", "read the logs of". */
  verb: string;
  /** The RBAC resource: apps.teal.dev, replicasets.apps, pods/log ... */
  resource: string;
  /** How to name the object's kind in a message, when not the resource: "build pod". */
  shown?: string;
  name?: string;
  /** undefined: all namespaces. */
  namespace?: string;
  /** The RBAC verb the API server checked, when it differs from verb. */
  rbacVerb?: string;
  /** What to grant, said in a refusal, when more useful than the bare verb. */
  hint?: string;
  /** Who the kubeconfig says we are, when the server does not say. */
  user?: string;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EAI_AGAIN']);

/** Why the server could not be reached (an errno-style code), looking through fetch's causes. */
function networkCode(err: unknown): string | undefined {
  let e: unknown = err;
  let fetchFailed = false;
  for (let depth = 0; depth < 5 && e && typeof e === 'object'; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR'))) return code;
    if (e instanceof TypeError && e.message === 'fetch failed') fetchFailed = true;
    const cause: unknown = (e as { cause?: unknown }).cause;
    if (fetchFailed && !(cause && typeof cause === 'object')) return e instanceof Error ? e.message : 'fetch failed';
    e = cause;
  }
  return undefined;
}

const target = (op: Operation) => `${op.shown ?? op.resource}${op.name ? ` "${op.name}"` : ''}`;
const where = (op: Operation) => (op.namespace ? `in namespace "${op.namespace}"` : 'in any namespace');

/** The one line that explains why a request failed. */
export function explain(err: unknown, op: Operation, server?: string): CliError {
  if (err instanceof CliError) return err;
  const status = apiStatusOf(err);
  if (status) {
    const { code, message, details } = status;
    const said = message ? `: ${message}` : '';
    switch (code) {
      case 401:
        return new CliError(
          `the API server did not accept the credentials of user "${op.user ?? 'unknown'}" (401 Unauthorized): log in again or check the kubeconfig`,
        );
      case 403: {
        const user = /User "([^"]*)"/.exec(message)?.[1] ?? op.user ?? 'unknown';
        return new CliError(
          `user "${user}" cannot ${op.verb} ${target(op)} ${where(op)} (RBAC: ${op.hint ?? `needs "${op.rbacVerb ?? op.verb}" on ${op.resource}`})`,
          EXIT.error,
          403,
        );
      }
      case 404: {
        if (op.resource === APP_RESOURCE && details?.name === undefined && details?.kind === undefined) {
          return new CliError(
            `the App resource (${APP_RESOURCE}) is not installed in this cluster: apply config/crd first`,
          );
        }
        if (op.resource === APP_RESOURCE && op.name) {
          return new CliError(`App "${op.name}" not found ${where(op)}`);
        }
        return new CliError(`${target(op)} not found ${where(op)}`);
      }
      case 409:
        return new CliError(`conflict: ${target(op)} changed while writing; run the command again${said}`);
      case 422:
      case 400:
        return new CliError(`the API server refused to ${op.verb} ${target(op)}${said}`);
      default:
        return new CliError(`cannot ${op.verb} ${target(op)} ${where(op)} (HTTP ${code}${said})`);
    }
  }
  const net = networkCode(err);
  if (net) {
    return new CliError(`cannot reach the API server${server ? ` at ${server}` : ''} (${net}): is the cluster up?`);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CliError(`cannot ${op.verb} ${target(op)}: ${message}`);
}
