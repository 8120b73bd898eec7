// The results as one markdown table: a column per run (controller and size),
// a row per figure, each with the load average it was taken under.
import { type Counts, summarize } from './audit.ts';
import type { Figure, RunResult } from './scenario.ts';
import { MiB, num, percentile, withLoad } from './stats.ts';

const mib = (f: Figure) => withLoad(f.value === undefined ? '–' : `${num(f.value / MiB)} MiB`, f.load);

/** "get 4.0 · patch 2.0": requests by verb divided by per, the largest first. */
export function verbs(counts: Counts, per = 1): string {
  const byVerb = Object.entries(summarize(counts).byVerb).sort((a, b) => b[1] - a[1]);
  if (byVerb.length === 0) return '0';
  const decimals = per === 1 ? 0 : 1;
  return byVerb.map(([verb, n]) => `${verb} ${num(n / per, decimals)}`).join(' · ');
}

/** "watch services 3 · list apps 1": every verb and resource, the largest first. */
export function resources(counts: Counts): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return entries.length === 0 ? '0' : entries.map(([key, n]) => `${key} ${num(n)}`).join(' · ');
}

function heap(r: RunResult, f: Figure): string {
  const what = r.controller === 'teal' ? 'after GC' : 'Go heap, no GC';
  return withLoad(f.value === undefined ? '–' : `${num(f.value / MiB, 1)} MiB ${what}`, f.load);
}

function heapPerApp(r: RunResult): string {
  const [idle, empty] = [r.idle.heap.value, r.empty.heap.value];
  if (idle === undefined || empty === undefined) return '–';
  return withLoad(`${num((idle - empty) / r.apps / 1024, 1)} KiB`, r.idle.heap.load);
}

function converge(r: RunResult): string {
  const { seconds, converged } = r.converge;
  const done = converged < r.apps ? `${num(converged)} of ${num(r.apps)} in ` : '';
  return withLoad(`${done}${num(seconds.value, 1)} s, ${num(r.converge.cpuSeconds, 1)} CPU-s`, seconds.load);
}

function cold(r: RunResult): string {
  const c = r.cold;
  const ready = c.readySeconds === undefined ? 'never ready' : `ready ${num(c.readySeconds, 1)} s`;
  const bound = c.steady ? '' : 'not steady within ';
  return withLoad(`${bound}${num(c.seconds.value, 1)} s (${ready}), ${num(c.writes)} writes`, c.seconds.load);
}

function promote(r: RunResult): string {
  const p = r.promote;
  const ms = (f: Figure) => num(f.value);
  const misses = [
    p.never > 0 ? `${p.never} never switched` : '',
    p.noPreview > 0 ? `${p.noPreview} never paused on a preview` : '',
  ].filter(Boolean);
  const of = p.latenciesMs.length + p.never + p.noPreview;
  const tail = misses.length > 0 ? `; ${misses.join(', ')} (of ${of})` : '';
  return withLoad(`${ms(p.p50)} / ${ms(p.p90)} / ${ms(p.p99)} ms${tail}`, p.p50.load);
}

/** Older saved runs (bench/render.ts) have no round trips: shown as not measured. */
function promoteRequest(r: RunResult): string {
  const ms = r.promote.requestMs ?? [];
  if (ms.length === 0) return 'not measured';
  return `${num(percentile(ms, 0.5))} / ${num(percentile(ms, 0.99))} ms`;
}

const ROWS: [string, (r: RunResult) => string][] = [
  ['runs as', (r) => r.title],
  ['converge N Apps (all Healthy), CPU used', converge],
  ['RSS empty', (r) => mib(r.empty.rss)],
  ['RSS peak while converging (VmHWM)', (r) => mib(r.converge.peakRss)],
  ['RSS idle, N Apps', (r) => mib(r.idle.rss)],
  ['heap empty', (r) => heap(r, r.empty.heap)],
  ['heap idle, N Apps', (r) => heap(r, r.idle.heap)],
  ['heap per App ((idle − empty) / N)', heapPerApp],
  ['requests per App while converging', (r) => withLoad(verbs(r.converge.requests, r.apps), r.converge.seconds.load)],
  [
    'idle requests per minute',
    (r) => withLoad(`${num(r.idle.perMinute.value, 1)}: ${verbs(r.idle.requests)}`, r.idle.perMinute.load),
  ],
  ['cold start to steady, writes', cold],
  ['cold start requests', (r) => withLoad(resources(r.cold.requests), r.cold.seconds.load)],
  ['RSS peak of the cold start', (r) => mib(r.cold.peakRss)],
  ['promote → switch p50 / p90 / p99', promote],
  ['promote request round trip p50 / p99', promoteRequest],
  [
    'requests per promotion',
    (r) => verbs(r.promote.requests, Math.max(1, r.promote.latenciesMs.length + r.promote.never + r.promote.noPreview)),
  ],
];

export function renderTable(results: RunResult[]): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const head = `| | ${results.map((r) => `${r.controller === 'teal' ? 'Teal' : 'Argo'} ${num(r.apps)}`).join(' | ')} |`;
  const rule = `|---|${results.map(() => '---').join('|')}|`;
  const rows = ROWS.map(([label, get]) => `| ${label} | ${results.map((r) => cell(get(r))).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}
