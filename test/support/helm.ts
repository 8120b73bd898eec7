// The cached helm binary (test/cluster/build-binaries.sh) against the test
// cluster, with its own config and cache folders, and the chart's renders.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { type Manifest, parseManifests } from './manifests.ts';

const run = promisify(execFile);
export const CHART = new URL('../../charts/teal', import.meta.url).pathname;
const home = mkdtempSync(join(tmpdir(), 'teal-helm-'));

export async function helm(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = {
    ...process.env,
    KUBECONFIG: inject('kubeconfig'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  try {
    const { stdout, stderr } = await run(join(inject('binDir'), 'helm'), args, { env, maxBuffer: 32 << 20 });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
  }
}

// klog's info and warning lines ("I1123 16:18:16.261013 ..."): helm's client-go logs them
// when its watch on the CRDs it waits for ends and is opened again, which a loaded API
// server does (CI saw "watch ended with error ... unable to decode an event").
const KLOG_INFO_OR_WARNING = /^[IW]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s/;

/** The lines of helm's stderr that speak of an error, but for client-go's own info and warning lines. */
export function helmErrors(stderr: string): string[] {
  return stderr.split('\n').filter((line) => /error/i.test(line) && !KLOG_INFO_OR_WARNING.test(line));
}

/** helm template, failing on any error; returns the text and its objects. */
export async function render(
  release: string,
  namespace: string,
  args: string[] = [],
): Promise<{ text: string; objects: Manifest[] }> {
  const out = await helm(['template', release, CHART, '--namespace', namespace, ...args]);
  if (out.code !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return { text: out.stdout, objects: parseManifests(out.stdout) };
}

/** The real ServiceMonitor CRD, from the prometheus-operator Go module at the pinned version. */
export async function serviceMonitorCrd(): Promise<string> {
  const versions = readFileSync(new URL('../cluster/versions.env', import.meta.url), 'utf8');
  const version = /^PROMETHEUS_OPERATOR_VERSION=(\S+)$/m.exec(versions)?.[1];
  if (!version) throw new Error('PROMETHEUS_OPERATOR_VERSION missing in test/cluster/versions.env');
  const { stdout } = await run(
    'go',
    ['mod', 'download', '-json', `github.com/prometheus-operator/prometheus-operator@${version}`],
    { cwd: home, env: { ...process.env, GOFLAGS: '-mod=mod' } },
  );
  const dir = (JSON.parse(stdout) as { Dir: string }).Dir;
  return readFileSync(join(dir, 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml'), 'utf8');
}
