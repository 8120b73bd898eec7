import { describe, expect, it } from 'vitest';
import { GIT_URL } from '../../src/app/patterns.ts';
import { checkGitUrl, normalizeRepoUrl, parseGitUrl, safeUrl, urlOrigin } from '../../src/git/url.ts';

describe('parseGitUrl', () => {
  it.each([
    ['https://github.com/Org/Repo.git', { protocol: 'https', host: 'github.com', path: '/Org/Repo.git' }],
    [
      'https://Git.Example.com:8443/team/app',
      { protocol: 'https', host: 'git.example.com', port: 8443, path: '/team/app' },
    ],
    ['ssh://git@github.com/Org/Repo', { protocol: 'ssh', host: 'github.com', user: 'git', path: '/Org/Repo' }],
    [
      'ssh://host.example:2222/srv/repo.git',
      { protocol: 'ssh', host: 'host.example', port: 2222, path: '/srv/repo.git' },
    ],
    ['git@github.com:Org/Repo.git', { protocol: 'ssh', host: 'github.com', user: 'git', path: 'Org/Repo.git' }],
    ['deploy@10.0.0.5:/abs/repo', { protocol: 'ssh', host: '10.0.0.5', user: 'deploy', path: '/abs/repo' }],
    ['file:///tmp/repos/app', { protocol: 'file', host: '', path: '/tmp/repos/app' }],
  ])('%s', (url, expected) => {
    expect(parseGitUrl(url)).toEqual(expected);
  });

  it.each([
    ['', /empty/],
    ['-uhttps://x/y', /start with "-"/],
    ['https://host/a b', /whitespace/],
    ['https://user:pw@github.com/o/r', /credentials/],
    ['https://token@github.com/o/r', /credentials/],
    ['ssh://git:pw@github.com/o/r', /credentials/],
    ['http://github.com/o/r', /plain http/],
    ['git://github.com/o/r', /scheme "git" is not supported/],
    ['ext::sh -c touch% /tmp/pwned', /whitespace|url must be/],
    ['https://github.com', /url must be/],
    ['https://github.com/', /no repository path/],
    ['https://-oProxyCommand=x/o/r', /not a valid host/],
    ['ssh://-oProxyCommand=x/o/r', /not a valid host/],
    ['git@host:-oProxyCommand=x', /must not start with "-"/],
    ['https://host:99999/o/r', /out of range/],
    ['file://host/path', /url must be/],
    ['just-a-path', /url must be/],
  ])('refuses %j', (url, message) => {
    expect(() => parseGitUrl(url)).toThrow(message);
  });
});

describe('checkGitUrl', () => {
  it('accepts the forms the schema accepts', () => {
    for (const url of [
      'https://git.example.com/team/weather-app.git',
      'ssh://git@git.example.com:2222/team/app',
      'git@github.com:Org/Repo.git',
    ]) {
      expect(checkGitUrl(url)).toBeUndefined();
      expect(GIT_URL.test(url)).toBe(true);
    }
  });

  it('refuses file:// unless allowed', () => {
    expect(checkGitUrl('file:///srv/repo')).toMatch(/file:\/\/ urls are refused/);
    expect(checkGitUrl('file:///srv/repo', { allowFile: true })).toBeUndefined();
  });

  it('names the problem', () => {
    expect(checkGitUrl('--upload-pack=touch /tmp/x')).toMatch(/must not start with "-"/);
    expect(checkGitUrl('https://me:hunter2@github.com/o/r')).toMatch(/must not contain credentials/);
    expect(checkGitUrl('https://me:hunter2@github.com/o/r')).not.toContain('hunter2');
  });
});

describe('normalizeRepoUrl', () => {
  it('gives one key for the https and ssh forms of a repository', () => {
    const forms = [
      'https://GitHub.com/Org/Repo.git',
      'https://github.com/Org/Repo',
      'https://github.com/Org/Repo/',
      'https://github.com:443/Org/Repo.git/',
      'http://github.com/Org/Repo',
      'git://github.com/Org/Repo.git',
      'git@github.com:Org/Repo.git',
      'ssh://git@github.com/Org/Repo',
      'ssh://git@github.com:22/Org/Repo.git',
      'git@GITHUB.COM:/Org/Repo',
    ];
    const keys = new Set(forms.map(normalizeRepoUrl));
    expect([...keys]).toEqual(['github.com/Org/Repo']);
  });

  it('keeps path case, non-default ports and distinct repositories apart', () => {
    expect(normalizeRepoUrl('https://github.com/org/repo')).not.toBe(normalizeRepoUrl('https://github.com/Org/Repo'));
    expect(normalizeRepoUrl('https://git.example.com:8443/a/b')).toBe('git.example.com:8443/a/b');
    expect(normalizeRepoUrl('ssh://git@git.example.com:2222/a/b')).toBe('git.example.com:2222/a/b');
    expect(normalizeRepoUrl('https://github.com/Org/Repo2')).not.toBe(normalizeRepoUrl('https://github.com/Org/Repo'));
  });

  it('drops credentials and users from the key', () => {
    expect(normalizeRepoUrl('https://user:secret@github.com/Org/Repo.git')).toBe('github.com/Org/Repo');
  });

  it('normalises file URLs', () => {
    expect(normalizeRepoUrl('file:///tmp/x/repo.git')).toBe(normalizeRepoUrl('file:///tmp/x/repo/'));
  });

  it('returns unrecognised text trimmed', () => {
    expect(normalizeRepoUrl('  not a url  ')).toBe('not a url');
  });
});

describe('helpers', () => {
  it('urlOrigin', () => {
    expect(urlOrigin(parseGitUrl('https://Host.example:8443/a/b'))).toBe('https://host.example:8443');
    expect(urlOrigin(parseGitUrl('https://host.example/a/b'))).toBe('https://host.example');
  });

  it('safeUrl hides https userinfo and passwords but keeps ssh users', () => {
    expect(safeUrl('https://tok3n@github.com/o/r')).toBe('https://***@github.com/o/r');
    expect(safeUrl('https://u:p@github.com/o/r')).toBe('https://***@github.com/o/r');
    expect(safeUrl('ssh://u:p@github.com/o/r')).toBe('ssh://***@github.com/o/r');
    expect(safeUrl('ssh://git@github.com/o/r')).toBe('ssh://git@github.com/o/r');
  });
});
