// The copies an App's pods use, deleted by hand (issue #24 S5): a pod that
// references a missing ConfigMap or Secret cannot start, so a deleted copy is
// made again while its source still has the content the copy is named after;
// otherwise only a person can bring that content back, and the App says so
// (condition ConfigCopyMissing, a Warning Event, the status message) rather
// than stay Healthy. Pure: the reconciler finds the missing copies.

import { ownerReference } from '../app/owner.ts';
import { kindName, lostCopyMessage, repairCopies } from './config-refs.ts';
import { condition, emit, type Planner, type Progress } from './planner.ts';
import { ConditionReason as CR, EventReason as ER } from './reasons.ts';

/**
 * Remakes what can be remade; returns what the App must say of the rest, if any.
 * The condition appears with the first lost copy and turns False once none is
 * lost: an App that never lost one carries no such condition.
 */
export function repairConfigCopies(p: Planner): string | undefined {
  const { recreate, lost } = repairCopies(p.app.metadata.uid ?? '', p.input.missingCopies ?? []);
  const owner = ownerReference(p.app);
  for (const copy of recreate) {
    p.actions.push({ kind: 'createConfigCopy', copy, app: p.app.metadata.name, owner });
    emit(p, {
      type: 'Normal',
      reason: ER.ConfigCopyRecreated,
      message: `${kindName(copy.kind)} ${copy.name} was deleted; made again from ${copy.source}, which still has its content`,
    });
  }
  const before = p.status.conditions?.find((c) => c.type === 'ConfigCopyMissing');
  if (lost.length === 0) {
    if (before) condition(p, 'ConfigCopyMissing', 'False', CR.ConfigCopiesPresent);
    return undefined;
  }
  const message = lostCopyMessage(lost);
  if (before?.status !== 'True' || before.message !== message) {
    emit(p, { type: 'Warning', reason: ER.ConfigCopyMissing, message });
  }
  condition(p, 'ConfigCopyMissing', 'True', CR.ConfigCopyMissing, message);
  return message;
}

/** A lost copy makes an App that would be Healthy Degraded; any other phase keeps its news, the loss added. */
export function withLostCopies(progress: Progress, lost: string | undefined): Progress {
  if (lost === undefined) return progress;
  if (progress.phase === 'Healthy') return { ...progress, phase: 'Degraded', message: lost };
  return { ...progress, message: `${progress.message}; ${lost}` };
}
