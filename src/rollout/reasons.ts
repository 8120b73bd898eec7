// The reasons Teal's blue/green planner writes on conditions and Events, in
// one place, so `kubectl wait`, alerts and docs can rely on a fixed list.

/** Reasons on the App's conditions. */
export const ConditionReason = {
  Valid: 'Valid',
  InvalidSpec: 'InvalidSpec',
  Aborted: 'Aborted',
  NotAborted: 'NotAborted',
  Promoted: 'Promoted',
  WaitingForPromotion: 'WaitingForPromotion',
  Paused: 'Paused',
  Degraded: 'Degraded',
  Progressing: 'Progressing',
  NoPreview: 'NoPreview',
  PreviewAvailable: 'Available',
  PreviewProgressing: 'Progressing',
  NotWaiting: 'NotWaiting',
  Waiting: 'Waiting',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  /** A reconcile failed (a write refused, a read that did not answer): Ready=False until one succeeds. */
  ReconcileError: 'ReconcileError',
  // AnalysisPassed, and Promoted while the checks hold a promotion.
  /** No checks stand before the revision where the release stands. */
  NoAnalysis: 'NoAnalysis',
  AnalysisRunning: 'AnalysisRunning',
  AnalysisSuccessful: 'AnalysisSuccessful',
  /** Also on Aborted and Ready when a failed check aborted the release. */
  AnalysisFailed: 'AnalysisFailed',
  AnalysisError: 'AnalysisError',
  AnalysisInconclusive: 'AnalysisInconclusive',
  AnalysisCancelled: 'AnalysisCancelled',
  /** Promoted with --skip-checks (or --full). */
  AnalysisSkipped: 'AnalysisSkipped',
  WaitingForAnalysis: 'WaitingForAnalysis',
  // ConfigCopyMissing: set once a copy in use went missing (config-copies.ts), absent before.
  /** A copy in use is gone and its source no longer has its content: it cannot be made again. */
  ConfigCopyMissing: 'ConfigCopyMissing',
  /** Every copy in use exists (again). */
  ConfigCopiesPresent: 'ConfigCopiesPresent',
  // SwitchVerified (spec.strategy.blueGreen.switch, switch.ts): absent without it.
  /** The active Service's endpoints are all the active revision's, ready, serving and gated: the old may go. */
  SwitchVerified: 'SwitchVerified',
  /** Waiting for that, within timeoutSeconds. */
  SwitchVerifying: 'SwitchVerifying',
  /** Past timeoutSeconds and still not: the old revision stays up; the message says what is missing. */
  SwitchNotVerified: 'SwitchNotVerified',
  // TrafficChecked: set while a traffic check is configured (traffic-check.ts), absent before.
  TrafficCheckRunning: 'TrafficCheckRunning',
  TrafficCheckPassed: 'TrafficCheckPassed',
  /** Not seen the new revision enough times in a row within the bound: the old revision stays up. */
  TrafficCheckFailed: 'TrafficCheckFailed',
} as const;

/** Reasons on the Events the planner records on the App. */
export const EventReason = {
  InvalidSpec: 'InvalidSpec',
  PreviewAvailable: 'PreviewAvailable',
  AutoPromotion: 'AutoPromotion',
  SwitchedActive: 'SwitchedActive',
  /** Teal's own switch whose status write was lost (a conflict, or a kill between the two), now recorded. */
  SwitchRecorded: 'SwitchRecorded',
  /** Someone else changed the active Service's selector: Teal puts it back. */
  ActiveServiceEdited: 'ActiveServiceEdited',
  /** As the Deployment controller says it: a ReplicaSet's size changed, from and to, and why. */
  ScalingReplicaSet: 'ScalingReplicaSet',
  UndoEnded: 'UndoEnded',
  // Ping-pong slots (ping-pong.ts).
  /** The route's weights moved to a slot: a switch, or back to the serving slot. */
  RouteSwitched: 'RouteSwitched',
  /** Someone else changed the route's weights: Teal puts them back. */
  RouteEdited: 'RouteEdited',
  /** Someone else changed a slot Service: Teal puts it back. */
  SlotServiceEdited: 'SlotServiceEdited',
  /** Someone else changed the slot label of the active revision's pod template: Teal puts it back. */
  SlotLabelEdited: 'SlotLabelEdited',
  // A restart: asked for, then over (no pod older than it left, or the revision no longer active).
  RestartRequested: 'RestartRequested',
  Restarted: 'Restarted',
  /** An eviction was refused (a PodDisruptionBudget): retried later, told once per run of refusals. */
  RestartBlocked: 'RestartBlocked',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  // The actions, as carried out.
  PromotionRequested: 'PromotionRequested',
  Aborted: 'Aborted',
  Retried: 'Retried',
  Undo: 'Undo',
  UndoRejected: 'UndoRejected',
  Paused: 'Paused',
  Resumed: 'Resumed',
  /** A reconcile failed, with the object and the API server's answer; recorded once per distinct failure. */
  ReconcileError: 'ReconcileError',
  // Checks (analysis runs) and what they decide.
  AnalysisRunStarted: 'AnalysisRunStarted',
  AnalysisRunSuccessful: 'AnalysisRunSuccessful',
  AnalysisRunFailed: 'AnalysisRunFailed',
  AnalysisRunInconclusive: 'AnalysisRunInconclusive',
  AnalysisRunError: 'AnalysisRunError',
  AnalysisRunCancelled: 'AnalysisRunCancelled',
  /** A measurement ended Failed or Error. */
  MeasurementFailed: 'MeasurementFailed',
  /** The active revision passed its post-promotion checks and is now the one to return to. */
  Stable: 'Stable',
  /** The active Service went back to the stable revision: a post-promotion check failed, or an abort during them. */
  RolledBack: 'RolledBack',
  // Configuration copies deleted by hand (config-copies.ts).
  /** A copy in use was deleted; its source still had the content, so it was made again. */
  ConfigCopyRecreated: 'ConfigCopyRecreated',
  /** A copy in use was deleted and cannot be made again; told once per distinct set of lost copies. */
  ConfigCopyMissing: 'ConfigCopyMissing',
  // The drain-verified switch (switch.ts).
  /** The cluster sends traffic only to the active revision: the previous one's scaleDownDelaySeconds starts. */
  SwitchVerified: 'SwitchVerified',
  /** Not verified within timeoutSeconds: what is missing; the previous revision stays up. */
  SwitchNotVerified: 'SwitchNotVerified',
  // The switch's traffic check (traffic-check.ts).
  TrafficCheckStarted: 'TrafficCheckStarted',
  TrafficCheckPassed: 'TrafficCheckPassed',
  /** A Warning naming the URL's host and what it answered: the old revision stays up. */
  TrafficCheckFailed: 'TrafficCheckFailed',
} as const;

/**
 * An action the rules refused: `<Action>Rejected` (a Warning: it contradicts
 * the App) or `<Action>Ignored` (nothing to do), e.g. PromoteRejected, AbortIgnored.
 */
export function refusalReason(action: string, conflict: boolean): string {
  return `${action.charAt(0).toUpperCase()}${action.slice(1)}${conflict ? 'Rejected' : 'Ignored'}`;
}
