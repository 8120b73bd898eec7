// The command line and the HTTP call that take an action, as the dashboard
// shows them beside its buttons (issue #25 item 6). Both are built from the
// declaration of the actions' arguments (ACTION_ARGS), as the CLI's flags and
// the API's body are, so what is shown is what the CLI and the API accept.

import { type Action, type ActionArgs, type ArgName, flagOf, givenArgs } from './intents.ts';
import { DNS1123_LABEL } from './patterns.ts';

/**
 * Namespaces and App names are DNS-1123 labels, so they need no shell quoting;
 * anything else is refused rather than written into a command to be pasted.
 */
function label(what: string, value: string): string {
  if (!DNS1123_LABEL.test(value)) throw new Error(`${what} "${value}" is not a DNS-1123 label`);
  return value;
}

/** The arguments that say something, in declared order. */
const given = (action: Action, args: ActionArgs) => Object.entries(givenArgs(action, args)) as [ArgName, unknown][];

/** `kubectl teal ACTION APP -n NS`, with a flag for each argument given (a switch off is left out). */
export function kubectlCommand(action: Action, namespace: string, name: string, args: ActionArgs = {}): string {
  const flags = given(action, args).flatMap(([arg, value]) =>
    value === true ? [`--${flagOf(arg)}`] : [`--${flagOf(arg)}`, String(value)],
  );
  return ['kubectl teal', action, label('App name', name), '-n', label('namespace', namespace), ...flags].join(' ');
}

/**
 * The API call, written as docs/api.md writes its examples: $TEAL is the
 * operator's address and $TOKEN the caller's bearer token. Without arguments
 * it sends no body, which the API takes as `{}`.
 */
export function curlCommand(action: Action, namespace: string, name: string, args: ActionArgs = {}): string {
  const path = `/api/v1/namespaces/${label('namespace', namespace)}/apps/${label('App name', name)}/${action}`;
  const body = Object.fromEntries(given(action, args));
  // The body holds only argument names and numbers or booleans: nothing a single-quoted shell word must escape.
  const data = Object.keys(body).length > 0 ? [`-H 'Content-Type: application/json' -d '${JSON.stringify(body)}'`] : [];
  return ['curl -sS -X POST -H "Authorization: Bearer $TOKEN"', ...data, `"$TEAL${path}"`].join(' ');
}
