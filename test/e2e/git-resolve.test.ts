// Ref resolution against real repositories and real git processes: over
// file:// and over an HTTPS smart-HTTP server with a private CA and auth.
// Needs no Kubernetes; it lives here because it runs real processes.
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GitCredentials } from '../../src/git/credentials.ts';
import { GitError, type GitErrorReason, resolveRef, resolveRefs } from '../../src/git/resolve.ts';
import {
  closedPort,
  createRepo,
  type GitHttpsServer,
  startGitHttpsServer,
  type TestRepo,
} from '../support/git-server.ts';

const USERNAME = 'teal-bot';
const PASSWORD = 'tok_9f8e7d6c5b4a3f2e1d0c-very-secret';
const BEARER = 'bearer_0a1b2c3d4e5f-also-secret';
const BASIC = Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64');

let root: string;
let repo: TestRepo;
let server: GitHttpsServer;
let fileUrl: string;
const commits: Record<string, string> = {};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'teal-git-e2e-'));
  repo = await createRepo(join(root, 'weather'));
  fileUrl = `file://${repo.dir}`;
  commits.main = await repo.commit('app', { 'app.py': 'print("hi")\n' });
  commits.feature = await repo.commit('feature work', { 'f.txt': 'x\n' }, { branch: 'feature/deep/x' });
  commits.annotated = await repo.commit('release', { VERSION: '1.0.0\n' }, { branch: 'main' });
  await repo.tag('v1.0.0', { message: 'release 1.0.0' });
  commits.light = commits.main;
  await repo.tag('light', { target: commits.main });
  server = await startGitHttpsServer({ root, username: USERNAME, password: PASSWORD, bearerToken: BEARER });
});

afterAll(async () => {
  await server?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

const https = (): GitCredentials => ({ username: USERNAME, password: PASSWORD, caCert: server.caPem });

async function failure(promise: Promise<unknown>): Promise<GitError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(GitError);
  return error as GitError;
}

function expectFailure(error: GitError, reason: GitErrorReason, ...parts: (string | RegExp)[]): void {
  expect(error.reason).toBe(reason);
  expect(error.message).not.toContain('\n');
  for (const part of parts) {
    if (typeof part === 'string') expect(error.message).toContain(part);
    else expect(error.message).toMatch(part);
  }
  for (const secret of [PASSWORD, BASIC, BEARER, 'wrong-password-123']) expect(error.message).not.toContain(secret);
}

describe('over file://', () => {
  const resolve = (ref: string) => resolveRef({ url: fileUrl, ref, allowFile: true });

  it('resolves a branch', async () => {
    const result = await resolve('main');
    expect(result).toMatchObject({ ref: 'refs/heads/main', commit: commits.annotated });
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it('resolves a branch with slashes', async () => {
    expect(await resolve('feature/deep/x')).toMatchObject({
      ref: 'refs/heads/feature/deep/x',
      commit: commits.feature,
    });
  });

  it('resolves an annotated tag to the commit it points at', async () => {
    const tagObject = await repo.revParse('refs/tags/v1.0.0');
    expect(tagObject).not.toBe(commits.annotated);
    expect(await resolve('v1.0.0')).toMatchObject({ ref: 'refs/tags/v1.0.0', commit: commits.annotated });
    expect(await resolve('refs/tags/v1.0.0')).toMatchObject({ ref: 'refs/tags/v1.0.0', commit: commits.annotated });
  });

  it('resolves a lightweight tag', async () => {
    expect(await resolve('light')).toMatchObject({ ref: 'refs/tags/light', commit: commits.light });
  });

  it('resolves a full SHA to itself without running git', async () => {
    const sha = commits.feature ?? '';
    // The URL does not even exist: no git ran.
    const result = await resolveRef({ url: 'file:///nonexistent/repo', ref: sha, allowFile: true });
    expect(result).toEqual({ ref: sha, commit: sha, durationMs: 0 });
  });

  it('sees a new commit on the next resolve', async () => {
    const before = await resolve('feature/deep/x');
    const next = await repo.commit('more', { 'g.txt': 'y\n' }, { branch: 'feature/deep/x' });
    const after = await resolve('feature/deep/x');
    expect(after.commit).toBe(next);
    expect(after.commit).not.toBe(before.commit);
    commits.feature = next;
  });

  it('reports an unknown ref as RefNotFound, naming repository and ref', async () => {
    expectFailure(await failure(resolve('no/such/branch')), 'RefNotFound', 'no/such/branch', fileUrl);
  });

  it('reports a missing repository as Unreachable', async () => {
    const url = `file://${root}/missing`;
    const error = await failure(resolveRef({ url, ref: 'main', allowFile: true }));
    expectFailure(error, 'Unreachable', url, /repository not found/);
  });

  it('refuses file:// unless allowed', async () => {
    expectFailure(
      await failure(resolveRef({ url: fileUrl, ref: 'main' })),
      'InvalidSource',
      /file:\/\/ urls are refused/,
    );
  });
});

describe('over https with a private CA', () => {
  it('resolves with a Basic token and ca.crt', async () => {
    const before = server.requests;
    const result = await resolveRef({ url: server.url('weather'), ref: 'feature/deep/x', credentials: https() });
    expect(result).toMatchObject({ ref: 'refs/heads/feature/deep/x', commit: commits.feature });
    expect(server.requests).toBeGreaterThan(before);
    expect(server.authorizations.at(-1)).toBe(`Basic ${BASIC}`);
  });

  it('resolves an annotated tag and a branch in one ls-remote', async () => {
    const single = server.requests;
    await resolveRef({ url: server.url('weather'), ref: 'main', credentials: https() });
    const perCall = server.requests - single;
    const before = server.requests;
    const { results } = await resolveRefs({
      url: server.url('weather'),
      refs: ['main', 'v1.0.0', 'feature/deep/x', 'light', 'missing'],
      credentials: https(),
    });
    expect(server.requests - before).toBe(perCall);
    expect(results.get('main')).toEqual({ ref: 'refs/heads/main', commit: commits.annotated });
    expect(results.get('v1.0.0')).toEqual({ ref: 'refs/tags/v1.0.0', commit: commits.annotated });
    expect(results.get('feature/deep/x')).toEqual({ ref: 'refs/heads/feature/deep/x', commit: commits.feature });
    expect(results.get('light')).toEqual({ ref: 'refs/tags/light', commit: commits.light });
    expect((results.get('missing') as GitError).reason).toBe('RefNotFound');
  });

  it('resolves with a bearer token', async () => {
    const result = await resolveRef({
      url: server.url('weather'),
      ref: 'main',
      credentials: { bearerToken: BEARER, caCert: server.caPem },
    });
    expect(result.commit).toBe(commits.annotated);
    expect(server.authorizations.at(-1)).toBe(`Bearer ${BEARER}`);
  });

  it('sees a new commit on the next resolve', async () => {
    const next = await repo.commit('hotfix', { 'fix.txt': 'z\n' }, { branch: 'main' });
    expect((await resolveRef({ url: server.url('weather'), ref: 'main', credentials: https() })).commit).toBe(next);
    commits.annotated = next;
  });

  it('fails a wrong password as AuthenticationFailed, redacted', async () => {
    const error = await failure(
      resolveRef({
        url: server.url('weather'),
        ref: 'main',
        credentials: { username: USERNAME, password: 'wrong-password-123', caCert: server.caPem },
      }),
    );
    expectFailure(error, 'AuthenticationFailed', server.url('weather'), /refused the credentials/);
  });

  it('fails without credentials as AuthenticationFailed, without prompting', async () => {
    const error = await failure(
      resolveRef({ url: server.url('weather'), ref: 'main', credentials: { caCert: server.caPem } }),
    );
    expectFailure(error, 'AuthenticationFailed', /needs credentials/);
  });

  it('refuses the self-signed certificate without ca.crt', async () => {
    const error = await failure(
      resolveRef({ url: server.url('weather'), ref: 'main', credentials: { username: USERNAME, password: PASSWORD } }),
    );
    expectFailure(error, 'AuthenticationFailed', /TLS certificate verification failed/);
  });

  it('reports an unknown ref as RefNotFound', async () => {
    const error = await failure(resolveRef({ url: server.url('weather'), ref: 'nope', credentials: https() }));
    expectFailure(error, 'RefNotFound', 'ref "nope" not found in', server.url('weather'));
  });

  it('reports a closed port as Unreachable', async () => {
    const url = `https://127.0.0.1:${await closedPort()}/git/weather`;
    const error = await failure(resolveRef({ url, ref: 'main', credentials: https() }));
    expectFailure(error, 'Unreachable', url);
  });

  it('times out as Unreachable', async () => {
    // A server that accepts and never answers.
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const { port } = silent.address() as { port: number };
    try {
      const error = await failure(
        resolveRef({
          url: `https://127.0.0.1:${port}/git/weather`,
          ref: 'main',
          credentials: https(),
          timeoutMs: 1000,
        }),
      );
      expectFailure(error, 'Unreachable', /timed out after 1000 ms/);
    } finally {
      silent.close();
    }
  });

  it('refuses a ref or URL beginning with "-" and credentials in the URL before git runs', async () => {
    const before = server.requests;
    for (const [url, ref, message] of [
      [server.url('weather'), '--upload-pack=touch /tmp/pwned', /ref must not start with "-"/],
      [server.url('weather'), '-h', /ref must not start with "-"/],
      [`--upload-pack=touch ${root}/pwned`, 'main', /url must not start with "-"/],
      [server.url('weather').replace('https://', `https://${USERNAME}:${PASSWORD}@`), 'main', /credentials/],
    ] as const) {
      const error = await failure(resolveRef({ url, ref, credentials: https() }));
      expectFailure(error, 'InvalidSource', message);
      expect(error.url ?? '').not.toContain(PASSWORD);
    }
    expect(server.requests).toBe(before);
    expect(existsSync(join(root, 'pwned'))).toBe(false);
  });
});

interface Seen {
  pid: string;
  cmdline: string[];
  cwd: string;
  environ: string;
  files: Map<string, string>;
}

/** Samples /proc while fn runs, recording every process whose command line mentions marker. */
async function watchProcesses<T>(
  marker: string,
  fn: () => Promise<T>,
): Promise<{ result: T; seen: Map<string, Seen>; all: string[] }> {
  const seen = new Map<string, Seen>();
  const all: string[] = [];
  let done = false;
  const sample = () => {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid) || pid === String(process.pid)) continue;
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        all.push(cmdline);
        if (!cmdline.includes(marker) || seen.has(pid)) continue;
        const cwd = readlinkSync(`/proc/${pid}/cwd`);
        const files = new Map<string, string>();
        if (cwd.includes('teal-git-')) {
          for (const name of readdirSync(cwd)) files.set(name, readFileSync(join(cwd, name), 'utf8'));
        }
        seen.set(pid, {
          pid,
          cmdline: cmdline.split('\0'),
          cwd,
          environ: readFileSync(`/proc/${pid}/environ`, 'utf8'),
          files,
        });
      } catch {
        // The process ended between readdir and read.
      }
    }
  };
  const sampler = (async () => {
    while (!done) {
      sample();
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  try {
    const result = await fn();
    return { result, seen, all };
  } finally {
    done = true;
    await sampler;
  }
}

describe('secrets stay off command lines and out of files', () => {
  it('git processes over https never carry the token in argv; only in the environment', async () => {
    // Processes can be too short-lived to sample: retry until some were seen.
    const url = server.url('weather');
    let attempts = 0;
    let observed: Seen[] = [];
    let all: string[] = [];
    while (observed.length === 0 && attempts++ < 20) {
      const run = await watchProcesses(`127.0.0.1:${server.port}`, () =>
        resolveRef({ url, ref: 'main', credentials: https() }),
      );
      expect(run.result.commit).toBe(commits.annotated);
      observed = [...run.seen.values()];
      all = all.concat(run.all);
    }
    expect(observed.length).toBeGreaterThan(0);
    for (const proc of observed) {
      const argv = proc.cmdline.join(' ');
      expect(argv).not.toContain(PASSWORD);
      expect(argv).not.toContain(BASIC);
      expect(proc.cwd).toContain('teal-git-');
      // Only ca.crt lives in the private directory: no config file, no secret.
      expect([...proc.files.keys()].every((name) => name === 'ca.crt')).toBe(true);
      for (const content of proc.files.values()) expect(content).not.toContain(PASSWORD);
      expect(existsSync(proc.cwd)).toBe(false);
    }
    expect(observed.some((p) => p.environ.includes(`GIT_CONFIG_VALUE_0=Authorization: Basic ${BASIC}`))).toBe(true);
    for (const cmdline of all) {
      expect(cmdline).not.toContain(PASSWORD);
      expect(cmdline).not.toContain(BASIC);
    }
  });

  it('hands ssh a 0600 key file, strict host checking and no agent, then removes it', async () => {
    const bin = await mkdtemp(join(tmpdir(), 'teal-fake-ssh-'));
    const log = join(bin, 'log');
    // A stand-in for ssh: records what git ran it with and the key file's mode, then refuses.
    await writeFile(
      join(bin, 'ssh'),
      [
        '#!/bin/sh',
        `log='${log}'`,
        'for a in "$@"; do printf "%s\\n" "$a" >> "$log"; done',
        'prev=""',
        'for a in "$@"; do',
        '  if [ "$prev" = "-i" ]; then echo "keymode=$(stat -c %a "$a")" >> "$log"; echo "keydir=$(dirname "$a")" >> "$log"; fi',
        '  prev="$a"',
        'done',
        'echo "git@127.0.0.1: Permission denied (publickey)." >&2',
        'exit 255',
        '',
      ].join('\n'),
    );
    await chmod(join(bin, 'ssh'), 0o755);
    const key =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nZmFrZS1rZXktZm9yLXRlc3RzLW9ubHktMDEyMzQ1Njc4OQ==\n-----END OPENSSH PRIVATE KEY-----\n';
    const savedPath = process.env.PATH;
    process.env.PATH = `${bin}:${savedPath}`;
    try {
      const error = await failure(
        resolveRef({
          url: 'ssh://git@127.0.0.1:2222/team/weather.git',
          ref: 'main',
          credentials: { identity: key, knownHosts: '127.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake' },
        }),
      );
      expectFailure(error, 'AuthenticationFailed', 'ssh://git@127.0.0.1:2222/team/weather.git');
      expect(error.message).not.toContain('ZmFrZS1rZXkt');
      const lines = (await readFile(log, 'utf8')).split('\n');
      expect(lines).toEqual(
        expect.arrayContaining([
          'IdentitiesOnly=yes',
          'StrictHostKeyChecking=yes',
          'IdentityAgent=none',
          'BatchMode=yes',
          'keymode=600',
        ]),
      );
      expect(lines.some((l) => l.startsWith('UserKnownHostsFile=') && l.includes('teal-git-'))).toBe(true);
      expect(lines.join('\n')).not.toContain('ZmFrZS1rZXkt');
      const keyDir = lines.find((l) => l.startsWith('keydir='))?.slice('keydir='.length) ?? '';
      expect(keyDir).toContain('teal-git-');
      expect(existsSync(keyDir)).toBe(false);
    } finally {
      process.env.PATH = savedPath;
      await rm(bin, { recursive: true, force: true });
    }
  });
});
