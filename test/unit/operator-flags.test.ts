// Bad operator flags stop the process before it touches anything, with exit
// code 2 and a message naming the flag as typed.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

async function start(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    // A bound against a hang, not a speed check: Node starts slowly on a busy machine.
    await run(process.execPath, [MAIN, ...args], { timeout: 120_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('operator flags', () => {
  it.each([
    [['--namespace', 'team-a,Team_B'], '--namespace: each namespace must be a DNS label'],
    [['--default-registry', 'https://harbor.example.com'], '--default-registry: must not have a scheme'],
    [['--default-registry', 'myregistry/apps'], '--default-registry: must start with a registry host'],
    [['--default-push-secret', 'Harbor_Push'], '--default-push-secret: must be a Secret name'],
    [['--lease-duration', '0.5'], '--lease-duration: must be at least 1s'],
    [['--concurrency', '0'], '--concurrency:'],
    [['--http-addr', '8081'], '--http-addr: must be host:port'],
    [['--tls-cert-file', '/tmp/cert.pem'], '--tls-cert-file and --tls-key-file go together'],
  ])('%j is refused: %s', async (args, message) => {
    const { code, stderr } = await start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });
});

// Request and shutdown timings: a request must end before the renew deadline, or a write sent in
// one lease term could land in the next.
describe('request and shutdown timing flags', () => {
  it.each([
    [['--request-timeout', '10'], '--request-timeout: must be shorter than --renew-deadline (10s)'],
    [
      ['--renew-deadline', '4', '--request-timeout', '4'],
      '--request-timeout: must be shorter than --renew-deadline (4s)',
    ],
    [['--request-timeout', '0'], '--request-timeout: must be at least 0.1s'],
    [['--graceful-shutdown-timeout', '0'], '--graceful-shutdown-timeout: must be at least 0.1s'],
    [['--lease-duration', '10', '--renew-deadline', '10'], '--renew-deadline: must be shorter than --lease-duration'],
  ])('%j is refused: %s', async (args, message) => {
    const { code, stderr } = await start(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toContain(message);
  });
});
