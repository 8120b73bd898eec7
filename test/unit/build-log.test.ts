// src/build/log-lines.ts and log-scrub.ts: a streamed build log becomes whole
// lines however its chunks fall, and every line is masked of the build's
// credentials before anyone sees it (the rule `kubectl teal logs` and the
// dashboard's build log share).
import { describe, expect, it } from 'vitest';
import {
  type BuildLogEvent,
  BuildLogReader,
  buildLogPath,
  SSE_COMMENT,
  sseText,
} from '../../src/app/build-log-events.ts';
import { LineSplitter, longLineNotice } from '../../src/build/log-lines.ts';
import { credentialsOf, logScrubber, podSecretNames } from '../../src/build/log-scrub.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** The lines of text fed in chunks cut at every given byte offset. */
function linesOf(bytes: Buffer, cuts: number[], maxChars?: number): string[] {
  const splitter = new LineSplitter(maxChars);
  const lines: string[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    lines.push(...splitter.push(bytes.subarray(from, cut)));
    from = cut;
  }
  return [...lines, ...splitter.end()];
}

describe('LineSplitter', () => {
  const text = 'first line\r\nsecond: ünïcødé ✓\n\nlast without newline';
  const bytes = Buffer.from(text);
  const whole = ['first line', 'second: ünïcødé ✓', '', 'last without newline'];

  it('gives the same lines wherever the chunks are cut, within a line or a UTF-8 character', () => {
    expect(linesOf(bytes, [])).toEqual(whole);
    for (let cut = 1; cut < bytes.length; cut++) expect(linesOf(bytes, [cut])).toEqual(whole);
    expect(linesOf(bytes, [...bytes.keys()].slice(1))).toEqual(whole);
  });

  it('holds no line longer than its limit: the line is replaced by a notice, not cut, and the next line is whole', () => {
    const long = `${'x'.repeat(30)}\nshort\n${'y'.repeat(11)}`;
    const bytes = Buffer.from(long);
    const expected = [longLineNotice(10), 'short', longLineNotice(10)];
    expect(linesOf(bytes, [], 10)).toEqual(expected);
    for (let cut = 1; cut < bytes.length; cut++) expect(linesOf(bytes, [cut, cut + 3], 10)).toEqual(expected);
  });

  it('gives nothing for an empty log', () => {
    expect(linesOf(Buffer.alloc(0), [])).toEqual([]);
  });
});

describe('the credentials of a build', () => {
  const pod = {
    spec: {
      volumes: [{ secret: { secretName: 'push' } }, { emptyDir: {} }],
      containers: [
        {
          env: [
            { name: 'TEAL_COMMIT', value: 'abc' },
            { name: 'GIT_PASSWORD', valueFrom: { secretKeyRef: { name: 'git', key: 'password' } } },
            { name: 'GIT_USERNAME', valueFrom: { secretKeyRef: { name: 'git', key: 'username' } } },
          ],
        },
      ],
    },
  };

  it('are those of the Secrets its pod reads, by volume and by environment', () => {
    expect(podSecretNames(pod)).toEqual(['push', 'git']);
  });

  it("are the git Secret's password, token and key, and each registry's auth and password; not a user name or a CA", () => {
    const key =
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n';
    const git = { username: b64('bot'), password: b64('git-pass'), identity: b64(key), 'ca.crt': b64('a CA') };
    const dockerconfig = { auths: { 'registry.local:5000': { auth: b64('pusher:reg-pass'), identitytoken: 'idtok' } } };
    const found = credentialsOf([git, { '.dockerconfigjson': b64(JSON.stringify(dockerconfig)) }, undefined]);
    expect(found).toEqual(
      expect.arrayContaining(['git-pass', key, 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ', b64('pusher:reg-pass')]),
    );
    expect(found).toEqual(expect.arrayContaining(['idtok', 'reg-pass']));
    expect(found).not.toContain('bot');
    expect(found).not.toContain('a CA');
  });
});

describe('logScrubber', () => {
  const scrub = logScrubber(credentialsOf([{ password: b64('s3cr3t-token'), username: b64('bot') }]));

  it('masks a credential in the forms a build echoes it: plain, in a Basic header, URL-encoded, in a URL', () => {
    const lines = [
      '#5 [2/3] RUN echo s3cr3t-token',
      `GIT_AUTH_HEADER=basic ${b64('bot:s3cr3t-token')}`,
      'password=s3cr3t%2Dtoken&x=1',
      'fatal: could not read from https://bot:s3cr3t-token@git.example.com/repo.git',
      '{"password":"s3cr3t-token"}',
    ];
    for (const line of lines) {
      const out = scrub(line);
      expect(out).not.toContain('s3cr3t');
      expect(out).not.toContain(b64('bot:s3cr3t-token').slice(4, 16));
      expect(out).not.toBe(line);
    }
  });

  it("masks any URL's userinfo and any Authorization header's value, even of credentials it was not given", () => {
    expect(scrub('cloning https://someone:other-pass@example.com/x.git')).toBe('cloning https://example.com/x.git');
    expect(scrub('> Authorization: Bearer eyJhbGciOi.xyz')).toBe('> Authorization: Bearer *****');
  });

  it('leaves a line without credentials as it was', () => {
    const line = '#7 exporting to image: pushing registry.local:5000/team/web:0123abcd done 0.4s';
    expect(scrub(line)).toBe(line);
  });
});

describe('the build log wire format (app/build-log-events.ts)', () => {
  const events: BuildLogEvent[] = [
    { kind: 'waiting', message: 'build pod web-build-1 is Pending' },
    { kind: 'line', id: 1, text: '#4 0.136 build-log: started' },
    { kind: 'line', id: 2, text: '' },
    { kind: 'problem', message: 'the node did not serve "it"' },
    { kind: 'end', outcome: 'Failed', message: 'exit code 1' },
  ];
  const text = events.map(sseText).join('') + SSE_COMMENT;

  it('reads back what it writes, wherever the text is cut, and skips comments', () => {
    for (let cut = 0; cut <= text.length; cut++) {
      const reader = new BuildLogReader();
      expect([...reader.push(text.slice(0, cut)), ...reader.push(text.slice(cut))]).toEqual(events);
    }
  });

  it('writes a line holding a CR as one data field, so it stays one line', () => {
    expect(sseText({ kind: 'line', id: 7, text: 'a\rb' })).toBe('id: 7\ndata: a b\n\n');
  });

  it('drops an event of another kind, or one whose data does not parse', () => {
    expect(new BuildLogReader().push('event: other\ndata: {}\n\nevent: end\ndata: nope\n\ndata: no id\n\n')).toEqual(
      [],
    );
  });

  it("names the current build or a commit's in its path", () => {
    expect(buildLogPath('shop', 'web')).toBe('/api/v1/namespaces/shop/apps/web/build/log');
    expect(buildLogPath('shop', 'web', 'abc123')).toBe('/api/v1/namespaces/shop/apps/web/builds/abc123/log');
  });
});
