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
  process: ChildProcess;
  healthPort: number;
  logs: () => string;
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
  deployed?: { args: string[]; podNamespace: string };
}

/** One start on healthPort: the Operator once ready, or 'exited' when the process ended first. */
async function launch(options: OperatorOptions, healthPort: number): Promise<Operator | { exited: string }> {
  const lease = options.lease ?? { duration: '15s', renew: '10s', retry: '2s' };
  const egress = (options.egressAllow ?? [TEST_EGRESS]).map((pattern) => `--egress-allow=${pattern}`);
  const kubeconfig = options.kubeconfig ?? inject('kubeconfig');
  const args = options.deployed
    ? [
        MAIN,
        ...options.deployed.args.filter((a) => !a.startsWith('--http-addr')),
        `--kubeconfig=${kubeconfig}`,
        `--http-addr=127.0.0.1:${healthPort}`,
        ...egress,
        ...(options.extraArgs ?? []),
      ]
    : [
        MAIN,
        '--kubeconfig',
        kubeconfig,
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
        ...egress,
        ...(options.extraArgs ?? []),
      ];
  const dispatcher = options.tls ? new Agent({ connect: { ca: options.tls.ca } }) : undefined;
  const scheme = options.tls ? 'https' : 'http';
  const env = options.deployed ? { ...process.env, POD_NAMESPACE: options.deployed.podNamespace } : process.env;
  // TEAL_OPERATOR_NODE_FLAGS: node's own flags for the operator (--heap-prof, --max-old-space-size=256), to look inside it.
  const nodeFlags = (process.env.TEAL_OPERATOR_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');
  const child = spawn(process.execPath, [...nodeFlags, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  // Also on disk, to read after a failed run: $TMPDIR/teal-e2e-<namespace>.log
  const logFile = join(tmpdir(), `teal-e2e-${options.namespace}.log`);
  let output = '';
  const collect = (c: Buffer) => {
    output += c.toString();
    appendFileSync(logFile, c);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Its output is whole only once its pipes have closed, which may follow the exit.
  const closed = new Promise((resolve) => child.once('close', resolve));
  // An exit ends the wait at once (a throw would only be retried until the deadline).
  const ready = await waitFor(
    'the operator to be ready',
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) return 'exited';
      const res = await fetch(`${scheme}://127.0.0.1:${healthPort}/readyz`, dispatcher ? { dispatcher } : {});
      return res.ok ? 'ready' : undefined;
    },
    { timeoutMs: WAIT_MS },
  );
  if (ready === 'exited') {
    await closed;
    return { exited: `operator exited (${child.exitCode ?? child.signalCode}):\n${output}` };
  }
  return {
    process: child,
    healthPort,
    logs: () => output,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Starts made on fresh ports when the one picked was taken before the operator could listen on it. */
const PORT_ATTEMPTS = 3;

/**
 * Starts the operator and waits until it is ready. freePort() frees the port
 * it found, and on a busy machine another process (a component of another
 * test cluster) may take it first: the operator then exits with EADDRINUSE,
 * and is started again on a port picked anew.
 */
export async function startOperator(options: OperatorOptions): Promise<Operator> {
  for (let attempt = 1; ; attempt++) {
    const healthPort = await freePort();
    const started = await launch(options, healthPort);
    if (!('exited' in started)) return started;
    const taken = started.exited.includes(`EADDRINUSE: address already in use 127.0.0.1:${healthPort}`);
    if (!taken || attempt === PORT_ATTEMPTS) throw new Error(started.exited);
  }
}
