// `kubectl teal previews APP`: the parent App's record of its pull requests'
// previews (status.previews) joined with the child Apps found by label, as data
// (-o json|yaml) and as a table. Pure: the command reads, this builds and draws.
// The two sources can disagree (the operator has not yet written status after
// making or deleting a child, or someone deleted a child by hand): each side
// is shown as it is, and the disagreement said, rather than either one hidden.
import type { PreviewState } from '../app/previews-schema.ts';
import { ANN_PR_HEAD, LABEL_PULL_REQUEST } from '../previews/labels.ts';
import { type AppObject, since } from './app-object.ts';
import { CliError } from './errors.ts';
import { age, paint, statusIcon, table } from './output.ts';

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
  /** The state recorded in status.previews; undefined when there is no record. */
  state: PreviewState | undefined;
  child: ChildState;
  /** The child App's name, recorded or found. */
  app: string | undefined;
  /** The child App's phase, when found and it has one. */
  phase: string | undefined;
  /** The head commit: the record's, else the child's annotation. */
  head: string | undefined;
  url: string | undefined;
  message: string | undefined;
  /** When the child App was made, when found. */
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

/** Refuses an App without spec.previews: it has no previews to show, and never will as it is. */
export function requirePreviews(app: AppObject): void {
  if (app.spec?.previews === undefined || app.spec.previews === null) {
    throw new CliError(`App "${app.metadata.name}" has no spec.previews (docs/previews.md)`);
  }
}

/** The pull request number a child's label carries, if it is one. */
function labelNumber(child: AppObject): number | undefined {
  const text = child.metadata.labels?.[LABEL_PULL_REQUEST] ?? '';
  return /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : undefined;
}

/** The rows: one per record of status.previews, then one per child App no record names; by number. */
export function previewsView(parent: AppObject, children: readonly AppObject[] | { refused: string }): PreviewsView {
  const found = Array.isArray(children) ? children : [];
  const byName = new Map(found.map((child) => [child.metadata.name, child]));
  const records = parent.status?.previews?.pullRequests ?? [];
  const recorded = new Set<string>();
  const rows: PreviewRow[] = records.map((record) => {
    const child = record.name === undefined ? undefined : byName.get(record.name);
    if (record.name !== undefined) recorded.add(record.name);
    const childState: ChildState =
      record.name === undefined ? 'none' : child ? 'found' : Array.isArray(children) ? 'missing' : 'unread';
    return {
      number: record.number,
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
      number: labelNumber(child),
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
    childrenRefused: Array.isArray(children) ? undefined : (children as { refused: string }).refused,
    previews: rows,
  };
}

/** What the PHASE column says of the child: its phase, or why there is none to show. */
const CHILD_WORDS: Record<Exclude<ChildState, 'found' | 'unrecorded'>, string> = {
  missing: 'not found',
  none: '-',
  unread: 'unknown',
};

function phaseCell(row: PreviewRow, colour: boolean): string {
  if (row.child === 'found' || row.child === 'unrecorded') {
    return row.phase ? paint(row.phase, statusIcon(row.phase).colour, colour) : '-';
  }
  return CHILD_WORDS[row.child];
}

/** A state's colour: Ready as Healthy, Failed as Degraded, the rest as in progress or asleep. */
function stateCell(state: PreviewState | undefined, colour: boolean): string {
  if (state === undefined) return 'not recorded';
  const as = state === 'Ready' ? 'Healthy' : state === 'Asleep' || state === 'Expired' ? 'ScaledDown' : state;
  return paint(state, statusIcon(as).colour, colour);
}

/** The message column: the record's, else what the disagreement between the two sides means. */
function noteOf(row: PreviewRow): string {
  if (row.child === 'missing') return `child App ${row.app} not found${row.message ? `; ${row.message}` : ''}`;
  if (row.child === 'unrecorded') return 'a child App that status.previews does not record';
  return row.message ?? '';
}

/** The view as text: a line on the listing, the condition when it is not True, then the table. */
export function renderPreviews(view: PreviewsView, colour: boolean, now = Date.now()): string {
  const listed = view.listedAt ? `last listed ${age(since(view.listedAt, now))} ago` : 'not listed yet';
  const lines = [`App ${view.app} (namespace ${view.namespace}): ${view.previews.length} previews, ${listed}`];
  if (view.notListed) {
    const { status, reason, message } = view.notListed;
    lines.push(
      paint(`PreviewsListed: ${status}${reason ? ` (${reason})` : ''}${message ? `: ${message}` : ''}`, 'red', colour),
    );
  }
  if (view.childrenRefused) lines.push(`warning: ${view.childrenRefused}: the child Apps' phases are not shown`);
  if (view.previews.length > 0) {
    const rows = view.previews.map((row) => [
      row.number === undefined ? '?' : String(row.number),
      stateCell(row.state, colour),
      row.app ?? '-',
      phaseCell(row, colour),
      row.head ? row.head.slice(0, 7) : '-',
      row.url ?? '-',
      row.createdAt ? age(since(row.createdAt, now)) : '-',
      noteOf(row),
    ]);
    lines.push('', table(['PR', 'STATE', 'APP', 'PHASE', 'HEAD', 'URL', 'AGE', 'MESSAGE'], rows));
  }
  return `${lines.join('\n')}\n`;
}
