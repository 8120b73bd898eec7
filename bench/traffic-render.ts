// One traffic table from saved runs of bench/traffic.ts (their stdout's JSON line, or the
// `result {...}` lines of their stderr), e.g. the Teal columns of one run and Argo's of another:
//   cat run1.err run2.err | node bench/traffic-render.ts
// A cell found twice is taken from the later line.
import { readFileSync } from 'node:fs';
import type { ScenarioResult } from './traffic-scenario.ts';
import { renderTraffic, TITLES } from './traffic-table.ts';

const cells = new Map<string, ScenarioResult>();
for (const line of readFileSync(0, 'utf8').split('\n')) {
  const json = line.includes(' result {')
    ? line.slice(line.indexOf(' result {') + 8)
    : line.startsWith('{"results":')
      ? line
      : '';
  if (!json) continue;
  const parsed = JSON.parse(json) as ScenarioResult | { results: ScenarioResult[] };
  for (const r of 'results' in parsed ? parsed.results : [parsed]) cells.set(`${r.column}/${r.scenario}`, r);
}
const results = [...cells.values()];
const ids = [...new Set(results.map((r) => r.column))];
console.log(
  renderTraffic(
    results,
    ids.map((id) => ({ id, title: TITLES[id] ?? id })),
  ),
);
