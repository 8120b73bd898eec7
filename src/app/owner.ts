import { API_VERSION, type App, KIND } from './schema.ts';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
}

/** Makes the App the controller of what it owns, so deleting it collects them. */
export function ownerReference(app: App): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: app.metadata.name,
    uid: app.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The metadata Teal writes on an object an App owns (a preview's child App, its Ingress or HTTPRoute). */
export interface OwnedMetadata {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ownerReferences: OwnerReference[];
}
