// A finished measurement as an executor reports it to recordMeasurement. For web
// and prometheus checks, phase and message come from condition.ts's judge
// (Argo's EvaluateResult) and value from its show; for a job check, from the
// Job's final condition.
import type { Check, MeasurementPhase } from '../app/analysis-schema.ts';

export type FinalPhase = Exclude<MeasurementPhase, 'Running'>;

export interface MeasurementResult {
  phase: FinalPhase;
  /** The measured value as status shows it; secrets redacted. */
  value?: string;
  /** Why this phase: the condition that decided, the Job's reason, or the error. */
  message?: string;
}

/** Cuts text to `max` characters, marking the cut, so status stays bounded. */
export function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The condition that gave a web or prometheus measurement its phase, worded as
 * judge words it; for a verdict when the executor recorded no message.
 * Undefined when the check has no condition (a job check).
 */
export function conditionText(check: Check, phase: FinalPhase): string | undefined {
  const { successCondition: s, failureCondition: f } = check;
  if (s === undefined && f === undefined) return undefined;
  const sc = `successCondition ${JSON.stringify(s)}`;
  const fc = `failureCondition ${JSON.stringify(f)}`;
  switch (phase) {
    case 'Failed':
      return f !== undefined ? `${fc} is true` : `${sc} is false`;
    case 'Inconclusive':
      return `neither ${sc} nor ${fc} is true`;
    case 'Successful':
      return s !== undefined ? `${sc} is true` : `${fc} is false`;
    case 'Error':
      return undefined;
  }
}
