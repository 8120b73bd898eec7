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

export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** The rules of a Role or ClusterRole, if it was found. */
export const rulesOf = (m: Manifest | undefined): Rule[] | undefined => (m as { rules?: Rule[] } | undefined)?.rules;

export interface OperatorContainer {
  image: string;
  command?: string[];
  args: string[];
  readinessProbe: { httpGet: { scheme?: string } };
}

/** The operator container of the (only) Deployment among the objects. */
export function operatorContainer(objects: Manifest[]): OperatorContainer {
  const [deployment] = find(objects, 'Deployment') as (Manifest & {
    spec: { template: { spec: { containers: OperatorContainer[] } } };
  })[];
  const container = deployment?.spec.template.spec.containers[0];
  if (!container) throw new Error('no operator Deployment among the objects');
  return container;
}
