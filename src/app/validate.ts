import type { z } from 'zod';
import { type App, AppSchema, BuildSchema } from './schema.ts';

export type Validation = { ok: true; app: App } | { ok: false; errors: string[] };

/** "spec.service.ports[0].port", the way the API server names a field. */
export function fieldPath(path: PropertyKey[]): string {
  return path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    return out ? `${out}.${String(key)}` : String(key);
  }, '');
}

export function formatIssues(issues: z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => `${fieldPath([...issue.path, key])}: unknown field`)
      : [`${fieldPath(issue.path) || '(root)'}: ${issue.message}`],
  );
}

/**
 * Parses an App read from the API server, applying the schema defaults; an App
 * from source without build settings gets the default ones (build is optional
 * so that, with --default-registry, an App needs only its source).
 */
export function validateApp(object: unknown): Validation {
  const result = AppSchema.safeParse(object);
  if (!result.success) return { ok: false, errors: formatIssues(result.error.issues) };
  const app = result.data;
  if (app.spec.source && !app.spec.build) app.spec.build = BuildSchema.parse({});
  return { ok: true, app };
}
