import type { z } from 'zod';

/**
 * A validation rule said once and enforced twice: by the API server as a CEL
 * rule in the CRD, and by the operator through zod, so an App that slipped
 * past an older CRD still ends in InvalidSpec instead of reaching workloads.
 */
export interface Rule<T> {
  cel: string;
  message: string;
  test: (value: T) => boolean;
  /** The field to blame in zod issues; the CEL message names it itself. */
  path?: string[];
}

export function withRules<S extends z.ZodType>(schema: S, rules: Rule<z.output<S>>[]): S {
  const checked = schema.superRefine((value, ctx) => {
    for (const rule of rules) {
      if (!rule.test(value))
        ctx.addIssue({ code: 'custom', message: rule.message, input: value, path: rule.path ?? [] });
    }
  }) as unknown as S;
  return checked.meta({ 'x-kubernetes-validations': rules.map(celRule) }) as S;
}

export function celRule(rule: Rule<never>): { rule: string; message: string } {
  return { rule: rule.cel, message: rule.message };
}

/** A regular expression as a rule, so the API server answers with our message rather than the pattern. */
export function matching(pattern: RegExp, message: string): Rule<string> {
  return { cel: `self.matches(${JSON.stringify(pattern.source)})`, message, test: (s) => pattern.test(s) };
}
