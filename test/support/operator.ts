// Runs the operator as a real child process, so a test can kill -9 it.
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch } from 'undici';
import { inject } from 'vitest';
import { WAIT_MS, waitFor } from './kube.ts';
import { freePort } from './ports.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
/** Where the tests' check servers and notification receivers listen. */
export const TEST_EGRESS = '127.0.0.1';

export interface Operator {
  /** The newest start's process. */
  readonly process: ChildProcess;
  healthPort: number;
  /** Every start's output, in order. */
  logs: () => string;
  /** How often it was started again after losing its lease. */
  restarts: () => number;
  /** SIGKILL, no goodbye. */
  kill: () => Promise<void>;
  /** SIGTERM and wait for exit. */
  stop: () => Promise<number | null>;
}

export interface OperatorOptions {
  namespace: string;
  /** Another identity than the test's admin kubeconfig. */
  kubeconfig?: string;
  /** Serve HTTPS with this certificate (PEM files) and trust its CA for the readiness check. */
  tls?: { certFile: string; keyFile: string; ca: string };
  /**
   * Lease timings, as durations (15s, 500ms). The default is client-go's (15/10/2): a busy
   * machine that stalls the operator for a few seconds must not cost it the
   * lease (it exits at once when it loses it). Tests that wait for an expiry
   * may pass shorter ones.
   */
  lease?: { duration: string; renew: string; retry: string };
  extraArgs?: string[];
  /**
   * --egress-allow: where checks and notifications may connect. Every server
   * of the tests listens on 127.0.0.1, which the operator refuses by default;
   * [] runs with that default.
   */
  egressAllow?: string[];
  /**
   * Run with the flags a rendered Deployment gives its container (the test's
   * --kubeconfig and --http-addr replace the in-cluster ones) and its pod namespace.
   */
  deployed?: DeployedOptions;
  /**
   * false: an exit on a lost lease stays an exit, for the tests about losing
   * it or keeping it. By default the operator is started again, as its
   * Deployment would (startOperator).
   */
  restartOnLeaseLoss?: boolean;
  /** node's own flags for this operator (an --import of a fault it is to meet), after TEAL_OPERATOR_NODE_FLAGS. */
  nodeFlags?: string[];
  /** Variables added to its environment. */
  env?: Record<string, string>;
  /**
   * Listen on this port rather than one picked free: an operator started again where a killed
   * one served, so the clients it had (a browser's page) reconnect to it; or a port a test must
   * name before the start (an OIDC redirect URL registered at a provider).
   */
  healthPort?: number;
}

interface DeployedOptions {
  args: string[];
  podNamespace: string;
}

/** One operator process on healthPort, its output collected (and kept on disk). */
interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Its output is whole only once its pipes have closed, which may follow the exit. */
  closed: Promise<unknown>;
}

function spawnRun(options: OperatorOptions, healthPort: number): Run {
  const args = options.deployed ? deployedArgs(options, options.deployed, healthPort) : localArgs(options, healthPort);
  const env = {
    ...process.env,
    ...(options.deployed ? { POD_NAMESPACE: options.deployed.podNamespace } : {}),
    ...options.env,
  };
  // TEAL_OPERATOR_NODE_FLAGS: node's own flags for the operator (--heap-prof, --max-old-space-size=256), to look inside it.
  const nodeFlags = [
    ...(process.env.TEAL_OPERATOR_NODE_FLAGS ?? '').split(' ').filter((f) => f !== ''),
    ...(options.nodeFlags ?? []),
  ];
  const child = spawn(process.execPath, [...nodeFlags, MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  // Also on disk, to read after a failed run: $TMPDIR/teal-e2e-<namespace>.log
  const logFile = join(tmpdir(), `teal-e2e-${options.namespace}.log`);
  let output = '';
  const collect = (c: Buffer) => {
    output += c.toString();
    appendFileSync(logFile, c);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return {
    child,
    output: () => output,
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    closed: new Promise((resolve) => child.once('close', resolve)),
  };
}

function egressArgs(options: OperatorOptions): string[] {
  return (options.egressAllow ?? [TEST_EGRESS]).map((pattern) => `--egress-allow=${pattern}`);
}

/** The flags a rendered Deployment gives its container, with the test's kubeconfig and port. */
function deployedArgs(options: OperatorOptions, deployed: DeployedOptions, healthPort: number): string[] {
  return [
    ...deployed.args.filter((a) => !a.startsWith('--http-addr')),
    `--kubeconfig=${options.kubeconfig ?? inject('kubeconfig')}`,
    `--http-addr=127.0.0.1:${healthPort}`,
    ...egressArgs(options),
    ...(options.extraArgs ?? []),
  ];
}

function localArgs(options: OperatorOptions, healthPort: number): string[] {
  const lease = options.lease ?? { duration: '15s', renew: '10s', retry: '2s' };
  return [
    '--kubeconfig',
    options.kubeconfig ?? inject('kubeconfig'),
    '--namespace',
    options.namespace,
    '--leader-election-namespace',
    options.namespace,
    '--lease-duration',
    lease.duration,
    '--renew-deadline',
    lease.renew,
    '--retry-period',
    lease.retry,
    '--http-addr',
    `127.0.0.1:${healthPort}`,
    '--log-level',
    'debug',
    ...(options.tls ? ['--tls-cert-file', options.tls.certFile, '--tls-key-file', options.tls.keyFile] : []),
    ...egressArgs(options),
    ...(options.extraArgs ?? []),
  ];
}

/** Waits until the run answers /readyz, or has exited ('exited': a throw would only be retried until the deadline). */
async function ready(options: OperatorOptions, run: Run, healthPort: number): Promise<'ready' | 'exited'> {
  const dispatcher = options.tls ? new Agent({ connect: { ca: options.tls.ca } }) : undefined;
  const scheme = options.tls ? 'https' : 'http';
  return waitFor(
    'the operator to be ready',
    async () => {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return 'exited';
      const res = await fetch(`${scheme}://127.0.0.1:${healthPort}/readyz`, dispatcher ? { dispatcher } : {});
      return res.ok ? 'ready' : undefined;
    },
    { timeoutMs: WAIT_MS },
  );
}

/** What the operator logs as it exits on a lost lease (src/manager.ts exitNow). */
const LOST_LEASE = 'lost the lease: aborted the API requests in flight, exiting without draining';

/** Starts made on fresh ports when the one picked was taken before the operator could listen on it. */
const PORT_ATTEMPTS = 3;

/**
 * Starts the operator and waits until it is ready. freePort() frees the port
 * it found, and on a busy machine another process (a component of another
 * test cluster) may take it first: the operator then exits with EADDRINUSE,
 * and is started again on a port picked anew.
 */
async function firstRun(options: OperatorOptions): Promise<{ run: Run; healthPort: number }> {
  for (let attempt = 1; ; attempt++) {
    const healthPort = options.healthPort ?? (await freePort());
    const run = spawnRun(options, healthPort);
    if ((await ready(options, run, healthPort)) === 'ready') return { run, healthPort };
    await run.closed;
    const output = run.output();
    const taken = output.includes(`EADDRINUSE: address already in use 127.0.0.1:${healthPort}`);
    if (!taken || attempt === PORT_ATTEMPTS || options.healthPort !== undefined) {
      throw new Error(`operator exited (${run.child.exitCode ?? run.child.signalCode}):\n${output}`);
    }
  }
}

/**
 * Starts the operator, ready, and keeps it running as its Deployment would:
 * an operator that exits because it lost its lease (an API server that
 * answered no renewal within the renew deadline, as happens on a loaded
 * machine) is started again on the same port, and takes part in the election
 * anew. Any other exit is the test's to see. `process` and `logs()` follow the
 * newest start; `stop()` and `kill()` end the supervision.
 */
export async function startOperator(options: OperatorOptions): Promise<Operator> {
  const first = await firstRun(options);
  const healthPort = first.healthPort;
  let run = first.run;
  let earlier = '';
  let restarts = 0;
  let wanted: 'up' | 'down' = 'up';
  const supervise = (current: Run): void => {
    if (options.restartOnLeaseLoss === false) return;
    void current.closed.then(() => {
      if (wanted === 'down' || current !== run || !current.output().includes(LOST_LEASE)) return;
      restarts++;
      earlier += current.output();
      earlier += `\n--- test harness: the operator lost its lease and exited; started again (restart ${restarts}), as its Deployment would ---\n`;
      run = spawnRun(options, healthPort);
      supervise(run);
    });
  };
  supervise(run);
  return {
    get process() {
      return run.child;
    },
    healthPort,
    logs: () => earlier + run.output(),
    restarts: () => restarts,
    kill: async () => {
      wanted = 'down';
      run.child.kill('SIGKILL');
      await run.exited;
    },
    stop: async () => {
      wanted = 'down';
      run.child.kill('SIGTERM');
      return run.exited;
    },
  };
}
