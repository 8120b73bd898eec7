// From an App's prePromotionAnalysis or postPromotionAnalysis, and the templates
// it names, to the checks and arguments of one run (Argo's
// NewAnalysisRunFromTemplates, plus Teal's inline metrics).
import { type ArgSource, mergeArgs, type Result } from './args.ts';
import { type Analysis, type AnalysisTemplateSpec, type Check, MAX_CHECKS } from './schema.ts';

export interface RunSpec {
  /** Templates' metrics in the order listed, then the inline ones. */
  checks: Check[];
  args: ArgSource[];
}

/** `templates` holds the AnalysisTemplates found in the App namespace, by name. */
export function assembleRun(analysis: Analysis, templates: ReadonlyMap<string, AnalysisTemplateSpec>): Result<RunSpec> {
  const errors: string[] = [];
  const found: { name: string; spec: AnalysisTemplateSpec }[] = [];
  (analysis.templates ?? []).forEach((ref, i) => {
    // Listed twice, used once (Argo's FilterUniqueTemplates).
    if (found.some((t) => t.name === ref.templateName)) return;
    const spec = templates.get(ref.templateName);
    if (spec) found.push({ name: ref.templateName, spec });
    else errors.push(`templates[${i}].templateName: AnalysisTemplate "${ref.templateName}" not found`);
  });
  const checks = [...found.flatMap((t) => t.spec.metrics), ...(analysis.metrics ?? [])];
  errors.push(...duplicateChecks(found, analysis.metrics ?? []));
  if (checks.length > MAX_CHECKS) errors.push(`the run would have ${checks.length} checks; at most ${MAX_CHECKS}`);
  const merged = mergeArgs(
    found.map((t) => ({ name: t.name, args: t.spec.args })),
    analysis.args,
  );
  if (!merged.ok) errors.push(...merged.errors);
  if (errors.length > 0 || !merged.ok) return { ok: false, errors };
  return { ok: true, checks, args: merged.args };
}

function duplicateChecks(found: { name: string; spec: AnalysisTemplateSpec }[], inline: Check[]): string[] {
  const owner = new Map<string, string>();
  const errors: string[] = [];
  const sources = [
    ...found.flatMap((t) => t.spec.metrics.map((m) => ({ name: m.name, from: `template "${t.name}"` }))),
    ...inline.map((m) => ({ name: m.name, from: 'the App' })),
  ];
  for (const { name, from } of sources) {
    const first = owner.get(name);
    if (first) errors.push(`metrics: "${name}" comes from both ${first} and ${from}; names must be unique in a run`);
    else owner.set(name, from);
  }
  return errors;
}
