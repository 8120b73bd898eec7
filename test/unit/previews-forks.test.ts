// Fork safety (issue #28 item 5): a fork's pull request is built only with an
// approval (the label added by someone with write access) pinned to the head
// commit it was given for; a new commit needs a new approval.
import { describe, expect, it } from 'vitest';
import type { PullRequestApproval } from '../../src/previews/pull-request.ts';
import { PreviewReason } from '../../src/previews/reasons.ts';
import {
  at,
  childrenOf,
  commit,
  MINUTE,
  ofKind,
  parentApp,
  planFor,
  pullRequest,
  valid,
} from '../fixtures/previews.ts';

const LABEL = 'preview-approved';
const fork = pullRequest(21, { fromFork: true, labels: [LABEL] });
const approval = (over: Partial<PullRequestApproval> = {}): PullRequestApproval => ({
  number: 21,
  label: LABEL,
  sha: fork.headSha,
  by: 'maintainer',
  permission: 'write',
  at: '2026-11-27T05:30:00Z',
  ...over,
});

describe('a pull request from a fork', () => {
  const app = parentApp();

  it('is not built without an approval: no child, the status says it waits', () => {
    const p = planFor(app, [{ ...fork, labels: [] }]);
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(p.status?.pullRequests?.[0]).toMatchObject({ number: 21, state: 'AwaitingApproval' });
    expect(p.status?.pullRequests?.[0]?.name).toBeUndefined();
    const [status] = ofKind(p, 'setCommitStatus');
    expect(status?.status).toMatchObject({ state: 'pending', description: expect.stringMatching(/preview-approved/) });
  });

  it('is built once someone with write access approved its head commit', () => {
    const waiting = planFor(app, [fork]);
    const after = valid({ ...structuredClone(app), status: { previews: waiting.status } });
    const [create] = ofKind(planFor(after, [fork], { approvals: [approval()], now: at(MINUTE) }), 'createChild');
    expect(create?.manifest.spec.source?.git.ref).toBe(fork.headSha);
    expect(create?.why).toBe(PreviewReason.Approved);
  });

  it.each(['read', 'none'] as const)('is not built on an approval by someone with %s permission', (permission) => {
    expect(ofKind(planFor(app, [fork], { approvals: [approval({ permission })] }), 'createChild')).toEqual([]);
  });

  it('is not built on an approval given for another commit, and the stale label is removed', () => {
    const p = planFor(app, [fork], { approvals: [approval({ sha: commit('older') })] });
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(ofKind(p, 'removeLabel')).toEqual([
      { kind: 'removeLabel', number: 21, label: LABEL, why: PreviewReason.StaleApproval },
    ]);
  });

  it('is not built when the label was removed after the approval', () => {
    expect(ofKind(planFor(app, [{ ...fork, labels: [] }], { approvals: [approval()] }), 'createChild')).toEqual([]);
  });

  it('keeps its preview at the approved commit after a new, unapproved commit: never builds the new one', () => {
    const children = childrenOf(planFor(app, [fork], { approvals: [approval()] }));
    const pushed = { ...fork, headSha: commit('unapproved') };
    const p = planFor(app, [pushed], { children, approvals: [approval()], now: at(MINUTE) });
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(ofKind(p, 'updateChild')).toEqual([]);
    expect(ofKind(p, 'deleteChild')).toEqual([]);
    expect(p.status?.pullRequests?.[0]).toMatchObject({ state: 'AwaitingApproval', head: commit('unapproved') });
  });

  it('keeps an approval at the commit it was first seen on when the host reports it at the current head (GitHub, Gitea)', () => {
    // Such a host reads the approval label's author and time, but not the head at that time:
    // it reports the head of the listing, so a label left on would approve every later push.
    const first = planFor(app, [fork], { approvals: [approval()] });
    const parent = valid({ ...structuredClone(app), status: { previews: first.status } });
    const children = childrenOf(first);
    const pushed = { ...fork, headSha: commit('unapproved') };
    const sameAct = approval({ sha: pushed.headSha });
    const p = planFor(parent, [pushed], { children, approvals: [sameAct], now: at(MINUTE) });
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(ofKind(p, 'updateChild')).toEqual([]);
    expect(p.status?.pullRequests?.[0]).toMatchObject({ state: 'AwaitingApproval', head: commit('unapproved') });
    // The label approves no commit now: it is taken off, so approving the new commit is a new act.
    expect(ofKind(p, 'removeLabel')).toEqual([expect.objectContaining({ number: 21, label: LABEL })]);
    // Added again (another time), it approves the head it is seen on then.
    const again = approval({ sha: pushed.headSha, at: '2026-11-27T06:00:00Z' });
    const next = valid({ ...structuredClone(app), status: { previews: p.status } });
    const [update] = ofKind(
      planFor(next, [pushed], { children, approvals: [again], now: at(2 * MINUTE) }),
      'updateChild',
    );
    expect(update?.manifest.spec.source?.git.ref).toBe(commit('unapproved'));
  });

  it('moves to the new commit once that commit is approved', () => {
    const children = childrenOf(planFor(app, [fork], { approvals: [approval()] }));
    const pushed = { ...fork, headSha: commit('approved-later') };
    const p = planFor(app, [pushed], { children, approvals: [approval({ sha: pushed.headSha })], now: at(MINUTE) });
    const [update] = ofKind(p, 'updateChild');
    expect(update?.manifest.spec.source?.git.ref).toBe(commit('approved-later'));
  });

  it('is built as any other under forks.policy build, and never under ignore (any preview it had is deleted)', () => {
    const build = parentApp((p) => {
      p.forks = { policy: 'build', approvalLabel: LABEL };
    });
    expect(ofKind(planFor(build, [{ ...fork, labels: [] }]), 'createChild')).toHaveLength(1);
    const ignore = parentApp((p) => {
      p.forks = { policy: 'ignore', approvalLabel: LABEL };
    });
    const children = childrenOf(planFor(app, [fork], { approvals: [approval()] }));
    const p = planFor(ignore, [fork], { children, approvals: [approval()] });
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(ofKind(p, 'deleteChild')).toEqual([expect.objectContaining({ why: PreviewReason.ForkIgnored })]);
  });
});
