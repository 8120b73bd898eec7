// The Apps list's rows, made from the live stream's (app/dashboard-row.ts),
// and what the URL says of them: pure functions, so the table, its filters and
// its sort are tested without a browser (test/unit/ui-rows.test.ts) and the
// URL stays the one source of a view.
import { awaitsPromotion, type DashboardRow, rowKey, waitingFor } from '../app/dashboard-row.ts';

/** One line of the table. */
export interface Row {
  key: string;
  namespace: string;
  name: string;
  phase: string;
  active: number | undefined;
  preview: number | undefined;
  message: string;
  /** Its preview waits only for a promote (app/dashboard-row.ts awaitsPromotion). */
  awaitsPromotion: boolean;
}

export const COLUMNS = ['namespace', 'name', 'phase', 'active', 'preview', 'message'] as const;
export type Column = (typeof COLUMNS)[number];

/**
 * What a view of the list shows: its filters and its order, all in the URL
 * (/apps?ns=..&phase=..&q=..&waiting=me&sort=..&dir=..).
 */
export interface ListView {
  ns: string;
  phase: string;
  q: string;
  /** Only the Apps waiting for this user (app/dashboard-row.ts waitingFor): waiting=me. */
  waiting: boolean;
  sort: Column;
  dir: 'asc' | 'desc';
}

export const DEFAULT_VIEW: ListView = { ns: '', phase: '', q: '', waiting: false, sort: 'namespace', dir: 'asc' };

/** The table's line of an App's row, as the live stream sent it (app/dashboard-row.ts). */
export function rowOf(row: DashboardRow): Row {
  return {
    key: rowKey(row),
    namespace: row.namespace,
    name: row.name,
    phase: row.phase,
    active: row.active,
    preview: row.preview,
    message: row.message,
    awaitsPromotion: awaitsPromotion(row),
  };
}

/** The view a URL's query names; what it does not name, or names wrongly, is the default. */
export function viewOf(query: Record<string, string | undefined>): ListView {
  const sort = (COLUMNS as readonly string[]).includes(query.sort ?? '') ? (query.sort as Column) : DEFAULT_VIEW.sort;
  return {
    ns: query.ns ?? '',
    phase: query.phase ?? '',
    q: query.q ?? '',
    waiting: query.waiting === 'me',
    sort,
    dir: query.dir === 'desc' ? 'desc' : 'asc',
  };
}

/** The URL of a view: only what differs from the default, so the plain list is /apps. */
export function urlOf(view: ListView): string {
  const params = new URLSearchParams();
  for (const key of ['ns', 'phase', 'q'] as const) if (view[key] !== DEFAULT_VIEW[key]) params.set(key, view[key]);
  if (view.waiting) params.set('waiting', 'me');
  for (const key of ['sort', 'dir'] as const) if (view[key] !== DEFAULT_VIEW[key]) params.set(key, view[key]);
  const query = params.toString();
  return query ? `/apps?${query}` : '/apps';
}

/**
 * The rows the view shows, in its order: filtered by namespace, phase, text (any column,
 * case-insensitive) and, with waiting, by waiting for this user, who may promote in promoteIn.
 */
export function visibleRows(rows: readonly Row[], view: ListView, promoteIn: ReadonlySet<string> = new Set()): Row[] {
  const text = view.q.trim().toLowerCase();
  const shown = rows.filter(
    (r) =>
      (!view.waiting || waitingFor(r, promoteIn)) &&
      (view.ns === '' || r.namespace === view.ns) &&
      (view.phase === '' || r.phase === view.phase) &&
      (text === '' ||
        [r.namespace, r.name, r.phase, r.message, String(r.active ?? ''), String(r.preview ?? '')].some((s) =>
          s.toLowerCase().includes(text),
        )),
  );
  const sign = view.dir === 'asc' ? 1 : -1;
  return shown.sort((a, b) => sign * compare(a[view.sort], b[view.sort]) || collator.compare(a.key, b.key));
}

// localeCompare's order, from one collator: building one per comparison makes a sort of 10,000 rows slow.
const collator = new Intl.Collator();

/** Numbers in order, text by locale; a missing revision sorts as empty text, before the others. */
function compare(a: string | number | undefined, b: string | number | undefined): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return collator.compare(String(a ?? ''), String(b ?? ''));
}

/** The distinct values of a column, sorted: the choices of a filter. */
export function choices(rows: readonly Row[], column: 'namespace' | 'phase'): string[] {
  return [...new Set(rows.map((r) => r[column]).filter((v) => v !== ''))].sort();
}
