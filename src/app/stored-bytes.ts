// How many bytes a value takes once the API server stores it, so that a
// record kept in an object's status can be bounded by what etcd accepts
// (its request limit is 1.5 MiB for the whole object). Custom resources are
// stored as JSON written by Go's encoding/json, which escapes "<", ">" and "&"
// (\u003c: 6 bytes for one) and U+2028, U+2029 (6 bytes for 3) beyond what
// JSON.stringify does; every other character costs the same in both. Pure, no
// Node built-in: the dashboard may bundle what reads it.

const UTF8 = new TextEncoder();

/** The bytes of JSON text once Go's encoder has written it. */
const goJsonBytes = (json: string): number => {
  let extra = 0;
  for (const c of json) {
    if (c === '<' || c === '>' || c === '&') extra += 5;
    else if (c === '\u2028' || c === '\u2029') extra += 3;
  }
  return UTF8.encode(json).length + extra;
};

/** The bytes `value` takes in the stored object (an upper bound: a lone surrogate is stored as U+FFFD, 3 bytes, not 6). */
export const storedBytes = (value: unknown): number => goJsonBytes(JSON.stringify(value) ?? '');

/** The bytes of a string's content once stored, without its quotes. */
export const textBytes = (text: string): number => storedBytes(text) - 2;

/** Text cut at a character (never inside one) so that, "..." added, it takes at most `maxBytes` once stored. */
export function fitText(text: string, maxBytes: number): string {
  if (textBytes(text) <= maxBytes) return text;
  const chars = Array.from(text);
  // The longest start that fits with its "...": textBytes grows with the length, so a binary search finds it.
  let low = 0;
  let high = chars.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (textBytes(`${chars.slice(0, mid).join('')}...`) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  return `${chars.slice(0, low).join('')}...`;
}
