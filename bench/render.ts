// The table again from saved output: the final JSON line of bench/run.ts, or
// its "bench: result {...}" progress lines, read from stdin. Runs of several
// sizes, taken apart (10,000 Apps by hand), become one table.
//
//   node bench/render.ts < bench-1000.out
import { text } from 'node:stream/consumers';
import type { RunResult } from './scenario.ts';
import { renderTable } from './table.ts';

const results: RunResult[] = [];
for (const line of (await text(process.stdin)).split('\n')) {
  const json = line.replace(/^bench: result /, '').trim();
  if (!json.startsWith('{')) continue;
  const parsed = JSON.parse(json) as RunResult | { results: RunResult[] };
  if ('results' in parsed) results.push(...parsed.results);
  else results.push(parsed);
}
// A run's progress lines and its final line hold the same results: each once.
const seen = new Set<string>();
const unique = results.filter((r) => {
  const key = `${r.controller}/${r.apps}/${r.converge.seconds.value}`;
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
});
console.log(renderTable(unique));
