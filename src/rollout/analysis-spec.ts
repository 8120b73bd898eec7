// The App's checks made whole: prePromotionAnalysis and postPromotionAnalysis
// with the metrics of the templates they name (analysis/assemble.ts), and what
// is wrong with them, each naming the field. A missing or invalid template is
// an invalid spec, as Argo Rollouts makes it one: nothing is released on
// checks that cannot run.
import { assembleRun } from '../analysis/assemble.ts';
import { checkCondition } from '../analysis/condition.ts';
import type { Analysis, Check } from '../app/analysis-schema.ts';
import { ANALYSIS_FIELD, type App } from '../app/schema.ts';
import type { AnalysisObserved, RunSpec } from './planner.ts';

export interface AnalysisSpecs {
  runs: { pre?: RunSpec; post?: RunSpec };
  problems: string[];
}

export function analysisSpecs(app: App, observed: AnalysisObserved | undefined): AnalysisSpecs {
  const runs: AnalysisSpecs['runs'] = {};
  const problems: string[] = [];
  for (const kind of ['pre', 'post'] as const) {
    const analysis = app.spec.strategy.blueGreen[ANALYSIS_FIELD[kind]];
    if (!analysis) continue;
    const field = `spec.strategy.blueGreen.${ANALYSIS_FIELD[kind]}`;
    const found = runSpec(analysis, observed, field);
    if (found.ok) runs[kind] = found.spec;
    else problems.push(...found.problems);
  }
  return { runs, problems };
}

function runSpec(
  analysis: Analysis,
  observed: AnalysisObserved | undefined,
  field: string,
): { ok: true; spec: RunSpec } | { ok: false; problems: string[] } {
  const invalid = new Map<string, string>();
  (analysis.templates ?? []).forEach((ref, i) => {
    const why = observed?.invalidTemplates?.get(ref.templateName);
    if (why)
      invalid.set(
        ref.templateName,
        `templates[${i}].templateName: AnalysisTemplate "${ref.templateName}" is invalid: ${why}`,
      );
  });
  const assembled = assembleRun(analysis, observed?.templates ?? new Map());
  // An invalid template is left out of `templates`: say it is invalid, not that it is missing.
  const found = assembled.ok
    ? conditionProblems(assembled.checks)
    : assembled.errors.filter((e) => ![...invalid.keys()].some((name) => e.endsWith(`"${name}" not found`)));
  const problems = [...invalid.values(), ...found].map((e) =>
    /^(templates|args|metrics)\b/.test(e) ? `${field}.${e}` : `${field}: ${e}`,
  );
  if (problems.length > 0 || !assembled.ok) return { ok: false, problems };
  return { ok: true, spec: { checks: assembled.checks, args: assembled.args } };
}

/**
 * Conditions that cannot compile, caught before anything runs. One holding a
 * placeholder is compiled once its values are in, when measured: an Error then.
 */
function conditionProblems(checks: readonly Check[]): string[] {
  return checks.flatMap((check) =>
    (['successCondition', 'failureCondition'] as const).flatMap((which) => {
      const expression = check[which];
      if (expression === undefined || expression.includes('{{')) return [];
      const problem = checkCondition(expression);
      return problem ? [`metrics "${check.name}".${which}: ${problem}`] : [];
    }),
  );
}
