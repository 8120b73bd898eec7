// How test/cluster/image-run.ts turns an image's config and a pod's command and
// args into the process it starts: Kubernetes' rule, as a kubelet applies it.
import { describe, expect, it } from 'vitest';
import { containerArgv, userOf } from '../cluster/image-run.ts';

const image = { Entrypoint: ['node', '--flag', 'dist/teal.js'], Cmd: ['--default'] };

describe('containerArgv', () => {
  it("runs the image's entrypoint and command when the pod names neither", () => {
    expect(containerArgv(image, {})).toEqual(['node', '--flag', 'dist/teal.js', '--default']);
  });

  it("replaces the image's command with args, and keeps its entrypoint", () => {
    expect(containerArgv(image, { args: ['--help'] })).toEqual(['node', '--flag', 'dist/teal.js', '--help']);
  });

  it("replaces the entrypoint with command and drops the image's command", () => {
    expect(containerArgv(image, { command: ['node', 'dist/teal.js'] })).toEqual(['node', 'dist/teal.js']);
    expect(containerArgv(image, { command: ['node', 'x.js'], args: ['--a'] })).toEqual(['node', 'x.js', '--a']);
  });
});

describe('userOf', () => {
  it('reads a numeric USER, root when there is none, and refuses a name', () => {
    expect(userOf('1000:1000')).toEqual({ uid: 1000, gid: 1000 });
    expect(userOf('10001')).toEqual({ uid: 10001, gid: 10001 });
    expect(userOf(undefined)).toEqual({ uid: 0, gid: 0 });
    expect(() => userOf('node')).toThrow(/only numeric users/);
  });
});
