// resolveRefs with simple-git replaced: what it would run, and what never reaches git.
import { beforeEach, describe, expect, it, vi } from 'vitest';

interface Spawned {
  options: Record<string, unknown>;
  env: Record<string, string>;
  args: string[];
  files: Map<string, string>;
}

const spawned: Spawned[] = [];
let output = '';
let failure: Error | undefined;

vi.mock('simple-git', async (importOriginal) => {
  const actual = await importOriginal<typeof import('simple-git')>();
  const { readdirSync, readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  return {
    ...actual,
    simpleGit: (options: Record<string, unknown>) => {
      const call: Spawned = { options, env: {}, args: [], files: new Map() };
      const git = {
        env(env: Record<string, string>) {
          call.env = env;
          return git;
        },
        async listRemote(args: string[]) {
          call.args = ['ls-remote', ...args];
          const dir = String(options.baseDir);
          for (const name of readdirSync(dir)) call.files.set(name, readFileSync(join(dir, name), 'utf8'));
          spawned.push(call);
          if (failure) throw failure;
          return output;
        },
      };
      return git;
    },
  };
});

const { checkRef, resolveRef, resolveRefs } = await import('../../src/git/resolve.ts');
const { GitError } = await import('../../src/git/errors.ts');
const { GitError: SimpleGitError } = await import('simple-git');

const MAIN = '1111111111111111111111111111111111111111';
const TAG_OBJECT = '2222222222222222222222222222222222222222';
const TAGGED = '3333333333333333333333333333333333333333';
const NESTED = '4444444444444444444444444444444444444444';
const PASSWORD = 'pa55-w0rd-nobody-guesses';

beforeEach(() => {
  spawned.length = 0;
  failure = undefined;
  output = [
    `${MAIN}\trefs/heads/main`,
    `${NESTED}\trefs/heads/team/refs/heads/main`,
    `${TAG_OBJECT}\trefs/tags/v1`,
    `${TAGGED}\trefs/tags/v1^{}`,
    `${MAIN}\trefs/tags/light`,
    '',
  ].join('\n');
});

describe('resolveRefs', () => {
  it('lists every ref in one ls-remote after "--", with exact patterns', async () => {
    const { results, listed } = await resolveRefs({
      url: 'https://git.example.com/a/b.git',
      refs: ['main', 'v1', 'light'],
    });
    expect(listed).toBe(true);
    expect(spawned).toHaveLength(1);
    expect(spawned[0]?.args).toEqual([
      'ls-remote',
      '--',
      'https://git.example.com/a/b.git',
      'refs/heads/main',
      'refs/tags/main^{}',
      'refs/tags/main',
      'refs/heads/v1',
      'refs/tags/v1^{}',
      'refs/tags/v1',
      'refs/heads/light',
      'refs/tags/light^{}',
      'refs/tags/light',
    ]);
    expect(results.get('main')).toEqual({ ref: 'refs/heads/main', commit: MAIN });
    // An annotated tag resolves to the commit it points at, not the tag object.
    expect(results.get('v1')).toEqual({ ref: 'refs/tags/v1', commit: TAGGED });
    expect(results.get('light')).toEqual({ ref: 'refs/tags/light', commit: MAIN });
  });

  it('matches refs exactly, not by their tail as ls-remote does', async () => {
    output = `${NESTED}\trefs/heads/team/refs/heads/main\n`;
    const { results } = await resolveRefs({ url: 'https://git.example.com/a/b', refs: ['main'] });
    const result = results.get('main');
    expect(result).toBeInstanceOf(GitError);
    expect((result as InstanceType<typeof GitError>).reason).toBe('RefNotFound');
    expect((result as InstanceType<typeof GitError>).message).toBe(
      'ref "main" not found in https://git.example.com/a/b',
    );
  });

  it('resolves full refs and HEAD', async () => {
    output = `${MAIN}\tHEAD\n${MAIN}\trefs/heads/main\n${TAG_OBJECT}\trefs/tags/v1\n${TAGGED}\trefs/tags/v1^{}\n`;
    const { results } = await resolveRefs({
      url: 'https://git.example.com/a/b',
      refs: ['refs/heads/main', 'refs/tags/v1', 'HEAD'],
    });
    expect(spawned[0]?.args.slice(3)).toEqual(['refs/heads/main', 'refs/tags/v1^{}', 'refs/tags/v1', 'HEAD']);
    expect(results.get('refs/tags/v1')).toEqual({ ref: 'refs/tags/v1', commit: TAGGED });
    expect(results.get('HEAD')).toEqual({ ref: 'HEAD', commit: MAIN });
  });

  it('passes no secret in argv, config options or files; only the guarded variables it set', async () => {
    await resolveRef({
      url: 'https://git.example.com/a/b',
      ref: 'main',
      credentials: { username: 'git', password: PASSWORD },
    });
    const call = spawned[0];
    expect(call).toBeDefined();
    if (!call) return;
    const basic = Buffer.from(`git:${PASSWORD}`).toString('base64');
    expect(call.args.join(' ')).not.toContain(PASSWORD);
    expect(call.args.join(' ')).not.toContain(basic);
    expect(call.options.config).toBeUndefined();
    expect(call.files.size).toBe(0);
    expect(call.env.GIT_CONFIG_VALUE_0).toBe(`Authorization: Basic ${basic}`);
    expect(call.options.unsafe).toEqual({ allowUnsafeAskPass: true, allowUnsafeConfigEnvCount: true });
    expect(call.options.allowEnvironment).toEqual(
      expect.arrayContaining(['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0', 'GIT_ASKPASS']),
    );
    expect(call.options.abort).toBeInstanceOf(AbortSignal);
  });

  it('resolves a full SHA to itself without network', async () => {
    const sha = 'ABCDEFabcdef0123456789abcdef0123456789ab';
    const result = await resolveRef({ url: 'https://git.example.com/a/b', ref: sha });
    expect(result).toEqual({ ref: sha.toLowerCase(), commit: sha.toLowerCase(), durationMs: 0 });
    expect(spawned).toHaveLength(0);
  });

  it.each([
    ['--upload-pack=touch /tmp/x', 'main', /url must not start with "-"/],
    ['https://git.example.com/a/b', '--upload-pack=x', /ref must not start with "-"/],
    ['https://git.example.com/a/b', '-h', /ref must not start with "-"/],
    ['https://git.example.com/a/b', 'a..b', /ref must not contain/],
    ['https://git.example.com/a/b', 'x y', /spaces/],
    ['file:///srv/repo', 'main', /file:\/\/ urls are refused/],
    ['ext::sh -c x', 'main', /invalid git url/],
    ['https://u:tok@git.example.com/a/b', 'main', /credentials/],
  ])('refuses %j ref %j before git runs', async (url, ref, message) => {
    const error = await resolveRef({ url, ref }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(GitError);
    expect((error as InstanceType<typeof GitError>).reason).toBe('InvalidSource');
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('tok@');
    expect((error as InstanceType<typeof GitError>).url ?? '').not.toContain('tok');
    expect(spawned).toHaveLength(0);
  });

  it.each([
    ["fatal: could not read Username for 'https://h': terminal prompts disabled", 'AuthenticationFailed'],
    ['remote: Invalid username or password.\nfatal: Authentication failed for https://h/', 'AuthenticationFailed'],
    ['Host key verification failed.\nfatal: Could not read from remote repository.', 'AuthenticationFailed'],
    ["fatal: unable to access 'https://h/': SSL certificate problem: self-signed certificate", 'AuthenticationFailed'],
    ['git@h: Permission denied (publickey).\nfatal: Could not read from remote repository.', 'AuthenticationFailed'],
    ["fatal: unable to access 'https://h/': Could not resolve host: h", 'Unreachable'],
    ['remote: Repository not found.\nfatal: repository not found', 'Unreachable'],
  ])('classifies %j', async (stderr, reason) => {
    failure = new SimpleGitError(undefined, stderr);
    const error = await resolveRef({
      url: 'https://git.example.com/a/b',
      ref: 'main',
      credentials: { username: 'git', password: PASSWORD },
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(GitError);
    expect((error as InstanceType<typeof GitError>).reason).toBe(reason);
    expect((error as Error).message).toMatch(/^cannot list ref "main" of https:\/\/git\.example\.com\/a\/b: /);
    expect((error as Error).message).not.toContain('\n');
  });

  it('redacts secrets git might echo', async () => {
    failure = new SimpleGitError(undefined, `fatal: unable to access 'https://git:${PASSWORD}@h/': broken`);
    const error = await resolveRef({
      url: 'https://git.example.com/a/b',
      ref: 'main',
      credentials: { username: 'git', password: PASSWORD },
    }).catch((err: unknown) => err);
    expect((error as Error).message).not.toContain(PASSWORD);
    expect((error as Error).message).toContain('***');
  });
});

describe('checkRef', () => {
  it('accepts branch names git accepts', () => {
    for (const ref of ['main', 'feature/deep/x', 'v1.2.3', 'refs/heads/main', 'release-2024_01', 'HEAD']) {
      expect(checkRef(ref)).toBeUndefined();
    }
  });

  it('refuses what git check-ref-format refuses', () => {
    for (const ref of [
      '',
      '-x',
      '/x',
      'x/',
      'x.',
      'x.lock',
      'a..b',
      'a//b',
      'a@{1}',
      'a/.b',
      '.a',
      '@',
      'a~1',
      'a^',
      'a:b',
      'a?',
      'a*',
      'a[',
      'a\\b',
    ]) {
      expect(checkRef(ref), ref).toBeDefined();
    }
  });
});
