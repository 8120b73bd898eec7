// Actions (promote, abort, ...) are recorded on the App as intents: one
// annotation per action, so concurrent callers of different actions never
// overwrite each other. The reconciler carries each intent out at most once,
// remembering its id in status.handledIntents. Annotations do not bump
// metadata.generation, so an action is not mistaken for a spec change.
import { z } from 'zod';
import { rfc3339Time, shown, type ValueProblem, ValueReader } from './cluster-values.ts';

export const ACTIONS = ['promote', 'abort', 'retry', 'undo', 'pause', 'resume', 'restart'] as const;
export type Action = (typeof ACTIONS)[number];

export const INTENT_PREFIX = 'intents.teal.dev/';
/**
 * Not an intent but a request, as Flux's reconcile.fluxcd.io/requestedAt: resolve
 * the App's git ref now. Webhooks write it, on whichever replica they reach, so
 * the leader acts on it; `kubectl annotate` may too.
 */
export const ANN_REFRESH = 'teal.dev/refresh-requested-at';
export const intentAnnotation = (action: Action): string => `${INTENT_PREFIX}${action}`;

export const VIAS = ['api', 'cli', 'kubectl'] as const;

export const IntentSchema = z.strictObject({
  id: z.string().min(1).max(64),
  by: z.string().max(256),
  via: z.enum(VIAS),
  at: z.string().refine((at) => rfc3339Time.parse(at) !== undefined, 'must be an RFC 3339 time'),
  /** promote: the revision the caller saw in preview. */
  revision: z.int().min(1).optional(),
  /** promote: skip the remaining waits and the checks (Argo Rollouts' promote --full). */
  full: z.boolean().optional(),
  /** promote: without waiting for prePromotionAnalysis to pass. */
  skipChecks: z.boolean().optional(),
  /** undo: the revision to return to; default the previous stable one. */
  toRevision: z.int().min(1).optional(),
  /** undo: stage the revision as a preview instead of going active at once. */
  preview: z.boolean().optional(),
});
export type Intent = z.output<typeof IntentSchema> & { action: Action };

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
    const bad = (why: string) => read.report('InvalidAnnotation', `annotation ${key}=${shown(raw)}`, why);
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      bad('is not JSON');
      continue;
    }
    const parsed = IntentSchema.safeParse(json);
    if (parsed.success) intents.push({ ...parsed.data, action });
    else {
      const why = parsed.error.issues.map((i) => `${i.path.join('.') || 'intent'}: ${i.message}`).join('; ');
      bad(`is not an intent (${why.length > 200 ? `${why.slice(0, 200)}…` : why})`);
    }
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
