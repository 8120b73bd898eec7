// Promotions and finished builds, counted from the status a reconcile wrote:
// counted once, because only a status that landed is counted.
import type { AppStatus } from '../app/schema.ts';
import type { Metrics } from './metrics.ts';

export function countTransitions(metrics: Metrics, before: AppStatus | undefined, after: AppStatus): void {
  countPromotions(metrics, before, after);
  countBuild(metrics, before, after);
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
