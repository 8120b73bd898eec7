// One cell group of the traffic bench (bench/traffic.ts): a column (a
// controller and its way of switching) through one scenario, N switches, with
// traffic on both paths at once: kube-proxy's ClusterIP of the active Service,
// and the pod-aware load balancer model in front of it. Also run, with a few
// switches, by test/e2e/traffic-switch.test.ts.
//
// Every step waits on a condition the controller or the data plane shows
// (waitFor polls it); the only clock is the traffic loop's own rate.
import { readFileSync } from 'node:fs';
import type { DataPlane, Traffic, TrafficStats } from '../test/cluster/data-plane.ts';
import { waitFor } from '../test/support/wait.ts';
import type { Column } from './traffic-columns.ts';
import { type Sent, type Switch, type Verdict, verdict } from './traffic-verdict.ts';

export const SCENARIOS = ['promote', 'undo', 'abort', 'kill'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export const PATHS = ['clusterIP', 'lb'] as const;
export type PathId = (typeof PATHS)[number];

export const IMAGE = 'registry.example.com/bench/web';
/** Answers in a row from one revision that show a path is on it. */
const PATH_SETTLED = 10;

export interface ScenarioOptions {
  switches: number;
  rps: number;
  timeoutMs: number;
  /** The load balancer model's delays; no load balancer path without them. */
  lb?: { healthCheckDelayMs: number; drainDelayMs: number };
  /** The bound of each wait: against a hang, not a figure. */
  waitMs: number;
  /** How long the object must stay unchanged before the bench writes (Argo ignores a promote landing on its own write). */
  calmMs: number;
  log: (line: string) => void;
}

/** The scenario's controller: `kill` is SIGKILL and a new start, for the kill scenario. */
export interface ControllerHandle {
  killAndRestart(): Promise<void>;
}

export interface PathResult {
  path: PathId;
  verdict: Verdict;
  sent: number;
  skipped: number;
  achievedRps: number;
  maxLateMs: number;
  loopDelayMs: { p99: number; max: number };
}

export interface ScenarioResult {
  column: string;
  scenario: Scenario;
  /** Measured switches carried out to the end. */
  switches: number;
  /** Why the scenario stopped before its N switches, if it did. */
  error?: string;
  paths: PathResult[];
  /** Every switch written: measured or set-up, from and to which revision, when. */
  written: Switch[];
  /** The 1-minute load average at the start and the end. */
  load: [number, number];
  durationMs: number;
}

const loadAverage = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

/** Answers as the verdict reads them: epoch times, the revision that took a failed request. */
function sentOf(stats: TrafficStats): Sent[] {
  return stats.answers.map((a) => ({
    sentAt: stats.startedAt + a.t,
    answeredAt: stats.startedAt + a.t + (a.ms ?? 0),
    ...(a.revision === undefined ? {} : { revision: a.revision }),
    ...(a.error === undefined ? {} : { error: a.error }),
    ...(a.phase === undefined ? {} : { phase: a.phase }),
    ...(a.via === undefined ? {} : { viaRevision: a.via.revision }),
  }));
}

/** A step of a scenario: the column's writes, and waits on what they lead to. */
class Run {
  readonly switches: Switch[] = [];
  /** The image of the revision serving now, and of the latest preview. */
  activeImage = '';
  previewImage = '';
  private image = 0;
  private readonly column: Column;
  private readonly name: string;
  private readonly opts: ScenarioOptions;

  constructor(column: Column, name: string, opts: ScenarioOptions) {
    this.column = column;
    this.name = name;
    this.opts = opts;
  }

  nextImage(): string {
    this.image += 1;
    return `${IMAGE}:${this.image}`;
  }

  wait<T>(what: string, check: () => Promise<T | undefined>, intervalMs = 100): Promise<T> {
    return waitFor(`${this.column.id} ${this.name}: ${what}`, check, { timeoutMs: this.opts.waitMs, intervalMs });
  }

  async active(): Promise<string> {
    return this.wait('the active revision', () => this.column.activeRevision(this.name));
  }

  /** Unchanged for calmMs: as a person or a pipeline promotes, not within a millisecond of the controller's write. */
  async calm(): Promise<void> {
    let last = { version: await this.column.version(this.name), since: Date.now() };
    await this.wait('the object to be calm', async () => {
      const version = await this.column.version(this.name);
      const now = Date.now();
      if (last.version !== version) last = { version, since: now };
      return now - last.since >= this.opts.calmMs ? true : undefined;
    });
  }

  /** A new image, and the revision it makes once its preview is available and waits for promotion. */
  async preview(): Promise<string> {
    this.previewImage = this.nextImage();
    await this.column.setImage(this.name, this.previewImage);
    const revision = await this.wait('a preview waiting for promotion', () => this.column.waitingPreview(this.name));
    await this.calm();
    return revision;
  }

  /** Only `revision`'s pods left, terminating ones gone too: the old revision has been scaled down. */
  async onlyPodsOf(revision: string): Promise<void> {
    await this.wait(`only pods of ${revision}`, async () => {
      const pods = await this.column.pods(this.name);
      return [...pods.keys()].every((r) => r === revision) && (pods.get(revision) ?? 0) > 0 ? true : undefined;
    });
  }

  async settled(revision: string): Promise<void> {
    await this.wait(`${revision} active`, async () =>
      (await this.column.switched(this.name, revision)) && (await this.column.activeRevision(this.name)) === revision
        ? true
        : undefined,
    );
    await this.onlyPodsOf(revision);
  }

  /** The traffic loops of the paths, once started. */
  loops: Traffic[] = [];

  /**
   * Every path answers `revision`: its latest PATH_SETTLED answers all came from it. The next write
   * waits for this, so that a path still catching up with one switch (kube-proxy's sync period, the
   * load balancer's registration) is not taken for the next switch's flap.
   */
  async pathsOn(revision: string): Promise<void> {
    for (const loop of this.loops) {
      await this.wait(`the path to answer ${revision}`, async () => {
        const recent = (await loop.stats()).answers.slice(-PATH_SETTLED);
        return recent.length === PATH_SETTLED && recent.every((a) => a.revision === revision) ? true : undefined;
      });
    }
  }

  /** Sends the write, and records the switch from the moment it was sent. */
  async write(measured: boolean, from: string, to: string, send: () => Promise<void>): Promise<void> {
    const writtenAt = Date.now();
    await send();
    this.switches.push({ measured, from, to, writtenAt });
  }
}

async function promoteOnce(run: Run, column: Column, name: string, kill?: ControllerHandle): Promise<void> {
  const from = await run.active();
  const to = await run.preview();
  await run.write(true, from, to, () => column.promote(name));
  if (kill) {
    // Right after the switch's first write, as the bench's fast poll sees it: the active Service
    // selects the new revision, or (ping-pong) the route's weights moved to its slot.
    await run.wait('the switch to be written', async () =>
      (column.switchWritten ? await column.switchWritten(name, to) : (await column.activeRevision(name)) === to)
        ? true
        : undefined,
    );
    await kill.killAndRestart();
  }
  await run.settled(to);
  await run.pathsOn(to);
  run.activeImage = run.previewImage;
}

async function undoOnce(run: Run, column: Column, name: string): Promise<void> {
  const from = await run.active();
  const fromImage = run.activeImage;
  const to = await run.preview();
  await run.write(false, from, to, () => column.promote(name));
  await run.wait(`${to} switched`, async () => ((await column.switched(name, to)) ? true : undefined));
  await run.pathsOn(to);
  await run.calm();
  // Back while the revision it replaced is still up (inside its scale-down delay).
  await run.write(true, to, from, () => column.undo(name, fromImage));
  if (column.undoWaitsForPromote) {
    // Argo previews the revision it returns to and waits for a promote, unless that revision is
    // still up and available, which it makes active at once.
    const paused = await run.wait('the undo waiting for promotion or done', async () => {
      if ((await column.waitingPreview(name)) === from) return true;
      return (await column.switched(name, from)) ? false : undefined;
    });
    if (paused) {
      await run.calm();
      await column.promote(name);
    }
  }
  await run.settled(from);
  await run.pathsOn(from);
}

async function abortOnce(run: Run, column: Column, name: string): Promise<void> {
  const stable = await run.active();
  const aborted = await run.preview();
  await run.write(true, stable, stable, () => column.abort(name));
  await run.wait('the abort taken', async () => ((await column.abortTaken(name, aborted)) ? true : undefined));
  await run.onlyPodsOf(stable);
  await run.pathsOn(stable);
}

async function once(run: Run, scenario: Scenario, column: Column, name: string, kill: ControllerHandle) {
  if (scenario === 'promote') return promoteOnce(run, column, name);
  if (scenario === 'kill') return promoteOnce(run, column, name, kill);
  if (scenario === 'undo') return undoOnce(run, column, name);
  return abortOnce(run, column, name);
}

interface Loops {
  clusterIP: Traffic;
  lb?: Traffic;
}

async function startPaths(
  dp: DataPlane,
  column: Column,
  name: string,
  run: Run,
  opts: ScenarioOptions,
): Promise<{ loops: Loops; stopLb: () => Promise<void> }> {
  const url = await column.clusterUrl(name);
  const first = await run.active();
  await run.wait(`the ClusterIP answering ${first}`, async () =>
    (await dp.request(url, opts.timeoutMs)).revision === first ? true : undefined,
  );
  const loops: Loops = {
    clusterIP: await dp.traffic(url, { rps: opts.rps, timeoutMs: opts.timeoutMs }),
  };
  run.loops = [loops.clusterIP];
  if (!opts.lb) return { loops, stopLb: async () => {} };
  if (column.lbUrl) {
    // The column's own gateway, started with the App (and stopped by its remove).
    const url = column.lbUrl(name);
    await run.wait('the gateway to answer the first revision', async () =>
      (await dp.request(url, opts.timeoutMs)).revision === first ? true : undefined,
    );
    loops.lb = await dp.traffic(url, { rps: opts.rps, timeoutMs: opts.timeoutMs });
    run.loops = [loops.clusterIP, loops.lb];
    return { loops, stopLb: async () => {} };
  }
  const lb = await dp.loadBalancer({
    name: `${column.id}-${name}`,
    namespace: column.namespace,
    service: name,
    ...opts.lb,
  });
  await run.wait('the load balancer to register the first revision', async () => {
    const healthy = lb.targets().filter((t) => t.state === 'healthy');
    return healthy.length > 0 && (await dp.request(lb.url, opts.timeoutMs)).revision === first ? true : undefined;
  });
  loops.lb = await dp.traffic(lb.url, { rps: opts.rps, timeoutMs: opts.timeoutMs });
  run.loops = [loops.clusterIP, loops.lb];
  return { loops, stopLb: () => lb.stop() };
}

function pathResult(path: PathId, stats: TrafficStats, switches: Switch[]): PathResult {
  return {
    path,
    verdict: verdict(sentOf(stats), switches),
    sent: stats.sent,
    skipped: stats.skipped,
    achievedRps: stats.achievedRps,
    maxLateMs: stats.maxLateMs,
    loopDelayMs: stats.loopDelayMs,
  };
}

/**
 * The scenario on a fresh App (or Rollout) named after it: the first release, the paths
 * answering it, then N switches with traffic on both paths, then everything removed.
 */
export async function runScenario(
  column: Column,
  scenario: Scenario,
  dp: DataPlane,
  kill: ControllerHandle,
  opts: ScenarioOptions,
): Promise<ScenarioResult> {
  const name = `web-${scenario}`;
  const started = Date.now();
  const load: [number, number] = [loadAverage(), 0];
  const run = new Run(column, name, opts);
  run.activeImage = run.nextImage();
  await column.create(name, run.activeImage);
  let error: string | undefined;
  let done = 0;
  let paths: PathResult[] = [];
  try {
    await run.settled(await run.active());
    const { loops, stopLb } = await startPaths(dp, column, name, run, opts);
    try {
      for (; done < opts.switches; done++) {
        await once(run, scenario, column, name, kill);
        opts.log(`${column.id} ${scenario}: switch ${done + 1} of ${opts.switches} done`);
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      opts.log(`${column.id} ${scenario}: stopped after ${done} switches: ${error}`);
    }
    // A switch written but not carried out stays in: its requests are counted, the error beside them.
    paths = [pathResult('clusterIP', await loops.clusterIP.stop(), run.switches)];
    if (loops.lb) paths.push(pathResult('lb', await loops.lb.stop(), run.switches));
    await stopLb();
  } finally {
    await column.remove(name);
    await waitFor(`${column.id} ${name}: its pods gone`, async () =>
      (await column.pods(name)).size === 0 ? true : undefined,
    ).catch((err) => opts.log(String(err)));
  }
  load[1] = loadAverage();
  return {
    column: column.id,
    scenario,
    switches: done,
    ...(error ? { error } : {}),
    paths,
    written: run.switches,
    load,
    durationMs: Date.now() - started,
  };
}
