import { createHash } from 'node:crypto';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/**
 * The identity of a revision: one image with one pod template. Key order
 * does not matter, so the same spec always maps to the same ReplicaSet.
 */
export function podTemplateHash(image: string, template: unknown): string {
  const digest = createHash('sha256')
    .update(JSON.stringify(canonical({ image, template })))
    .digest('hex');
  return digest.slice(0, 10);
}
