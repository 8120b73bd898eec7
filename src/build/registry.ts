// Where a build pushes: the image repository and the registry credentials,
// from the App or else from the operator's defaults (--default-registry,
// --default-push-secret). Pure; every caller asks here.
import { IMAGE_REPOSITORY } from '../app/patterns.ts';
import type { App } from '../app/schema.ts';

/** The operator's defaults for Apps that leave the registry out. */
export interface BuildDefaults {
  /** --default-registry HOST[:PORT][/PATH]: Apps without build.image push to <registry>/<namespace>/<name>. */
  registry?: string;
  /** --default-push-secret NAME: the Secret in the App's namespace used when build.pushSecretRef is unset. */
  pushSecret?: string;
}

/** The longest default registry that keeps <registry>/<namespace>/<name> within build.image's 255 characters. */
export const MAX_REGISTRY_LENGTH = 255 - 2 * (1 + 63);

/**
 * The repository a build pushes to (tag: the commit): spec.build.image, else
 * <default registry>/<namespace>/<name>. Undefined for an App that is not
 * built, or that names no image while the operator has no default registry.
 */
export function imageRepository(app: App, defaults: BuildDefaults = {}): string | undefined {
  const build = app.spec.build;
  if (!build) return undefined;
  if (build.image) return build.image;
  if (!defaults.registry) return undefined;
  // Namespaces and App names are lowercase DNS labels: valid repository path components.
  return `${defaults.registry}/${app.metadata.namespace ?? 'default'}/${app.metadata.name}`;
}

/** The Secret (kubernetes.io/dockerconfigjson) the build pushes with, if any. */
export function pushSecretName(app: App, defaults: BuildDefaults = {}): string | undefined {
  return app.spec.build?.pushSecretRef?.name ?? defaults.pushSecret;
}

/** Why a --default-registry value is not HOST[:PORT][/PATH]; undefined when it is. */
export function registryProblem(value: string): string | undefined {
  const example = 'such as harbor.example.com/apps or registry.local:5000';
  if (value.includes('://')) return `must not have a scheme: a registry host and optional path, ${example}`;
  if (value.length > MAX_REGISTRY_LENGTH) return `must be at most ${MAX_REGISTRY_LENGTH} characters`;
  // As Docker reads a reference: a first component without "." or ":" (and not localhost) is a Docker Hub path.
  const host = value.split('/')[0] ?? '';
  if (!host.includes('.') && !host.includes(':') && host !== 'localhost') {
    return `must start with a registry host (with a "." or a port, or localhost), ${example}`;
  }
  if (!IMAGE_REPOSITORY.test(`${value}/namespace/name`)) {
    return `must be a registry host with an optional port and lowercase path, without tag or digest, ${example}`;
  }
  return undefined;
}
