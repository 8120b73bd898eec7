// The replica counts of an App's status, and the selector of its scale
// subresource, counted as Argo Rollouts counts a blue/green Rollout
// (calculateBaseStatus and syncRolloutStatusBlueGreen in rollout/):
//   replicas         pods of every revision (ReplicaSet status.replicas, summed)
//   updatedReplicas  pods of the desired revision, the one the spec (or an undo) asks for
//   readyReplicas,
//   availableReplicas  pods of the active revision, the one users reach
//   HPAReplicas, selector  the active revision's pods and their label selector
//
// The scale subresource shows HPAReplicas and selector, not replicas: an HPA
// averages a metric over the pods the selector matches and takes the Scale's
// status.replicas as their number. Counting a preview there would make an HPA
// see more pods than it measures (6 while it averages over 3), and act on
// that: with maxReplicas 5 it would scale the App "down" to 5, up from 3.
// Only the active pods take user traffic, so they are what it should average.
import { LABEL_APP, LABEL_HASH } from '../app/labels.ts';
import type { ObservedReplicaSet } from './observed.ts';

export interface ReplicaCounts {
  replicas: number;
  updatedReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
  HPAReplicas: number;
  selector: string;
}

type Counted = Pick<ObservedReplicaSet, 'app' | 'hash' | 'replicas' | 'readyReplicas' | 'availableReplicas'>;

const sum = (sets: readonly Counted[], count: (rs: Counted) => number): number =>
  sets.reduce((n, rs) => n + count(rs), 0);

/**
 * The counts from the App's ReplicaSets as last observed. Without an active
 * ReplicaSet (before the first release, or when it was deleted) the active
 * counts are those of every revision, as Argo falls back to the Rollout's
 * selector; Teal's selector then matches the pods of any revision, and no build pod.
 */
export function replicaCounts(
  replicaSets: readonly Counted[],
  activeHash: string | undefined,
  desiredHash: string | undefined,
  appName: string,
): ReplicaCounts {
  const own = replicaSets.filter((rs) => rs.app === appName);
  const active = activeHash === undefined ? [] : own.filter((rs) => rs.hash === activeHash);
  const desired = desiredHash === undefined ? [] : own.filter((rs) => rs.hash === desiredHash);
  const served = active.length > 0 ? active : own;
  return {
    replicas: sum(own, (rs) => rs.replicas),
    updatedReplicas: sum(desired, (rs) => rs.replicas),
    readyReplicas: sum(served, (rs) => rs.readyReplicas),
    availableReplicas: sum(served, (rs) => rs.availableReplicas),
    HPAReplicas: sum(served, (rs) => rs.replicas),
    // The form of metav1.FormatLabelSelector: requirements sorted by key; a bare key means "exists".
    selector:
      active.length > 0
        ? `${LABEL_APP}=${appName},${LABEL_HASH}=${activeHash}`
        : `${LABEL_APP}=${appName},${LABEL_HASH}`,
  };
}
