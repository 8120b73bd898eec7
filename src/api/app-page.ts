// What the dashboard's App page shows beside the App's own view (issue #25
// item 5), from caches the operator already holds: each revision's pods and
// scale-down deadline from the ReplicaSet cache, and the App's Events from the
// operator-wide cache of Events about Apps. Pure: the handler hands in what
// the caches hold.
import type { CachedAppEvent } from '../app/cached.ts';
import { copySource } from '../rollout/config-refs.ts';
import type { ObservedReplicaSet } from '../rollout/observed.ts';

/** A ConfigMap or Secret a revision's pods reference, by its content hash: never its data. */
export interface ConfigCopyView {
  kind: string;
  /** The object copied, as the pod template names it. */
  source: string;
  /** The copy's suffix: a hash of the App and the content, so a content change shows as a new hash. */
  hash: string;
}

/** A revision's ReplicaSet as the App page shows it. */
export interface RevisionPods {
  revision: number;
  podTemplateHash: string;
  image: string;
  commit?: string;
  desired: number;
  ready: number;
  available: number;
  /** When an old revision is to be scaled to 0 (scaleDownDelaySeconds after the switch). */
  scaleDownAt?: string;
  config: ConfigCopyView[];
}

/** An Event about the App, newest first in the page. */
export interface AppEventView {
  type: string;
  reason: string;
  message: string;
  count: number;
  at: string;
}

/** The most Events a page shows: the newest. */
export const MAX_PAGE_EVENTS = 50;

/** "configmap/flags-1a2b3c4d5e" → kind configmap, source flags, hash 1a2b3c4d5e; a name copySource cannot read keeps it whole. */
function configCopyOf(copy: string): ConfigCopyView {
  const [kind = '', name = ''] = copy.split('/', 2);
  const source = copySource(name);
  return source === undefined
    ? { kind, source: name, hash: '' }
    : { kind, source, hash: name.slice(source.length + 1) };
}

/** The App's ReplicaSets not being deleted, newest revision first. */
export function revisionPods(replicaSets: readonly ObservedReplicaSet[]): RevisionPods[] {
  return replicaSets
    .filter((rs) => !rs.deleting)
    .sort((a, b) => b.revision - a.revision)
    .map((rs) => ({
      revision: rs.revision,
      podTemplateHash: rs.hash,
      image: rs.image,
      ...(rs.commit !== undefined ? { commit: rs.commit } : {}),
      desired: rs.specReplicas,
      ready: rs.readyReplicas,
      available: rs.availableReplicas,
      ...(rs.scaleDownAt !== undefined ? { scaleDownAt: rs.scaleDownAt } : {}),
      config: (rs.copies ?? []).map(configCopyOf),
    }));
}

/**
 * The App's Events, newest first, at most MAX_PAGE_EVENTS: those of this App, not of an
 * App of the same name deleted before it (another uid).
 */
export function appEvents(events: readonly CachedAppEvent[], appUid: string | undefined): AppEventView[] {
  return events
    .filter((e) => appUid === undefined || e.appUid === undefined || e.appUid === appUid)
    .toSorted((a, b) => b.at.localeCompare(a.at))
    .slice(0, MAX_PAGE_EVENTS)
    .map(({ type, reason, message, count, at }) => ({ type, reason, message, count, at }));
}
