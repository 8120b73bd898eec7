import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  credentialsFromSecretData,
  type GitAuth,
  prepareGitAuth,
  redact,
  secretValues,
  withGitAuth,
} from '../../src/git/credentials.ts';
import { GitError } from '../../src/git/errors.ts';
import { parseGitUrl } from '../../src/git/url.ts';

const PASSWORD = 'ghp_s3cr3tT0kenValue1234567890';
const KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n-----END OPENSSH PRIVATE KEY-----';
const KNOWN_HOSTS = 'github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
const CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Every file under dir with its content. */
async function filesIn(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await readdir(dir)) out.set(name, await readFile(join(dir, name), 'utf8'));
  return out;
}

const opened: GitAuth[] = [];
async function prepare(...args: Parameters<typeof prepareGitAuth>): Promise<GitAuth> {
  const auth = await prepareGitAuth(...args);
  opened.push(auth);
  return auth;
}
afterEach(async () => {
  for (const auth of opened.splice(0)) await auth.dispose();
});

describe('credentialsFromSecretData', () => {
  it('decodes Flux key names', () => {
    const creds = credentialsFromSecretData({
      username: b64('git'),
      password: b64(PASSWORD),
      'ca.crt': b64(CA),
      identity: b64(KEY),
      known_hosts: b64(KNOWN_HOSTS),
    });
    expect(creds).toEqual({ username: 'git', password: PASSWORD, caCert: CA, identity: KEY, knownHosts: KNOWN_HOSTS });
    expect(credentialsFromSecretData({ bearerToken: b64('tok') })).toEqual({ bearerToken: 'tok' });
    expect(credentialsFromSecretData(undefined)).toEqual({});
  });

  it.each([
    [{ identity: b64(KEY) }, /"identity" needs "known_hosts"/],
    [{ password: b64(PASSWORD) }, /"password" needs "username"/],
    [{ username: b64('git') }, /"username" needs "password"/],
    [{ username: b64('git'), password: b64(PASSWORD), bearerToken: b64('x') }, /not both/],
  ])('refuses incomplete data without showing values (%#)', (data, message) => {
    const attempt = () => credentialsFromSecretData(data, 'Secret demo/git');
    expect(attempt).toThrow(message);
    expect(attempt).toThrow(GitError);
    try {
      attempt();
    } catch (err) {
      expect((err as GitError).reason).toBe('InvalidSource');
      expect((err as GitError).message).toContain('Secret demo/git');
      expect((err as GitError).message).not.toContain(PASSWORD);
      expect((err as GitError).message).not.toContain('BEGIN');
    }
  });
});

describe('prepareGitAuth', () => {
  it('puts an https token only in GIT_CONFIG_* variables, scoped to the origin', async () => {
    const auth = await prepare(parseGitUrl('https://Git.Example.com:8443/team/app.git'), {
      username: 'git',
      password: PASSWORD,
    });
    const basic = b64(`git:${PASSWORD}`);
    expect(auth.env).toMatchObject({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.https://git.example.com:8443/.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_ALLOW_PROTOCOL: 'https',
      HOME: auth.dir,
      LC_ALL: 'C',
    });
    expect(auth.env.GIT_SSH_COMMAND).toBeUndefined();
    expect(auth.env.GIT_SSL_CAINFO).toBeUndefined();
    // Only the switches these variables need.
    expect(auth.unsafe).toEqual({ allowUnsafeAskPass: true, allowUnsafeConfigEnvCount: true });
    expect(auth.allowEnvironment.sort()).toEqual(
      Object.keys(auth.env)
        .filter((k) => k.startsWith('GIT_'))
        .sort(),
    );
    // The secret is in exactly one variable and in no file.
    const carrying = Object.entries(auth.env).filter(([, v]) => v.includes(PASSWORD) || v.includes(basic));
    expect(carrying.map(([k]) => k)).toEqual(['GIT_CONFIG_VALUE_0']);
    expect(await filesIn(auth.dir)).toEqual(new Map());
    expect(auth.secrets).toEqual(expect.arrayContaining([PASSWORD, basic]));
  });

  it('sends a bearer token as a Bearer header', async () => {
    const auth = await prepare(parseGitUrl('https://git.example.com/a/b'), { bearerToken: 'tok-123' });
    expect(auth.env.GIT_CONFIG_KEY_0).toBe('http.https://git.example.com/.extraHeader');
    expect(auth.env.GIT_CONFIG_VALUE_0).toBe('Authorization: Bearer tok-123');
  });

  it('writes ca.crt to a private file named by GIT_SSL_CAINFO', async () => {
    const auth = await prepare(parseGitUrl('https://git.example.com/a/b'), { caCert: CA });
    expect(auth.env.GIT_SSL_CAINFO).toBe(join(auth.dir, 'ca.crt'));
    expect(await readFile(join(auth.dir, 'ca.crt'), 'utf8')).toBe(CA);
    expect((await stat(join(auth.dir, 'ca.crt'))).mode & 0o777).toBe(0o600);
    expect(auth.env.GIT_CONFIG_COUNT).toBeUndefined();
    expect(auth.unsafe).toEqual({ allowUnsafeAskPass: true });
  });

  it('writes the SSH key and known_hosts to 0600 files in a 0700 directory and checks host keys strictly', async () => {
    const auth = await prepare(parseGitUrl('git@github.com:Org/Repo.git'), {
      identity: KEY,
      knownHosts: KNOWN_HOSTS,
      username: 'ignored',
      password: PASSWORD,
    });
    expect((await stat(auth.dir)).mode & 0o777).toBe(0o700);
    const files = await filesIn(auth.dir);
    expect([...files.keys()].sort()).toEqual(['identity', 'known_hosts']);
    expect(files.get('identity')).toBe(`${KEY}\n`);
    expect(files.get('known_hosts')).toBe(`${KNOWN_HOSTS}\n`);
    for (const name of files.keys()) expect((await stat(join(auth.dir, name))).mode & 0o777).toBe(0o600);

    const ssh = auth.env.GIT_SSH_COMMAND ?? '';
    expect(ssh).toContain(`-i ${join(auth.dir, 'identity')}`);
    expect(ssh).toContain('-o IdentitiesOnly=yes');
    expect(ssh).toContain('-o StrictHostKeyChecking=yes');
    expect(ssh).toContain(`-o UserKnownHostsFile=${join(auth.dir, 'known_hosts')}`);
    expect(ssh).toContain('-o BatchMode=yes');
    expect(ssh).toContain('-F /dev/null');
    expect(auth.unsafe).toEqual({ allowUnsafeAskPass: true, allowUnsafeSshCommand: true });
    // https credentials are not applied to an ssh URL, and the key is in no variable.
    expect(auth.env.GIT_CONFIG_COUNT).toBeUndefined();
    for (const value of Object.values(auth.env)) {
      expect(value).not.toContain(PASSWORD);
      expect(value).not.toContain('OPENSSH PRIVATE KEY');
    }
  });

  it('never offers the operator own keys or agent to an ssh URL without a Secret', async () => {
    const auth = await prepare(parseGitUrl('ssh://git@github.com/Org/Repo'));
    expect(auth.env.GIT_SSH_COMMAND).toContain('-o IdentityFile=none');
    expect(auth.env.GIT_SSH_COMMAND).toContain('-o IdentityAgent=none');
    expect(auth.env.GIT_SSH_COMMAND).toContain('-o StrictHostKeyChecking=yes');
  });

  it('inherits no GIT_* variable, ssh agent or config location from the operator', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      GIT_DIR: '/elsewhere',
      GIT_SSH_COMMAND: 'evil',
      SSH_AUTH_SOCK: '/tmp/agent',
      XDG_CONFIG_HOME: '/tmp/xdg',
      HTTPS_PROXY: 'http://proxy:3128',
    });
    try {
      const auth = await prepare(parseGitUrl('file:///srv/repo'));
      expect(auth.env.GIT_DIR).toBeUndefined();
      expect(auth.env.GIT_SSH_COMMAND).toBeUndefined();
      expect(auth.env.SSH_AUTH_SOCK).toBeUndefined();
      expect(auth.env.XDG_CONFIG_HOME).toBeUndefined();
      expect(auth.env.HTTPS_PROXY).toBe('http://proxy:3128');
      expect(auth.env.GIT_ALLOW_PROTOCOL).toBe('file');
    } finally {
      process.env = saved;
    }
  });

  it('removes the directory on dispose, with await using, and when the callback throws', async () => {
    const url = parseGitUrl('git@github.com:Org/Repo.git');
    const creds = { identity: KEY, knownHosts: KNOWN_HOSTS };
    const auth = await prepareGitAuth(url, creds);
    expect(existsSync(join(auth.dir, 'identity'))).toBe(true);
    await auth.dispose();
    await auth.dispose();
    expect(existsSync(auth.dir)).toBe(false);

    let dir = '';
    {
      await using scoped = await prepareGitAuth(url, creds);
      dir = scoped.dir;
      expect(existsSync(dir)).toBe(true);
    }
    expect(existsSync(dir)).toBe(false);

    await expect(
      withGitAuth(url, creds, async (a) => {
        dir = a.dir;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses an identity without known_hosts before writing anything', async () => {
    await expect(prepareGitAuth(parseGitUrl('git@github.com:o/r'), { identity: KEY })).rejects.toThrow(/known_hosts/);
  });
});

describe('redact', () => {
  it('removes secrets, their encodings, URL passwords and Authorization values', () => {
    const creds = { username: 'git', password: PASSWORD };
    const text = [
      `fatal: token ${PASSWORD} refused`,
      `header ${b64(`git:${PASSWORD}`)}`,
      'fetching https://bob:hunter2@example.com/repo',
      'Authorization: Bearer abc.def.ghi',
    ].join('\n');
    const out = redact(text, secretValues(creds));
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(b64(`git:${PASSWORD}`));
    expect(out).not.toContain('hunter2');
    expect(out).not.toContain('abc.def.ghi');
    expect(out).toContain('https://***@example.com/repo');
  });

  it('removes the lines of a multi-line key and ignores empty secrets', () => {
    const line = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB';
    expect(redact(`oops ${line}`, [KEY, '', undefined])).toBe('oops ***');
    expect(redact('nothing here', [''])).toBe('nothing here');
  });
});
