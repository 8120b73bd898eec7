// `make dev-pr` (test/cluster/cli.ts pr) without a make dev and its Gitea to
// talk to: one line that says what is missing, exit 1, and nothing else done.
// The way with Gitea running is test/e2e/dev-previews.test.ts.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../cluster/cli.ts', import.meta.url));
let cache: string;

beforeEach(async () => {
  cache = await mkdtemp(join(tmpdir(), 'teal-dev-pr-'));
  await mkdir(join(cache, 'demo'));
});
afterEach(() => rm(cache, { recursive: true, force: true }));

/** cluster.ts pr with the cache folder; its exit code and stderr. */
function devPr(): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, 'pr'],
      { env: { ...process.env, TEAL_CACHE_DIR: cache } },
      (_, __, stderr) => resolve({ code: child.exitCode, stderr }),
    );
  });
}

it('says make dev is not running with Gitea when it left no file', async () => {
  const { code, stderr } = await devPr();
  expect(code).toBe(1);
  expect(stderr).toBe(
    `make dev-pr: no ${join(cache, 'demo', 'gitea.json')}: is make dev running, with Gitea? (it runs Gitea once it is built: make gitea, or make dev PREVIEWS=1)\n`,
  );
});

it('says Gitea does not answer when make dev stopped without removing its file', async () => {
  const forge = { url: 'http://127.0.0.1:9', apiUrl: 'http://127.0.0.1:9/api/v1', user: {}, repo: {} };
  await writeFile(join(cache, 'demo', 'gitea.json'), JSON.stringify(forge));
  const { code, stderr } = await devPr();
  expect(code).toBe(1);
  expect(stderr).toBe("make dev-pr: dev's Gitea does not answer on http://127.0.0.1:9: is make dev still running?\n");
});

it('names the file when it is not what make dev writes', async () => {
  await writeFile(join(cache, 'demo', 'gitea.json'), 'not json');
  const { code, stderr } = await devPr();
  expect(code).toBe(1);
  expect(stderr).toContain(`make dev-pr: ${join(cache, 'demo', 'gitea.json')} is not what make dev writes (`);
});
