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
      <Filters all={all} view={view} show={show} />
      <p class="count" aria-live="polite">
        {shown.length === all.length ? `${all.length} Apps` : `${shown.length} of ${all.length} Apps`}
      </p>
      <AppsTable shown={shown} view={view} show={show} />
      {all.length === 0 ? <p>No Apps in the namespaces you may list.</p> : null}
    </>
  );
}

type Show = (change: Partial<ListView>) => void;

/** The namespace and phase choices (from the rows themselves) and the text search, each a part of the URL. */
function Filters(props: { all: Row[]; view: ListView; show: Show }) {
  const { all, view, show } = props;
  return (
    <search class="filters" aria-label="Filter the Apps">
      <ChoiceFilter label="Namespace" value={view.ns} options={choices(all, 'namespace')} pick={(ns) => show({ ns })} />
      <ChoiceFilter
        label="Phase"
        value={view.phase}
        options={choices(all, 'phase')}
        pick={(phase) => show({ phase })}
      />
      <label>
        Search
        <input type="search" value={view.q} onInput={(e) => show({ q: e.currentTarget.value })} />
      </label>
    </search>
  );
}

function ChoiceFilter(props: { label: string; value: string; options: string[]; pick: (value: string) => void }) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.pick(e.currentTarget.value)}>
        <option value="">All</option>
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
}

function AppsTable(props: { shown: Row[]; view: ListView; show: Show }) {
  const { shown, view, show } = props;
  return (
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
            <td class="id">{r.namespace}</td>
            <td class="id">{r.name}</td>
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
  );
}

/** A column's heading: a button that sorts by it, ascending first, then the other way. */
function SortHeading(props: { column: Column; view: ListView; show: Show }) {
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
