// The one rule for credentials in a build's log, which `kubectl teal logs` and
// the dashboard's build log (api/build-log.ts) both apply to every line before
// it is shown: the credentials the build pod was given (the git Secret's
// password, token or ssh key; the push Secret's registry auths; the password
// of a proxy URL in its environment, from --build-*-proxy) are masked in
// every encoding app/mask.ts knows (plain, percent-encoded, JSON-escaped,
// base64, as in `Basic base64(user:password)`), and so are any URL's userinfo
// and any Authorization header's value, whoever's they are. A build echoes
// what it likes (a RUN printing its environment, a failing git fetch quoting
// its URL), so the log is masked as it is read, never trusted.
import { MASK, masker } from '../app/mask.ts';
import { SECRET_KEYS } from '../git/credentials.ts';
import { proxyCredentials } from './network.ts';

/** The part of a pod spec that names the Secrets it reads. */
export interface PodSecretRefs {
  spec?: {
    volumes?: { secret?: { secretName?: string } }[];
    containers?: { env?: { name?: string; value?: string; valueFrom?: { secretKeyRef?: { name?: string } } }[] }[];
  };
}

/** The Secrets a build pod reads, by name: those of its volumes and of its environment. */
export function podSecretNames(pod: PodSecretRefs): string[] {
  const names = new Set<string>();
  for (const volume of pod.spec?.volumes ?? []) if (volume.secret?.secretName) names.add(volume.secret.secretName);
  for (const container of pod.spec?.containers ?? []) {
    for (const env of container.env ?? [])
      if (env.valueFrom?.secretKeyRef?.name) names.add(env.valueFrom.secretKeyRef.name);
  }
  return [...names];
}

/** The environment variables that carry a proxy URL (the operator's --build-*-proxy flags), in any case. */
const PROXY_ENV = /^(https?|all)_proxy$/i;

/** The credentials in the proxy URLs a build pod was given in its environment (user:password@ of a proxy). */
export function podProxyCredentials(pod: PodSecretRefs): string[] {
  const urls = (pod.spec?.containers ?? []).flatMap((c) =>
    (c.env ?? []).filter((e) => PROXY_ENV.test(e.name ?? '')).map((e) => e.value),
  );
  return proxyCredentials(urls);
}

/** The keys of a git Secret that hold a credential (not username, known_hosts or ca.crt, which are no secret). */
const GIT_SECRET_KEYS: readonly string[] = [SECRET_KEYS.password, SECRET_KEYS.bearerToken, SECRET_KEYS.identity];
/** The keys of a registry Secret (kubernetes.io/dockerconfigjson, or the older dockercfg). */
const REGISTRY_KEYS: readonly string[] = ['.dockerconfigjson', '.dockercfg'];
/** A multi-line secret (an ssh key) is masked line by line too, each line this long or longer. */
const MIN_SECRET_LINE = 16;

/**
 * Every credential in these Secrets' data (base64 values, as the API gives
 * them): the git keys' values and the passwords and tokens of registry auths.
 */
export function credentialsOf(secrets: readonly (Record<string, string> | undefined)[]): string[] {
  const values: string[] = [];
  for (const data of secrets) {
    for (const [key, encoded] of Object.entries(data ?? {})) {
      const value = Buffer.from(encoded, 'base64').toString('utf8');
      if (GIT_SECRET_KEYS.includes(key)) values.push(...withLines(value));
      else if (REGISTRY_KEYS.includes(key)) values.push(...registryCredentials(value));
    }
  }
  return [...new Set(values.filter((v) => v !== ''))];
}

function withLines(value: string): string[] {
  const lines = value.includes('\n') ? value.split(/\r?\n/).map((l) => l.trim()) : [];
  return [value, ...lines.filter((l) => l.length >= MIN_SECRET_LINE)];
}

type RegistryAuth = { auth?: unknown; password?: unknown; identitytoken?: unknown; registrytoken?: unknown };

/** From a docker config: each registry's auth (base64 user:password), its password and its tokens. */
function registryCredentials(json: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return [json];
  }
  const root = (parsed ?? {}) as { auths?: unknown };
  // .dockerconfigjson nests the registries under auths; .dockercfg does not.
  const registries = (typeof root.auths === 'object' && root.auths !== null ? root.auths : root) as Record<
    string,
    RegistryAuth
  >;
  const values: string[] = [];
  for (const entry of Object.values(registries)) {
    if (typeof entry !== 'object' || entry === null) continue;
    for (const field of [entry.auth, entry.password, entry.identitytoken, entry.registrytoken]) {
      if (typeof field === 'string') values.push(field);
    }
    if (typeof entry.auth === 'string') {
      const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon >= 0) values.push(decoded.slice(colon + 1));
    }
  }
  return values;
}

/** An Authorization header's value, whatever its scheme: `Authorization: Basic xyz` keeps `Authorization: Basic `. */
const AUTHORIZATION = /(authorization\s*[:=]\s*["']?(?:basic|bearer|token)\s+)[^\s'"]+/gi;

/** Masks one line of a build's log: these credentials, any URL's userinfo and any Authorization header's value. */
export function logScrubber(credentials: Iterable<string>): (line: string) => string {
  const mask = masker(credentials);
  return (line) => mask(line).replace(AUTHORIZATION, `$1${MASK}`);
}
