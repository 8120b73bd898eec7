// status.source, status.build and their conditions, from what the poller
// resolved and what the build planner saw. Pure.
import { setCondition } from '../app/conditions.ts';
import type { PlannerEvent } from '../app/event.ts';
import type { AppStatus } from '../app/schema.ts';
import { revisionString, shortCommit } from '../git/revision.ts';
import type { BuildPlan } from './plan.ts';

export interface ResolvedSource {
  /** The full ref that matched, e.g. refs/heads/main. */
  ref: string;
  commit: string;
  resolvedAt: string;
  author?: string;
  subject?: string;
}

export interface SourceFailure {
  reason: string;
  message: string;
}

/** Records the resolved source (or why it could not be resolved) on a copy of status. */
export function withSource(
  status: AppStatus | undefined,
  resolved: ResolvedSource | undefined,
  failure: SourceFailure | undefined,
  generation: number,
  now: string,
): AppStatus {
  const next: AppStatus = structuredClone(status ?? {});
  if (resolved) {
    next.source = {
      ref: resolved.ref,
      commit: resolved.commit,
      shortCommit: shortCommit(resolved.commit),
      revision: revisionString(resolved.ref, resolved.commit),
      ...(resolved.author ? { author: resolved.author } : {}),
      ...(resolved.subject ? { subject: resolved.subject } : {}),
      resolvedAt:
        next.source?.commit === resolved.commit ? (next.source.resolvedAt ?? resolved.resolvedAt) : resolved.resolvedAt,
    };
  }
  if (failure) {
    next.conditions = setCondition(
      next.conditions,
      { type: 'SourceResolved', status: 'False', ...failure },
      generation,
      now,
    );
  } else if (next.source) {
    next.conditions = setCondition(
      next.conditions,
      { type: 'SourceResolved', status: 'True', reason: 'Resolved', message: next.source.revision },
      generation,
      now,
    );
  } else {
    next.conditions = setCondition(
      next.conditions,
      { type: 'SourceResolved', status: 'Unknown', reason: 'Resolving', message: 'waiting for the first ls-remote' },
      generation,
      now,
    );
  }
  return next;
}

/** Records the build of the current commit on status (already copied). */
export function withBuild(status: AppStatus, plan: BuildPlan, generation: number, now: string): AppStatus {
  if (plan.build) status.build = plan.build;
  const build = status.build;
  if (!build) return status;
  const short = build.commit.slice(0, 12);
  const condition =
    build.phase === 'Succeeded'
      ? { status: 'True' as const, reason: 'Succeeded', message: `${short} built: ${build.image ?? ''}` }
      : build.phase === 'Failed'
        ? { status: 'False' as const, reason: 'BuildFailed', message: `${short}: ${build.message ?? 'failed'}` }
        : { status: 'Unknown' as const, reason: 'Building', message: `building ${short} (job ${build.job})` };
  status.conditions = setCondition(status.conditions, { type: 'BuildSucceeded', ...condition }, generation, now);
  return status;
}

/** Events for a build's transitions: started, succeeded, failed. */
export function buildTransitionEvents(before: AppStatus['build'], after: AppStatus['build']): PlannerEvent[] {
  if (!after || (before?.job === after.job && before.phase === after.phase)) return [];
  const short = after.commit.slice(0, 12);
  if (after.phase === 'Succeeded') {
    return [{ type: 'Normal', reason: 'BuildSucceeded', message: `${short} built: ${after.image ?? ''}` }];
  }
  if (after.phase === 'Failed') {
    return [{ type: 'Warning', reason: 'BuildFailed', message: `${short}: ${after.message ?? 'failed'}` }];
  }
  if (before?.job !== after.job) {
    return [{ type: 'Normal', reason: 'BuildStarted', message: `building ${short} in Job ${after.job}` }];
  }
  return [];
}
