// Actions (promote, abort, ...) are recorded on the App as intents: one
// annotation per action, so concurrent callers of different actions never
// overwrite each other. The reconciler carries each intent out at most once,
// remembering its id in status.handledIntents. Annotations do not bump
// metadata.generation, so an action is not mistaken for a spec change.
import { z } from 'zod';
import { ACTIONS, type Action, type ActionArgs, type ArgKind, argsOf, type ValueOfKind } from './action-args.ts';
import { rfc3339Time, shown, type ValueProblem, ValueReader } from './cluster-values.ts';

export {
  ACTION_ARGS,
  ACTIONS,
  type Action,
  type ActionArgs,
  type ArgDeclaration,
  type ArgKind,
  type ArgName,
  allArgs,
  argsOf,
  flagOf,
} from './action-args.ts';

/** How each kind of argument is read: a revision number (1, 2, ...) or a switch. */
const KIND_SCHEMAS = { revision: z.int().min(1), switch: z.boolean() } as const satisfies {
  [K in ArgKind]: z.ZodType<ValueOfKind[K]>;
};

const argsShape = (action: Action) =>
  Object.fromEntries(argsOf(action).map(([name, arg]) => [name, KIND_SCHEMAS[arg.kind].optional()]));

const byAction = <T>(make: (action: Action) => T): Record<Action, T> =>
  Object.fromEntries(ACTIONS.map((action) => [action, make(action)])) as Record<Action, T>;

/** Each action's arguments as a body: strict, so an argument the action does not take is refused, not ignored. */
export const ARGS_SCHEMAS: Record<Action, z.ZodType<ActionArgs>> = byAction((action) =>
  z.strictObject(argsShape(action)),
);

/** The arguments of `args` that the action takes and that say something (a switch off says nothing). */
export function givenArgs(action: Action, args: ActionArgs): ActionArgs {
  return Object.fromEntries(
    argsOf(action).flatMap(([name]) => (args[name] === undefined || args[name] === false ? [] : [[name, args[name]]])),
  );
}

// ---- intents ----

export const INTENT_PREFIX = 'intents.teal.dev/';
/**
 * Not an intent but a request, as Flux's reconcile.fluxcd.io/requestedAt: resolve
 * the App's git ref now. Webhooks write it, on whichever replica they reach, so
 * the leader acts on it; `kubectl annotate` may too.
 */
export const ANN_REFRESH = 'teal.dev/refresh-requested-at';
export const intentAnnotation = (action: Action): string => `${INTENT_PREFIX}${action}`;

/** How an intent was recorded: the HTTP API with a bearer token, the dashboard (a session), the CLI, kubectl. */
export const VIAS = ['api', 'dashboard', 'cli', 'kubectl'] as const;
export type IntentVia = (typeof VIAS)[number];

/** Who recorded an intent, when and how; with the action's arguments, its annotation's value. */
const INTENT_FIELDS = {
  id: z.string().min(1).max(64),
  by: z.string().max(256),
  via: z.enum(VIAS),
  at: z.string().refine((at) => rfc3339Time.parse(at) !== undefined, 'must be an RFC 3339 time'),
};
type IntentFields = z.output<z.ZodObject<typeof INTENT_FIELDS>>;

export type Intent = IntentFields & ActionArgs & { action: Action };

/** An action's intent as its annotation holds it: strict, as the API's body is. */
export const INTENT_SCHEMAS: Record<Action, z.ZodType<IntentFields & ActionArgs>> = byAction((action) =>
  z.strictObject({ ...INTENT_FIELDS, ...argsShape(action) }),
);

/** What zod found wrong, naming the field; an argument the action does not take as such. */
function issuesOf(action: Action, error: z.ZodError): string {
  return error.issues
    .map((i) =>
      i.code === 'unrecognized_keys'
        ? `${action} takes no ${i.keys.map((k) => `"${k}"`).join(', ')}`
        : `${i.path.join('.') || 'intent'}: ${i.message}`,
    )
    .join('; ');
}

/**
 * The annotation value that records an action, or why the operator would not
 * read it back (it drops an intent it cannot read: never write one).
 */
export function encodeIntent(
  action: Action,
  intent: IntentFields & ActionArgs,
): { ok: true; intent: IntentFields & ActionArgs; value: string } | { ok: false; problem: string } {
  const parsed = INTENT_SCHEMAS[action].safeParse(intent);
  if (!parsed.success) return { ok: false, problem: issuesOf(action, parsed.error) };
  return { ok: true, intent: parsed.data, value: JSON.stringify(parsed.data) };
}

/** An annotation's value as the action's intent, or why it is none. */
export function decodeIntent(
  action: Action,
  value: string,
): { ok: true; intent: Intent } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return { ok: false, problem: 'is not JSON' };
  }
  const parsed = INTENT_SCHEMAS[action].safeParse(json);
  if (parsed.success) return { ok: true, intent: { ...parsed.data, action } };
  const why = issuesOf(action, parsed.error);
  return { ok: false, problem: `is not an intent (${why.length > 200 ? `${why.slice(0, 200)}…` : why})` };
}

export interface IntentParse {
  intents: Intent[];
  /** Intent annotations that could not be read, and why: ignored, and reported once as Warning Events. */
  problems: ValueProblem[];
}

/**
 * Reads the intents from App annotations, oldest first. `object` names the
 * App in problem messages.
 */
export function readIntents(annotations: Record<string, string> | undefined, object = 'App'): IntentParse {
  const intents: Intent[] = [];
  const read = new ValueReader(object);
  for (const action of ACTIONS) {
    const key = intentAnnotation(action);
    const raw = annotations?.[key];
    if (raw === undefined) continue;
    const decoded = decodeIntent(action, raw);
    if (decoded.ok) intents.push(decoded.intent);
    else read.report('InvalidAnnotation', `annotation ${key}=${shown(raw)}`, decoded.problem);
  }
  intents.sort((a, b) => a.at.localeCompare(b.at) || ACTIONS.indexOf(a.action) - ACTIONS.indexOf(b.action));
  return { intents, problems: read.problems };
}

/**
 * The time of the last refresh request, in epoch milliseconds; undefined when
 * there is none or it is not an RFC 3339 time (a problem then, with `object`
 * naming the App).
 */
export function readRefreshRequest(
  annotations: Record<string, string> | undefined,
  object = 'App',
): { at?: number; problems: ValueProblem[] } {
  const read = new ValueReader(object);
  const at = read.annotation(annotations, ANN_REFRESH, rfc3339Time);
  return { ...(at !== undefined ? { at } : {}), problems: read.problems };
}
