// The pod template of a preview: the parent's, minus what a pull request's code
// must not reach, plus spec.previews.templatePatch. The shape comes from the
// cluster, never from the pull request (issue #28 item 4): only the Secrets
// listed in spec.previews.secrets stay referenced, the ServiceAccount token is
// never mounted, and the parent's ServiceAccount (its RBAC) is not used.
import type { Previews } from '../app/previews-schema.ts';
import type { AppSpec } from '../app/schema.ts';
import { appContainerIndex } from '../rollout/replicaset.ts';

type Template = AppSpec['template'];
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'] as const;

/**
 * Every Secret a volume names, however its kind says it: secret.secretName,
 * a projected source's secret.name, and any *SecretRef / secretRef
 * ({name}) or secretName of the other kinds (csi, cephfs, azureFile, ...).
 */
export function volumeSecretNames(value: unknown, key = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => volumeSecretNames(v));
  if (!isObject(value)) return key === 'secretName' && typeof value === 'string' ? [value] : [];
  const own = (key === 'secret' || /secretref$/i.test(key)) && typeof value.name === 'string' ? [value.name] : [];
  return [...own, ...Object.entries(value).flatMap(([k, v]) => volumeSecretNames(v, k))];
}

/** The Secret an env var or envFrom source reads, if one. */
function envSecret(entry: Json): string | undefined {
  const ref = isObject(entry.valueFrom) ? entry.valueFrom.secretKeyRef : entry.secretRef;
  return isObject(ref) && typeof ref.name === 'string' ? ref.name : undefined;
}

const allowedEntry = (allowed: ReadonlySet<string>) => (entry: Json) => {
  const secret = envSecret(entry);
  return secret === undefined || allowed.has(secret);
};

/** A container without the env, envFrom and volume mounts that reach a Secret not allowed. */
function containerWithout(container: Json, allowed: ReadonlySet<string>, droppedVolumes: ReadonlySet<string>): Json {
  const next = { ...container };
  if (Array.isArray(container.env)) next.env = objects(container.env).filter(allowedEntry(allowed));
  if (Array.isArray(container.envFrom)) next.envFrom = objects(container.envFrom).filter(allowedEntry(allowed));
  if (Array.isArray(container.volumeMounts)) {
    next.volumeMounts = objects(container.volumeMounts).filter((m) => !droppedVolumes.has(String(m.name)));
  }
  return next;
}

/** The pod spec with every reference to a Secret outside `allowed` removed. */
export function withOnlySecrets(spec: Json, allowed: ReadonlySet<string>): Json {
  const next: Json = { ...spec };
  const volumes = objects(spec.volumes);
  const dropped = new Set(
    volumes.filter((v) => volumeSecretNames(v).some((name) => !allowed.has(name))).map((v) => String(v.name)),
  );
  if (Array.isArray(spec.volumes)) next.volumes = volumes.filter((v) => !dropped.has(String(v.name)));
  for (const list of CONTAINER_LISTS) {
    if (Array.isArray(spec[list])) next[list] = objects(spec[list]).map((c) => containerWithout(c, allowed, dropped));
  }
  if (Array.isArray(spec.imagePullSecrets)) {
    next.imagePullSecrets = objects(spec.imagePullSecrets).filter((s) => allowed.has(String(s.name)));
  }
  return next;
}

/** The app container with the patch's env (by name, over the parent's) and resources. */
function patched(container: Json, patch: Previews['templatePatch']): Json {
  if (!patch) return container;
  const names = new Set(patch.env.map((e) => e.name));
  const env = [...objects(container.env).filter((e) => !names.has(String(e.name))), ...patch.env];
  return {
    ...container,
    ...(env.length > 0 ? { env } : {}),
    ...(patch.resources ? { resources: patch.resources } : {}),
  };
}

/** The preview's pod template, from the parent's. */
export function previewTemplate(template: Template, previews: Previews): Template {
  const spec = withOnlySecrets(structuredClone(template.spec) as Json, new Set(previews.secrets));
  // The pull request's code runs here: no API credentials, and not the parent's RBAC.
  delete spec.serviceAccountName;
  delete spec.serviceAccount;
  spec.automountServiceAccountToken = false;
  const containers = objects(spec.containers);
  const app = appContainerIndex(containers.map((c) => ({ name: String(c.name) })));
  spec.containers = containers.map((c, i) => (i === app ? patched(c, previews.templatePatch) : c));
  return { ...(template.metadata ? { metadata: structuredClone(template.metadata) } : {}), spec } as Template;
}
