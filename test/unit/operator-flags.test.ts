// Bad operator flags stop the process before it touches anything, with exit
// code 2 and a message naming the flag as typed. Read in-process, as main.ts
// reads them (src/config.ts): no test here waits on a Node process starting.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readCommandLine, USAGE } from '../../src/config.ts';

/** What main.ts does with the command line: the exit code and what it prints, or code -1 when it would run. */
function start(args: string[], env: NodeJS.ProcessEnv = {}): { code: number; stdout: string; stderr: string } {
  const commandLine = readCommandLine(args, env);
  if (!('exit' in commandLine)) return { code: -1, stdout: '', stderr: '' };
  const { exit } = commandLine;
  return exit.code === 0
    ? { code: 0, stdout: exit.stdout, stderr: '' }
    : { code: exit.code, stdout: '', stderr: exit.stderr };
}

describe('operator flags', () => {
  it.each([
    [['--namespace', 'team-a,Team_B'], '--namespace: each namespace must be a DNS label'],
    [['--default-registry', 'https://harbor.example.com'], '--default-registry: must not have a scheme'],
    [['--default-registry', 'myregistry/apps'], '--default-registry: must start with a registry host'],
    [['--default-push-secret', 'Harbor_Push'], '--default-push-secret: must be a Secret name'],
    [['--lease-duration', '500ms'], '--lease-duration: must be at least 1s'],
    [['--concurrency', '0'], '--concurrency:'],
    [['--http-addr', '8081'], '--http-addr: must be host:port'],
    [['--tls-cert-file', '/tmp/cert.pem'], '--tls-cert-file and --tls-key-file go together'],
    [['--no-such-flag'], "Unknown option '--no-such-flag'"],
    [['--dashboard-anonymous=write'], '--dashboard-anonymous: must be off or read'],
    [
      ['--egress-allow', '10.0.0.0/8,http://prometheus:9090'],
      '--egress-allow: "http://prometheus:9090": not a host name',
    ],
  ])('%j is refused: %s', (args, message) => {
    const { code, stderr } = start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
    // The usage follows the reason.
    expect(stderr).toContain(USAGE);
  });

  it('--help prints the usage on stdout and exits 0, whatever else is given', () => {
    for (const args of [['--help'], ['-h'], ['--concurrency', '0', '--help']]) {
      expect(start(args)).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    }
  });

  it('good flags run, with the defaults filled in', () => {
    const commandLine = readCommandLine(['--namespace', 'team-a, team-b,team-a', '--lease-duration', '20s'], {
      POD_NAMESPACE: 'teal-system',
    });
    expect(commandLine).toMatchObject({
      run: {
        namespaces: ['team-a', 'team-b'],
        leaderElect: true,
        leaderElectionNamespace: 'teal-system',
        leaseDurationMs: 20_000,
        renewDeadlineMs: 10_000,
        requestTimeoutMs: 5_000,
        gracefulShutdownTimeoutMs: 20_000,
        concurrency: 4,
        httpAddr: '127.0.0.1:8081',
        // Checks and notifications keep off the guarded addresses unless the operator lists them.
        egressAllow: [],
        // No page or read without a session unless asked.
        dashboardAnonymous: 'off',
      },
    });
    expect(readCommandLine(['--dashboard-anonymous=read'], {})).toMatchObject({ run: { dashboardAnonymous: 'read' } });
  });

  it('--egress-allow may repeat and take commas', () => {
    const commandLine = readCommandLine(
      ['--egress-allow', '127.0.0.1', '--egress-allow=*.monitoring.svc,10.0.0.0/8'],
      {},
    );
    expect(commandLine).toMatchObject({ run: { egressAllow: ['127.0.0.1', '*.monitoring.svc,10.0.0.0/8'] } });
  });
});

// Request and shutdown timings: a request must end before the renew deadline, or a write sent in
// one lease term could land in the next.
describe('request and shutdown timing flags', () => {
  it.each([
    [['--request-timeout', '10s'], '--request-timeout: must be shorter than --renew-deadline (10s)'],
    [
      ['--renew-deadline', '4s', '--request-timeout', '4s'],
      '--request-timeout: must be shorter than --renew-deadline (4s)',
    ],
    [['--request-timeout', '0'], '--request-timeout: must be at least 100ms'],
    [['--graceful-shutdown-timeout', '0'], '--graceful-shutdown-timeout: must be at least 100ms'],
    [['--lease-duration', '10s', '--renew-deadline', '10s'], '--renew-deadline: must be shorter than --lease-duration'],
  ])('%j is refused: %s', (args, message) => {
    const { code, stderr } = start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });
});

// Durations as Go and every Kubernetes component write them (app/duration.ts, the App's grammar too):
// parseFloat read "1m" as one second and "500ms" as 500 seconds.
describe('duration flags', () => {
  it.each([
    ['--graceful-shutdown-timeout', '1m', 'gracefulShutdownTimeoutMs', 60_000],
    ['--lease-duration', '1m30s', 'leaseDurationMs', 90_000],
    ['--renew-deadline', '1.5s', 'renewDeadlineMs', 1_500],
    ['--retry-period', '500ms', 'retryPeriodMs', 500],
    ['--request-timeout', '2500ms', 'requestTimeoutMs', 2_500],
  ])('%s %s is read as a duration', (flag, value, key, ms) => {
    expect(readCommandLine([flag, value], {})).toMatchObject({ run: { [key]: ms } });
  });

  it.each([
    [['--lease-duration', '15'], '--lease-duration: invalid duration "15" (no unit: 15s is 15 seconds)'],
    [['--graceful-shutdown-timeout', '1'], '--graceful-shutdown-timeout: invalid duration "1" (no unit'],
    [['--retry-period', '2 s'], '--retry-period: invalid duration "2 s"'],
    [['--renew-deadline', '1d'], '--renew-deadline: invalid duration "1d"'],
    [['--request-timeout=-1s'], '--request-timeout: invalid duration "-1s"'],
    [['--lease-duration', 'PT15S'], '--lease-duration: invalid duration "PT15S"'],
  ])('%j is refused, naming the flag: %s', (args, message) => {
    const { code, stderr } = start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });

  it('every bad duration is named at once', () => {
    const { stderr } = start(['--lease-duration', 'soon', '--retry-period', '2']);
    expect(stderr.split('\n\n')[0]?.split('\n')).toEqual([
      'teal: --lease-duration: invalid duration "soon": use a duration such as 90s, 15m or 1h30m',
      '--retry-period: invalid duration "2" (no unit: 2s is 2 seconds): use a duration such as 90s, 15m or 1h30m',
    ]);
  });
});

// --help and a flag error must not wait for the client, the server and the
// controller to load (seconds on a busy machine): main.ts reads the flags from
// modules that load nothing heavy, and imports the rest afterwards.
describe('the flags are read before the heavy modules load', () => {
  const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
  const LIGHT_PACKAGES = /^(node:.*|zod)$/;

  /** What a module loads before its body runs: its static imports and re-exports that are not type-only. */
  function staticImports(file: string): string[] {
    const source = readFileSync(file, 'utf8');
    const specifiers: string[] = [];
    for (const m of source.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)';/gm)) {
      const [, typeOnly, specifier] = m;
      if (!typeOnly && specifier) specifiers.push(specifier);
    }
    return specifiers;
  }

  /** Every package the module loads statically, following its relative imports. */
  function packagesLoadedBy(entry: string): Map<string, string> {
    const packages = new Map<string, string>();
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const specifier of staticImports(file)) {
        if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
        else packages.set(specifier, file.slice(SRC.length));
      }
    };
    visit(resolve(SRC, entry));
    return packages;
  }

  it('main.ts loads only node built-ins and zod before it has read the flags', () => {
    const heavy = [...packagesLoadedBy('main.ts')].filter(([name]) => !LIGHT_PACKAGES.test(name));
    expect(heavy.map(([name, by]) => `${name} (imported by ${by})`)).toEqual([]);
  });
});

describe('--shards', () => {
  it('is 1 unless asked: no sharding', () => {
    expect(readCommandLine([], {})).toMatchObject({ run: { shards: 1 } });
    expect(readCommandLine(['--shards', '6'], {})).toMatchObject({ run: { shards: 6 } });
  });

  it.each([
    [['--shards', '0'], '--shards:'],
    [['--shards', '257'], '--shards:'],
    [['--shards', 'two'], '--shards:'],
    [['--shards', '4', '--leader-elect=false'], '--shards: needs leader election'],
    [['--shards', '4', '--leader-election-id', `t${'e'.repeat(63)}`], '--leader-election-id: with --shards'],
  ])('%j is refused: %s', (args, message) => {
    const { code, stderr } = start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });
});
