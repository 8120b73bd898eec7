// The App's coordinates in the API: group, version, kind and resource. A module
// without zod, so a command that only names the resource (the CLI's requests,
// src/cli/rest.ts) does not build the App's schemas (schema.ts re-exports these).
export const GROUP = 'teal.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'App';
export const PLURAL = 'apps';
/** The App's coordinates in CustomObjectsApi requests, to spread next to namespace and name. */
export const APP_API = { group: GROUP, version: VERSION, plural: PLURAL } as const;
/** The CRD's name, and the resource as RBAC and kubectl name it. */
export const APP_RESOURCE = `${PLURAL}.${GROUP}`;
