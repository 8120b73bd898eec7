// The App's status, teal.dev/v1alpha1: part of the App schema (schema.ts, which
// re-exports all of it), in a module of its own so that a reader of status (the
// CLI's `get`, src/app/status-reader.ts) builds the status schemas without the spec's.
import { z } from 'zod';
import { ACTIONS, type Action } from './action-args.ts';
import { AnalysisRunStatusSchema } from './analysis-status-schema.ts';
import { COMMIT_SHA } from './patterns.ts';
import { PreviewsStatusSchema } from './previews-status-schema.ts';
import { TrafficCheckStatusSchema } from './traffic-status-schema.ts';

/** What Teal tells destinations about, by stable id: a destination's triggers name them. */
export const NOTIFICATION_TRIGGERS = [
  'build-failed',
  'preview-ready',
  'promoted',
  'aborted',
  'degraded',
  'healthy',
  'undo',
] as const;

// ---- status ----

export const PHASES = ['Building', 'Progressing', 'Paused', 'Healthy', 'Degraded'] as const;
export const CONDITION_TYPES = [
  'SourceResolved',
  'BuildSucceeded',
  'PreviewAvailable',
  'Promoted',
  'Aborted',
  'InvalidSpec',
  'ProgressDeadlineExceeded',
  'AnalysisPassed',
  'NotificationsDelivered',
  'ConfigCopyMissing',
  'SwitchVerified',
  'TrafficChecked',
  'PreviewsListed',
  'Ready',
] as const;

const time = z.string().describe('RFC 3339 time.');

export const ConditionSchema = z.strictObject({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: time,
  reason: z.string(),
  message: z.string().optional(),
});

export const RevisionStatusSchema = z.strictObject({
  revision: z.int().min(1),
  image: z.string(),
  podTemplateHash: z.string(),
  replicaSet: z.string(),
  commit: z.string().optional(),
  /** preview: when it first became available, the clock of autoPromotionSeconds. */
  availableAt: time.optional(),
});

/**
 * The drain-verified switch of the active revision (spec.strategy.blueGreen.switch):
 * since when it waits, and when the cluster was seen to send traffic only to it.
 */
export const SwitchStatusSchema = z.strictObject({
  podTemplateHash: z.string(),
  revision: z.int().min(1),
  /** When the active Service was switched to it (seen): the clock of timeoutSeconds. */
  since: time,
  /** When verified: the old revision's scaleDownDelaySeconds counts from then. */
  verifiedAt: time.optional(),
});

const actor = {
  by: z.string(),
  via: z.string(),
  at: time,
};

export const PromotionStatusSchema = z
  .strictObject({
    podTemplateHash: z.string(),
    revision: z.int().min(1),
    full: z.boolean().optional(),
    skipChecks: z.boolean().optional().describe('Promoted without waiting for prePromotionAnalysis to pass.'),
    ...actor,
  })
  .describe('A promotion under way: written before the switch, so a restart finishes it exactly once.');

export const AbortStatusSchema = z
  .strictObject({ podTemplateHash: z.string(), revision: z.int().min(1), ...actor })
  .describe('The aborted revision: not tried again until retry, a new commit or a spec change.');

export const PinStatusSchema = z
  .strictObject({
    podTemplateHash: z.string(),
    revision: z.int().min(1),
    /** The revision the spec asked for when the pin was set; a change of it ends the pin. */
    over: z.string(),
    preview: z.boolean().optional(),
    ...actor,
  })
  .describe('A revision chosen by undo, desired instead of the spec one until the spec or source changes.');

export const ProgressStatusSchema = z
  .strictObject({ podTemplateHash: z.string(), since: time })
  .describe('The clock of progressDeadlineSeconds: runs only while waiting for pods to become available.');

export const RestartStatusSchema = z
  .strictObject({
    ...actor,
    revision: z.int().min(1),
    podTemplateHash: z.string(),
    startedAt: time.describe('Pods of the revision created before this second are replaced.'),
    evicting: z
      .array(z.string())
      .optional()
      .describe('Pods whose eviction was asked for and not yet seen: counted as unavailable until they go.'),
    evictedAt: time.optional().describe('When those evictions were asked for.'),
    refusals: z
      .int()
      .min(0)
      .optional()
      .describe('Evictions refused in a row (a PodDisruptionBudget): the retry waits longer each time.'),
    podsReplaced: z.int().min(0).optional().describe('Once finished: the pods of the revision, all new.'),
    finishedAt: time.optional().describe('When no pod older than startedAt remained (Argo Rollouts: restartedAt).'),
    message: z.string().optional().describe('How it ended, when it ended early.'),
  })
  .describe('The latest restart: the pods of the active revision replaced, without a new revision.');

/** A notification written with the transition it tells of, until it is delivered or fails for good. */
export const PendingNotificationSchema = z.strictObject({
  id: z.string().max(64).describe('The delivery id: the same on every attempt, restart and handover.'),
  trigger: z.enum(NOTIFICATION_TRIGGERS),
  destination: z.string().max(63),
  at: time.describe('When the transition was written.'),
  revision: z.int().min(1).optional(),
  image: z.string().optional(),
  phase: z.string().optional(),
  message: z.string().max(512).optional(),
  by: z.string().optional(),
  via: z.string().optional(),
});

const notificationOutcome = z.strictObject({
  id: z.string().max(64),
  trigger: z.enum(NOTIFICATION_TRIGGERS),
  destination: z.string().max(63),
  at: time,
  message: z.string().max(512).optional(),
});

export const NotificationsStatusSchema = z
  .strictObject({
    pending: z
      .array(PendingNotificationSchema)
      .max(20)
      .optional()
      .describe('The outbox: written with the transition, removed once delivered; the oldest go past 20.'),
    dropped: z.int().min(0).optional().describe('Pending notifications dropped, oldest first, past the limit.'),
    lastDelivered: notificationOutcome.optional(),
    lastFailure: notificationOutcome.optional().describe('The latest notification that failed for good.'),
    awaitingHealthy: z
      .strictObject({ trigger: z.enum(NOTIFICATION_TRIGGERS), revision: z.int().min(1).optional() })
      .optional()
      .describe('The degraded, promoted or undo that a later Healthy answers with the healthy trigger.'),
  })
  .describe('Notifications to send, and how the last ones went (docs/notifications.md).');

export const HandledIntentsSchema = z.strictObject(
  Object.fromEntries(ACTIONS.map((a) => [a, z.string().optional()])) as Record<Action, z.ZodOptional<z.ZodString>>,
);

export const SourceStatusSchema = z.strictObject({
  ref: z.string(),
  commit: z.string().regex(COMMIT_SHA),
  shortCommit: z.string(),
  revision: z.string().describe('<ref>@sha1:<commit>, as Flux writes it.'),
  author: z.string().optional(),
  subject: z.string().optional(),
  resolvedAt: time,
});

export const BuildStatusSchema = z.strictObject({
  commit: z.string(),
  job: z.string(),
  namespace: z
    .string()
    .optional()
    .describe("The build Job's namespace when it is not the App's: the operator's --build-namespace."),
  phase: z.enum(['Pending', 'Running', 'Succeeded', 'Failed']),
  startedAt: time.optional(),
  finishedAt: time.optional(),
  image: z.string().optional().describe('repository@sha256:digest once built.'),
  message: z.string().optional(),
});

export const HistoryEntrySchema = z.strictObject({
  revision: z.int().min(1),
  // A revision's number belongs to its content: a ReplicaSet recreated for the same hash gets it back.
  podTemplateHash: z.string().max(63).optional(),
  commit: z.string().optional(),
  image: z.string(),
  createdAt: time,
  promotedAt: time.optional(),
  promotedBy: z.string().optional(),
  promotedVia: z.string().optional().describe('auto, api, dashboard, cli, kubectl, undo, abort or first-release.'),
  checksSkipped: z.boolean().optional().describe('Promoted with --skip-checks (or --full) before its checks passed.'),
});

export const ANALYSIS_KINDS = ['pre', 'post'] as const;

/** Each kind's field: in spec.strategy.blueGreen (its checks) and in status (its latest run). */
export const ANALYSIS_FIELD = {
  pre: 'prePromotionAnalysis',
  post: 'postPromotionAnalysis',
} as const satisfies Record<(typeof ANALYSIS_KINDS)[number], string>;

export const AppAnalysisRunSchema = AnalysisRunStatusSchema.extend({
  revision: z.int().min(1),
  podTemplateHash: z.string().max(63),
  specHash: z
    .string()
    .max(64)
    .optional()
    .describe('What the run measures: a change of the checks or their arguments starts a new run.'),
}).describe('The latest run of these checks, for the revision it names; every measurement is durable.');

export const AppStatusSchema = z.strictObject({
  phase: z.enum(PHASES).optional(),
  message: z.string().optional(),
  observedGeneration: z.int().min(0).optional(),
  conditions: z
    .array(ConditionSchema)
    .optional()
    .meta({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  source: SourceStatusSchema.optional(),
  build: BuildStatusSchema.optional(),
  active: RevisionStatusSchema.optional(),
  preview: RevisionStatusSchema.optional(),
  stable: RevisionStatusSchema.optional(),
  stablePingPong: z
    .enum(['ping', 'pong'])
    .optional()
    .describe(
      'Ping-pong slots: the slot the route sends all traffic to (Argo Rollouts: status.canary.stablePingPong).',
    ),
  history: z.array(HistoryEntrySchema).optional(),
  promotion: PromotionStatusSchema.optional(),
  abort: AbortStatusSchema.optional(),
  pin: PinStatusSchema.optional(),
  pause: z.strictObject(actor).optional().describe('Paused by the pause action, until resume.'),
  progress: ProgressStatusSchema.optional(),
  switch: SwitchStatusSchema.optional(),
  restart: RestartStatusSchema.optional(),
  notifications: NotificationsStatusSchema.optional(),
  prePromotionAnalysis: AppAnalysisRunSchema.optional(),
  postPromotionAnalysis: AppAnalysisRunSchema.optional(),
  trafficCheck: TrafficCheckStatusSchema.optional(),
  previews: PreviewsStatusSchema.optional(),
  handledIntents: HandledIntentsSchema.optional(),
  // Counted as Argo Rollouts counts a blue/green Rollout (src/rollout/counts.ts).
  replicas: z.int().min(0).optional().describe('Pods of all revisions.'),
  updatedReplicas: z.int().min(0).optional().describe('Pods of the desired revision.'),
  readyReplicas: z.int().min(0).optional().describe('Ready pods of the active revision.'),
  availableReplicas: z.int().min(0).optional().describe('Available pods of the active revision.'),
  HPAReplicas: z
    .int()
    .min(0)
    .optional()
    .describe('Pods that selector matches: the status.replicas of the scale subresource, as Argo Rollouts has it.'),
  selector: z
    .string()
    .optional()
    .describe('Label selector of the active revision pods, for the scale subresource (an HPA averages over them).'),
});

export type AppStatus = z.output<typeof AppStatusSchema>;
export type Condition = z.output<typeof ConditionSchema>;
export type ConditionType = (typeof CONDITION_TYPES)[number];
export type Phase = (typeof PHASES)[number];
export type RevisionStatus = z.output<typeof RevisionStatusSchema>;
export type SwitchStatus = z.output<typeof SwitchStatusSchema>;
export type HistoryEntry = z.output<typeof HistoryEntrySchema>;
export type PromotionStatus = z.output<typeof PromotionStatusSchema>;
export type PinStatus = z.output<typeof PinStatusSchema>;
export type AppAnalysisRun = z.output<typeof AppAnalysisRunSchema>;
export type RestartStatus = z.output<typeof RestartStatusSchema>;
export type NotificationTrigger = (typeof NOTIFICATION_TRIGGERS)[number];
export type PendingNotification = z.output<typeof PendingNotificationSchema>;
export type NotificationsStatus = z.output<typeof NotificationsStatusSchema>;
export type AnalysisKind = (typeof ANALYSIS_KINDS)[number];
