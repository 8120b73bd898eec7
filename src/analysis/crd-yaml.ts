import { stringify } from 'yaml';
import { buildTemplateCrd } from './crd.ts';

const HEADER = '# Generated from src/app/analysis-schema.ts by `make manifests`. Do not edit.\n';

/** The AnalysisTemplate CRD as checked in under config/crd and the chart's crds/. */
export function renderTemplateCrd(): string {
  // YAML 1.1, as kubectl reads it (src/app/crd-yaml.ts says why).
  return HEADER + stringify(buildTemplateCrd(), { lineWidth: 0, version: '1.1' });
}
