// The production image runs dist/teal.js, which scripts/bundle.ts makes with
// dist/condition-worker.js beside it (the worker thread that judges conditions).
// This bundles them afresh into a folder outside the repository, where no
// node_modules can be found (as in the image, which has none), and runs it the
// way the Dockerfile's ENTRYPOINT does: --help, a bad flag, then against the
// control plane an App released to Healthy and /metrics answered, and a release
// whose web check's condition the worker judges.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { e2eApp } from '../fixtures/apps.ts';
import { webCheck } from '../support/analysis.ts';
import { createApp, patchSpec, phase, waitForApp } from '../support/apps.ts';
import { copiedFromDist, entrypointFlags, imageEnv } from '../support/dockerfile.ts';
import { startCheckServer } from '../support/http-check-server.ts';
import { createNamespace, waitFor } from '../support/kube.ts';
import { TEST_EGRESS } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), 'teal-bundle-'));
const bundle = join(outdir, 'teal.js');

/** The environment of a process that must find nothing from the repository, with the image's own. */
function bareEnv(): NodeJS.ProcessEnv {
  const { NODE_PATH: _path, NODE_OPTIONS: _options, ...env } = process.env;
  return { ...env, ...imageEnv() };
}

async function teal(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...entrypointFlags(), bundle, ...args], {
      cwd: outdir,
      env: bareEnv(),
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  await run(process.execPath, [join(root, 'scripts/bundle.ts'), '--outdir', outdir], { cwd: root });
});

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the bundled operator, dist/teal.js', () => {
  it('the image copies every script the bundle made', () => {
    const scripts = readdirSync(outdir).filter((f) => f.endsWith('.js'));
    expect(scripts.sort()).toEqual(['condition-worker.js', 'teal.js']);
    expect(copiedFromDist()).toEqual(expect.arrayContaining(scripts));
  });

  it('prints its usage on stdout with --help and exits 0', async () => {
    const { code, stdout, stderr } = await teal(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^teal: the Teal operator\n/);
    expect(stderr).toBe('');
  });

  it('refuses a bad flag with exit code 2, naming the flag', async () => {
    const { code, stdout, stderr } = await teal(['--concurrency', '0']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(/^teal: --concurrency: /);
  });

  it('runs the operator: an App reaches Healthy and /metrics counts it', async () => {
    const { name: ns, remove } = await createNamespace('bundle');
    const port = await freePort();
    const child = startBundle(ns, port);
    try {
      await Promise.race([waitFor('the bundled operator to be ready', () => ready(port)), exitFails(child)]);
      await createApp(ns, e2eApp('web'));
      await waitForApp(ns, 'web', 'Healthy', phase('Healthy'));
      // A reconcile is counted once it has returned, which may be a moment after the status it wrote.
      const metrics = await waitFor('/metrics to count the Healthy App and its reconciles', async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return text.includes('teal_apps{phase="Healthy"} 1') && completedReconciles(text) > 0 ? text : undefined;
      });
      expect(completedReconciles(metrics)).toBeGreaterThan(0);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
      await remove();
    }
    expect(child.exitCode).toBe(0);
  });
});

describe('the bundled condition worker, dist/condition-worker.js', () => {
  it("judges a web check's condition: a release passes its check and is promoted", async () => {
    const { name: ns, remove } = await createNamespace('bundle-check');
    const server = await startCheckServer(() => ({ status: 200, body: { ok: true } }));
    const port = await freePort();
    const child = startBundle(ns, port);
    try {
      await Promise.race([waitFor('the bundled operator to be ready', () => ready(port)), exitFails(child)]);
      const check = webCheck('ok', `${server.url}/ok`);
      await createApp(
        ns,
        e2eApp('web', { blueGreen: { autoPromotionEnabled: true, prePromotionAnalysis: { metrics: [check] } } }),
      );
      await waitForApp(ns, 'web', 'first release Healthy', phase('Healthy'));
      await patchSpec(ns, 'web', { image: 'registry.example.com/team/web:2' });
      const done = await waitForApp(
        ns,
        'web',
        'revision 2 active',
        (a) => phase('Healthy')(a) && a.status?.active?.revision === 2,
      );
      expect(done.status?.prePromotionAnalysis?.checks[0]?.measurements[0]).toMatchObject({
        phase: 'Successful',
        message: 'successCondition "result.ok == true" is true for result {"ok":true}',
      });
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
      await server.close();
      await remove();
    }
    expect(child.exitCode).toBe(0);
  });
});

function startBundle(ns: string, port: number): ChildProcess & { output: () => string } {
  const args = [
    ...entrypointFlags(),
    bundle,
    ...['--kubeconfig', inject('kubeconfig'), '--namespace', ns, '--leader-election-namespace', ns],
    ...['--http-addr', `127.0.0.1:${port}`, `--egress-allow=${TEST_EGRESS}`],
  ];
  const child = spawn(process.execPath, args, { cwd: outdir, env: bareEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return Object.assign(child, { output: () => output });
}

/**
 * The App reconciles that completed without an error. As in controller-runtime, one that asks to look again
 * after a while (a scale-down delay, a recheck) is counted requeue_after, not success: both completed.
 */
function completedReconciles(metrics: string): number {
  const counted = metrics.matchAll(
    /^controller_runtime_reconcile_total\{controller="app",result="(?:success|requeue_after)"\} (\d+)$/gm,
  );
  return [...counted].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function ready(port: number): Promise<true | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return res.ok ? true : undefined;
}

/** Rejects when the process exits, with the end of its output (a broken bundle dies at once). */
async function exitFails(child: ChildProcess & { output: () => string }): Promise<never> {
  const code = child.exitCode ?? (await new Promise((resolve) => child.once('exit', resolve)));
  const tail = child
    .output()
    .split('\n')
    .slice(-15)
    .map((line) => line.slice(0, 300));
  throw new Error(`the bundle exited (${code}):\n${tail.join('\n')}`);
}
