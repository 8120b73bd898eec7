// What the dashboard's App page shows beside the App's own view (issue #25
// item 5), from caches the operator already holds: each revision's pods and
// scale-down deadline from the ReplicaSet cache, and the App's Events from the
// operator-wide cache of Events about Apps, and a parent App's previews joined
// with its child Apps from the App cache. Pure: the handler hands in what the
// caches hold.
import type { CachedApp, CachedAppEvent } from '../app/cached.ts';
import {
  isPreviewChild,
  type PreviewAppLike,
  type PreviewsView,
  previewOf,
  previewsView,
} from '../app/previews-view.ts';
import type { AppStatus } from '../app/schema.ts';
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

// ---- previews (issue #28 item 10) ----

/** A parent App's previews, or the parent a child App previews: what the App page shows of either. */
export interface AppPreviewsView {
  /** With spec.previews: its pull requests' previews joined with its child Apps (app/previews-view.ts). */
  previews?: PreviewsView;
  /** A preview's child App: the App and pull request it previews, as its labels say. */
  previewOf?: { app: string; number: number };
}

/** What the view reads of a cached App: its name, preview labels and age, and its phase only (a child's status is not parsed). */
function previewApp(app: CachedApp, status?: AppStatus): PreviewAppLike {
  const { name, namespace, labels, annotations, creationTimestamp } = app.metadata;
  const phase = (app.status as { phase?: unknown } | undefined)?.phase;
  return {
    metadata: {
      name,
      namespace,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
      ...(creationTimestamp ? { creationTimestamp } : {}),
    },
    status: status ?? (typeof phase === 'string' ? { phase } : {}),
  };
}

/**
 * The previews part of an App's page: a parent's (spec.previews set) joined with the Apps of its
 * namespace labelled as its children and owned by it (isPreviewChild, as kubectl teal previews
 * finds them), a child's parent; neither for any other App.
 */
export function appPreviews(
  app: CachedApp,
  status: () => AppStatus,
  namespaceApps: () => readonly CachedApp[],
): AppPreviewsView {
  const previewsSpec = (app.spec as { previews?: unknown } | undefined)?.previews;
  const of = previewOf(app.metadata.labels);
  const children =
    typeof previewsSpec === 'object' && previewsSpec !== null
      ? namespaceApps().filter((a) => isPreviewChild(a, app))
      : undefined;
  return {
    ...(children
      ? {
          previews: previewsView(
            previewApp(app, status()),
            children.map((c) => previewApp(c)),
          ),
        }
      : {}),
    ...(of ? { previewOf: of } : {}),
  };
}
