// Status back on the pull request (issue #28 item 6): the commit status
// teal/preview through building, deploying, success with the URL or failure with
// the message; one comment edited at most once per 10 s; no credential in either;
// provider text escaped.
import { describe, expect, it } from 'vitest';
import { ANN_WAKE } from '../../src/app/preview-labels.ts';
import type { PreviewReported } from '../../src/app/previews-schema.ts';
import type { App, AppStatus } from '../../src/app/schema.ts';
import type { PreviewsPlan } from '../../src/previews/plan.ts';
import { escapeMarkdown, withoutCredentials } from '../../src/previews/report.ts';
import {
  at,
  childrenOf,
  commit,
  HOUR,
  NOW,
  observedChild,
  ofKind,
  parentApp,
  planFor,
  pullRequest,
  releasedStatus,
  valid,
} from '../fixtures/previews.ts';

const pr = pullRequest(8);
const app = parentApp();

/** The child of #8 as observed with this status. */
function childWith(status: AppStatus): App {
  const [create] = ofKind(planFor(app, [pr]), 'createChild');
  if (!create) throw new Error('no child');
  return observedChild(create.manifest, status);
}

/** The parent with status.previews saying #8 was last told what `plan` asked for, at `when`. */
function afterReporting(p: PreviewsPlan, when: Date): App {
  const [status] = ofKind(p, 'setCommitStatus');
  const [comment] = ofKind(p, 'editComment');
  const reported: PreviewReported = {
    ...(status ? { status: { sha: status.sha, ...status.status, at: when.toISOString() } } : {}),
    ...(comment ? { comment: { hash: comment.hash, at: when.toISOString() } } : {}),
  };
  const entries = (p.status?.pullRequests ?? []).map((e) => ({ ...e, reported }));
  return valid({ ...structuredClone(app), status: { previews: { ...p.status, pullRequests: entries } } });
}

const statusOf = (p: PreviewsPlan) => ofKind(p, 'setCommitStatus')[0]?.status;
const bodyOf = (p: PreviewsPlan) => ofKind(p, 'editComment')[0]?.body ?? '';

describe('the commit status teal/preview', () => {
  it('is pending (building) for a new preview, on the head commit', () => {
    const [status] = ofKind(planFor(app, [pr]), 'setCommitStatus');
    expect(status).toEqual({
      kind: 'setCommitStatus',
      number: 8,
      sha: pr.headSha,
      context: 'teal/preview',
      status: { state: 'pending', description: `Building ${pr.headSha.slice(0, 7)}` },
    });
  });

  it('is pending (deploying) once built', () => {
    const built = releasedStatus(pr.headSha);
    const child = childWith({ ...built, phase: 'Progressing', active: undefined });
    expect(statusOf(planFor(app, [pr], { children: [child] }))).toEqual({
      state: 'pending',
      description: `Deploying ${pr.headSha.slice(0, 7)}`,
    });
  });

  it('is success with the preview URL once the head commit is released', () => {
    const child = childWith(releasedStatus(pr.headSha));
    const p = planFor(app, [pr], { children: [child] });
    expect(statusOf(p)).toEqual({
      state: 'success',
      description: 'Preview ready',
      targetUrl: 'https://pr-8.preview.example.com/',
    });
    expect(p.status?.pullRequests?.[0]).toMatchObject({ state: 'Ready', url: 'https://pr-8.preview.example.com/' });
  });

  it('is not success while the App still serves an older commit of the pull request', () => {
    const older = releasedStatus(pr.headSha);
    older.active = { revision: 1, image: 'x', podTemplateHash: 'abc', replicaSet: 'rs', commit: commit('older') };
    older.build = { commit: pr.headSha, job: 'b', phase: 'Running' };
    const p = planFor(app, [pr], { children: [childWith(older)] });
    expect(statusOf(p)).toEqual({ state: 'pending', description: `Building ${pr.headSha.slice(0, 7)}` });
  });

  it("is failure with the build's message, without credentials", () => {
    const failed = releasedStatus(pr.headSha);
    const token = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
    failed.build = {
      commit: pr.headSha,
      job: 'b',
      phase: 'Failed',
      message: `fetch https://bot:${token}@git.example.com/x failed: Authorization: Bearer ${token}`,
    };
    const description = statusOf(
      planFor(app, [pr], { children: [childWith({ ...failed, phase: 'Degraded' })] }),
    )?.description;
    expect(description).toMatch(/^fetch https:\/\/git\.example\.com\/x failed/);
    expect(description).not.toContain(token);
    expect(description).not.toContain('bot:');
  });

  it("is failure with the checks' message when the release was aborted", () => {
    const aborted: AppStatus = {
      ...releasedStatus(pr.headSha),
      phase: 'Degraded',
      active: undefined,
      conditions: [
        {
          type: 'Aborted',
          status: 'True',
          reason: 'AnalysisFailed',
          message: 'check smoke failed',
          lastTransitionTime: NOW.toISOString(),
        },
      ],
    };
    expect(statusOf(planFor(app, [pr], { children: [childWith(aborted)] }))).toEqual({
      state: 'failure',
      description: 'check smoke failed',
    });
  });

  it('is not written again when the pull request was last told the same of this commit', () => {
    const first = planFor(app, [pr]);
    const told = afterReporting(first, NOW);
    const again = planFor(told, [pr], { children: childrenOf(first), now: at(HOUR) });
    expect(ofKind(again, 'setCommitStatus')).toEqual([]);
    expect(ofKind(again, 'editComment')).toEqual([]);
  });

  it('is not written when report.commitStatus is off', () => {
    const quiet = parentApp((p) => {
      p.report = { commitStatus: false, comment: true };
    });
    expect(ofKind(planFor(quiet, [pr]), 'setCommitStatus')).toEqual([]);
  });

  it('says a ready preview sleeps, without a URL', () => {
    const sleepy = parentApp((p) => {
      p.sleepAfter = '1h';
    });
    const [create] = ofKind(planFor(sleepy, [pr]), 'createChild');
    if (!create) throw new Error('no child');
    const child = observedChild(create.manifest, releasedStatus(pr.headSha));
    const p = planFor(sleepy, [pr], { children: [child], now: at(HOUR) });
    expect(statusOf(p)).toEqual({
      state: 'success',
      description: 'Preview asleep: a new commit or a wake brings it back',
    });
    expect(p.status?.pullRequests?.[0]?.state).toBe('Asleep');
    expect(bodyOf(p)).toContain(ANN_WAKE);
  });
});

describe('the comment', () => {
  it('shows the URL, the commit, the build time, the check results and the kubectl teal commands', () => {
    const released = releasedStatus(pr.headSha);
    released.history = [{ revision: 1, commit: pr.headSha, image: 'x', createdAt: NOW.toISOString() }];
    released.prePromotionAnalysis = {
      id: 'r1',
      revision: 1,
      podTemplateHash: 'abc',
      phase: 'Successful',
      startedAt: NOW.toISOString(),
      checks: [
        {
          name: 'smoke',
          phase: 'Successful',
          taken: 1,
          count: 1,
          successful: 1,
          failed: 0,
          inconclusive: 0,
          error: 0,
          consecutiveError: 0,
          measurements: [],
        },
      ],
    };
    const body = bodyOf(planFor(app, [pr], { children: [childWith(released)] }));
    expect(body).toContain('| URL | https://pr-8.preview.example.com/ |');
    expect(body).toContain(`| Commit | \`${pr.headSha.slice(0, 12)}\` |`);
    expect(body).toContain('| Build | 1m 32s |');
    expect(body).toContain('| Checks | Successful (smoke: Successful) |');
    expect(body).toContain('kubectl teal get weather-pr-8 -n team');
    expect(body).toContain('kubectl teal logs weather-pr-8 -n team');
  });

  it('is edited at most once per 10 s, and the plan wakes up exactly when it may be', () => {
    const first = planFor(app, [pr]);
    const told = afterReporting(first, at(-3_000));
    const child = childWith(releasedStatus(pr.headSha));
    const p = planFor(told, [pr], { children: [child] });
    expect(ofKind(p, 'editComment')).toEqual([]);
    expect(p.wakeAt).toBe(at(7_000).toISOString());
    expect(p.requeueAfterMs).toBe(7_000);
    const later = planFor(told, [pr], { children: [child], now: at(7_000), listedAt: NOW });
    expect(ofKind(later, 'editComment')).toHaveLength(1);
  });

  it('shows a hostile title as text: no HTML, no markdown, no mention, no credential, cut to 200 characters', () => {
    const title = `<img src=x onerror=alert(1)> [click](javascript:alert(1)) @org/admins ghp_0123456789abcdefghijABCDEFGHIJ ${'x'.repeat(300)}`;
    const body = bodyOf(planFor(app, [{ ...pr, title }]));
    const heading = body.split('\n').find((l) => l.startsWith('### ')) ?? '';
    expect(heading).not.toMatch(/<img|\]\(|@org/);
    expect(heading).toContain('&lt;img src=x onerror=alert\\(1\\)&gt;');
    expect(heading).toContain('&#64;org/admins');
    expect(heading).not.toContain('ghp_0123456789');
    expect(heading.length).toBeLessThan(320);
  });

  it('is not written when report.comment is off', () => {
    const quiet = parentApp((p) => {
      p.report = { commitStatus: true, comment: false };
    });
    expect(ofKind(planFor(quiet, [pr]), 'editComment')).toEqual([]);
  });
});

describe('text from outside', () => {
  it.each([
    ['https://user:pass@host/x', 'https://host/x'],
    ['Authorization: token abc123', 'Authorization: token *****'],
    ['glpat-abcdefghijklmnopqrstuvwx and github_pat_11ABCDEFG0123456789abcdef', '***** and *****'],
  ])('withoutCredentials(%s) is %s', (text, clean) => {
    expect(withoutCredentials(text)).toBe(clean);
  });

  it('escapes every markdown character and a new line', () => {
    expect(escapeMarkdown('a*b_c`d\n# e|f')).toBe('a\\*b\\_c\\`d \\# e\\|f');
  });
});
