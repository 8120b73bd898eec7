// Labels and annotations Teal puts on what it owns: part of the App's contract
// (users and kubectl teal select by them), read by build, analysis, rollout and cli.
export const LABEL_APP = 'teal.dev/app';
/**
 * On what Teal makes for an App outside the App's namespace (build Jobs under
 * --build-namespace), where no ownerReference can reach the App: its namespace
 * and uid, with LABEL_APP its name. An App of that name made again has another uid.
 */
export const LABEL_APP_NAMESPACE = 'teal.dev/app-namespace';
export const LABEL_APP_UID = 'teal.dev/app-uid';
export const LABEL_HASH = 'teal.dev/pod-template-hash';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'teal';

export const ANN_REVISION = 'teal.dev/revision';
export const ANN_IMAGE = 'teal.dev/image';
export const ANN_COMMIT = 'teal.dev/commit';
/** When a ReplicaSet no longer needed is scaled to zero (RFC 3339). */
export const ANN_SCALE_DOWN_AT = 'teal.dev/scale-down-at';
/** On a Service Teal adopted: its selector before, restored when the App goes. */
export const ANN_ORIGINAL_SELECTOR = 'teal.dev/original-selector';

/** A hash of what Teal last applied to a Service, to apply again only on change. */
export const ANN_APPLIED = 'teal.dev/applied';

/** Held while an adopted Service still needs its selector restored. */
export const FINALIZER = 'teal.dev/restore-services';

/** The selector value of a Service that must select no pod. */
export const NO_REVISION = 'none';

/**
 * Ping-pong slots (spec.strategy.blueGreen.pingPong): the slot a revision's pods
 * run in, on its pod template from creation. Not part of the pod-template hash,
 * so an undo to the same template finds its ReplicaSet in whichever slot.
 */
export const LABEL_SLOT = 'teal.dev/slot';
export const SLOTS = ['ping', 'pong'] as const;
export type Slot = (typeof SLOTS)[number];
