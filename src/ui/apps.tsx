// The Apps list: one table of every App the user may see, filtered and sorted
// as the URL says (rows.ts), so every view can be linked and reloaded. The
// rows are live (live.ts): each change shows without a reload. The table
// renders only the rows its scroll box shows (row-window.ts), so it stays
// responsive with 10,000 Apps.
import { useComputed, useSignal } from '@preact/signals';
import type { RefObject } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { appPageUrl } from '../app/dashboard-pages.ts';
import { promoteNamespaces } from './api.ts';
import { liveRows } from './live.ts';
import { rowWindow } from './row-window.ts';
import { type Column, choices, type ListView, type Row, rowOf, urlOf, viewOf, visibleRows } from './rows.ts';

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
  // Live: the rows as the stream has them (live.ts), each change shown without a reload.
  const rows = useComputed<Row[] | undefined>(() => liveRows.value?.map(rowOf));
  const view = viewOf(query);
  const url = urlOf(view);
  const show = (change: Partial<ListView>) => route(urlOf({ ...view, ...change }), true);
  const promoteIn = usePromoteNamespaces(view.waiting);
  // Sorting 10,000 rows takes a while: done again only when the rows or the view change, not on scroll.
  const all = rows.value;
  const shown = useMemo(() => (all ? visibleRows(all, view, promoteIn) : []), [all, url, promoteIn]);

  if (!all) return <p aria-live="polite">Loading the Apps…</p>;
  return (
    <>
      <h1>Apps</h1>
      <Filters all={all} view={view} show={show} />
      <p class="count" aria-live="polite">
        {shown.length === all.length ? `${all.length} Apps` : `${shown.length} of ${all.length} Apps`}
      </p>
      <AppsTable shown={shown} view={view} url={url} show={show} />
      {all.length === 0 ? <p>No Apps in the namespaces you may list.</p> : null}
    </>
  );
}

type Show = (change: Partial<ListView>) => void;

const NO_NAMESPACES: ReadonlySet<string> = new Set();

/**
 * Where the user may promote (GET /api/v1/permissions), asked when the "waiting for me" filter
 * is on: each time it is turned on, so a RoleBinding changed meanwhile shows. Until known, none.
 */
function usePromoteNamespaces(wanted: boolean): ReadonlySet<string> {
  const namespaces = useSignal<ReadonlySet<string>>(NO_NAMESPACES);
  useEffect(() => {
    if (!wanted) return;
    let current = true;
    promoteNamespaces()
      .then((list) => {
        if (current) namespaces.value = new Set(list);
      })
      // Not known is none: the filter shows less, never an App the user may not promote.
      .catch(() => {
        if (current) namespaces.value = NO_NAMESPACES;
      });
    return () => {
      current = false;
    };
  }, [wanted]);
  return namespaces.value;
}

/** The namespace and phase choices (from the rows themselves) and the text search, each a part of the URL. */
function Filters(props: { all: Row[]; view: ListView; show: Show }) {
  const { all, view, show } = props;
  const namespaces = useMemo(() => choices(all, 'namespace'), [all]);
  const phases = useMemo(() => choices(all, 'phase'), [all]);
  return (
    <search class="filters" aria-label="Filter the Apps">
      <ChoiceFilter label="Namespace" value={view.ns} options={namespaces} pick={(ns) => show({ ns })} />
      <ChoiceFilter label="Phase" value={view.phase} options={phases} pick={(phase) => show({ phase })} />
      <label>
        Search
        <input type="search" value={view.q} onInput={(e) => show({ q: e.currentTarget.value })} />
      </label>
      <label class="check">
        <input type="checkbox" checked={view.waiting} onChange={(e) => show({ waiting: e.currentTarget.checked })} />
        Waiting for me
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

/** Where the box stands and how tall its rows are, as last measured. */
interface Measure {
  scrollTop: number;
  /** The box's height below its sticky header: what shows rows. */
  height: number;
  rowHeight: number;
}

/** Before the first row is measured: about what the stylesheet gives (a fixed 2.4rem of a 15px font). */
const ROW_HEIGHT_GUESS = 36;

/**
 * The table in its scroll box, with only the rows the box shows in the DOM: the others stand as
 * two empty rows of their height, hidden from assistive technology, which learns the table's
 * size from aria-rowcount and each row's place from aria-rowindex. The box takes focus, so the
 * keyboard scrolls it (arrows, Page Up/Down, Home, End).
 */
function AppsTable(props: { shown: Row[]; view: ListView; url: string; show: Show }) {
  const { shown, view, show } = props;
  const { box, measure, update } = useMeasuredBox(props.url);
  const { scrollTop, height, rowHeight } = measure;
  const win = rowWindow(shown.length, rowHeight, { scrollTop, height });
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scroll box takes focus so the keyboard scrolls it
    <section class="rows" ref={box} tabIndex={0} aria-label="Apps table" onScroll={update}>
      <table aria-rowcount={shown.length + 1}>
        <thead>
          <tr aria-rowindex={1}>
            {(Object.keys(HEADINGS) as Column[]).map((column) => (
              <SortHeading key={column} column={column} view={view} show={show} />
            ))}
          </tr>
        </thead>
        <tbody>
          {win.before > 0 ? <Spacer height={win.before} /> : null}
          {shown.slice(win.start, win.end).map((r, i) => (
            <AppRow key={r.key} row={r} index={win.start + i} />
          ))}
          {win.after > 0 ? <Spacer height={win.after} /> : null}
        </tbody>
      </table>
    </section>
  );
}

/**
 * The scroll box and its measure, taken again after each render, on scroll and on resize (update),
 * and from its first row when the view (url) changes.
 */
function useMeasuredBox(url: string): { box: RefObject<HTMLElement | null>; measure: Measure; update: () => void } {
  const box = useRef<HTMLElement>(null);
  const measure = useSignal<Measure>({ scrollTop: 0, height: 0, rowHeight: ROW_HEIGHT_GUESS });
  const update = () => {
    const el = box.current;
    if (!el) return;
    const next = measureOf(el, measure.value.rowHeight);
    const now = measure.value;
    if (next.scrollTop !== now.scrollTop || next.height !== now.height || next.rowHeight !== now.rowHeight) {
      measure.value = next;
    }
  };
  // A new view starts at its first row.
  useLayoutEffect(() => {
    if (box.current) box.current.scrollTop = 0;
    update();
  }, [url]);
  useLayoutEffect(update);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const resized = new ResizeObserver(update);
    resized.observe(el);
    return () => resized.disconnect();
  }, []);
  return { box, measure: measure.value, update };
}

/** The box's measure as it stands; the row height as known before when no row is shown. */
function measureOf(el: HTMLElement, knownRowHeight: number): Measure {
  const header = el.querySelector('thead')?.getBoundingClientRect().height ?? 0;
  const row = el.querySelector('tbody tr[aria-rowindex]')?.getBoundingClientRect().height;
  return {
    scrollTop: el.scrollTop,
    height: el.clientHeight - header,
    rowHeight: row && row > 0 ? row : knownRowHeight,
  };
}

/** The rows left out, as one empty row of their height; set through the CSSOM, which the CSP allows. */
function Spacer({ height }: { height: number }) {
  return (
    // biome-ignore lint/a11y/noAriaHiddenOnFocusable: an empty cell, nothing in it takes focus
    <tr class="spacer" aria-hidden="true">
      <td colSpan={Object.keys(HEADINGS).length} style={{ height: `${height}px` }} />
    </tr>
  );
}

function AppRow({ row: r, index }: { row: Row; index: number }) {
  return (
    <tr aria-rowindex={index + 2} class={index % 2 === 1 ? 'odd' : undefined}>
      <td class="id">{r.namespace}</td>
      <td class="id">
        <a href={appPageUrl(r.namespace, r.name)}>{r.name}</a>
      </td>
      <td>
        <span class={`phase phase-${r.phase.toLowerCase() || 'unknown'}`}>{r.phase || '—'}</span>
      </td>
      <td class="num">{r.active ?? '—'}</td>
      <td class="num">{r.preview ?? '—'}</td>
      <td class="message" title={r.message}>
        {r.message}
      </td>
    </tr>
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
