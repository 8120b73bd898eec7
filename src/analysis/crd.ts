// The AnalysisTemplate CustomResourceDefinition, built from the zod schema the
// way the App's is (src/app/crd.ts). Pure: the manifests script writes it.

import { AnalysisTemplateSpecSchema, TEMPLATE_KIND, TEMPLATE_PLURAL } from '../app/analysis-schema.ts';
import { column, crdFor } from '../app/crd.ts';

export function buildTemplateCrd() {
  return crdFor({
    kind: TEMPLATE_KIND,
    plural: TEMPLATE_PLURAL,
    singular: 'analysistemplate',
    description: 'Checks written once and used by Apps, with arguments, before or after promotion.',
    spec: AnalysisTemplateSpecSchema,
    // No Metrics column: the API server prints only the first value of a [*] path,
    // which would pass a template of three checks off as one, and JSONPath cannot count.
    columns: [column('Age', '.metadata.creationTimestamp', 'date')],
  });
}
