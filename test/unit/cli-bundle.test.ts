// The plugin's bundle (scripts/bundle-cli.ts) loads per command only what the
// command uses. Bundled afresh into a temporary folder, it is run with a module
// hook (node --import) that records every file Node loads; the bundle's
// metafile says which of its chunks hold @kubernetes/client-node, zod, and the
// App spec's schemas.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'teal-cli-bundle-'));
const outdir = join(dir, 'cli');
const hook = join(dir, 'trace-loads.mjs');

// Synchronous hooks (Node 23.5+) see every module the main thread loads, bundle chunks included.
const HOOK = `import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, next) {
    if (url.startsWith('file:')) appendFileSync(process.env.TRACE_FILE, url + '\\n');
    return next(url, context);
  },
});
`;

/** The files of the bundle a run of the plugin loaded, relative to its folder, and how it ended. */
async function loaded(
  args: string[],
  kubeconfig = join(dir, 'none'),
): Promise<{ files: string[]; code: number; stdout: string; stderr: string }> {
  const trace = join(dir, `trace-${args.join('-')}`);
  writeFileSync(trace, '');
  const env = { ...process.env, TRACE_FILE: trace, KUBECONFIG: kubeconfig, HOME: dir };
  let code = 0;
  let stdout = '';
  let stderr = '';
  try {
    ({ stdout, stderr } = await run(
      process.execPath,
      ['--import', pathToFileURL(hook).href, join(outdir, 'kubectl-teal.js'), ...args],
      { env },
    ));
  } catch (err) {
    ({ code, stderr } = err as { code: number; stderr: string });
  }
  const files = readFileSync(trace, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith(pathToFileURL(outdir).href))
    .map((url) => relative(outdir, fileURLToPath(url)));
  return { files, code, stdout, stderr };
}

/** The bundle's chunks that hold code of a package, from the metafile. */
function chunksOf(meta: Metafile, pkg: string): string[] {
  return Object.entries(meta.outputs)
    .filter(([, output]) => Object.keys(output.inputs).some((input) => input.includes(`node_modules/${pkg}/`)))
    .map(([file]) => relative(outdir, join(root, file)));
}

/** The bundle's chunks that hold one of these source files, from the metafile. */
function chunksWith(meta: Metafile, sources: readonly string[]): string[] {
  return Object.entries(meta.outputs)
    .filter(([, output]) => Object.keys(output.inputs).some((input) => sources.includes(input)))
    .map(([file]) => relative(outdir, join(root, file)));
}

/** The App's spec schemas (and the actions' intents): `get` reads status, so builds only its schemas. */
const SPEC_SCHEMAS = [
  'src/app/schema.ts',
  'src/app/analysis-schema.ts',
  'src/app/traffic-schema.ts',
  'src/app/previews-schema.ts',
  'src/app/intents.ts',
];

let clientNode: string[];
let zod: string[];
let specSchemas: string[];

beforeAll(async () => {
  await run(process.execPath, [join(root, 'scripts/bundle-cli.ts'), '--outdir', outdir], { cwd: root });
  writeFileSync(hook, HOOK);
  const meta = JSON.parse(readFileSync(join(outdir, 'kubectl-teal.meta.json'), 'utf8')) as Metafile;
  clientNode = chunksOf(meta, '@kubernetes/client-node');
  zod = chunksOf(meta, 'zod');
  specSchemas = chunksWith(meta, SPEC_SCHEMAS);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the bundled kubectl plugin', () => {
  it('puts client-node in chunks of its own, apart from the entry', () => {
    expect(clientNode.length).toBeGreaterThan(0);
    expect(clientNode).not.toContain('kubectl-teal.js');
  });

  it('runs `version` without loading any of client-node or zod', async () => {
    const { files, code, stdout } = await loaded(['version']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^kubectl-teal v\d+\.\d+\.\d+ \(node v24\./);
    expect(files).toContain('kubectl-teal.js');
    expect(files.filter((f) => clientNode.includes(f))).toEqual([]);
    // zod is loaded by the commands that read Apps, not by the command table every start reads (issue #27 item 2).
    expect(zod.length).toBeGreaterThan(0);
    expect(files.filter((f) => zod.includes(f))).toEqual([]);
  });

  it('runs `get` with a token kubeconfig through plain HTTPS, without loading any of client-node or the spec schemas', async () => {
    // Port 1 refuses: the request fails once made, after every module of the read is loaded.
    const kubeconfig = join(dir, 'token-kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {token: t0k3n}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    const { files, code, stderr } = await loaded(['get', 'web'], kubeconfig);
    expect(code).toBe(1);
    expect(stderr).toContain('cannot reach the API server at https://127.0.0.1:1 (ECONNREFUSED)');
    expect(files.length).toBeGreaterThan(1);
    expect(files.filter((f) => clientNode.includes(f))).toEqual([]);
    // The status schemas are built (src/app/status-schema.ts), not the spec's (issue #27 §2).
    expect(files.filter((f) => zod.includes(f)).length).toBeGreaterThan(0);
    expect(specSchemas.length).toBeGreaterThan(0);
    expect(files.filter((f) => specSchemas.includes(f))).toEqual([]);
  });

  it('loads client-node for a command that talks to the cluster (so the trace sees chunks)', async () => {
    // No kubeconfig: `get` fails once its module, and client-node with it, is loaded.
    const { files, code } = await loaded(['get', 'web']);
    expect(code).toBe(1);
    expect(files.filter((f) => clientNode.includes(f))).toEqual(clientNode);
  });
});
