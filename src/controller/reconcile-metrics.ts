// Promotions, finished builds and the runs of checks with their measurements,
// counted from the status a reconcile wrote: counted once, because only a
// status that landed is counted, and only what changed from the one before.
import type { AnalysisKind, AppAnalysisRun, AppStatus } from '../app/schema.ts';
import type { Metrics } from './metrics.ts';

export function countTransitions(metrics: Metrics, before: AppStatus | undefined, after: AppStatus): void {
  countPromotions(metrics, before, after);
  countBuild(metrics, before, after);
  countAnalysis(metrics, 'pre', before?.prePromotionAnalysis, after.prePromotionAnalysis);
  countAnalysis(metrics, 'post', before?.postPromotionAnalysis, after.postPromotionAnalysis);
}

function countPromotions(metrics: Metrics, before: AppStatus | undefined, after: AppStatus): void {
  const seen = before?.history?.at(-1)?.promotedAt;
  for (const entry of after.history ?? []) {
    if (seen !== undefined && (entry.promotedAt ?? '') <= seen) continue;
    metrics.promotions.inc({ via: entry.promotedVia ?? 'unknown' });
    const source = after.source;
    if (entry.commit && source?.commit === entry.commit && entry.promotedAt) {
      metrics.commitToActive.observe(
        Math.max(0, (Date.parse(entry.promotedAt) - Date.parse(source.resolvedAt)) / 1000),
      );
    }
  }
}

function countBuild(metrics: Metrics, before: AppStatus | undefined, after: AppStatus): void {
  const build = after.build;
  if (!build || (build.phase !== 'Succeeded' && build.phase !== 'Failed')) return;
  if (before?.build?.job === build.job && before.build.phase === build.phase) return;
  const result = build.phase === 'Succeeded' ? 'success' : 'failure';
  metrics.builds.inc({ result });
  if (build.startedAt && build.finishedAt) {
    metrics.buildDuration.observe({ result }, (Date.parse(build.finishedAt) - Date.parse(build.startedAt)) / 1000);
  }
}

const ended = (phase: string): boolean => phase !== 'Running' && phase !== 'Pending';

/**
 * A run counts once, when it is first written in a final phase; a run replaced
 * by another before it ended (a new revision, changed checks) ended Cancelled.
 * A measurement counts once, when first written finished: its identity is
 * (run id, check, n), so a status written again, or a run restarted under a
 * new id, never counts one twice.
 */
function countAnalysis(
  metrics: Metrics,
  kind: AnalysisKind,
  before: AppAnalysisRun | undefined,
  after: AppAnalysisRun | undefined,
): void {
  const same = before !== undefined && after !== undefined && before.id === after.id;
  if (before && !same && !ended(before.phase)) metrics.analysisRuns.inc({ kind, phase: 'Cancelled' });
  if (after && ended(after.phase) && !(same && ended(before.phase))) {
    metrics.analysisRuns.inc({ kind, phase: after.phase });
  }
  if (!after) return;
  const counted = new Set(same ? finishedMeasurements(before) : []);
  for (const check of after.checks) {
    const provider = check.provider ?? 'unknown';
    for (const m of check.measurements) {
      if (!ended(m.phase) || counted.has(measurementId(check.name, m.n))) continue;
      metrics.analysisMeasurements.inc({ provider, phase: m.phase });
      if (m.finishedAt) {
        const seconds = (Date.parse(m.finishedAt) - Date.parse(m.startedAt)) / 1000;
        if (Number.isFinite(seconds)) metrics.analysisMeasurementDuration.observe({ provider }, Math.max(0, seconds));
      }
    }
  }
}

const measurementId = (check: string, n: number): string => `${check}\u0000${n}`;

function finishedMeasurements(run: AppAnalysisRun): string[] {
  return run.checks.flatMap((c) => c.measurements.filter((m) => ended(m.phase)).map((m) => measurementId(c.name, m.n)));
}
