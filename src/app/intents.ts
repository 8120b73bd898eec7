// Actions (promote, abort, ...) are recorded on the App as intents: one
// annotation per action, so concurrent callers of different actions never
// overwrite each other. The reconciler carries each intent out at most once,
// remembering its id in status.handledIntents. Annotations do not bump
// metadata.generation, so an action is not mistaken for a spec change.
import { z } from 'zod';

export const ACTIONS = ['promote', 'abort', 'retry', 'undo', 'pause', 'resume'] as const;
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
  at: z.string(),
  /** promote: the revision the caller saw in preview. */
  revision: z.int().min(1).optional(),
  /** promote: skip the remaining waits. */
  full: z.boolean().optional(),
  /** undo: the revision to return to; default the previous stable one. */
  toRevision: z.int().min(1).optional(),
  /** undo: stage the revision as a preview instead of going active at once. */
  preview: z.boolean().optional(),
});
export type Intent = z.output<typeof IntentSchema> & { action: Action };

export interface IntentParse {
  intents: Intent[];
  /** Annotations that could not be read, with the reason. */
  errors: string[];
}

/** Reads the intents from App annotations, oldest first. */
export function readIntents(annotations: Record<string, string> | undefined): IntentParse {
  const intents: Intent[] = [];
  const errors: string[] = [];
  for (const action of ACTIONS) {
    const raw = annotations?.[intentAnnotation(action)];
    if (raw === undefined) continue;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      errors.push(`${intentAnnotation(action)}: not JSON`);
      continue;
    }
    const parsed = IntentSchema.safeParse(json);
    if (parsed.success) intents.push({ ...parsed.data, action });
    else errors.push(`${intentAnnotation(action)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  }
  intents.sort((a, b) => a.at.localeCompare(b.at) || ACTIONS.indexOf(a.action) - ACTIONS.indexOf(b.action));
  return { intents, errors };
}
