// The base images real builds start FROM, made on this machine without Docker
// Hub and pushed to a test registry (test setup only: the build Job stays as
// users get it, and the registry stands in for docker.io as a mirror):
// - a tiny busybox base, from Debian's busybox-static;
// - a python:3.12-slim stand-in for the weather-app example, bootstrapped from
//   the Debian archive with debootstrap and cached, as it takes minutes cold.
// Free of vitest, like the rest of test/cluster.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { layerFromDir, layerFromFile, type PushTarget, pushImage } from './image-push.ts';

const run = promisify(execFile);

/** From Debian's busybox-static (install-build-packages.sh): static, so it runs in an empty rootfs. */
export const BUSYBOX = '/bin/busybox';
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface PushedBase {
  /** repo:tag within the registry, e.g. library/busybox:1.36 */
  ref: string;
  /** The manifest digest the registry answered to the push. */
  digest: string;
}

/** Pushes the busybox base as repo:tag; it answers `busybox echo` and `sh` like Docker Hub's. */
export async function pushBusyboxBase(
  registry: PushTarget,
  repo = 'library/busybox',
  tag = '1.36',
): Promise<PushedBase> {
  const dir = await mkdtemp(join(tmpdir(), 'teal-busybox-'));
  try {
    await busyboxRootfs(dir);
    const layer = await layerFromDir(dir);
    const digest = await pushImage(registry, repo, tag, layer, { env: [PATH_ENV], cmd: ['sh'] });
    return { ref: `${repo}:${tag}`, digest };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** /bin/busybox and a link per applet, root and nobody (Debian's busybox has no adduser), /tmp. */
async function busyboxRootfs(root: string): Promise<void> {
  if (!existsSync(BUSYBOX))
    throw new Error(`${BUSYBOX} is missing: run test/cluster/install-build-packages.sh as root`);
  await mkdir(join(root, 'bin'));
  await mkdir(join(root, 'etc'));
  await mkdir(join(root, 'tmp'));
  // mkdir's mode goes through the umask, which drops the sticky bit's neighbours.
  await chmod(join(root, 'tmp'), 0o1777);
  await copyFile(BUSYBOX, join(root, 'bin', 'busybox'));
  const { stdout } = await run(BUSYBOX, ['--list']);
  for (const applet of stdout.split('\n').filter((a) => a !== '' && a !== 'busybox')) {
    await symlink('busybox', join(root, 'bin', applet));
  }
  await writeFile(
    join(root, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
  );
  await writeFile(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
}

/** What the python stand-in is bootstrapped from; the cache key. */
export interface PythonBaseRecipe {
  suite: string;
  include: string[];
}

/**
 * Debian's python3 under the names the weather-app's Dockerfile uses (`python`);
 * groupadd and useradd come with minbase (passwd is Priority: required). Bookworm's
 * python3 is 3.11: close enough for a standard-library app.
 */
export const PYTHON_BASE: PythonBaseRecipe = { suite: 'bookworm', include: ['python3', 'python-is-python3'] };

/**
 * Left out of the layer: what a running container gets from its runtime (/dev,
 * /proc, /sys), and what debootstrap leaves behind that a slim image drops
 * (downloaded .debs, apt lists and caches, docs, man pages, translations).
 */
const SLIM_EXCLUDES = [
  './dev/*',
  './proc/*',
  './sys/*',
  './var/cache/apt/archives/*.deb',
  './var/cache/apt/*.bin',
  './var/lib/apt/lists/*',
  './usr/share/doc/*',
  './usr/share/man/*',
  './usr/share/info/*',
  './usr/share/locale/*',
];

/** Bumped when the layer's recipe changes (excludes, tar options), so old cache entries are not reused. */
const LAYER_RECIPE = 1;

/**
 * Pushes the python:3.12-slim stand-in as library/python:3.12-slim. Cold, debootstrap
 * downloads and installs about a hundred packages (1.5 to 3 minutes here); warm, the
 * cached layer is pushed as it is.
 */
export async function pushPythonBase(
  registry: PushTarget,
  repo = 'library/python',
  tag = '3.12-slim',
  log: (line: string) => void = () => {},
): Promise<PushedBase> {
  const file = await ensurePythonLayer(PYTHON_BASE, log);
  const layer = await layerFromFile(file);
  const env = [PATH_ENV, 'LANG=C.UTF-8'];
  const digest = await pushImage(registry, repo, tag, layer, { env, cmd: ['python3'] });
  return { ref: `${repo}:${tag}`, digest };
}

export function baseImagesCacheDir(): string {
  const root = process.env.TEAL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'teal');
  return join(root, 'base-images');
}

/** The cached layer file of a recipe: its name says the suite, its hash the include list and layer recipe. */
export function pythonLayerFile(recipe: PythonBaseRecipe, cacheDir = baseImagesCacheDir()): string {
  const key = JSON.stringify({ suite: recipe.suite, include: [...recipe.include].sort(), layer: LAYER_RECIPE });
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return join(cacheDir, `${recipe.suite}-minbase-${hash}.tar.gz`);
}

/**
 * The layer from the cache, or bootstrapped into it. Two runs at once each
 * bootstrap in their own temporary folder and rename the result into place:
 * the rename is atomic, so a reader never sees half a file, and either result is whole.
 */
export async function ensurePythonLayer(
  recipe: PythonBaseRecipe,
  log: (line: string) => void = () => {},
): Promise<string> {
  return ensureDebianLayer(recipe, pythonLayerFile(recipe), async () => {}, log);
}

/**
 * The cached layer at `file`, or one bootstrapped from the recipe, with `finish`
 * adding to the tree before it is layered (ensurePythonLayer says why the rename).
 */
async function ensureDebianLayer(
  recipe: PythonBaseRecipe,
  file: string,
  finish: (rootfs: string, work: string) => Promise<void>,
  log: (line: string) => void,
): Promise<string> {
  if (existsSync(file)) return file;
  const cacheDir = baseImagesCacheDir();
  await mkdir(cacheDir, { recursive: true });
  // In the cache folder, not /tmp: the rename must not cross filesystems.
  const work = await mkdtemp(join(cacheDir, '.bootstrap-'));
  try {
    const rootfs = join(work, 'rootfs');
    const mirror = await debianMirror(recipe.suite);
    log(`base-images: debootstrap ${recipe.suite} from ${mirror} (minutes, once)`);
    await debootstrap(recipe, rootfs, mirror);
    await finish(rootfs, work);
    const layer = await layerFromDir(rootfs, { exclude: SLIM_EXCLUDES, keepOwners: true });
    await writeFile(join(work, 'layer.tar.gz'), layer.gz);
    await rename(join(work, 'layer.tar.gz'), file);
    return file;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function debootstrap(recipe: PythonBaseRecipe, rootfs: string, mirror: string): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('debootstrap needs root (it installs packages into a chroot)');
  const include = recipe.include.length > 0 ? [`--include=${recipe.include.join(',')}`] : [];
  const args = ['--variant=minbase', ...include, recipe.suite, rootfs, mirror];
  try {
    // Several minutes of output on a slow mirror: a big buffer, kept for the error.
    await run('debootstrap', args, { maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const out = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `debootstrap ${args.join(' ')} failed: ${out.message}\n${(out.stdout ?? '').slice(-4000)}${out.stderr ?? ''}`,
    );
  }
}

/** The machine's own Debian mirror for the suite, from /etc/apt/sources.list(.d); deb.debian.org if none. */
export async function debianMirror(suite: string): Promise<string> {
  const files = ['/etc/apt/sources.list'];
  const dir = '/etc/apt/sources.list.d';
  if (existsSync(dir)) {
    for (const name of (await readdir(dir)).sort()) {
      if (name.endsWith('.list') || name.endsWith('.sources')) files.push(join(dir, name));
    }
  }
  for (const file of files) {
    if (!existsSync(file)) continue;
    const mirror = mirrorIn(await readFile(file, 'utf8'), suite);
    if (mirror) return mirror;
  }
  return 'http://deb.debian.org/debian';
}

/** The first URI serving exactly `suite` (not suite-security or suite-updates), in one-line or deb822 format. */
export function mirrorIn(text: string, suite: string): string | undefined {
  for (const line of text.split('\n')) {
    const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
    if (match?.[2] === suite) return match[1];
  }
  for (const stanza of text.split(/\n\s*\n/)) {
    const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'im').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
    if (!field('Types').includes('deb') || !field('Suites').includes(suite)) continue;
    if (/^Enabled:\s*no/im.test(stanza)) continue;
    const uri = field('URIs')[0];
    if (uri) return uri;
  }
  return undefined;
}

/**
 * The node:24-slim stand-in of the operator image's build: Debian (minbase, as the
 * python one) with the Node binary the npm `node` package ships (node_modules/node,
 * pinned in package-lock.json), the npm that Node release bundles (from the npm
 * registry), and Docker Hub's image's user node (1000:1000).
 */
export interface NodeBaseRecipe extends PythonBaseRecipe {
  node: { binary: string; version: string };
  /** The version of the npm package. */
  npm: string;
  /**
   * CA certificates (PEM) its Node trusts besides its own, through NODE_EXTRA_CA_CERTS:
   * the ones this machine's administrator added to its trust (LOCAL_CA_DIR), such as a
   * TLS-inspecting egress proxy's in front of the npm registry (as here), so that `npm ci`
   * in the build reaches the registry as the machine's npm does. Docker Hub's image has none.
   */
  extraCaPem?: string;
}

/** Where Debian's update-ca-certificates takes a machine's own CA certificates from (*.crt, PEM). */
export const LOCAL_CA_DIR = '/usr/local/share/ca-certificates';

/** Where the stand-in keeps extraCaPem, as NODE_EXTRA_CA_CERTS names it. */
export const NODE_EXTRA_CA_FILE = '/usr/local/share/teal/host-ca-certificates.pem';

/** Bumped when the node stand-in's additions to the Debian tree change, so old cache entries are not reused. */
const NODE_RECIPE = 1;

/**
 * The recipe from this checkout: node_modules/node's version and binary, npm as
 * versions.env pins it for that Node (NODE_NPM_VERSION, NODE_NPM_NODE), and the
 * machine's own CA certificates when it has some.
 */
export async function nodeBaseRecipe(repoRoot: string, versions: Map<string, string>): Promise<NodeBaseRecipe> {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'node_modules/node/package.json'), 'utf8')) as {
    version: string;
  };
  const npm = versions.get('NODE_NPM_VERSION');
  const npmOf = versions.get('NODE_NPM_NODE');
  if (!npm || npmOf !== pkg.version) {
    throw new Error(
      `node_modules/node is ${pkg.version}, but test/cluster/versions.env pins NODE_NPM_VERSION=${npm} for Node ${npmOf}: ` +
        `set both to the npm that Node ${pkg.version} bundles (its CHANGELOG.md: "deps: upgrade npm to ...")`,
    );
  }
  const extraCaPem = await localCaPem();
  return {
    suite: 'bookworm',
    include: [],
    node: { binary: join(repoRoot, 'node_modules/node/bin/node'), version: pkg.version },
    npm,
    ...(extraCaPem ? { extraCaPem } : {}),
  };
}

/** The *.crt files of LOCAL_CA_DIR and its folders, in name order, as one PEM; undefined when there are none. */
export async function localCaPem(dir = LOCAL_CA_DIR): Promise<string | undefined> {
  if (!existsSync(dir)) return undefined;
  const names = (await readdir(dir, { recursive: true })).filter((n) => n.endsWith('.crt')).sort();
  const pems = await Promise.all(names.map((n) => readFile(join(dir, n), 'utf8')));
  return pems.length > 0 ? `${pems.map((p) => p.trim()).join('\n')}\n` : undefined;
}

/** The cached layer of a node recipe: named by the Node and npm versions, hashed with the rest. */
export function nodeLayerFile(recipe: NodeBaseRecipe, cacheDir = baseImagesCacheDir()): string {
  const key = JSON.stringify({
    suite: recipe.suite,
    include: [...recipe.include].sort(),
    layer: LAYER_RECIPE,
    node: recipe.node.version,
    npm: recipe.npm,
    ca: recipe.extraCaPem ? createHash('sha256').update(recipe.extraCaPem).digest('hex') : null,
    recipe: NODE_RECIPE,
  });
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return join(cacheDir, `${recipe.suite}-node-${recipe.node.version}-npm-${recipe.npm}-${hash}.tar.gz`);
}

/**
 * Pushes the node:24-slim stand-in as library/node:24-slim. Cold, debootstrap and
 * the npm tarball (minutes); warm, the cached layer is pushed as it is.
 */
export async function pushNodeBase(
  registry: PushTarget,
  recipe: NodeBaseRecipe,
  repo = 'library/node',
  tag = '24-slim',
  log: (line: string) => void = () => {},
): Promise<PushedBase> {
  const file = await ensureDebianLayer(
    recipe,
    nodeLayerFile(recipe),
    (rootfs, work) => addNode(recipe, rootfs, work),
    log,
  );
  const layer = await layerFromFile(file);
  const env = [
    PATH_ENV,
    `NODE_VERSION=${recipe.node.version}`,
    ...(recipe.extraCaPem ? [`NODE_EXTRA_CA_CERTS=${NODE_EXTRA_CA_FILE}`] : []),
  ];
  const digest = await pushImage(registry, repo, tag, layer, { env, cmd: ['node'] });
  return { ref: `${repo}:${tag}`, digest };
}

/** What Docker Hub's node image adds to Debian, where it puts it: node, npm and npx in /usr/local, the user node. */
async function addNode(recipe: NodeBaseRecipe, rootfs: string, work: string): Promise<void> {
  const local = join(rootfs, 'usr/local');
  await copyFile(recipe.node.binary, join(local, 'bin/node'));
  await chmod(join(local, 'bin/node'), 0o755);
  // The ordinary client: the npm package's tarball, as the registry serves it (its dependencies bundled in it).
  const { stdout } = await run('npm', ['pack', `npm@${recipe.npm}`, '--silent', '--pack-destination', work], {
    cwd: work,
  });
  const tarball = join(work, stdout.trim().split('\n').at(-1) ?? '');
  const npmDir = join(local, 'lib/node_modules/npm');
  await mkdir(npmDir, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', npmDir, '--strip-components=1', '--no-same-owner']);
  await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin/npm'));
  await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin/npx'));
  if (recipe.extraCaPem) {
    await mkdir(join(rootfs, dirname(NODE_EXTRA_CA_FILE)), { recursive: true });
    await writeFile(join(rootfs, NODE_EXTRA_CA_FILE), recipe.extraCaPem, { mode: 0o644 });
  }
  await run('chroot', [rootfs, 'groupadd', '--gid', '1000', 'node']);
  await run('chroot', [
    rootfs,
    'useradd',
    '--uid',
    '1000',
    '--gid',
    'node',
    '--shell',
    '/bin/bash',
    '--create-home',
    'node',
  ]);
  // What the image answers, checked before it is cached.
  const version = (await run('chroot', [rootfs, '/usr/local/bin/node', '--version'])).stdout.trim();
  const npm = (
    await run('chroot', [rootfs, '/usr/local/bin/npm', '--version'], { env: { PATH: PATH_ENV.slice(5) } })
  ).stdout.trim();
  if (version !== `v${recipe.node.version}` || npm !== recipe.npm) {
    throw new Error(
      `the node stand-in answers node ${version} and npm ${npm}, not v${recipe.node.version} and ${recipe.npm}`,
    );
  }
}
