// The AnalysisTemplate CustomResourceDefinition, built from the zod schema the
// way src/app/crd.ts builds the App's. Pure: the manifests script writes it.
import { schemaOf } from '../app/crd.ts';
import { AnalysisTemplateSpecSchema, TEMPLATE_KIND, TEMPLATE_PLURAL, TEMPLATE_RESOURCE } from './schema.ts';

type JsonSchema = { [key: string]: unknown };

export function buildTemplateCrd(): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: TEMPLATE_RESOURCE },
    spec: {
      group: 'teal.dev',
      names: {
        kind: TEMPLATE_KIND,
        listKind: `${TEMPLATE_KIND}List`,
        plural: TEMPLATE_PLURAL,
        singular: 'analysistemplate',
        categories: ['teal'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          additionalPrinterColumns: [
            { name: 'Metrics', type: 'string', jsonPath: '.spec.metrics[*].name' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description: 'Checks written once and used by Apps, with arguments, before or after promotion.',
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: schemaOf(AnalysisTemplateSpecSchema),
              },
            },
          },
        },
      ],
    },
  };
}
