import { describe, expect, it } from 'vitest';
import type { AppStatus, HistoryEntry } from '../../src/app/schema.ts';
import { awaitingHealthy, transitionsOf } from '../../src/notify/triggers.ts';

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:01:00Z';
const rev = (revision: number, hash = `h${revision}`) => ({
  revision,
  image: `repo/app:${revision}`,
  podTemplateHash: hash,
  replicaSet: `app-${hash}`,
});
const promotedEntry = (revision: number, at: string, by = 'alice', via = 'cli'): HistoryEntry => ({
  revision,
  podTemplateHash: `h${revision}`,
  image: `repo/app:${revision}`,
  createdAt: T0,
  promotedAt: at,
  promotedBy: by,
  promotedVia: via,
});
const healthyAt = (revision: number, extra: AppStatus = {}): AppStatus => ({
  phase: 'Healthy',
  message: `revision ${revision} is active`,
  active: rev(revision),
  stable: rev(revision),
  history: [promotedEntry(1, T0, 'teal', 'first-release')],
  ...extra,
});
const triggers = (before: AppStatus | undefined, after: AppStatus) =>
  transitionsOf(before, after).map((t) => t.trigger);

describe('transitionsOf', () => {
  it('a status write with no news tells nothing', () => {
    const s = healthyAt(1);
    expect(transitionsOf(s, structuredClone(s))).toEqual([]);
    expect(triggers(s, { ...s, readyReplicas: 2 })).toEqual([]);
  });

  it('build-failed once per build Job, and no separate degraded for it', () => {
    const build = { commit: 'a'.repeat(40), job: 'app-build-aaaa', phase: 'Failed' as const, message: 'exit 1' };
    const before = healthyAt(1, { build: { ...build, phase: 'Running' } });
    const after = { ...before, phase: 'Degraded' as const, message: 'build failed', build };
    const found = transitionsOf(before, after);
    expect(found).toMatchObject([{ trigger: 'build-failed', message: 'exit 1', phase: 'Degraded' }]);
    expect(transitionsOf(after, structuredClone(after))).toEqual([]);
    const again = { ...after, build: { ...build, job: 'app-build-bbbb' } };
    expect(triggers(after, again)).toEqual(['build-failed']);
  });

  it('preview-ready when the preview first becomes available, not when promoted in the same write', () => {
    const before = healthyAt(1, { phase: 'Progressing', preview: rev(2) });
    const after = { ...before, phase: 'Paused' as const, preview: { ...rev(2), availableAt: T1 } };
    expect(transitionsOf(before, after)).toMatchObject([{ trigger: 'preview-ready', revision: 2, phase: 'Paused' }]);
    expect(triggers(after, { ...after })).toEqual([]);
    const auto = { ...after, promotion: { podTemplateHash: 'h2', revision: 2, by: 'teal', via: 'auto', at: T1 } };
    expect(triggers(before, auto)).toEqual([]);
  });

  it('promoted with who and how, then healthy once Healthy (at once or after post checks)', () => {
    const before = healthyAt(1, { phase: 'Paused', preview: { ...rev(2), availableAt: T0 } });
    const history = [...(before.history ?? []), promotedEntry(2, T1, 'bob', 'api')];
    const progressing = { ...before, phase: 'Progressing' as const, active: rev(2), history };
    delete progressing.preview;
    const found = transitionsOf(before, progressing);
    expect(found).toMatchObject([{ trigger: 'promoted', revision: 2, by: 'bob', via: 'api' }]);
    const marker = awaitingHealthy(before, found);
    expect(marker).toEqual({ trigger: 'promoted', revision: 2 });
    const withMarker = { ...progressing, notifications: { awaitingHealthy: marker } };
    const healthy = { ...withMarker, phase: 'Healthy' as const };
    expect(triggers(withMarker, healthy)).toEqual(['healthy']);
    // Switch and Healthy in one write: both.
    expect(triggers(before, { ...progressing, phase: 'Healthy' })).toEqual(['promoted', 'healthy']);
  });

  it('a restart or a build passing through Progressing is no news', () => {
    const healthy = healthyAt(1);
    const progressing = { ...healthy, phase: 'Progressing' as const, message: 'restart: 1/3 pods replaced' };
    expect(triggers(healthy, progressing)).toEqual([]);
    expect(triggers(progressing, healthy)).toEqual([]);
  });

  it('degraded says why; healthy again after it, through Progressing', () => {
    const healthy = healthyAt(1);
    const degraded = { ...healthy, phase: 'Degraded' as const, message: 'progress deadline exceeded' };
    const found = transitionsOf(healthy, degraded);
    expect(found).toMatchObject([{ trigger: 'degraded', message: 'progress deadline exceeded', revision: 1 }]);
    const marked = { ...degraded, notifications: { awaitingHealthy: awaitingHealthy(healthy, found) } };
    const progressing = { ...marked, phase: 'Progressing' as const };
    expect(triggers(marked, progressing)).toEqual([]);
    expect(triggers(progressing, { ...progressing, phase: 'Healthy' })).toEqual(['healthy']);
  });

  it('aborted by whom, without a separate degraded', () => {
    const before = healthyAt(1, { phase: 'Paused', preview: { ...rev(2), availableAt: T0 } });
    const abort = { podTemplateHash: 'h2', revision: 2, by: 'carol', via: 'kubectl', at: T1 };
    const after = { ...before, phase: 'Degraded' as const, message: 'revision 2 aborted by carol', abort };
    expect(transitionsOf(before, after)).toMatchObject([
      { trigger: 'aborted', revision: 2, by: 'carol', via: 'kubectl', message: 'revision 2 aborted by carol' },
    ]);
    expect(triggers(after, { ...after })).toEqual([]);
  });

  it('undo to a revision, once; its switch is no promotion', () => {
    const before = healthyAt(2, { history: [promotedEntry(1, T0), promotedEntry(2, T0)] });
    const pin = { podTemplateHash: 'h1', revision: 1, over: 'x', by: 'dave', via: 'cli', at: T1 };
    const pinned = { ...before, phase: 'Progressing' as const, pin };
    expect(transitionsOf(before, pinned)).toMatchObject([{ trigger: 'undo', revision: 1, by: 'dave' }]);
    const switched = {
      ...pinned,
      active: rev(1),
      history: [...(pinned.history ?? []), promotedEntry(1, T1, 'dave', 'undo')],
    };
    expect(triggers(pinned, switched)).toEqual([]);
  });

  it('an undo that drops the revision on its way is told from history', () => {
    const before = healthyAt(1, { phase: 'Paused', preview: { ...rev(2), availableAt: T0 } });
    const pin = { podTemplateHash: 'h1', revision: 1, over: 'x', by: 'erin', via: 'api', at: T1 };
    const history = [...(before.history ?? []), promotedEntry(1, T1, 'erin', 'undo')];
    const after = { ...before, pin, history };
    expect(transitionsOf(before, after)).toMatchObject([{ trigger: 'undo', revision: 1, by: 'erin' }]);
  });

  it('a long message is clipped', () => {
    const healthy = healthyAt(1);
    const [t] = transitionsOf(healthy, { ...healthy, phase: 'Degraded', message: 'x'.repeat(2000) });
    expect(t?.message?.length).toBe(512);
  });
});
