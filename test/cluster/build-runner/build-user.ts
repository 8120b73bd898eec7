// The dedicated non-root user that BuildKit rootless runs as on the host, with
// the subordinate uid and gid ranges rootlesskit maps into its user namespace
// (the image's uid 1000 and its /etc/subuid, on a real node).
import { execFile } from 'node:child_process';
import { appendFile, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const BUILD_USER = 'teal-build';
const RANGE = 65536;
const FIRST = 100000;

let ensured: Promise<string> | undefined;

/** Creates the user and its ranges when missing, once per process (builds start concurrently); needs root. */
export function ensureBuildUser(): Promise<string> {
  ensured ??= createBuildUser(BUILD_USER).catch((err) => {
    ensured = undefined;
    throw err;
  });
  return ensured;
}

async function createBuildUser(name: string): Promise<string> {
  const exists = () =>
    run('id', ['-u', name]).then(
      () => true,
      () => false,
    );
  if (!(await exists())) {
    // Another test process may have created it in the meantime.
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name]).catch(
      async (err) => {
        if (!(await exists())) throw err;
      },
    );
  }
  for (const file of ['/etc/subuid', '/etc/subgid']) await ensureRange(file, name);
  return name;
}

async function ensureRange(file: string, name: string): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  if (lines.some((l) => l.split(':')[0] === name)) return;
  const start = Math.max(FIRST, ...lines.map(rangeEnd));
  await appendFile(file, `${text === '' || text.endsWith('\n') ? '' : '\n'}${name}:${start}:${RANGE}\n`);
}

function rangeEnd(line: string): number {
  const [, start, count] = line.split(':');
  return Number(start) + Number(count) || 0;
}

/** The uid and gid of a user of this host, from /etc/passwd. */
export async function idsOf(user: string): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith(`${user}:`));
  const [, , uid, gid] = (line ?? '').split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
