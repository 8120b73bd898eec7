// One controller at one size, in its own namespace: start it empty, converge
// N Apps, idle, restart it cold, then promote M of them one by one. Every
// figure is taken with the 1-minute load average of that moment.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig, V1Service } from '@kubernetes/client-node';
import { type AuditEvent, addEvent, auditTime, type Counts, counted, WRITE_VERBS } from './audit.ts';
import type { AuditLog } from './audit-log.ts';
import { cpuSeconds, loadAverage, memory } from './proc.ts';
import { percentile } from './stats.ts';
import type { Clients, Running, ServiceObject, Subject, Workload } from './subjects.ts';
import { IMAGE } from './subjects.ts';
import { Tracker } from './tracker.ts';

export interface Figure {
  value: number | undefined;
  load: number;
}

const figure = (value: number | undefined): Figure => ({ value, load: loadAverage() });

export interface RunResult {
  controller: Subject['id'];
  title: string;
  apps: number;
  /** Started on an empty namespace, once ready: its base. */
  empty: { rss: Figure; heap: Figure };
  converge: {
    seconds: Figure;
    converged: number;
    cpuSeconds: number;
    /** VmHWM at the end: the highest RSS so far, the convergence included. */
    peakRss: Figure;
    requests: Counts;
  };
  idle: { seconds: number; rss: Figure; heap: Figure; perMinute: Figure; requests: Counts };
  cold: {
    seconds: Figure;
    readySeconds: number | undefined;
    /** Whether it went quiet within the bound; if not, seconds is the bound. */
    steady: boolean;
    writes: number;
    requests: Counts;
    peakRss: Figure;
  };
  promote: {
    latenciesMs: number[];
    p50: Figure;
    p90: Figure;
    p99: Figure;
    /**
     * The promote request's own round trip (sent to acknowledged), per promotion: the
     * API round trip the switch latency is judged against (issue #14: p99 within two).
     * Absent in runs saved before it was measured.
     */
    requestMs?: number[];
    /** Promotions whose Service never switched within the bound. */
    never: number;
    /** Image changes that never reached a paused preview within the bound. */
    noPreview: number;
    requests: Counts;
  };
}

export interface ScenarioOptions {
  apps: number;
  promotions: number;
  idleSeconds: number;
  /** No write by the controller for this long means it is steady. */
  quietMs: number;
  /** How many creates the bench keeps in flight. */
  createConcurrency: number;
  /** How long an App must stay paused on its preview, unchanged, before the bench promotes it. */
  promoteAfterMs: number;
  log: (line: string) => void;
}

/** Bounds against a controller that never gets there; the bench then reports it instead of hanging. */
const READY_BOUND_MS = 5 * 60_000;
const PREVIEW_BOUND_MS = 2 * 60_000;
const SWITCH_BOUND_MS = 60_000;
// Measured at 1,000 Apps under load 12: Teal converged in 7 min, Argo in 8 and went steady after a
// restart in 85 s (its client is limited to 40 requests a second). The bounds grow with N to match.
const convergeBoundMs = (apps: number) => 10 * 60_000 + apps * 1_000;
const steadyBoundMs = (apps: number) => 5 * 60_000 + apps * 200;

interface Context {
  subject: Subject;
  audit: AuditLog;
  opts: ScenarioOptions;
  objects: Tracker<Workload>;
  services: Tracker<ServiceObject>;
  converged: Set<string>;
  /** When the bench last saw each object change. */
  changedAt: Map<string, number>;
  /** Per active Service, its selected hash and when the bench saw it change to that. */
  switches: Map<string, { hash: string | undefined; at: number }>;
}

export async function runScenario(
  subject: Subject,
  kc: KubeConfig,
  clients: Clients,
  audit: AuditLog,
  opts: ScenarioOptions,
): Promise<RunResult> {
  const ctx = await track(subject, kc, clients, audit, opts);
  let running: Running | undefined;
  try {
    opts.log(`${subject.id} ${opts.apps}: starting on an empty namespace`);
    running = await subject.start();
    const readyAt = await waitReady(running, performance.now());
    if (readyAt === undefined) throw new Error(`${subject.title} never became ready`);
    await sleep(5_000);
    const empty = { rss: figure(memory(running.pid).rss), heap: figure(await running.heap()) };
    const converge = await convergeApps(ctx, running);
    await untilQuiet(ctx, running, performance.now(), audit.mark());
    const idle = await idleFor(ctx, running);
    await running.stop();
    const cold = await coldStart(ctx);
    running = cold.running;
    const promote = await promoteLoop(ctx);
    await running.stop();
    return {
      controller: subject.id,
      title: subject.title,
      apps: opts.apps,
      empty,
      converge,
      idle,
      cold: cold.result,
      promote,
    };
  } finally {
    await running?.stop();
    await ctx.objects.stop();
    await ctx.services.stop();
  }
}

async function track(subject: Subject, kc: KubeConfig, clients: Clients, audit: AuditLog, opts: ScenarioOptions) {
  const ns = subject.namespace;
  await clients.core.createNamespace({ body: { metadata: { name: ns } } });
  const converged = new Set<string>();
  const changedAt = new Map<string, number>();
  const switches = new Map<string, { hash: string | undefined; at: number }>();
  const objects = new Tracker<Workload>(kc, subject.objectsPath, subject.list, undefined, (obj, at) => {
    changedAt.set(obj.metadata?.name ?? '', at);
    if (subject.converged(obj)) converged.add(obj.metadata?.name ?? '');
  });
  const services = new Tracker<ServiceObject>(
    kc,
    `/api/v1/namespaces/${ns}/services`,
    () => clients.core.listNamespacedService({ namespace: ns, labelSelector: subject.activeServices }),
    subject.activeServices,
    (svc: V1Service, at) => {
      const name = svc.metadata?.name ?? '';
      const hash = subject.selectedHash(svc);
      if (switches.get(name)?.hash !== hash) switches.set(name, { hash, at });
    },
  );
  await objects.start();
  await services.start();
  return { subject, audit, opts, objects, services, converged, changedAt, switches } satisfies Context;
}

/** The moment (performance.now()) it first answered ready, polled from since; undefined if never. */
async function waitReady(running: Running, since: number): Promise<number | undefined> {
  while (performance.now() - since < READY_BOUND_MS) {
    if (await running.ready()) return performance.now();
    await sleep(100);
  }
  return undefined;
}

export const appName = (i: number) => `app-${String(i).padStart(5, '0')}`;

async function convergeApps(ctx: Context, running: Running): Promise<RunResult['converge']> {
  const { subject, opts, audit } = ctx;
  const names = Array.from({ length: opts.apps }, (_, i) => appName(i));
  const { prepare } = subject;
  if (prepare) await inPool(names, opts.createConcurrency, (name) => prepare(name));
  const from = audit.mark();
  const cpu0 = cpuSeconds(running.pid);
  const t0 = performance.now();
  await inPool(names, opts.createConcurrency, (name) => subject.create(name));
  opts.log(`${subject.id} ${opts.apps}: created in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // Checked on every event: resolves on the one that converges the last App.
  await ctx.objects.until(() => ctx.converged.size >= opts.apps, convergeBoundMs(opts.apps));
  const seconds = figure((performance.now() - t0) / 1000);
  const peakRss = figure(memory(running.pid).peak);
  opts.log(`${subject.id} ${opts.apps}: ${ctx.converged.size} converged in ${seconds.value?.toFixed(1)} s`);
  return {
    seconds,
    converged: ctx.converged.size,
    cpuSeconds: cpuSeconds(running.pid) - cpu0,
    peakRss,
    requests: countOwn(ctx, from, audit.mark()),
  };
}

/** Runs work over items with at most limit in flight. */
async function inPool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function countOwn(ctx: Context, from: number, to: number): Counts {
  const counts: Counts = {};
  ctx.audit.scan(from, to, (e) => {
    if (counted(e) && ctx.subject.own(e)) addEvent(counts, e);
  });
  return counts;
}

const isOwnWrite = (ctx: Context, e: AuditEvent) => counted(e) && ctx.subject.own(e) && WRITE_VERBS.has(e.verb);

/**
 * Waits until the controller has written nothing for quietMs, after it is
 * ready; returns the epoch ms of its last write since the audit log's
 * position from (undefined: none), and whether it went quiet within the
 * bound, counted from since (performance.now()).
 */
async function untilQuiet(
  ctx: Context,
  running: Running,
  since: number,
  from: number,
): Promise<{ lastWrite: number | undefined; quiet: boolean; writes: number }> {
  const sinceEpoch = Date.now() - (performance.now() - since);
  let pos = from;
  let lastWrite: number | undefined;
  let writes = 0;
  let quietFrom = Date.now();
  while (Date.now() - sinceEpoch < steadyBoundMs(ctx.opts.apps)) {
    await sleep(1_000);
    const end = ctx.audit.mark();
    ctx.audit.scan(pos, end, (e) => {
      if (!isOwnWrite(ctx, e)) return;
      writes++;
      const at = auditTime(e) ?? Date.now();
      if (lastWrite === undefined || at > lastWrite) lastWrite = at;
    });
    pos = end;
    if (lastWrite !== undefined) quietFrom = Math.max(quietFrom, lastWrite);
    if (Date.now() - quietFrom >= ctx.opts.quietMs && (await running.ready()))
      return { lastWrite, quiet: true, writes };
  }
  return { lastWrite, quiet: false, writes };
}

async function idleFor(ctx: Context, running: Running): Promise<RunResult['idle']> {
  const { opts, audit } = ctx;
  opts.log(`${ctx.subject.id} ${opts.apps}: idle for ${opts.idleSeconds} s`);
  const from = audit.mark();
  await sleep(opts.idleSeconds * 1000);
  const requests = countOwn(ctx, from, audit.mark());
  const total = Object.values(requests).reduce((a, b) => a + b, 0);
  return {
    seconds: opts.idleSeconds,
    perMinute: figure((total * 60) / opts.idleSeconds),
    rss: figure(memory(running.pid).rss),
    heap: figure(await running.heap()),
    requests,
  };
}

/**
 * Restarted with every App converged: the time from the start to the later of
 * ready and its last write before quietMs without one, and what it wrote.
 */
async function coldStart(ctx: Context): Promise<{ result: RunResult['cold']; running: Running }> {
  const { subject, opts, audit } = ctx;
  opts.log(`${subject.id} ${opts.apps}: cold start`);
  const from = audit.mark();
  const t0 = performance.now();
  const startEpoch = Date.now();
  const running = await subject.start();
  const readyAt = await waitReady(running, t0);
  const quiet = await untilQuiet(ctx, running, t0, from);
  const readyMs = readyAt === undefined ? undefined : readyAt - t0;
  const lastWriteMs = quiet.lastWrite === undefined ? 0 : quiet.lastWrite - startEpoch;
  const seconds = quiet.quiet ? Math.max(readyMs ?? 0, lastWriteMs) / 1000 : steadyBoundMs(opts.apps) / 1000;
  const requests = countOwn(ctx, from, audit.mark());
  const writes = Object.entries(requests)
    .filter(([key]) => WRITE_VERBS.has(key.split(' ')[0] as string))
    .reduce((a, [, n]) => a + n, 0);
  opts.log(`${subject.id} ${opts.apps}: steady after ${seconds.toFixed(1)} s, ${writes} writes`);
  return {
    running,
    result: {
      seconds: figure(seconds),
      readySeconds: readyMs === undefined ? undefined : readyMs / 1000,
      steady: quiet.quiet,
      writes,
      requests,
      peakRss: figure(memory(running.pid).peak),
    },
  };
}

async function promoteLoop(ctx: Context): Promise<RunResult['promote']> {
  const { subject, opts, audit } = ctx;
  const count = Math.min(opts.promotions, opts.apps);
  opts.log(`${subject.id} ${opts.apps}: ${count} promotions`);
  const from = audit.mark();
  const latencies: number[] = [];
  const requestMs: number[] = [];
  let never = 0;
  let noPreview = 0;
  for (let i = 0; i < count; i++) {
    const outcome = await promoteOne(ctx, appName(i));
    if (outcome === 'no-preview') noPreview++;
    else {
      requestMs.push(outcome.requestMs);
      if (outcome.switchMs === undefined) never++;
      else latencies.push(outcome.switchMs);
    }
  }
  const load = loadAverage();
  const at = (p: number) => ({ value: percentile(latencies, p), load });
  return {
    latenciesMs: latencies,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    requestMs,
    never,
    noPreview,
    requests: countOwn(ctx, from, audit.mark()),
  };
}

/**
 * Paused on its preview, and unchanged for promoteAfterMs: promoted as a
 * person or a pipeline would, after seeing it paused, not within a
 * millisecond of the controller's own last status write (see
 * docs/benchmark.md on Argo's stalls).
 */
async function pausedAndSettled(ctx: Context, name: string): Promise<boolean> {
  const { subject, objects, changedAt, opts } = ctx;
  const deadline = performance.now() + PREVIEW_BOUND_MS;
  const paused = () => {
    const obj = objects.objects.get(name);
    return obj !== undefined && subject.pausedOnPreview(obj);
  };
  while (performance.now() < deadline) {
    if (!(await objects.until(paused, deadline - performance.now()))) return false;
    const quietFor = performance.now() - (changedAt.get(name) ?? 0);
    if (quietFor >= opts.promoteAfterMs && paused()) return true;
    await sleep(Math.max(10, opts.promoteAfterMs - quietFor));
  }
  return false;
}

/**
 * New image, paused on its preview, promoted: the milliseconds from the
 * promote request acknowledged to the active Service switched, as the
 * bench's watch saw it (undefined: never), and the request's own round trip.
 */
async function promoteOne(
  ctx: Context,
  name: string,
): Promise<{ switchMs: number | undefined; requestMs: number } | 'no-preview'> {
  const { subject, switches } = ctx;
  await subject.setImage(name, `${IMAGE}:2`);
  if (!(await pausedAndSettled(ctx, name))) return 'no-preview';
  const old = switches.get(name)?.hash;
  const sent = performance.now();
  await subject.promote(name);
  const acked = performance.now();
  const switched = await ctx.services.until(() => switches.get(name)?.hash !== old, SWITCH_BOUND_MS);
  const at = switches.get(name)?.at;
  return { switchMs: switched && at !== undefined ? at - acked : undefined, requestMs: acked - sent };
}
