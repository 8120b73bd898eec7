// The Gateway API's standard channel (issue #26 §1) for the traffic tests: the
// CRDs as the sigs.k8s.io/gateway-api Go module ships them at the version
// pinned in versions.env, fetched through the Go module cache (as the
// prometheus-operator CRD of the chart tests is), and applied to a cluster on
// demand: most test files never use them, and 1 MB of CRD schemas is work the
// API server would otherwise do at every boot. Free of vitest, like the rest
// of test/cluster.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readVersionsEnv } from './build-tools.ts';
import { type Cluster, kubectlApply, waitForOutput } from './cluster.ts';

const run = promisify(execFile);

export const GATEWAY_API_MODULE = 'sigs.k8s.io/gateway-api';
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** The channel folder: its kustomization.yaml lists what a standard install applies. */
const CHANNEL = 'config/crd';

/** The pinned version (GATEWAY_API_VERSION in versions.env). */
export function gatewayApiVersion(): string {
  const version = readVersionsEnv().get('GATEWAY_API_VERSION');
  if (!version) throw new Error('GATEWAY_API_VERSION missing in test/cluster/versions.env');
  return version;
}

/** The module's folder in the Go module cache, downloaded on first use. */
async function moduleDir(version: string): Promise<string> {
  // Outside any module: the download is the module's own, whatever go.mod surrounds the caller.
  const cwd = mkdtempSync(join(tmpdir(), 'teal-gateway-api-'));
  const { stdout } = await run('go', ['mod', 'download', '-json', `${GATEWAY_API_MODULE}@${version}`], {
    cwd,
    env: { ...process.env, GOFLAGS: '-mod=mod' },
  });
  return (JSON.parse(stdout) as { Dir: string }).Dir;
}

/**
 * The standard channel's manifests, in the order of the module's own
 * config/crd/kustomization.yaml (standard/*.yaml: the CRDs and the
 * safe-upgrades ValidatingAdmissionPolicy), as one multi-document YAML.
 */
export async function gatewayApiManifests(version = gatewayApiVersion()): Promise<{ yaml: string; crds: string[] }> {
  const dir = join(await moduleDir(version), CHANNEL);
  const files = [...readFileSync(join(dir, 'kustomization.yaml'), 'utf8').matchAll(/^\s*-\s*(standard\/\S+\.yaml)$/gm)]
    .map((m) => m[1] ?? '')
    .filter(Boolean);
  if (files.length === 0)
    throw new Error(`${GATEWAY_API_MODULE}@${version}: no standard/*.yaml in ${CHANNEL}/kustomization.yaml`);
  const docs = files.map((f) => readFileSync(join(dir, f), 'utf8'));
  const crds = docs.flatMap((d) =>
    /^kind: CustomResourceDefinition$/m.test(d) ? [/^ {2}name: (\S+)$/m.exec(d)?.[1] ?? ''] : [],
  );
  return { yaml: docs.join('\n---\n'), crds: crds.filter(Boolean) };
}

/** Applies the standard channel (server-side: again is a no-op) and waits for every CRD to be established. */
export async function applyGatewayApi(cluster: Pick<Cluster, 'binDir' | 'env'>): Promise<string[]> {
  const { yaml, crds } = await gatewayApiManifests();
  await kubectlApply(cluster, yaml);
  for (const crd of crds) {
    await waitForOutput(
      cluster,
      `the ${crd} CRD to be established`,
      ['get', 'crd', crd, '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'],
      'True',
    );
  }
  return crds;
}
