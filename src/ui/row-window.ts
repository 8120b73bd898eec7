// Windowed rows (issue #25 item 4): the Apps table keeps in the DOM only the
// rows its scroll box shows, and a few either side, so 10,000 Apps cost the
// page no more than 50. Every row has one height (the stylesheet fixes it), so
// which rows show is arithmetic on the scroll position: pure, and tested
// without a browser (test/unit/ui-row-window.test.ts). A small function of our
// own rather than a virtualising library: fixed heights need none of a
// library's measuring, and the page's script budget (60 KB gzipped) stays for
// what only a library does well.

/** Rows rendered beyond each edge of the scroll box, so a short scroll shows rows already there. */
export const OVERSCAN_ROWS = 6;

/** Where the scroll box stands, in CSS pixels. */
export interface Viewport {
  /** The box's scrollTop, measured from the first row (the header above it is not counted). */
  scrollTop: number;
  /** The height of the box that shows rows. */
  height: number;
}

/** The rows to render, [start, end), and the empty heights that stand for the rows left out. */
export interface RowWindow {
  start: number;
  end: number;
  /** Pixels of the rows above start. */
  before: number;
  /** Pixels of the rows from end to the last. */
  after: number;
}

/**
 * The rows of count, each rowHeight high, that the viewport shows, with overscan more each side.
 * A position past the end (the list shrank under a filter) shows the last rows; a height not
 * measured yet (0 or less) counts as one row, so something renders and can be measured.
 */
export function rowWindow(count: number, rowHeight: number, viewport: Viewport, overscan = OVERSCAN_ROWS): RowWindow {
  if (count <= 0 || !(rowHeight > 0)) return { start: 0, end: 0, before: 0, after: 0 };
  const height = Math.max(viewport.height, rowHeight);
  const top = Math.min(Math.max(viewport.scrollTop, 0), Math.max(count * rowHeight - height, 0));
  const first = Math.floor(top / rowHeight);
  const last = Math.ceil((top + height) / rowHeight);
  const start = Math.max(first - overscan, 0);
  const end = Math.min(last + overscan, count);
  return { start, end, before: start * rowHeight, after: (count - end) * rowHeight };
}

/** The most rows rowWindow renders for a viewport of this height: what one screen costs the DOM. */
export const mostRows = (rowHeight: number, height: number, overscan = OVERSCAN_ROWS): number =>
  Math.ceil(Math.max(height, rowHeight) / rowHeight) + 1 + 2 * overscan;
