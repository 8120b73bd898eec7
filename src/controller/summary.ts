// The status one reconcile writes, whatever happened in it (Flux's deferred
// summary): what the sub-steps that finished found true, and, when a step
// failed, Ready=False with the reason and the API server's answer. Pure.
import { getCondition, setCondition } from '../app/conditions.ts';
import type { PlannerEvent } from '../app/event.ts';
import type { AppStatus } from '../app/schema.ts';
import { ConditionReason as CR, EventReason as ER } from '../rollout/reasons.ts';

export interface Summary {
  status: AppStatus;
  events: PlannerEvent[];
}

/**
 * status as the finished steps left it, with Ready=False/ReconcileError and
 * the failure as its message. Phase stays: it says where the release stands,
 * which the failure did not change. The Warning Event comes once per distinct
 * failure, not at every retry.
 */
export function failedSummary(status: AppStatus, failure: string, generation: number, now: string): Summary {
  const before = getCondition(status.conditions, 'Ready');
  const message = `reconcile failed: ${failure}`;
  const next: AppStatus = {
    ...status,
    conditions: setCondition(
      status.conditions,
      { type: 'Ready', status: 'False', reason: CR.ReconcileError, message },
      generation,
      now,
    ),
    message,
  };
  const repeated = before?.reason === CR.ReconcileError && before.message === message;
  return { status: next, events: repeated ? [] : [{ type: 'Warning', reason: ER.ReconcileError, message: failure }] };
}
