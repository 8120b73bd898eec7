// Which Apps a push names: the payload is only a hint (normalised repo URL and
// full ref); each candidate comes with its own webhook secret to verify with,
// read through WebhookSecretCache so that forged deliveries cost no API calls.
// A pull-request event names the Apps on its repository too (so that their
// secrets verify it), and marks those whose spec.previews follows it.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { CachedApp } from '../app/cached.ts';
import { normalizeRepoUrl } from '../git/url.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { type SecretLoader, WebhookSecretCache } from './webhook-secret-cache.ts';
import type { Candidate, WebhookHint } from './webhooks.ts';

/** The Secret key of a webhook secret, as Flux's Receiver names it. */
export const WEBHOOK_SECRET_KEY = 'token';

interface GitSpec {
  url?: string;
  ref?: string;
  webhookSecretRef?: { name?: string };
}

const gitOf = (app: CachedApp): GitSpec | undefined =>
  (app.spec as { source?: { git?: GitSpec } } | undefined)?.source?.git;

const previewsOf = (app: CachedApp): { repository?: string } | undefined =>
  (app.spec as { previews?: { repository?: string } } | undefined)?.previews;

const normalized = (url: string): string | undefined => {
  try {
    return normalizeRepoUrl(url);
  } catch {
    return undefined;
  }
};

/** Whether a pushed full ref is the one an App follows (a branch, a tag, or a full ref). */
export function refMatches(followed: string, pushed: string): boolean {
  return pushed === followed || pushed === `refs/heads/${followed}` || pushed === `refs/tags/${followed}`;
}

type Hint = Pick<WebhookHint, 'repoUrls' | 'refs'> & Partial<Pick<WebhookHint, 'kind'>>;

/** The hint's repositories, normalised (host[:port]/path), and their paths alone. */
function hintRepos(hint: Hint): { repos: Set<string>; paths: Set<string> } {
  const repos = new Set(hint.repoUrls.map(normalized).filter((u): u is string => u !== undefined));
  const paths = new Set([...repos].flatMap((r) => (r.includes('/') ? [r.slice(r.indexOf('/') + 1)] : [])));
  return { repos, paths };
}

/** Whether the App's source.git.url is one of the hint's repositories. */
function onRepository(app: CachedApp, repos: Set<string>): boolean {
  const url = gitOf(app)?.url;
  const repo = url ? normalized(url) : undefined;
  return repo !== undefined && repos.has(repo);
}

/**
 * Whether the App's spec.previews follows one of the hint's repositories: its
 * git repository, or spec.previews.repository (owner/name at the provider, which
 * names no host) when set. A hint only: the App's own secret must still verify.
 */
function previewsFollow(app: CachedApp, { repos, paths }: ReturnType<typeof hintRepos>): boolean {
  const previews = previewsOf(app);
  if (previews === undefined) return false;
  return previews.repository ? paths.has(previews.repository) : onRepository(app, repos);
}

export function matchingApps(apps: readonly CachedApp[], hint: Hint): CachedApp[] {
  const seen = hintRepos(hint);
  return apps.filter((app) => {
    const git = gitOf(app);
    if (hint.kind === 'pull_request') return onRepository(app, seen.repos) || previewsFollow(app, seen);
    if (!git?.url || !onRepository(app, seen.repos)) return false;
    // Pings carry no ref: the repository alone selects.
    return hint.refs.length === 0 || hint.refs.some((r) => refMatches(git.ref ?? 'main', r));
  });
}

/** The Apps of matchingApps whose previews follow a pull-request hint's repository. */
export function previewsApps(apps: readonly CachedApp[], hint: Hint): Set<CachedApp> {
  const seen = hintRepos(hint);
  return new Set(apps.filter((app) => previewsFollow(app, seen)));
}

/** Reads key `token` of a webhook Secret from the API server: undefined when the Secret or the key is missing. */
export function webhookSecretLoader(kc: KubeConfig): SecretLoader {
  const core = kc.makeApiClient(CoreV1Api);
  return async (namespace, name) => {
    const secret = await ignoreNotFound(core.readNamespacedSecret({ namespace, name }));
    const data = secret?.data?.[WEBHOOK_SECRET_KEY];
    return data ? Buffer.from(data, 'base64') : undefined;
  };
}

/**
 * The Apps a hint names, each with its webhook secret from the cache, and a
 * way to re-read that secret once if it does not verify (a rotation).
 */
export async function webhookCandidates(
  secrets: WebhookSecretCache,
  apps: readonly CachedApp[],
  hint: WebhookHint,
): Promise<Candidate[]> {
  const startedAt = secrets.now();
  const matched = matchingApps(apps, hint);
  const following = hint.kind === 'pull_request' ? previewsApps(matched, hint) : new Set<CachedApp>();
  return Promise.all(
    matched.map(async (app): Promise<Candidate> => {
      const { namespace, name } = app.metadata;
      const previews = following.has(app) ? { previews: true } : {};
      const secretName = gitOf(app)?.webhookSecretRef?.name;
      if (!secretName) return { namespace, name, secret: undefined, ...previews };
      const secret = await secrets.get(namespace, secretName);
      return { namespace, name, secret, ...previews, reread: () => secrets.reread(namespace, secretName, startedAt) };
    }),
  );
}

/** The webhooks plugin's candidates option: Apps from list(), secrets through one cache per process. */
export function webhookCandidateFinder(
  kc: KubeConfig,
  list: () => readonly CachedApp[],
): (hint: WebhookHint) => Promise<Candidate[]> {
  const secrets = new WebhookSecretCache({ load: webhookSecretLoader(kc) });
  return (hint) => webhookCandidates(secrets, list(), hint);
}
