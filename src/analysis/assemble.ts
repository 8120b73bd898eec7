// From an App's prePromotionAnalysis or postPromotionAnalysis, and the templates
// it names, to the checks and arguments of one run (Argo's
// NewAnalysisRunFromTemplates, plus Teal's inline metrics), with the arguments
// in each check's count, limits and durations.

import {
  type Analysis,
  type AnalysisTemplateSpec,
  type Check,
  type CheckSpec,
  MAX_CHECKS,
} from '../app/analysis-schema.ts';
import { type ArgSource, mergeArgs, type Result, resolveNumbers } from './args.ts';

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
  const specs = [...found.flatMap((t) => t.spec.metrics), ...(analysis.metrics ?? [])];
  errors.push(...duplicateChecks(found, analysis.metrics ?? []));
  if (specs.length > MAX_CHECKS) errors.push(`the run would have ${specs.length} checks; at most ${MAX_CHECKS}`);
  const merged = mergeArgs(
    found.map((t) => ({ name: t.name, args: t.spec.args })),
    analysis.args,
  );
  if (!merged.ok) errors.push(...merged.errors);
  if (errors.length > 0 || !merged.ok) return { ok: false, errors };
  const checks = resolveAll(specs, merged.args);
  return checks.ok ? { ok: true, checks: checks.checks, args: merged.args } : checks;
}

/** Each check with its arguments in. */
function resolveAll(specs: CheckSpec[], args: ArgSource[]): Result<{ checks: Check[] }> {
  const checks: Check[] = [];
  const errors: string[] = [];
  for (const spec of specs) {
    const resolved = resolveNumbers(spec, args);
    if (resolved.ok) checks.push(resolved.check);
    else errors.push(...resolved.errors);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, checks };
}

function duplicateChecks(found: { name: string; spec: AnalysisTemplateSpec }[], inline: CheckSpec[]): string[] {
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
