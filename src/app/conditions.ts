import type { Condition, ConditionType } from './schema.ts';

export interface ConditionInput {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
}

/**
 * Returns conditions with `next` set, keeping lastTransitionTime when the
 * status did not change, as metav1.Condition helpers do.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  observedGeneration: number,
  now: string,
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === next.type);
  const previous = index >= 0 ? list[index] : undefined;
  const condition: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    observedGeneration,
    lastTransitionTime: previous && previous.status === next.status ? previous.lastTransitionTime : now,
    ...(next.message ? { message: next.message } : {}),
  };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

export function getCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}
