// Builds the App CustomResourceDefinition from the zod schema. Pure: the
// manifests script writes the result to config/crd.
import { z } from 'zod';
import { celRule } from './rules.ts';
import { AppSpecSchema, AppStatusSchema, appNameRules, GROUP, KIND, PLURAL, VERSION } from './schema.ts';

type JsonSchema = { [key: string]: unknown };

// Keywords a structural schema may carry (apiextensions.k8s.io/v1 JSONSchemaProps).
const KUBE_KEYWORDS = new Set([
  'type',
  'format',
  'description',
  'default',
  'enum',
  'maximum',
  'minimum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'maxProperties',
  'minProperties',
  'required',
  'items',
  'properties',
  'additionalProperties',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'nullable',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
  'x-kubernetes-embedded-resource',
]);

const isSchema = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Rewrites zod's OpenAPI 3.0 output into a structural schema the API server accepts. */
export function toStructural(node: JsonSchema, inBranch = false): JsonSchema {
  const out: JsonSchema = {};
  const anyOf = node.anyOf;
  if (Array.isArray(anyOf)) {
    const types = anyOf.filter(isSchema).map((b) => b.type);
    if (types.length === 2 && types.includes('integer') && types.includes('string')) {
      const rest = { ...node };
      delete rest.anyOf;
      return { ...toStructural(rest, inBranch), ...intOrStringBounds(anyOf), 'x-kubernetes-int-or-string': true };
    }
    throw new Error(`unsupported union in CRD schema: ${JSON.stringify(anyOf)}`);
  }
  for (const [key, value] of Object.entries(node)) {
    if (!KUBE_KEYWORDS.has(key)) continue;
    if (key === 'properties' && isSchema(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toStructural(v as JsonSchema)]));
    } else if (key === 'items' && isSchema(value)) {
      out.items = toStructural(value);
    } else if (key === 'additionalProperties') {
      // A record keeps its value schema; a loose object keeps unknown fields.
      if (node.properties === undefined && isSchema(value) && Object.keys(value).length > 0) {
        out.additionalProperties = toStructural(value);
      } else if (node.properties !== undefined && isSchema(value) && Object.keys(value).length === 0) {
        out['x-kubernetes-preserve-unknown-fields'] = true;
      }
    } else if (key === 'allOf' && Array.isArray(value)) {
      out.allOf = value.map((b) => toStructural(b as JsonSchema, true));
    } else if ((key === 'maximum' || key === 'minimum') && Math.abs(value as number) >= Number.MAX_SAFE_INTEGER) {
      // zod's implicit safe-integer bounds say nothing to a Kubernetes user.
    } else if (key === 'pattern' && node.format === 'date-time') {
      // The format already says it; zod's RFC 3339 regex is not worth shipping.
    } else {
      out[key] = value;
    }
  }
  // Branches of allOf/anyOf may not set a type or a default.
  if (inBranch) {
    delete out.type;
    delete out.default;
  }
  return out;
}

// Keywords that the API server applies to one JSON type only, and passes for the others.
const ONE_TYPE_KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'],
  string: ['minLength', 'maxLength', 'pattern'],
};

/**
 * The bounds of an int-or-string's two branches, on the field itself: a
 * structural schema may not give its branches a type, but a minimum checks
 * only integers and a pattern only strings, so together they say the same.
 */
function intOrStringBounds(branches: unknown[]): JsonSchema {
  const out: JsonSchema = {};
  for (const branch of branches.filter(isSchema)) {
    const { type, ...bounds } = toStructural(branch);
    const allowed = ONE_TYPE_KEYWORDS[String(type)] ?? [];
    for (const [key, value] of Object.entries(bounds)) {
      if (!allowed.includes(key)) throw new Error(`unsupported keyword ${key} in an int-or-string branch`);
      out[key] = value;
    }
  }
  return out;
}

/** A zod schema as a structural OpenAPI schema, as the API server wants one in a CRD. */
export function schemaOf(s: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(s, {
    target: 'openapi-3.0',
    io: 'input',
    reused: 'inline',
    unrepresentable: 'throw',
  }) as JsonSchema;
  return toStructural(json);
}

export const column = (name: string, jsonPath: string, type = 'string', extra: JsonSchema = {}) => ({
  name,
  type,
  jsonPath,
  ...extra,
});

/** One of Teal's resources, as its CRD needs it described. */
export interface ResourceDefinition {
  kind: string;
  plural: string;
  singular: string;
  description: string;
  spec: z.ZodType;
  status?: z.ZodType;
  subresources?: JsonSchema;
  columns: JsonSchema[];
  validations?: JsonSchema[];
}

/** The CRD of a namespaced resource in teal.dev/v1alpha1, its schema generated from zod. */
export function crdFor(r: ResourceDefinition): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${r.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind: r.kind, listKind: `${r.kind}List`, plural: r.plural, singular: r.singular, categories: ['teal'] },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          ...(r.subresources ? { subresources: r.subresources } : {}),
          additionalPrinterColumns: r.columns,
          schema: {
            openAPIV3Schema: {
              description: r.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: schemaOf(r.spec),
                ...(r.status ? { status: schemaOf(r.status) } : {}),
              },
              ...(r.validations ? { 'x-kubernetes-validations': r.validations } : {}),
            },
          },
        },
      ],
    },
  };
}

export function buildCrd(): JsonSchema {
  return crdFor({
    kind: KIND,
    plural: PLURAL,
    singular: 'app',
    description: 'An App follows a git branch (or names a ready image) and releases it blue/green.',
    spec: AppSpecSchema,
    status: AppStatusSchema,
    subresources: {
      status: {},
      // kubectl scale and an HPA write spec.replicas here. The Scale's status
      // counts the pods its selector matches, the active revision's, as Argo
      // Rollouts does (src/rollout/counts.ts says why not all pods).
      scale: {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.HPAReplicas',
        labelSelectorPath: '.status.selector',
      },
    },
    columns: [
      column('Phase', '.status.phase'),
      column('Active', '.status.active.revision', 'integer'),
      column('Preview', '.status.preview.revision', 'integer'),
      column('Commit', '.status.source.shortCommit'),
      // With -o wide, the counts of a Deployment or an Argo Rollout.
      column('Desired', '.spec.replicas', 'integer', { priority: 1 }),
      column('Current', '.status.replicas', 'integer', { priority: 1 }),
      column('Up-to-date', '.status.updatedReplicas', 'integer', { priority: 1 }),
      column('Available', '.status.availableReplicas', 'integer', { priority: 1 }),
      column('Age', '.metadata.creationTimestamp', 'date'),
      column('Message', '.status.message', 'string', { priority: 1 }),
    ],
    validations: appNameRules.map(celRule),
  });
}
