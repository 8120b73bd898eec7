// Revision numbers, the release history, and which old ReplicaSets to keep.
import type { App, HistoryEntry } from '../app/schema.ts';
import type { ObservedReplicaSet } from './observed.ts';

/** History kept in status; enough for undo and audit, small enough for 10k Apps. */
export const HISTORY_LIMIT = 20;

export function nextRevisionNumber(replicaSets: readonly ObservedReplicaSet[], status: App['status']): number {
  const seen = [
    ...replicaSets.map((rs) => rs.revision),
    ...(status?.history ?? []).map((h) => h.revision),
    status?.active?.revision ?? 0,
    status?.preview?.revision ?? 0,
  ];
  return Math.max(0, ...seen) + 1;
}

/**
 * A revision's number belongs to its content: a ReplicaSet recreated for a
 * hash Teal has seen (deleted by hand, or by revisionHistoryLimit) gets its
 * number back, so `promote --revision N` and undo keep meaning the same thing.
 */
export function revisionNumberFor(
  hash: string,
  replicaSets: readonly ObservedReplicaSet[],
  status: App['status'],
): number {
  const fromReplicaSet = replicaSets.find((rs) => rs.hash === hash && rs.revision > 0)?.revision;
  if (fromReplicaSet !== undefined) return fromReplicaSet;
  const recorded = [status?.preview, status?.active, status?.stable, status?.promotion, status?.abort, status?.pin];
  const fromStatus = recorded.find((r) => r?.podTemplateHash === hash)?.revision;
  if (fromStatus !== undefined) return fromStatus;
  const fromHistory = [...(status?.history ?? [])].reverse().find((h) => h.podTemplateHash === hash)?.revision;
  return fromHistory ?? nextRevisionNumber(replicaSets, status);
}

/** The history entry of a revision that became, or stayed, active at `now`. */
export function historyEntry(rs: ObservedReplicaSet, now: string, by: string, via: string): HistoryEntry {
  return {
    revision: rs.revision,
    podTemplateHash: rs.hash,
    ...(rs.commit ? { commit: rs.commit } : {}),
    image: rs.image,
    createdAt: rs.createdAt || now,
    promotedAt: now,
    promotedBy: by,
    promotedVia: via,
  };
}

export function appendHistory(history: readonly HistoryEntry[] | undefined, entry: HistoryEntry): HistoryEntry[] {
  return [...(history ?? []), entry].slice(-HISTORY_LIMIT);
}

/**
 * Scaled-down ReplicaSets beyond revisionHistoryLimit, oldest first. Those
 * in use (active, desired, stable) are never candidates.
 */
export function replicaSetsToDelete(
  replicaSets: readonly ObservedReplicaSet[],
  keep: ReadonlySet<string>,
  limit: number,
): ObservedReplicaSet[] {
  const idle = replicaSets
    .filter((rs) => !keep.has(rs.hash) && !rs.deleting && rs.specReplicas === 0 && rs.replicas === 0)
    .sort((a, b) => b.revision - a.revision);
  return idle.slice(limit).reverse();
}
