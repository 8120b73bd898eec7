// make image: the operator image from the Dockerfile, unchanged, built by the
// project's own rootless BuildKit from a node:24-slim stand-in (Debian's packages,
// the npm `node` package's Node 24 and the npm it bundles) that a registry on
// 127.0.0.1 serves as Docker Hub's mirror for the build's length
// (test/cluster/operator-image.ts). Writes dist/image/teal.oci.tar, or pushes to
// --push 127.0.0.1:PORT/REPO:TAG (BuildKit pushes plain HTTP to 127.0.0.1 only).
// Needs root, as the real-build tests: the build user and its subordinate ids, runc.
//   node scripts/image.ts [--push 127.0.0.1:5000/teal:dev] [--oci dist/image/teal.oci.tar]
import { mkdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuildTools } from '../test/cluster/build-tools.ts';
import { buildOperatorImage, type ImageOutput } from '../test/cluster/operator-image.ts';
import { startRegistry } from '../test/cluster/registry.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_ARCHIVE = join(root, 'dist/image/teal.oci.tar');

const { values } = parseArgs({
  options: { push: { type: 'string' }, oci: { type: 'string' } },
  strict: true,
});
if (values.push && values.oci) throw new Error('--push and --oci: give one');
const output: ImageOutput = values.push
  ? { push: values.push }
  : { ociArchive: resolve(values.oci ?? DEFAULT_ARCHIVE) };

const log = (line: string) => console.error(line);
const { bin: toolsDir } = await ensureBuildTools(log);
if ('ociArchive' in output) await mkdir(dirname(output.ociArchive), { recursive: true });
const mirror = await startRegistry();
try {
  const onOutput = (chunk: Buffer) => process.stderr.write(chunk);
  const built = await buildOperatorImage({ repoRoot: root, toolsDir, mirror, output, log, onOutput });
  if ('push' in output) {
    console.log(`pushed ${output.push}@${built.digest}`);
  } else {
    const { size } = await stat(output.ociArchive);
    console.log(`wrote ${output.ociArchive} (${(size / 2 ** 20).toFixed(1)} MiB), image ${built.digest}`);
  }
} finally {
  await mirror.stop();
}
