// The traffic bench's table (bench/traffic.ts prints it; bench/traffic-render.ts draws it again
// from saved runs): rows by path and scenario, a column per controller, then each cell's details.
import { num } from './stats.ts';
import type { Column } from './traffic-columns.ts';
import { PATHS, type PathId, SCENARIOS, type Scenario, type ScenarioResult } from './traffic-scenario.ts';

const PATH_TITLES: Record<PathId, string> = {
  clusterIP: 'kube-proxy ClusterIP',
  lb: 'pod-aware LB, 5 s registration, 10 s drain',
};

/** One cell: failed and wrong-revision requests of the measured switches, out of how many. */
function cell(result: ScenarioResult | undefined, path: PathId): string {
  if (!result) return '';
  const p = result.paths.find((x) => x.path === path);
  if (!p) return `not run: ${result.error ?? ''}`;
  const v = p.verdict.measured;
  const stopped = result.error ? `, stopped: ${result.error.slice(0, 80)}` : '';
  const slow = v.slow > 0 ? ` (${num(v.slow)} of them timed out after connecting)` : '';
  return `**${num(v.failed)}** failed${slow}, **${num(v.wrong)}** wrong of ${num(v.requests)} (${result.switches} switches${stopped})`;
}

export function renderTraffic(
  results: ScenarioResult[],
  columns: Pick<Column, 'id' | 'title'>[],
  scenarios: readonly Scenario[] = SCENARIOS,
): string {
  const lines = [
    `| path | scenario | ${columns.map((c) => c.title).join(' | ')} |`,
    `|---|---|${columns.map(() => '---').join('|')}|`,
  ];
  for (const path of PATHS) {
    for (const scenario of scenarios) {
      const cells = columns.map((c) =>
        cell(
          results.find((r) => r.column === c.id && r.scenario === scenario),
          path,
        ),
      );
      lines.push(`| ${PATH_TITLES[path]} | ${scenario} | ${cells.join(' | ')} |`);
    }
  }
  lines.push('', 'Causes of the failures and the wrong answers, per cell (measured switches; set-up steps apart):', '');
  for (const r of results) {
    for (const p of r.paths) {
      const { measured, setup } = p.verdict;
      lines.push(
        `- ${r.column} ${r.scenario} ${p.path}: ${r.switches} switches, load ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}, ` +
          `${num(p.sent)} sent at ${p.achievedRps}/s (${num(p.skipped)} skipped at the in-flight cap, sent up to ${p.maxLateMs} ms late); ` +
          `failures ${JSON.stringify(measured.causes)}, sent at ${JSON.stringify(measured.failedAt)} after the write; ` +
          `wrong ${JSON.stringify(measured.wrongRevisions)}; ` +
          `set-up: ${setup.failed} failed, ${setup.wrong} wrong of ${num(setup.requests)}`,
      );
    }
  }
  return lines.join('\n');
}

/** The columns' headings by id, for tables drawn again from saved results. */
export const TITLES: Record<string, string> = {
  teal: 'Teal (plain selector)',
  drain: 'Teal (drain-verified)',
  argo: 'Argo (selector swap)',
  pingpong: 'Teal (ping-pong)',
  gateway: 'Teal (Gateway API)',
};
