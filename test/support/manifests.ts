// Rendered manifests (helm template, kubectl kustomize) as objects to look into.
import { parseAllDocuments } from 'yaml';

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

export function find(objects: Manifest[], kind: string, name?: string, namespace?: string): Manifest[] {
  return objects.filter(
    (o) =>
      o.kind === kind &&
      (name === undefined || o.metadata.name === name) &&
      (namespace === undefined || o.metadata.namespace === namespace),
  );
}
