// The Apps list: one table of every App the user may see, filtered and sorted
// as the URL says (rows.ts), so every view can be linked and reloaded.
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { ApiFailure, listApps } from './api.ts';
import { type Column, choices, type ListView, type Row, rowOf, urlOf, viewOf, visibleRows } from './rows.ts';
import { user } from './session.ts';

const HEADINGS: Record<Column, string> = {
  namespace: 'Namespace',
  name: 'Name',
  phase: 'Phase',
  active: 'Active revision',
  preview: 'Preview revision',
  message: 'Message',
};

export function AppsPage() {
  const { query, route } = useLocation();
  const rows = useSignal<Row[] | undefined>(undefined);
  const error = useSignal<string | undefined>(undefined);
  const view = viewOf(query);
  const show = (change: Partial<ListView>) => route(urlOf({ ...view, ...change }), true);

  useEffect(() => {
    listApps()
      .then((items) => {
        rows.value = items.map(rowOf);
      })
      .catch((err: unknown) => {
        // A session ended meanwhile (its token revoked): back to the login page.
        if (err instanceof ApiFailure && err.status === 401) user.value = null;
        else error.value = (err as Error).message;
      });
  }, []);

  if (error.value) {
    return (
      <p role="alert" class="error">
        The Apps could not be read: {error.value}
      </p>
    );
  }
  if (!rows.value) return <p aria-live="polite">Loading the Apps…</p>;
  const all = rows.value;
  const shown = visibleRows(all, view);
  return (
    <>
      <h1>Apps</h1>
      <search class="filters" aria-label="Filter the Apps">
        <label>
          Namespace
          <select value={view.ns} onChange={(e) => show({ ns: e.currentTarget.value })}>
            <option value="">All</option>
            {choices(all, 'namespace').map((ns) => (
              <option key={ns} value={ns}>
                {ns}
              </option>
            ))}
          </select>
        </label>
        <label>
          Phase
          <select value={view.phase} onChange={(e) => show({ phase: e.currentTarget.value })}>
            <option value="">All</option>
            {choices(all, 'phase').map((phase) => (
              <option key={phase} value={phase}>
                {phase}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input type="search" value={view.q} onInput={(e) => show({ q: e.currentTarget.value })} />
        </label>
      </search>
      <p class="count" aria-live="polite">
        {shown.length === all.length ? `${all.length} Apps` : `${shown.length} of ${all.length} Apps`}
      </p>
      <table>
        <thead>
          <tr>
            {(Object.keys(HEADINGS) as Column[]).map((column) => (
              <SortHeading key={column} column={column} view={view} show={show} />
            ))}
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={r.key}>
              <td>{r.namespace}</td>
              <td>{r.name}</td>
              <td>
                <span class={`phase phase-${r.phase.toLowerCase() || 'unknown'}`}>{r.phase || '—'}</span>
              </td>
              <td class="num">{r.active ?? '—'}</td>
              <td class="num">{r.preview ?? '—'}</td>
              <td class="message">{r.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {all.length === 0 ? <p>No Apps in the namespaces you may list.</p> : null}
    </>
  );
}

/** A column's heading: a button that sorts by it, ascending first, then the other way. */
function SortHeading(props: { column: Column; view: ListView; show: (change: Partial<ListView>) => void }) {
  const { column, view, show } = props;
  const sorted = view.sort === column;
  return (
    <th scope="col" aria-sort={sorted ? (view.dir === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <button
        type="button"
        class="sort"
        onClick={() => show({ sort: column, dir: sorted && view.dir === 'asc' ? 'desc' : 'asc' })}
      >
        {HEADINGS[column]}
        <span aria-hidden="true">{sorted ? (view.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </button>
    </th>
  );
}
