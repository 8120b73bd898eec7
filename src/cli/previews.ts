// `kubectl teal previews APP`: the parent App's record of its pull requests'
// previews (status.previews) joined with the child Apps found by label, as data
// (-o json|yaml) and as a table. Pure: the command reads, this draws. The
// view itself (the join, a row's state and note) is app/previews-view.ts, the
// one rule the API and the dashboard's Previews tab read too.
import {
  CHILD_WORDS,
  type PreviewRow,
  type PreviewsView,
  previewNote,
  stateText,
  stateTone,
} from '../app/previews-view.ts';
import { type AppObject, since } from './app-object.ts';
import { CliError } from './errors.ts';
import { age, paint, statusIcon, table } from './output.ts';

/** Refuses an App without spec.previews: it has no previews to show, and never will as it is. */
export function requirePreviews(app: AppObject): void {
  if (app.spec?.previews === undefined || app.spec.previews === null) {
    throw new CliError(`App "${app.metadata.name}" has no spec.previews (docs/previews.md)`);
  }
}

function phaseCell(row: PreviewRow, colour: boolean): string {
  if (row.child === 'found' || row.child === 'unrecorded') {
    return row.phase ? paint(row.phase, statusIcon(row.phase).colour, colour) : '-';
  }
  return CHILD_WORDS[row.child];
}

/** A state in the shared rule's words and colour (app/previews-view.ts). */
function stateCell(row: PreviewRow, colour: boolean): string {
  const text = stateText(row.state);
  return row.state === undefined ? text : paint(text, statusIcon(stateTone(row.state)).colour, colour);
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
      stateCell(row, colour),
      row.app ?? '-',
      phaseCell(row, colour),
      row.head ? row.head.slice(0, 7) : '-',
      row.url ?? '-',
      row.createdAt ? age(since(row.createdAt, now)) : '-',
      previewNote(row),
    ]);
    lines.push('', table(['PR', 'STATE', 'APP', 'PHASE', 'HEAD', 'URL', 'AGE', 'MESSAGE'], rows));
  }
  return `${lines.join('\n')}\n`;
}
