// The part of Kubernetes JSONPath that web checks use: a walk from the root through
// fields and array indexes, such as {$.data.ok} or {$.items[0]['p99']}. Filters,
// wildcards and ranges are refused by the schema: the conditions can express
// those over the whole answer.
import { JSON_PATH_PATTERN } from '../app/patterns.ts';

type Step = string | number;

function steps(path: string): Step[] {
  const body = path.replace(/^\{/, '').replace(/\}$/, '').replace(/^\$/, '');
  const out: Step[] = [];
  for (const [, field, index, single, double] of body.matchAll(
    /\.([A-Za-z0-9_-]+)|\[([0-9]+)\]|\['([^']*)'\]|\["([^"]*)"\]/g,
  )) {
    if (index !== undefined) out.push(Number(index));
    else out.push(field ?? single ?? double ?? '');
  }
  return out;
}

const describeStep = (step: Step) => (typeof step === 'number' ? `[${step}]` : `.${step}`);

/** The value at `path` in a parsed JSON document; an error says which step found nothing. */
export function selectJsonPath(
  document: unknown,
  path: string,
): { ok: true; value: unknown } | { ok: false; error: string } {
  if (!JSON_PATH_PATTERN.test(path)) return { ok: false, error: `jsonPath ${path} is not a supported path` };
  let value = document;
  let walked = '$';
  for (const step of steps(path)) {
    walked += describeStep(step);
    const next = typeof step === 'number' ? (Array.isArray(value) ? value[step] : undefined) : fieldOf(value, step);
    if (next === undefined) return { ok: false, error: `no value at ${walked} in the answer (jsonPath ${path})` };
    value = next;
  }
  return { ok: true, value };
}

function fieldOf(value: unknown, field: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, field) ? (value as Record<string, unknown>)[field] : undefined;
}
