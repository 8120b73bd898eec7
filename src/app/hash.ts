// The hashes and names Teal derives for the objects it makes for an App (revisions,
// Jobs): beside the App's labels, since build, analysis and rollout all derive them.
import { createHash } from 'node:crypto';

/** The hex SHA-256 of a text, for names derived from it. */
export const sha = (text: string) => createHash('sha256').update(text).digest('hex');

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

/**
 * The App's part of the name of a Job made for it (builds, analysis checks):
 * the App name, or when long, its start and a hash, so the Job's name stays a
 * 63-character label and two long App names do not collide.
 */
export function jobNamePrefix(appName: string): string {
  return appName.length <= 40 ? appName : `${appName.slice(0, 33)}-${sha(appName).slice(0, 6)}`;
}
