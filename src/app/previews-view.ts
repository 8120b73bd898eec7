// The previews of a parent App as people see them (issue #28 item 10): its
// record of its pull requests (status.previews) joined with the child Apps
// found by label, each row's state and how it reads, and which of the
// provider's texts may become a link. One rule for `kubectl teal previews`
// (src/cli/previews.ts), the API's App view (src/api/actions.ts) and the
// dashboard's Previews tab (src/ui/previews-tab.tsx). Pure, and type imports
// only besides the label names: the dashboard bundles this file without zod.
// The two sources can disagree (the operator has not yet written status after
// making or deleting a child, or someone deleted a child by hand): each side
// is shown as it is, and the disagreement said, rather than either one hidden.
import { ANN_PR_HEAD, LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from './preview-labels.ts';
import type { PreviewState, PreviewsStatus } from './previews-status-schema.ts';

/** What the view reads of an App, parent or child: the CLI's AppObject and the API's cached App both are one. */
export interface PreviewAppLike {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
  };
  status?: {
    phase?: string;
    previews?: PreviewsStatus;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/**
 * The child App of a preview, as far as both sides say:
 * found: recorded in status.previews and found by label;
 * missing: recorded, but no child App of that name is found (deleted, or not made yet);
 * none: the record names no child (AwaitingApproval, Expired);
 * unrecorded: a child App found by label that status.previews does not record;
 * unread: recorded, but the child Apps could not be listed (RBAC).
 */
export type ChildState = 'found' | 'missing' | 'none' | 'unrecorded' | 'unread';

export interface PreviewRow {
  /** The pull request; undefined for a child whose label is not a number. */
  number: number | undefined;
  /** The pull request's title, as recorded: text, never markup. */
  title?: string | undefined;
  /** The pull request's page, as recorded: a link only through safeWebUrl. */
  webUrl?: string | undefined;
  /** The state recorded in status.previews; undefined when there is no record. */
  state: PreviewState | undefined;
  child: ChildState;
  /** The child App's name, recorded or found. */
  app: string | undefined;
  /** The child App's phase, when found and it has one. */
  phase: string | undefined;
  /** The head commit: the record's, else the child's annotation. */
  head: string | undefined;
  /** The preview's URL, as recorded: a link only through safeWebUrl. */
  url: string | undefined;
  message: string | undefined;
  /** When the child App was made, when found and known. */
  createdAt: string | undefined;
}

export interface PreviewsView {
  app: string;
  namespace: string;
  /** When the pull requests were last listed (status.previews.listedAt). */
  listedAt: string | undefined;
  /** The PreviewsListed condition when it is not True: why the list may be stale. */
  notListed: { status: string; reason: string | undefined; message: string | undefined } | undefined;
  /** Why the child Apps could not be listed, when they could not (the rows then come from status alone). */
  childrenRefused: string | undefined;
  previews: PreviewRow[];
}

/** A number as a label carries it: 1 to 10 digits, no sign, no leading zero. */
const labelNumber = (text: string | undefined): number | undefined =>
  text !== undefined && /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : undefined;

/** The rows: one per record of status.previews, then one per child App no record names; by number. */
export function previewsView(
  parent: PreviewAppLike,
  children: readonly PreviewAppLike[] | { refused: string },
): PreviewsView {
  const listedChildren = Array.isArray(children);
  const found: readonly PreviewAppLike[] = listedChildren ? children : [];
  const byName = new Map(found.map((child) => [child.metadata.name, child]));
  const records = parent.status?.previews?.pullRequests ?? [];
  const recorded = new Set<string>();
  const rows: PreviewRow[] = records.map((record) => {
    const child = record.name === undefined ? undefined : byName.get(record.name);
    if (record.name !== undefined) recorded.add(record.name);
    const childState: ChildState =
      record.name === undefined ? 'none' : child ? 'found' : listedChildren ? 'missing' : 'unread';
    return {
      number: record.number,
      ...(record.title !== undefined ? { title: record.title } : {}),
      ...(record.webUrl !== undefined ? { webUrl: record.webUrl } : {}),
      state: record.state,
      child: childState,
      app: record.name,
      phase: child?.status?.phase,
      head: record.head,
      url: record.url,
      message: record.message,
      createdAt: child?.metadata.creationTimestamp,
    };
  });
  for (const child of found) {
    if (recorded.has(child.metadata.name)) continue;
    rows.push({
      number: labelNumber(child.metadata.labels?.[LABEL_PULL_REQUEST]),
      state: undefined,
      child: 'unrecorded',
      app: child.metadata.name,
      phase: child.status?.phase,
      head: child.metadata.annotations?.[ANN_PR_HEAD],
      url: undefined,
      message: undefined,
      createdAt: child.metadata.creationTimestamp,
    });
  }
  rows.sort((a, b) => (a.number ?? Number.MAX_SAFE_INTEGER) - (b.number ?? Number.MAX_SAFE_INTEGER));
  const listed = parent.status?.conditions?.find((c) => c.type === 'PreviewsListed');
  return {
    app: parent.metadata.name,
    namespace: parent.metadata.namespace,
    listedAt: parent.status?.previews?.listedAt,
    notListed:
      listed && listed.status !== 'True'
        ? { status: listed.status, reason: listed.reason, message: listed.message }
        : undefined,
    childrenRefused: listedChildren ? undefined : (children as { refused: string }).refused,
    previews: rows,
  };
}

// ---- how a row reads ----

/** A row's state as words: the recorded state's name, or that there is no record. */
export const stateText = (state: PreviewState | undefined): string => state ?? 'not recorded';

/**
 * The App phase whose look a state borrows (the CLI's colour, the dashboard's badge): Ready as
 * Healthy, Failed as Degraded, Asleep and Expired as ScaledDown, the rest (a build, a release,
 * a wait for approval, no record) as Progressing.
 */
export function stateTone(state: PreviewState | undefined): 'Healthy' | 'Degraded' | 'ScaledDown' | 'Progressing' {
  if (state === 'Ready') return 'Healthy';
  if (state === 'Failed') return 'Degraded';
  if (state === 'Asleep' || state === 'Expired') return 'ScaledDown';
  return 'Progressing';
}

/** What the phase column says of a child that shows none: why there is none to show. */
export const CHILD_WORDS: Readonly<Record<Exclude<ChildState, 'found' | 'unrecorded'>, string>> = {
  missing: 'not found',
  none: '-',
  unread: 'unknown',
};

/** A row's note: the record's message, else what the disagreement between the two sides means. */
export function previewNote(row: PreviewRow): string {
  if (row.child === 'missing') return `child App ${row.app} not found${row.message ? `; ${row.message}` : ''}`;
  if (row.child === 'unrecorded') return 'a child App that status.previews does not record';
  return row.message ?? '';
}

// ---- links ----

const WEB_URL = /^https?:\/\/[^\s/@]+(\/[^\s]*)?$/;

/**
 * A provider's URL (a pull request's page) or a recorded one (a preview's), when it is a
 * plain http(s) URL without credentials, at most 2048 characters: the planner records only
 * such a page, and the dashboard links only such a URL (no javascript:, no userinfo).
 */
export const safeWebUrl = (url: unknown): string | undefined =>
  typeof url === 'string' && url.length <= 2048 && WEB_URL.test(url) ? url : undefined;

// ---- a child App ----

/**
 * Whether an App is one of the parent's previews: labelled with the parent's name, and owned by
 * it, or unowned, or the parent's uid unknown (the planner owns each child it makes; an App
 * that someone else owns is not the parent's).
 */
export function isPreviewChild(
  app: { metadata: { labels?: Record<string, string>; ownerReferences?: readonly { uid: string }[] } },
  parent: { metadata: { name: string; uid?: string | undefined } },
): boolean {
  if (app.metadata.labels?.[LABEL_PREVIEW_OF] !== parent.metadata.name) return false;
  const owners = app.metadata.ownerReferences ?? [];
  return !parent.metadata.uid || owners.length === 0 || owners.some((o) => o.uid === parent.metadata.uid);
}

/** The App and pull request a child App previews, as its labels say; undefined for any other App. */
export function previewOf(
  labels: Readonly<Record<string, string>> | undefined,
): { app: string; number: number } | undefined {
  const app = labels?.[LABEL_PREVIEW_OF];
  const number = labelNumber(labels?.[LABEL_PULL_REQUEST]);
  return app && number !== undefined ? { app, number } : undefined;
}
