// A real Prometheus for the tests, from Debian's package (install-prometheus.sh),
// on 127.0.0.1 with its own configuration and a data folder that goes with it.
// Free of vitest, like the rest of test/cluster, so that `make dev` may use it.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/ports.ts';
import { waitFor } from '../support/wait.ts';
import { type Supervised, supervise } from './supervised.ts';

const here = dirname(fileURLToPath(import.meta.url));

export interface PrometheusOptions {
  /** What it scrapes, each `127.0.0.1:port` (path /metrics), all in one job. */
  targets: string[];
  /** Seconds between scrapes, so a value a test sets shows up quickly. */
  scrapeIntervalSeconds?: number;
  /** The scrape job's name: the `job` label of what it scrapes. */
  job?: string;
  log?: (line: string) => void;
}

export interface Prometheus {
  /** Base URL of its HTTP API, http://127.0.0.1:port */
  url: string;
  port: number;
  pid: number;
  dataDir: string;
  logs: () => string;
  /** SIGTERM, wait for it to exit, and remove its configuration and data. */
  stop: () => Promise<void>;
}

/** The binary: TEAL_PROMETHEUS if set, else Debian's, unpacked into the test cache on first use. */
export async function ensurePrometheus(log: (line: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.TEAL_PROMETHEUS;
  if (fromEnv) return fromEnv;
  const child = execFile('bash', [join(here, 'install-prometheus.sh')]);
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    for (const line of chunk.toString().split('\n')) if (line.startsWith('install-prometheus:')) log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`install-prometheus.sh failed with exit code ${code}:\n${err}`);
  return out.trim().split('\n').at(-1) as string;
}

/** Prometheus's configuration: one job over the given targets, scraped every few seconds. */
export function prometheusConfig(options: PrometheusOptions): string {
  const interval = `${options.scrapeIntervalSeconds ?? 1}s`;
  // JSON is YAML: no quoting rules to get wrong. The timeout may not exceed the
  // interval; honor_labels lets a test's exporter set any label, job and instance too.
  return JSON.stringify(
    {
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      scrape_configs: [
        {
          job_name: options.job ?? 'teal-test',
          honor_labels: true,
          static_configs: [{ targets: options.targets }],
        },
      ],
    },
    null,
    2,
  );
}

/** Starts Prometheus on a free loopback port and waits until it is ready to answer queries. */
export async function startPrometheus(options: PrometheusOptions): Promise<Prometheus> {
  const log = options.log ?? (() => {});
  for (const target of options.targets) assertLoopback(target);
  const binary = await ensurePrometheus(log);
  const workdir = await mkdtemp(join(tmpdir(), 'teal-prometheus-'));
  const configFile = join(workdir, 'prometheus.yml');
  await writeFile(configFile, prometheusConfig(options));
  try {
    return await startOnFreePort(binary, workdir, configFile);
  } catch (err) {
    await rm(workdir, { recursive: true, force: true });
    throw err;
  }
}

/** Another process may take the probed port before Prometheus binds it: then it tries another. */
async function startOnFreePort(binary: string, workdir: string, configFile: string): Promise<Prometheus> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const started = launch(binary, workdir, configFile, port);
    try {
      await waitUntilReady(started, port);
      return handle(started, workdir, port);
    } catch (err) {
      await started.stop();
      if (attempt >= 3 || !started.logs().includes('address already in use')) throw err;
    }
  }
}

function launch(binary: string, workdir: string, configFile: string, port: number): Supervised {
  const dataDir = join(workdir, 'data');
  const child = spawn(
    binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${dataDir}`,
      // Debian's default is 0.0.0.0:9090: never that here.
      `--web.listen-address=127.0.0.1:${port}`,
      // Its own defaults point at /etc/prometheus, which the tests neither have nor need.
      `--web.console.templates=${workdir}`,
      `--web.console.libraries=${workdir}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return supervise(child);
}

async function waitUntilReady(started: Supervised, port: number): Promise<void> {
  // waitFor retries on errors, so an exit is an answer, not a throw: it ends the wait at once.
  const outcome = await waitFor('Prometheus to be ready', async () => {
    if (started.child.exitCode !== null || started.child.signalCode !== null) return 'exited';
    const res = await fetch(`http://127.0.0.1:${port}/-/ready`);
    return res.ok ? 'ready' : undefined;
  });
  if (outcome === 'exited') throw new Error(`prometheus exited (${started.child.exitCode}):\n${started.logs()}`);
}

function handle(started: Supervised, workdir: string, port: number): Prometheus {
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: started.child.pid as number,
    dataDir: join(workdir, 'data'),
    logs: started.logs,
    stop: async () => {
      await started.stop();
      await rm(workdir, { recursive: true, force: true });
    },
  };
}

function assertLoopback(target: string): void {
  if (!target.startsWith('127.0.0.1:')) throw new Error(`scrape target ${target}: tests scrape 127.0.0.1 only`);
}
