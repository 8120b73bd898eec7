// The kubectl plugin's speed as a user feels it (make bench-cli; docs/benchmark.md):
// on one local control plane with one App, in one run and interleaved round by
// round, so every command meets the same cluster and the same load:
//   - `kubectl get app APP -o json`, kubectl's own read of the App (the yardstick);
//   - `kubectl teal get APP` and `kubectl teal version`, each from the bundle
//     (dist/cli, what bin/kubectl-teal runs), from the sources, and as the single
//     executable (dist/cli/standalone, what krew installs);
//   - `node -e 0` with the plugin's Node: the floor of any Node command on this machine now.
// Each is timed from spawn to exit through the real kubectl, which finds the plugin
// on PATH. Rounds before --runs warm the compile cache and the page cache up.
// Prints a markdown table (median, p90, the mean CPU time (user and system) of
// the command's whole process tree, kubectl's included, which the load changes
// less than the time, and the 1-minute load average over the samples) and one
// JSON line.
//
//   node bench/cli.ts [--runs 30] [--warmup 3] [--plugin DIR]   (DIR: a bin/ with another kubectl-teal, run as "other")
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { stringify } from 'yaml';
import { kubectlApply, kubectlOutput, startCluster, stopCluster, waitForOutput } from '../test/cluster/cluster.ts';
import { e2eApp } from '../test/fixtures/apps.ts';
import { childrenCpuSeconds, loadAverage } from './proc.ts';
import { num, percentile } from './stats.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const log = (line: string) => console.error(`bench-cli: ${line}`);

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '3' },
    plugin: { type: 'string' },
  },
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: a positive integer, got ${values.runs}`);
if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`--warmup: an integer ≥ 0, got ${values.warmup}`);
const BUNDLE = join(root, 'dist/cli/kubectl-teal.js');
if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "make cli" first`);
/** The single executable for this machine (scripts/standalone-cli.ts). */
const STANDALONE = join(root, `dist/cli/standalone/kubectl-teal-linux-${process.arch === 'arm64' ? 'arm64' : 'amd64'}`);
if (!existsSync(join(STANDALONE, 'kubectl-teal'))) throw new Error(`${STANDALONE} is missing: run "make cli" first`);

const NAMESPACE = 'bench';
const APP = 'web';
const NODE = join(root, 'node_modules/.bin/node');

/** One command measured: what it runs, with which plugin on PATH. */
interface Subject {
  name: string;
  args: string[];
  /** A bin/ folder put first on PATH (the plugin), and TEAL_CLI_FROM. */
  bin?: string;
  from?: 'bundle' | 'source';
  /** Not through kubectl: the program itself. */
  program?: string;
}

interface Samples {
  ms: number[];
  /** CPU time (user and system) of the command's processes, ms. */
  cpu: number[];
  loads: number[];
}

function subjects(): Subject[] {
  const bin = join(root, 'bin');
  const get = ['teal', 'get', APP, '-n', NAMESPACE];
  const list: Subject[] = [
    { name: `kubectl get app ${APP} -o json`, args: ['get', 'app', APP, '-n', NAMESPACE, '-o', 'json'] },
    { name: `kubectl teal get ${APP} (bundle)`, args: get, bin, from: 'bundle' },
    { name: `kubectl teal get ${APP} (source)`, args: get, bin, from: 'source' },
    { name: `kubectl teal get ${APP} (single executable)`, args: get, bin: STANDALONE },
    { name: 'kubectl teal version (bundle)', args: ['teal', 'version'], bin, from: 'bundle' },
    { name: 'kubectl teal version (source)', args: ['teal', 'version'], bin, from: 'source' },
    { name: 'kubectl teal version (single executable)', args: ['teal', 'version'], bin: STANDALONE },
    { name: 'node -e 0', args: ['-e', '0'], program: NODE },
  ];
  if (values.plugin) {
    list.push(
      { name: `kubectl teal get ${APP} (other)`, args: get, bin: values.plugin },
      { name: 'kubectl teal version (other)', args: ['teal', 'version'], bin: values.plugin },
    );
  }
  return list;
}

/** Wall time and CPU time of one run, ms. */
async function timeOnce(s: Subject, kubectl: string, env: NodeJS.ProcessEnv): Promise<{ ms: number; cpu: number }> {
  const { TEAL_CLI_FROM: _from, ...base } = env;
  const cpuBefore = childrenCpuSeconds();
  const started = process.hrtime.bigint();
  await run(s.program ?? kubectl, s.args, {
    env: {
      ...base,
      ...(s.from ? { TEAL_CLI_FROM: s.from } : {}),
      PATH: [...(s.bin ? [s.bin] : []), base.PATH ?? ''].join(delimiter),
      NO_COLOR: '1',
    },
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { ms, cpu: (childrenCpuSeconds() - cpuBefore) * 1000 };
}

async function main(): Promise<void> {
  const cluster = await startCluster({ name: 'teal-bench-cli', log });
  try {
    await kubectlApply(cluster, readFileSync(join(root, 'config/crd/teal.dev_apps.yaml'), 'utf8'));
    await waitForOutput(
      cluster,
      'the App CRD to be established',
      ['get', 'crd', 'apps.teal.dev', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'],
      'True',
    );
    await kubectlOutput(cluster, ['create', 'namespace', NAMESPACE]);
    await kubectlApply(cluster, stringify({ ...e2eApp(APP), metadata: { name: APP, namespace: NAMESPACE } }));
    const kubectl = join(cluster.binDir, 'kubectl');
    const env = { ...process.env, ...cluster.env, KUBECONFIG: cluster.kubeconfig };
    const list = subjects();
    const samples = new Map<string, Samples>(list.map((s) => [s.name, { ms: [], cpu: [], loads: [] }]));
    for (let round = 0; round < warmup + runs; round += 1) {
      for (const s of list) {
        const { ms, cpu } = await timeOnce(s, kubectl, env);
        if (round < warmup) continue;
        const into = samples.get(s.name) as Samples;
        into.ms.push(ms);
        into.cpu.push(cpu);
        into.loads.push(loadAverage());
      }
      if (round >= warmup) log(`round ${round - warmup + 1}/${runs} (load ${loadAverage().toFixed(1)})`);
    }
    const rows = list.map((s) => summary(s.name, samples.get(s.name) as Samples));
    console.log(table(rows, rows[0]));
    console.log(JSON.stringify({ runs, warmup, rows }));
  } finally {
    await stopCluster(cluster).catch(() => {});
  }
}

interface Row {
  name: string;
  median: number;
  p90: number;
  /** Mean CPU ms: the kernel counts in 10 ms ticks, so a mean over the runs, not a median. */
  cpu: number;
  loadMin: number;
  loadMedian: number;
  loadMax: number;
}

function summary(name: string, { ms, cpu, loads }: Samples): Row {
  return {
    name,
    median: percentile(ms, 0.5) ?? Number.NaN,
    p90: percentile(ms, 0.9) ?? Number.NaN,
    cpu: cpu.reduce((sum, c) => sum + c, 0) / cpu.length,
    loadMin: Math.min(...loads),
    loadMedian: percentile(loads, 0.5) ?? Number.NaN,
    loadMax: Math.max(...loads),
  };
}

function table(rows: Row[], yardstick: Row | undefined): string {
  const lines = [
    `| command (${runs} runs each, interleaved) | median ms | p90 ms | median ÷ kubectl get | CPU ms (mean) | CPU ÷ kubectl get | load (1-min avg: median, min–max) |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(
      (r) =>
        `| \`${r.name}\` | ${num(r.median)} | ${num(r.p90)} | ${num(r.median / (yardstick?.median ?? Number.NaN), 1)}× | ${num(r.cpu)} | ${num(r.cpu / (yardstick?.cpu ?? Number.NaN), 1)}× | ${num(r.loadMedian, 1)} (${num(r.loadMin, 1)}–${num(r.loadMax, 1)}) |`,
    ),
  ];
  return lines.join('\n');
}

await main();
