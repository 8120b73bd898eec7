// What one status write tells people about: a pure function of the status it
// replaces and the status it writes. The write is guarded by the
// resourceVersion of `before`, so each change of status is looked at by
// exactly one write that lands, and each transition is found once.
//
// The triggers, by id (docs/notifications.md):
// - build-failed: the build of a commit failed (once per build Job).
// - preview-ready: a revision became available in preview and waits for a
//   promotion (by a person, its checks, or autoPromotionSeconds).
// - promoted: a revision became active, with who and how (history's
//   promotedBy / promotedVia); a roll back under an abort and an undo have
//   their own triggers.
// - aborted: a release was aborted, by whom, and why (status.message).
// - degraded: the App became Degraded, and why; not said again when a build
//   failure or an abort of the same write already says it.
// - healthy: Healthy again after one of degraded, promoted or undo (kept in
//   status.notifications.awaitingHealthy until then): a restart's or a
//   build's passing Progressing is no news.
// - undo: an undo to a revision, by whom.
import type { AppStatus, HistoryEntry, NotificationsStatus, NotificationTrigger } from '../app/schema.ts';

export interface Transition {
  trigger: NotificationTrigger;
  /** What makes this transition distinct from an earlier one of the same trigger: part of its delivery id. */
  key: string;
  revision?: number;
  image?: string;
  phase?: string;
  message?: string;
  by?: string;
  via?: string;
}

/** A status message is bounded: a notification carries at most this much of it. */
export const MESSAGE_LIMIT = 512;

/** Everything one write tells, in the order it happened. */
export function transitionsOf(before: AppStatus | undefined, after: AppStatus): Transition[] {
  const was = before ?? {};
  const found = [
    ...buildFailed(was, after),
    ...undone(was, after),
    ...aborted(was, after),
    ...promoted(was, after),
    ...previewReady(was, after),
  ];
  const saidAlready = found.some((t) => t.trigger === 'build-failed' || t.trigger === 'aborted');
  if (!saidAlready) found.push(...degraded(was, after));
  found.push(...healthy(was, after, found));
  return found.map((t) => ({ ...t, ...(t.message ? { message: clip(t.message) } : {}) }));
}

/**
 * The marker a later Healthy answers: set by degraded, promoted and undo,
 * cleared by healthy. Kept in status so that it survives restarts and the
 * Progressing in between.
 */
export function awaitingHealthy(
  before: AppStatus | undefined,
  transitions: readonly Transition[],
): NotificationsStatus['awaitingHealthy'] {
  let marker = before?.notifications?.awaitingHealthy;
  for (const t of transitions) {
    if (t.trigger === 'healthy') marker = undefined;
    else if (t.trigger === 'degraded' || t.trigger === 'promoted' || t.trigger === 'undo') {
      marker = { trigger: t.trigger, ...(t.revision !== undefined ? { revision: t.revision } : {}) };
    }
  }
  return marker;
}

function buildFailed(before: AppStatus, after: AppStatus): Transition[] {
  const build = after.build;
  if (build?.phase !== 'Failed') return [];
  const was = before.build;
  if (was?.phase === 'Failed' && was.job === build.job) return [];
  return [
    {
      trigger: 'build-failed',
      key: build.job,
      phase: after.phase ?? 'Degraded',
      message: build.message ?? `build of commit ${build.commit.slice(0, 12)} failed`,
    },
  ];
}

function previewReady(before: AppStatus, after: AppStatus): Transition[] {
  const preview = after.preview;
  if (!preview?.availableAt) return [];
  const was = before.preview;
  if (was?.availableAt && was.podTemplateHash === preview.podTemplateHash) return [];
  // Promoted in the same write (autoPromotionSeconds 0): it waits for nothing.
  if (after.promotion?.podTemplateHash === preview.podTemplateHash) return [];
  return [
    {
      trigger: 'preview-ready',
      key: `${preview.podTemplateHash}@${preview.availableAt}`,
      revision: preview.revision,
      image: preview.image,
      ...phaseOf(after),
    },
  ];
}

/** Entries this write added to history: a promotion, an undo's or a roll back's switch. */
function newHistory(before: AppStatus, after: AppStatus): HistoryEntry[] {
  const seen = new Set((before.history ?? []).map(historyKey));
  return (after.history ?? []).filter((h) => !seen.has(historyKey(h)));
}

const historyKey = (h: HistoryEntry) => `${h.revision}@${h.promotedAt ?? h.createdAt}`;

function promoted(before: AppStatus, after: AppStatus): Transition[] {
  return newHistory(before, after)
    .filter((h) => h.promotedVia !== 'undo' && h.promotedVia !== 'abort')
    .map((h) => ({
      trigger: 'promoted' as const,
      key: historyKey(h),
      revision: h.revision,
      image: h.image,
      ...phaseOf(after),
      ...(h.promotedBy ? { by: h.promotedBy } : {}),
      ...(h.promotedVia ? { via: h.promotedVia } : {}),
    }));
}

function aborted(before: AppStatus, after: AppStatus): Transition[] {
  const abort = after.abort;
  if (!abort) return [];
  const was = before.abort;
  if (was && was.podTemplateHash === abort.podTemplateHash && was.at === abort.at) return [];
  return [
    {
      trigger: 'aborted',
      key: `${abort.podTemplateHash}@${abort.at}`,
      revision: abort.revision,
      ...phaseOf(after),
      by: abort.by,
      via: abort.via,
    },
  ];
}

/** A new pin is an undo: to an older revision, or back to the active one (dropping the one on its way). */
function undone(before: AppStatus, after: AppStatus): Transition[] {
  const pin = after.pin;
  if (!pin || (before.pin?.podTemplateHash === pin.podTemplateHash && before.pin.at === pin.at)) return [];
  return [
    {
      trigger: 'undo',
      key: `${pin.podTemplateHash}@${pin.at}`,
      revision: pin.revision,
      ...phaseOf(after),
      by: pin.by,
      via: pin.via,
    },
  ];
}

function degraded(before: AppStatus, after: AppStatus): Transition[] {
  if (after.phase !== 'Degraded' || before.phase === 'Degraded') return [];
  const active = after.active;
  return [
    {
      trigger: 'degraded',
      key: `${active?.revision ?? 0}@${conditionTime(after, 'Ready') ?? after.message ?? ''}`,
      ...(active ? { revision: active.revision, image: active.image } : {}),
      ...phaseOf(after),
    },
  ];
}

function healthy(before: AppStatus, after: AppStatus, found: readonly Transition[]): Transition[] {
  if (after.phase !== 'Healthy') return [];
  const marker = awaitingHealthy(before, found);
  if (!marker) return [];
  // Healthy before this write, and nothing new to answer: already said.
  if (before.phase === 'Healthy' && marker === before.notifications?.awaitingHealthy) return [];
  const active = after.active;
  return [
    {
      trigger: 'healthy',
      key: `${active?.podTemplateHash ?? ''}@${marker.trigger}@${marker.revision ?? 0}@${conditionTime(after, 'Ready') ?? ''}`,
      ...(active ? { revision: active.revision, image: active.image } : {}),
      ...phaseOf(after),
    },
  ];
}

function phaseOf(status: AppStatus): { phase?: string; message?: string } {
  return {
    ...(status.phase ? { phase: status.phase } : {}),
    ...(status.message ? { message: status.message } : {}),
  };
}

function conditionTime(status: AppStatus, type: string): string | undefined {
  return status.conditions?.find((c) => c.type === type)?.lastTransitionTime;
}

function clip(message: string): string {
  return message.length > MESSAGE_LIMIT ? `${message.slice(0, MESSAGE_LIMIT - 1)}…` : message;
}
