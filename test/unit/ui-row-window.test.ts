// The Apps table's windowed rows without a browser (src/ui/row-window.ts):
// which rows a scroll position shows, and the heights that stand for the rest.
import { describe, expect, it } from 'vitest';
import { mostRows, OVERSCAN_ROWS, rowWindow } from '../../src/ui/row-window.ts';

const H = 36;

describe('the rows a scroll box shows', () => {
  it('at the top: the rows that fit, and the overscan below; the rest stands as height', () => {
    const w = rowWindow(10_000, H, { scrollTop: 0, height: 10 * H });
    expect(w).toEqual({ start: 0, end: 10 + OVERSCAN_ROWS, before: 0, after: (10_000 - 10 - OVERSCAN_ROWS) * H });
  });

  it('in the middle: the rows in view, a partly shown one included, and the overscan on each side', () => {
    // Rows 100 (half shown) to 110 (half shown).
    const w = rowWindow(10_000, H, { scrollTop: 100 * H + H / 2, height: 10 * H }, 2);
    expect(w).toEqual({ start: 98, end: 113, before: 98 * H, after: (10_000 - 113) * H });
  });

  it('at the end: the last row rendered, nothing after it', () => {
    const w = rowWindow(10_000, H, { scrollTop: 10_000 * H - 10 * H, height: 10 * H });
    expect(w.end).toBe(10_000);
    expect(w.after).toBe(0);
    expect(w.start).toBe(9_990 - OVERSCAN_ROWS);
  });

  it('past the end (the list shrank under a filter): the last rows, not an empty window', () => {
    expect(rowWindow(20, H, { scrollTop: 5_000 * H, height: 10 * H }, 0)).toEqual({
      start: 10,
      end: 20,
      before: 10 * H,
      after: 0,
    });
  });

  it('fewer rows than fit: all of them, no height added', () => {
    expect(rowWindow(3, H, { scrollTop: 0, height: 20 * H })).toEqual({ start: 0, end: 3, before: 0, after: 0 });
  });

  it('no rows, no row height, or a box not measured yet', () => {
    expect(rowWindow(0, H, { scrollTop: 0, height: 500 })).toEqual({ start: 0, end: 0, before: 0, after: 0 });
    expect(rowWindow(100, 0, { scrollTop: 0, height: 500 })).toEqual({ start: 0, end: 0, before: 0, after: 0 });
    // A box of no height yet renders one row and the overscan, which can then be measured.
    expect(rowWindow(100, H, { scrollTop: 0, height: 0 }, 0)).toMatchObject({ start: 0, end: 1 });
  });

  it('the rendered rows and the heights always add up to the whole list', () => {
    for (let top = -100; top < 1_000 * H + 500; top += 97) {
      const w = rowWindow(1_000, H, { scrollTop: top, height: 600 });
      expect(w.before + (w.end - w.start) * H + w.after).toBe(1_000 * H);
      expect(w.end - w.start).toBeLessThanOrEqual(mostRows(H, 600));
    }
  });

  it('a screen of 600 px rows of 36 px costs at most 31 rows in the DOM, under the 50 of issue #25', () => {
    expect(mostRows(H, 600)).toBe(17 + 1 + 2 * OVERSCAN_ROWS);
    expect(mostRows(H, 600)).toBeLessThanOrEqual(50);
  });
});
