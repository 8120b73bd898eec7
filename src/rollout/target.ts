import { podTemplateHash } from '../app/hash.ts';
import type { App } from '../app/schema.ts';
import type { ConfiguredTemplate } from './config-refs.ts';
import type { Revision } from './replicaset.ts';

/**
 * The revision the spec asks for: the named image, or the digest of the
 * latest successful build. Undefined until there is an image to run.
 */
export function targetRevision(app: App): Revision | undefined {
  const build = app.status?.build;
  const image = app.spec.image ?? (build?.phase === 'Succeeded' ? build.image : undefined);
  if (!image) return undefined;
  const commit = app.spec.image ? undefined : build?.commit;
  return { hash: podTemplateHash(image, app.spec.template), image, ...(commit ? { commit } : {}) };
}

/** The revision with its configuration in: the same hash as before when nothing was copied. */
export function configuredRevision(
  base: Revision | undefined,
  configured: ConfiguredTemplate<App['spec']['template']>,
): Revision | undefined {
  if (!base || configured.copies.length === 0) return base;
  return {
    ...base,
    hash: podTemplateHash(base.image, configured.template),
    template: configured.template,
    copies: configured.copies,
  };
}
