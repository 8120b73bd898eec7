// How a preview is reached (issue #28 item 1): an Ingress or a Gateway API
// HTTPRoute per preview, named after the child App and owned by it, so deleting
// the preview removes its route. The host comes from the template in
// spec.previews.exposure, every label kept to 63 characters (names.ts).
import { podTemplateHash } from '../app/hash.ts';
import { ANN_APPLIED, LABEL_MANAGED_BY, MANAGED_BY } from '../app/labels.ts';
import { type OwnedMetadata, ownerReference } from '../app/owner.ts';
import { LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from '../app/preview-labels.ts';
import type { PreviewsExposure } from '../app/previews-schema.ts';
import type { App } from '../app/schema.ts';
import { serviceName, servicePorts } from '../rollout/service.ts';
import { expandHost, hostTemplate } from './names.ts';

export interface ExposureManifest {
  apiVersion: 'networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1';
  kind: 'Ingress' | 'HTTPRoute';
  metadata: OwnedMetadata;
  spec: Record<string, unknown>;
}

/** An Ingress or HTTPRoute seen in the cluster: its name and the ANN_APPLIED hash Teal wrote on it. */
export interface ObservedExposure {
  kind: ExposureManifest['kind'];
  name: string;
  applied?: string | undefined;
}

/** The preview's host, or why it has none (a template that expands past 253 characters). */
export function previewHost(
  exposure: PreviewsExposure,
  values: { number: number; app: string; name: string },
): { host: string } | { problem: string } {
  const host = expandHost(hostTemplate(exposure) ?? '', values);
  return host ? { host } : { problem: `the host for pull request #${values.number} is longer than 253 characters` };
}

/** The URL reported on the pull request. */
export const previewUrl = (exposure: PreviewsExposure, host: string): string => `${exposure.scheme}://${host}/`;

function ingressSpec(exposure: NonNullable<PreviewsExposure['ingress']>, host: string, child: App) {
  const port = servicePorts(child)[0];
  const servicePort = port?.name ? { name: port.name } : { number: port?.port ?? 80 };
  const path = {
    path: '/',
    pathType: 'Prefix',
    backend: { service: { name: serviceName(child, 'active'), port: servicePort } },
  };
  return {
    ...(exposure.className ? { ingressClassName: exposure.className } : {}),
    ...(exposure.tlsSecretName ? { tls: [{ hosts: [host], secretName: exposure.tlsSecretName }] } : {}),
    rules: [{ host, http: { paths: [path] } }],
  };
}

function httpRouteSpec(exposure: NonNullable<PreviewsExposure['httpRoute']>, host: string, child: App) {
  const port = servicePorts(child)[0]?.port ?? 80;
  return {
    parentRefs: exposure.parentRefs,
    hostnames: [host],
    rules: [{ backendRefs: [{ name: serviceName(child, 'active'), port }] }],
  };
}

/** The Ingress or HTTPRoute of a child App that exists (it owns it), with ANN_APPLIED to write it only on change. */
export function exposureManifest(exposure: PreviewsExposure, host: string, child: App): ExposureManifest {
  const labels = {
    [LABEL_PREVIEW_OF]: child.metadata.labels?.[LABEL_PREVIEW_OF] ?? '',
    [LABEL_PULL_REQUEST]: child.metadata.labels?.[LABEL_PULL_REQUEST] ?? '',
    [LABEL_MANAGED_BY]: MANAGED_BY,
  };
  const ingress = exposure.ingress;
  const route = exposure.httpRoute;
  const spec = ingress ? ingressSpec(ingress, host, child) : route ? httpRouteSpec(route, host, child) : {};
  const annotations = { ...(ingress?.annotations ?? {}) };
  annotations[ANN_APPLIED] = podTemplateHash('teal.dev/preview-exposure', { labels, annotations, spec });
  return {
    apiVersion: ingress ? 'networking.k8s.io/v1' : 'gateway.networking.k8s.io/v1',
    kind: ingress ? 'Ingress' : 'HTTPRoute',
    metadata: {
      name: child.metadata.name,
      namespace: child.metadata.namespace ?? 'default',
      labels,
      annotations,
      ownerReferences: [ownerReference(child)],
    },
    spec,
  };
}
