// Which Apps a push names: the payload is only a hint (normalised repo URL and
// full ref); each candidate comes with its own webhook secret to verify with,
// read through WebhookSecretCache so that forged deliveries cost no API calls.
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

export function matchingApps(apps: readonly CachedApp[], hint: Pick<WebhookHint, 'repoUrls' | 'refs'>): CachedApp[] {
  const repos = new Set(hint.repoUrls.map(normalized).filter((u): u is string => u !== undefined));
  return apps.filter((app) => {
    const git = gitOf(app);
    if (!git?.url) return false;
    const repo = normalized(git.url);
    if (!repo || !repos.has(repo)) return false;
    // Pings carry no ref: the repository alone selects.
    return hint.refs.length === 0 || hint.refs.some((r) => refMatches(git.ref ?? 'main', r));
  });
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
  return Promise.all(
    matchingApps(apps, hint).map(async (app): Promise<Candidate> => {
      const { namespace, name } = app.metadata;
      const secretName = gitOf(app)?.webhookSecretRef?.name;
      if (!secretName) return { namespace, name, secret: undefined };
      const secret = await secrets.get(namespace, secretName);
      return { namespace, name, secret, reread: () => secrets.reread(namespace, secretName, startedAt) };
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
