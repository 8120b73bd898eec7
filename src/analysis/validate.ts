// Parsing an AnalysisTemplate read from the API server, with the App's way of
// naming fields in errors.

import { type AnalysisTemplate, AnalysisTemplateSchema } from '../app/analysis-schema.ts';
import { formatIssues } from '../app/validate.ts';

export type TemplateValidation = { ok: true; template: AnalysisTemplate } | { ok: false; errors: string[] };

export function validateTemplate(object: unknown): TemplateValidation {
  const result = AnalysisTemplateSchema.safeParse(object);
  if (!result.success) return { ok: false, errors: formatIssues(result.error.issues) };
  return { ok: true, template: result.data };
}
