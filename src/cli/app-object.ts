// What the plugin's commands read from the API server, without client-node:
// an App as the API server sent it, the reads `get` makes (AppReader: the
// client-node Session of kube.ts, or the plain HTTPS reader of rest.ts), and
// the small rules both keep. A command that only reads loads this, not kube.ts.
import type { V1Job, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { LABEL_APP, LABEL_APP_NAMESPACE, LABEL_APP_UID } from '../app/labels.ts';
import { LABEL_PREVIEW_OF } from '../app/preview-labels.ts';
import type { AppStatus } from '../app/schema.ts';
import { readAppStatus } from '../app/status-reader.ts';

/** An App as read from the API server: JSON, not parsed by the schema (no defaults added). */
export interface AppObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    ownerReferences?: { uid: string }[];
  };
  spec: {
    image?: string;
    source?: { git?: { url?: string; ref?: string } };
    build?: { image?: string };
    replicas?: number;
    paused?: boolean;
    /** Only whether it is set is read (`previews`): the operator validates it. */
    previews?: unknown;
  };
  /** Read leniently (readApp): what could not be read is absent. */
  status?: AppStatus;
}

/**
 * An App as the API server sent it, its status read as the API and the action
 * rules read it (app/status-reader.ts): a status field that cannot be read is
 * left out, so no command fails or shows garbage over it.
 */
export function readApp(raw: unknown): AppObject {
  const { status, ...app } = raw as Omit<AppObject, 'status'> & { status?: unknown };
  return status === undefined ? app : { ...app, status: readAppStatus(status) };
}

export interface ConnectOptions {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

/** The reads of `kubectl teal get`: kube.ts's Session makes them with client-node, rest.ts's reader over HTTPS. */
export interface AppReader {
  /** The namespace of -n, else the context's, else "default". */
  readonly namespace: string;
  getApp(name: string): Promise<AppObject>;
  /** The App's ReplicaSets, by label, keeping only those it owns when the uid is known. */
  replicaSets(app: AppObject): Promise<V1ReplicaSet[]>;
  /** Pods of the App in its namespace: its revisions' and its builds' (both carry the app label). */
  pods(app: AppObject): Promise<V1Pod[]>;
  /** Pods of the App's builds in the build namespace (awayBuildQuery); none when it builds in its own. */
  buildPods(app: AppObject): Promise<V1Pod[]>;
  /** Build Jobs of the App that it owns. */
  jobs(app: AppObject): Promise<V1Job[]>;
}

/** The reads of `kubectl teal previews`: the parent App, and the child Apps its previews made. */
export interface PreviewsReader {
  readonly namespace: string;
  getApp(name: string): Promise<AppObject>;
  /** The Apps labelled as previews of the parent (previewSelector), keeping those it owns. */
  previewApps(parent: AppObject): Promise<AppObject[]>;
}

/** The label selector of a parent App's preview children (the planner labels them so). */
export const previewSelector = (parent: string): string => `${LABEL_PREVIEW_OF}=${parent}`;

/** Where the App's build Jobs are, and which of those listed are its own. */
export interface BuildJobsQuery {
  namespace: string;
  labelSelector: string;
  isOwn: (job: { metadata?: { labels?: Record<string, string>; ownerReferences?: { uid: string }[] } }) => boolean;
}

/**
 * The App's build Jobs: in its namespace, owned by it; or in the operator's build namespace
 * (status.build.namespace), where no ownerReference can cross namespaces and labels name the
 * App's namespace and uid instead.
 */
export function buildJobsQuery(app: AppObject, appNamespace: string): BuildJobsQuery {
  const away = app.status?.build?.namespace;
  if (away === undefined) {
    return {
      namespace: appNamespace,
      labelSelector: `${LABEL_APP}=${app.metadata.name}`,
      isOwn: (job) => ownedBy(job, app),
    };
  }
  return {
    namespace: away,
    labelSelector: `${LABEL_APP}=${app.metadata.name},${LABEL_APP_NAMESPACE}=${appNamespace}`,
    isOwn: (job) => job.metadata?.labels?.[LABEL_APP_UID] === app.metadata.uid,
  };
}

/** Where the App's builds run when that is not its own namespace (--build-namespace), else undefined. */
export function awayBuildQuery(app: AppObject, appNamespace: string): BuildJobsQuery | undefined {
  const query = buildJobsQuery(app, appNamespace);
  return query.namespace === appNamespace ? undefined : query;
}

/** Whether obj belongs to the App: owned by its uid, or unowned, or the uid is unknown. */
export function ownedBy(obj: { metadata?: { ownerReferences?: { uid: string }[] } }, app: AppObject): boolean {
  const owners = obj.metadata?.ownerReferences ?? [];
  return !app.metadata.uid || owners.length === 0 || owners.some((o) => o.uid === app.metadata.uid);
}

/** Seconds since an API timestamp, as typed clients return Date and raw JSON a string. */
export function since(t: string | Date | undefined, now = Date.now()): number | undefined {
  if (t === undefined) return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? undefined : Math.max(0, Math.floor((now - ms) / 1000));
}
