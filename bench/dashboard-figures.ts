// The figures of make bench-dashboard (bench/dashboard.ts), and their table
// beside issue #25's targets: pure, so the unit tests hold the rules
// (test/unit/bench-dashboard.test.ts).
import type { Counts } from './audit.ts';
import { MiB, num } from './stats.ts';

/** The operator's requests in one window, with this many dashboard tabs open all along. */
export interface RequestWindow {
  tabs: number;
  seconds: number;
  load: number;
  requests: Counts;
}

export interface DashboardFigures {
  /** (b) A status patch to its change painted in an open page. */
  latency: {
    apps: number;
    samples: number;
    /** Changes not painted within 10 s. */
    missed: number;
    /** From the patch's answer to the paint, ms. */
    p50: number | undefined;
    p99: number | undefined;
    /** From the patch sent to the paint, ms: the API server's own time included. */
    p99FromSent: number | undefined;
    load: number | undefined;
  };
  /** (a) One window without tabs, then one per number of tabs. */
  windows: RequestWindow[];
  /** (a) What opening that many tabs cost, by request. */
  opening: Record<number, Counts>;
  /** (c) The stream's snapshot (undefined without a stream) and GET /api/v1/apps's answer, in bytes. */
  snapshot: { bytes: number | undefined; gzipped: number | undefined; listBytes: number; listGzipped: number };
  /** (c) A fresh page of every App. */
  page: {
    apps: number;
    /** From the data's arrival (dataVia) to the first rows painted, ms. */
    firstScreenMs: number | undefined;
    dataVia: string | undefined;
    /** The most App rows the DOM held, from the first screen to the last App shown. */
    mostRows: number;
    load: number;
  };
  /** (c) Idle streams of every App. */
  streams: {
    open: number;
    heapBefore: number | undefined;
    heapWith: number | undefined;
    perStream: number | undefined;
    /** The resident size's growth per stream (socket buffers and all, no GC forced). */
    rssPerStream: number | undefined;
    load: number;
  };
  operatorRss: number;
}

/** Issue #25's targets. */
export const TARGETS = {
  paintP99Ms: 1000,
  snapshotGzipBytes: 1.5 * 1000 * 1000,
  firstScreenMs: 500,
  perStreamBytes: 64 * 1024,
  mostRows: 50,
} as const;

const REVIEWS = ['create tokenreviews', 'create subjectaccessreviews'];

/** The prefix of a request key for an informer's own renewal of its watch (renewalKey). */
export const RENEWAL = 'renew ';

/**
 * The key of a watch that is an informer's renewal, or undefined: the operator's informers ask
 * each watch for a server-side timeoutSeconds between 300 and 600 (src/kube/informer.ts) and
 * then watch again from where they were, whatever the dashboard does; a window of 2 minutes
 * holds some of them at random. Anything else (a watch without such a timeout) is counted as
 * a watch.
 */
export function renewalKey(
  verb: string,
  resource: string | undefined,
  requestURI: string | undefined,
): string | undefined {
  if (verb !== 'watch' || requestURI === undefined) return undefined;
  const timeout = Number(new URLSearchParams(requestURI.split('?')[1] ?? '').get('timeoutSeconds'));
  return timeout >= 300 && timeout <= 600 ? `${RENEWAL}watch ${resource ?? ''}`.trimEnd() : undefined;
}

/** A window's requests by kind: watches and lists (which must be 0), the reviews, and everything else. */
export function operatorRequests(counts: Counts): {
  watch: number;
  list: number;
  reviews: number;
  renewals: Counts;
  other: Counts;
} {
  let watch = 0;
  let list = 0;
  let reviews = 0;
  const renewals: Counts = {};
  const other: Counts = {};
  for (const [key, n] of Object.entries(counts)) {
    const verb = key.split(' ')[0];
    if (key.startsWith(RENEWAL)) renewals[key.slice(RENEWAL.length)] = n;
    else if (verb === 'watch') watch += n;
    else if (verb === 'list') list += n;
    else if (REVIEWS.includes(key)) reviews += n;
    else other[key] = n;
  }
  return { watch, list, reviews, renewals, other };
}

/** What a window adds to the window without tabs, request by request (never below 0). */
export function added(window: Counts, baseline: Counts): Counts {
  const out: Counts = {};
  for (const [key, n] of Object.entries(window)) {
    const more = n - (baseline[key] ?? 0);
    if (more > 0) out[key] = more;
  }
  return out;
}

const kib = (bytes: number | undefined) => (bytes === undefined ? '–' : `${num(bytes / 1024, 1)} KiB`);
const mib = (bytes: number | undefined) => (bytes === undefined ? '–' : `${num(bytes / MiB, 2)} MiB`);
const ms = (value: number | undefined) => (value === undefined ? '–' : `${num(value)} ms`);
const met = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'yes' : '**no**');
const within = (value: number | undefined, most: number) => (value === undefined ? undefined : value <= most);
const counts = (c: Counts) =>
  Object.keys(c).length === 0
    ? 'none'
    : Object.entries(c)
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');

/** The markdown table: each figure, its target, whether it is met, and the load it was taken under. */
export function dashboardTable(f: DashboardFigures): string {
  const baseline = f.windows.find((w) => w.tabs === 0);
  const lines = ['| figure | measured | target | met | load (1-min avg) |', '| --- | --- | --- | --- | --- |'];
  for (const w of f.windows.filter((x) => x.tabs > 0)) {
    const more = added(w.requests, baseline?.requests ?? {});
    const kinds = operatorRequests(more);
    lines.push(
      `| (a) requests added by ${w.tabs} open tab${w.tabs > 1 ? 's' : ''} over ${w.seconds} s | ${kinds.watch} watches, ${kinds.list} lists, ${kinds.reviews} reviews, other: ${counts(kinds.other)}; informers' own watch renewals: ${counts(kinds.renewals)} | 0 watches, 0 lists | ${met(kinds.watch === 0 && kinds.list === 0)} | ${num(w.load, 1)} |`,
    );
  }
  for (const [tabs, c] of Object.entries(f.opening)) {
    const kinds = operatorRequests(c);
    lines.push(
      `| (a) opening ${tabs} tab${Number(tabs) > 1 ? 's' : ''} (login, pages, first data) | ${kinds.watch} watches, ${kinds.list} lists, ${kinds.reviews} reviews, other: ${counts(kinds.other)} | 0 watches, 0 lists | ${met(kinds.watch === 0 && kinds.list === 0)} | |`,
    );
  }
  const l = f.latency;
  lines.push(
    `| (b) change → painted, ${num(l.apps)} Apps, ${l.samples} samples${l.missed ? ` (${l.missed} not painted within 10 s)` : ''} | p50 ${ms(l.p50)}, p99 ${ms(l.p99)} (p99 from the patch sent: ${ms(l.p99FromSent)}) | p99 ≤ ${TARGETS.paintP99Ms} ms | ${met(l.samples > 0 && l.missed === 0 ? within(l.p99, TARGETS.paintP99Ms) : l.samples === 0 ? undefined : false)} | ${num(l.load, 1)} |`,
  );
  const s = f.snapshot;
  lines.push(
    `| (c) snapshot of ${num(f.page.apps)} Apps, gzipped | ${mib(s.gzipped)} (${mib(s.bytes)} raw; GET /api/v1/apps: ${mib(s.listGzipped)} gzipped, ${mib(s.listBytes)} raw) | ≤ 1.5 MB | ${met(within(s.gzipped, TARGETS.snapshotGzipBytes))} | |`,
  );
  const p = f.page;
  lines.push(
    `| (c) first screen after the data came (${p.dataVia ?? 'no data seen'}), ${num(p.apps)} Apps | ${ms(p.firstScreenMs)} | ≤ ${TARGETS.firstScreenMs} ms | ${met(within(p.firstScreenMs, TARGETS.firstScreenMs))} | ${num(p.load, 1)} |`,
    `| (c) App rows in the DOM while scrolling to the last of ${num(p.apps)} | at most ${p.mostRows} | ≤ ${TARGETS.mostRows} | ${met(p.mostRows <= TARGETS.mostRows)} | ${num(p.load, 1)} |`,
  );
  const st = f.streams;
  lines.push(
    `| (c) operator heap per idle stream, ${st.open} streams of ${num(p.apps)} Apps | ${kib(st.perStream)} (heap after GC ${mib(st.heapBefore)} → ${mib(st.heapWith)}; RSS ${kib(st.rssPerStream)} per stream) | ≤ 64 KiB | ${met(st.open > 0 ? within(st.perStream, TARGETS.perStreamBytes) : undefined)} | ${num(st.load, 1)} |`,
  );
  lines.push(`| operator RSS at the end | ${mib(f.operatorRss)} | | | |`);
  return lines.join('\n');
}

export const renderDashboardJson = (f: DashboardFigures): string => JSON.stringify({ dashboard: f });
