// src/api/build-log.ts, its pure parts: which build Job a log is asked of,
// where its pod stands, the build's outcome once the log has ended, and the
// Last-Event-ID a reconnecting client sends, and the problem that ends a
// stream whose caller lost the right.
import { describe, expect, it } from 'vitest';
import { buildJobOf, lastLineOf, lostAccess, outcomeOf, podState } from '../../src/api/build-log.ts';
import { ApiError } from '../../src/api/errors.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import type { ObservedBuildPod, ObservedJob } from '../../src/build/plan.ts';

const SHA_A = 'a'.repeat(40);
const SHA_AB = `ab${'0'.repeat(38)}`;

const app = (status: unknown, spec: unknown = {}): CachedApp => ({
  metadata: { namespace: 'shop', name: 'web', resourceVersion: '1' },
  spec,
  status,
});

const job = (name: string, commit: string, more: Partial<ObservedJob> = {}): ObservedJob => ({
  namespace: 'shop',
  name,
  resourceVersion: '1',
  uid: 'job-uid',
  app: 'web',
  appNamespace: 'shop',
  suspended: false,
  commit,
  buildSpec: 'abcde',
  createdAt: '2026-11-26T10:00:00Z',
  active: 1,
  deleting: false,
  ...more,
});

const pod = (phase: string, more: Partial<ObservedBuildPod> = {}): ObservedBuildPod => ({
  namespace: 'shop',
  name: 'web-build-1-x',
  resourceVersion: '1',
  job: 'web-build-1',
  phase,
  ...more,
});

const failure = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    if (err instanceof ApiError) return [err.status, err.message];
    throw err;
  }
  return undefined;
};

describe('buildJobOf', () => {
  it("is the status's build Job without a commit; an App without one says why, as a 404", () => {
    expect(buildJobOf(app({ build: { job: 'web-build-1', commit: SHA_A, phase: 'Running' } }), [], undefined)).toBe(
      'web-build-1',
    );
    expect(failure(() => buildJobOf(app({}), [], undefined))).toEqual([404, 'App shop/web has no build yet']);
    expect(failure(() => buildJobOf(app({}, { image: 'nginx:1' }), [], undefined))).toEqual([
      404,
      'App shop/web deploys a ready image (spec.image): it has no builds',
    ]);
  });

  it('is the newest Job of the commit a prefix names; an ambiguous prefix or a non-hex one is a 400, none a 404', () => {
    const jobs = [
      job('web-build-a-old', SHA_A, { createdAt: '2026-11-26T09:00:00Z' }),
      job('web-build-a-new', SHA_A),
      job('web-build-ab', SHA_AB),
    ];
    expect(buildJobOf(app({}), jobs, 'aaaa')).toBe('web-build-a-new');
    expect(buildJobOf(app({}), [...jobs, job('web-build-ab1', `ab${'1'.repeat(38)}`)], 'ab00')).toBe('web-build-ab');
    expect(failure(() => buildJobOf(app({}), jobs, 'aaa'))).toEqual([
      400,
      'the commit must be a SHA, or 4 or more of its first hex digits',
    ]);
    expect(failure(() => buildJobOf(app({}), jobs, 'HEAD'))?.[0]).toBe(400);
    expect(failure(() => buildJobOf(app({}), jobs, 'abcdef0'))).toEqual([
      404,
      'App shop/web has no build of commit abcdef0 (Teal keeps only recent build Jobs)',
    ]);
    const twoCommits = [job('x', `abcd${'0'.repeat(36)}`), job('y', `abcd${'1'.repeat(36)}`)];
    expect(failure(() => buildJobOf(app({}), twoCommits, 'abcd'))?.[0]).toBe(400);
  });
});

describe('podState', () => {
  it('waits for a Job without a pod, or with one not started; a started pod is read', () => {
    expect(podState(job('web-build-1', SHA_A), [])).toEqual({
      kind: 'waiting',
      message: 'build Job web-build-1 has no pod yet',
    });
    expect(podState(job('web-build-1', SHA_A), [pod('Pending')])).toEqual({
      kind: 'waiting',
      message: 'build pod web-build-1-x is Pending',
    });
    for (const phase of ['Running', 'Succeeded', 'Failed']) {
      expect(podState(job('web-build-1', SHA_A), [pod(phase)])).toMatchObject({ kind: 'started' });
    }
  });

  it('is over for a Job that ended without a pod (its deadline), or that is gone', () => {
    const failed = job('web-build-1', SHA_A, { outcome: 'Failed', failureMessage: 'DeadlineExceeded' });
    expect(podState(failed, [])).toEqual({ kind: 'over', outcome: 'Failed', message: 'DeadlineExceeded' });
    expect(podState(undefined, [])).toEqual({ kind: 'over', outcome: 'Unknown', message: 'the build Job is gone' });
  });
});

describe('outcomeOf', () => {
  it("is the container's exit code, else the pod's phase, else the Job's; undefined while none says", () => {
    const running = job('web-build-1', SHA_A);
    expect(outcomeOf(running, pod('Running', { exitCode: 0 }))).toEqual({ outcome: 'Succeeded' });
    expect(outcomeOf(running, pod('Running', { exitCode: 2 }))).toEqual({ outcome: 'Failed' });
    expect(outcomeOf(running, pod('Failed'))).toEqual({ outcome: 'Failed' });
    expect(outcomeOf(job('j', SHA_A, { outcome: 'Complete' }), undefined)).toEqual({ outcome: 'Succeeded' });
    expect(outcomeOf(running, pod('Running'))).toBeUndefined();
    expect(outcomeOf(undefined, undefined)).toEqual({ outcome: 'Unknown', message: 'the build Job is gone' });
  });
});

describe('lastLineOf', () => {
  it('is the line number a reconnecting client has, and 0 for anything else', () => {
    expect(lastLineOf('42')).toBe(42);
    expect(lastLineOf(['7', '9'])).toBe(7);
    for (const bad of [undefined, '', '-1', '1e3', 'abc', '9'.repeat(20)]) expect(lastLineOf(bad)).toBe(0);
  });

  it('a check that says no (403, or 401 once the caller is gone) ends the stream with its words; a failed check does not', () => {
    const denied = 'User "u" cannot get resource "pods/log" in API group "" in the namespace "shop"';
    expect(lostAccess(new ApiError(403, denied))).toEqual({ kind: 'problem', message: `the log stopped: ${denied}` });
    expect(lostAccess(new ApiError(401, 'the token is invalid or expired'))).toEqual({
      kind: 'problem',
      message: 'the log stopped: the token is invalid or expired',
    });
    expect(lostAccess(new ApiError(503, 'the access review failed: timeout'))).toBeUndefined();
    expect(lostAccess(new Error('socket hang up'))).toBeUndefined();
  });
});
