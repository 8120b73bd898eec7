// One App previews a repository (issue #28): every parent App writes the same
// commit status context on the pull requests it previews, so two Apps naming
// one repository would overwrite each other's status every round and build
// every pull request twice. The oldest App that names it owns it; the others
// say so and do nothing. Pure: the reconciler feeds it from the App cache, so
// every replica computes the same owner.
import type { ConditionInput } from '../app/conditions.ts';
import { previewsApiUrl, previewsRepository } from '../app/previews-problems.ts';
import { PREVIEW_PROVIDERS, type PreviewProvider } from '../app/previews-schema.ts';
import { checkApiUrl, checkRepository } from './providers/api-url.ts';
import { ListedReason } from './reasons.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The repository an App's spec.previews follows, as one key: provider, API URL
 * and repository, normalised as the clients normalise them (providers/api-url.ts),
 * the repository in lower case (GitHub, GitLab, Gitea and Bitbucket match owner
 * and name regardless of case). Undefined without spec.previews or when either
 * is unusable (InvalidSpec says why). Reads the spec as cached: not validated.
 */
export function previewedRepository(spec: unknown): string | undefined {
  if (!isRecord(spec) || !isRecord(spec.previews)) return undefined;
  const previews = spec.previews;
  const provider = PREVIEW_PROVIDERS.find((p) => p === previews.provider);
  if (provider === undefined) return undefined;
  const source = isRecord(spec.source) && isRecord(spec.source.git) ? text(spec.source.git.url) : undefined;
  const repository = previewsRepository({
    ...(source !== undefined ? { source: { git: { url: source } } } : {}),
    previews: { repository: text(previews.repository) },
  });
  const api = checkApiUrl(previewsApiUrl({ provider, apiURL: text(previews.apiURL) }), provider, 'apiURL');
  const segments = repository === undefined ? undefined : checkRepository(repository, provider, 'repository');
  if (!api.ok || !segments?.ok) return undefined;
  return repositoryKey(provider, `${api.value.origin}${api.value.pathname}`, segments.value.join('/'));
}

const repositoryKey = (provider: PreviewProvider, apiUrl: string, repository: string) =>
  `${provider} ${apiUrl.replace(/\/+$/, '')} ${repository.toLowerCase()}`;

/** An App that names a repository in spec.previews, as the owner rule reads it. */
export interface PreviewingApp {
  namespace: string;
  name: string;
  /** RFC 3339, as the API server sets it (one-second precision: ties are common). */
  creationTimestamp?: string | undefined;
  /** Being deleted: it previews nothing any more (its finalizer runs), so it owns nothing. */
  deleting?: boolean | undefined;
}

const keyOf = (a: PreviewingApp) => `${a.namespace}/${a.name}`;

/** Oldest first; then namespace/name: a total order, the same on every replica. */
function older(a: PreviewingApp, b: PreviewingApp): number {
  const at = a.creationTimestamp ?? '';
  const bt = b.creationTimestamp ?? '';
  if (at !== bt) return at < bt ? -1 : 1;
  return keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0;
}

/** The App that previews the repository: the oldest of those naming it that are not being deleted. */
export function repositoryOwner(apps: readonly PreviewingApp[]): PreviewingApp | undefined {
  return apps.filter((a) => !a.deleting).sort(older)[0];
}

/**
 * The PreviewsListed condition of an App that names a repository another App
 * previews, or undefined when this App is the owner. `apps` are all the Apps
 * naming the repository (this one among them).
 */
export function previewedElsewhere(
  self: string,
  repository: string,
  apps: readonly PreviewingApp[],
): ConditionInput | undefined {
  const owner = repositoryOwner(apps);
  if (owner === undefined || keyOf(owner) === self) return undefined;
  const [, apiUrl, path] = repository.split(' ');
  return {
    type: 'PreviewsListed',
    status: 'False',
    reason: ListedReason.PreviewedElsewhere,
    message:
      `App ${keyOf(owner)} previews ${path} at ${apiUrl} (the oldest App whose spec.previews names it): ` +
      'this App lists, builds and writes nothing for it; remove spec.previews from one of them',
  };
}
