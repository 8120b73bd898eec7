// The active and preview Services. Teal creates and owns them when missing;
// a Service someone else created gets only its selector managed, and that
// selector is restored when the App goes.

import { podTemplateHash } from '../app/hash.ts';
import {
  ANN_APPLIED,
  ANN_ORIGINAL_SELECTOR,
  LABEL_APP,
  LABEL_HASH,
  LABEL_MANAGED_BY,
  LABEL_SLOT,
  MANAGED_BY,
  NO_REVISION,
  type Slot,
} from '../app/labels.ts';
import { ownerReference } from '../app/owner.ts';
import type { App } from '../app/schema.ts';
import type { ObservedService } from './observed.ts';
import { appContainerIndex } from './replicaset.ts';
import { slotServiceName } from './route.ts';

export type ServiceRole = 'active' | 'preview';

export function serviceName(app: App, role: ServiceRole): string {
  const bg = app.spec.strategy.blueGreen;
  if (role === 'active') return bg.activeService ?? app.metadata.name;
  return bg.previewService ?? `${app.metadata.name}-preview`;
}

/** Selects the pods of one revision, or none. */
export function serviceSelector(app: App, hash: string | undefined): Record<string, string> {
  return { [LABEL_APP]: app.metadata.name, [LABEL_HASH]: hash ?? NO_REVISION };
}

export function selectedHash(service: ObservedService | undefined): string | undefined {
  const hash = service?.selector[LABEL_HASH];
  return hash && hash !== NO_REVISION ? hash : undefined;
}

interface ServicePort {
  name?: string;
  port: number;
  targetPort: number | string;
  protocol: string;
}

/** spec.service.ports, or else one port per containerPort of the app container. */
export function servicePorts(app: App): ServicePort[] {
  if (app.spec.service) {
    return app.spec.service.ports.map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: p.port,
      targetPort: p.targetPort ?? p.port,
      protocol: p.protocol,
    }));
  }
  const containers = app.spec.template.spec.containers;
  const container = containers[appContainerIndex(containers)] as { ports?: unknown } | undefined;
  const ports = Array.isArray(container?.ports)
    ? (container.ports as { containerPort?: unknown; name?: unknown; protocol?: unknown }[])
    : [];
  return ports
    .filter((p) => typeof p.containerPort === 'number')
    .map((p) => ({
      ...(typeof p.name === 'string' ? { name: p.name } : {}),
      port: p.containerPort as number,
      targetPort: p.containerPort as number,
      protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
    }));
}

const applied = (what: unknown) => podTemplateHash('service', what);

/** A Service Teal owns, in full. */
export function ownedServiceManifest(app: App, role: ServiceRole, hash: string | undefined) {
  const labels = { [LABEL_APP]: app.metadata.name, [LABEL_MANAGED_BY]: MANAGED_BY, 'teal.dev/role': role };
  const spec = { selector: serviceSelector(app, hash), ports: servicePorts(app) };
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceName(app, role),
      namespace: app.metadata.namespace,
      labels,
      annotations: { [ANN_APPLIED]: applied({ labels, spec, owner: app.metadata.uid }) } as Record<string, string>,
      ownerReferences: [ownerReference(app)],
    },
    spec,
  };
}

/** The part of an adopted Service that Teal manages: its selector, and a note of the original. */
export function adoptedServiceManifest(app: App, service: ObservedService, hash: string | undefined) {
  const labels = { [LABEL_APP]: app.metadata.name };
  const spec = { selector: serviceSelector(app, hash) };
  const original = service.originalSelector ?? JSON.stringify(service.selector);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: service.name,
      namespace: service.namespace,
      labels,
      annotations: { [ANN_ORIGINAL_SELECTOR]: original, [ANN_APPLIED]: applied({ labels, spec, original }) } as Record<
        string,
        string
      >,
    },
    spec,
  };
}

/**
 * The Service of a ping-pong slot, which Teal owns in full: a fixed selector
 * on the slot label, so a revision's pods match it from creation (and a pod-aware
 * load balancer's webhook injects its readiness gates into them).
 */
export function slotServiceManifest(app: App, slot: Slot) {
  const labels = { [LABEL_APP]: app.metadata.name, [LABEL_MANAGED_BY]: MANAGED_BY, 'teal.dev/role': slot };
  const selector: Record<string, string> = { [LABEL_APP]: app.metadata.name, [LABEL_SLOT]: slot };
  const spec = { selector, ports: servicePorts(app) };
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: slotServiceName(app, slot),
      namespace: app.metadata.namespace,
      labels,
      annotations: { [ANN_APPLIED]: applied({ labels, spec, owner: app.metadata.uid }) } as Record<string, string>,
      ownerReferences: [ownerReference(app)],
    },
    spec,
  };
}

export type ServiceManifest =
  | ReturnType<typeof ownedServiceManifest>
  | ReturnType<typeof adoptedServiceManifest>
  | ReturnType<typeof slotServiceManifest>;

/** Whether a Service was created by someone else and only adopted. */
export function isAdopted(app: App, service: ObservedService): boolean {
  return service.ownerUid !== app.metadata.uid;
}

/**
 * What an adopted Service goes back to when its App is deleted: the original
 * selector; Teal's label and annotations go, since Teal no longer applies them.
 */
export function restoredServiceManifest(service: ObservedService) {
  let selector: Record<string, string> = {};
  try {
    const parsed: unknown = JSON.parse(service.originalSelector ?? '{}');
    if (parsed && typeof parsed === 'object') selector = parsed as Record<string, string>;
  } catch {
    // A mangled note restores an empty selector rather than keep pointing at Teal's pods.
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: service.name, namespace: service.namespace },
    spec: { selector },
  };
}
