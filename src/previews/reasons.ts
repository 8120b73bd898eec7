// The reasons the previews planner gives, in one place: on the parent App's
// PreviewsListed condition, and as the `why` of each action (the executor's
// Events and logs say them), so alerts and docs can rely on a fixed list.

/** Reasons on the parent App's PreviewsListed condition; a provider failure uses its ProviderErrorReason. */
export const ListedReason = {
  /** The pull requests were listed; every preview follows them. */
  Listed: 'Listed',
  /** spec.previews has a problem (the InvalidSpec condition names it): nothing is planned. */
  InvalidSpec: 'InvalidSpec',
  /** The first listing is under way (condition Unknown): nothing is planned before it. */
  Listing: 'Listing',
  /** A write of a child App or its Ingress/HTTPRoute failed: the message names it; planned again on the next try. */
  WriteFailed: 'PreviewWriteFailed',
  /** Listed, but some pull requests were skipped: their provider data is not usable (the message says which). */
  Skipped: 'PullRequestsSkipped',
  /** Another App previews the same repository (the oldest that names it, previews/repository-owner.ts): nothing is done. */
  PreviewedElsewhere: 'RepositoryPreviewedElsewhere',
} as const;

/** Why a child App is made, changed or deleted, or a label removed: the actions' `why`. */
export const PreviewReason = {
  Opened: 'PullRequestOpened',
  /** A fork's head commit approved: its preview is made. */
  Approved: 'Approved',
  NewCommit: 'NewCommit',
  /** The parent's spec (or spec.previews) changed what the child should be. */
  SpecChanged: 'SpecChanged',
  Closed: 'PullRequestClosed',
  /** Still open, but no longer matches spec.previews.filter (a label removed, a draft, another target branch). */
  Unmatched: 'NoLongerMatches',
  /** A fork under forks.policy ignore. */
  ForkIgnored: 'ForkIgnored',
  /** Idle past deleteAfter. */
  Expired: 'Expired',
  /** Idle past sleepAfter. */
  Idle: 'Idle',
  /** More awake previews than maxActive: the oldest idle ones sleep. */
  OverMaxActive: 'MaxActive',
  Woken: 'Woken',
  /** spec.previews was removed from the parent App. */
  PreviewsOff: 'PreviewsRemoved',
  /** The approval label is on a fork whose head commit it does not approve (a new commit, or no write access). */
  StaleApproval: 'StaleApproval',
  /** More previews than status.previews can always record (MAX_PREVIEW_CHILDREN): the newest get one. */
  TooMany: 'TooManyPreviews',
} as const;
export type PreviewReasonValue = (typeof PreviewReason)[keyof typeof PreviewReason];
