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
