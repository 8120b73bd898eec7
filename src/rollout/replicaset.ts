// The ReplicaSet of one revision.

import {
  ANN_COMMIT,
  ANN_IMAGE,
  ANN_REVISION,
  LABEL_APP,
  LABEL_HASH,
  LABEL_MANAGED_BY,
  LABEL_SLOT,
  MANAGED_BY,
  type Slot,
} from '../app/labels.ts';
import { ownerReference } from '../app/owner.ts';
import type { App, RevisionStatus } from '../app/schema.ts';
import { REVISION_ENV } from '../app/traffic-schema.ts';
import { ANN_CONFIG_COPIES, type ConfigCopy, formatCopies } from './config-refs.ts';
import type { ObservedReplicaSet } from './observed.ts';

export interface Revision {
  hash: string;
  image: string;
  commit?: string;
  /** The App's template with its ConfigMap and Secret references pointed at their copies (config-refs.ts). */
  template?: App['spec']['template'];
  /** The copies that template references: they must exist before its pods start. */
  copies?: ConfigCopy[];
}

export const replicaSetName = (app: App, hash: string): string => `${app.metadata.name}-${hash}`;

export function selectorLabels(app: App, hash: string): Record<string, string> {
  return { [LABEL_APP]: app.metadata.name, [LABEL_HASH]: hash };
}

/** The container that runs the image: the one named "app", or the first. */
export function appContainerIndex(containers: readonly { name: string }[]): number {
  const named = containers.findIndex((c) => c.name === 'app');
  return named >= 0 ? named : 0;
}

/** The pod template as the revision runs it: the App's, with the image and Teal's labels. */
export function revisionTemplate(
  app: App,
  image: string,
  base: App['spec']['template'] = app.spec.template,
): App['spec']['template'] {
  const template = structuredClone(base);
  const index = appContainerIndex(template.spec.containers);
  const container = template.spec.containers[index];
  if (container) container.image = image;
  return template;
}

/**
 * TEAL_REVISION in every container (spec.revisionEnv), from the pod's own
 * hash label through the Downward API: the same text in every revision, so it
 * says which revision a pod belongs to without depending on it. Added here,
 * when the ReplicaSet is made, not to the template the hash is taken of: an
 * App that turns it on keeps its revisions. A container that sets the
 * variable itself keeps its own.
 */
export function withRevisionEnv(spec: App['spec']['template']['spec']): App['spec']['template']['spec'] {
  const add = (container: Record<string, unknown>) => {
    const env = Array.isArray(container.env) ? (container.env as { name?: unknown }[]) : [];
    if (env.some((e) => e.name === REVISION_ENV)) return container;
    const fieldRef = { fieldPath: `metadata.labels['${LABEL_HASH}']` };
    return { ...container, env: [...env, { name: REVISION_ENV, valueFrom: { fieldRef } }] };
  };
  const init = spec.initContainers;
  return {
    ...spec,
    containers: spec.containers.map(add) as typeof spec.containers,
    ...(Array.isArray(init) ? { initContainers: init.map(add) } : {}),
  };
}

/** slot: ping-pong, the slot its pods run in, on the pod template only (not the selector, not the hash). */
export function replicaSetManifest(app: App, revision: Revision, number: number, replicas: number, slot?: Slot) {
  const template = revisionTemplate(app, revision.image, revision.template);
  if (app.spec.revisionEnv) template.spec = withRevisionEnv(template.spec);
  const selector = selectorLabels(app, revision.hash);
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: replicaSetName(app, revision.hash),
      namespace: app.metadata.namespace,
      labels: { ...selector, [LABEL_MANAGED_BY]: MANAGED_BY } as Record<string, string>,
      annotations: {
        [ANN_REVISION]: String(number),
        [ANN_IMAGE]: revision.image,
        ...(revision.commit ? { [ANN_COMMIT]: revision.commit } : {}),
        ...(revision.copies?.length ? { [ANN_CONFIG_COPIES]: formatCopies(revision.copies) } : {}),
      },
      ownerReferences: [ownerReference(app)],
    },
    spec: {
      replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: { ...(template.metadata?.labels ?? {}), ...selector, ...(slot ? { [LABEL_SLOT]: slot } : {}) },
          ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        },
        spec: template.spec,
      },
    },
  };
}

export type ReplicaSetManifest = ReturnType<typeof replicaSetManifest>;

/** A revision as status records it (active, preview, stable). */
export function revisionStatus(app: App, rs: ObservedReplicaSet): RevisionStatus {
  return {
    revision: rs.revision,
    image: rs.image,
    podTemplateHash: rs.hash,
    replicaSet: rs.name || replicaSetName(app, rs.hash),
    ...(rs.commit ? { commit: rs.commit } : {}),
  };
}
