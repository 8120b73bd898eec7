// The previews planner (issue #28 items 2, 3, 4, 7): one child App per matching
// open pull request, pinned at its head, shaped by the parent; deleted when the
// pull request goes; provider errors change nothing; sleep, wake, expiry and
// maxActive with exact deadlines.
import { describe, expect, it } from 'vitest';
import {
  ANN_ACTIVE_AT,
  ANN_PR_HEAD,
  ANN_PR_REF,
  ANN_PREVIEWS_REQUESTED,
  ANN_WAKE,
  LABEL_PREVIEW_OF,
  LABEL_PULL_REQUEST,
} from '../../src/app/preview-labels.ts';
import { plan } from '../../src/previews/plan.ts';
import { PreviewReason } from '../../src/previews/reasons.ts';
import { specProblems } from '../../src/rollout/spec-problems.ts';
import {
  at,
  childrenOf,
  commit,
  HOUR,
  MINUTE,
  NOW,
  observedChild,
  ofKind,
  parentApp,
  planFor,
  pullRequest,
  valid,
} from '../fixtures/previews.ts';

describe('a child App per pull request', () => {
  it('makes <app>-pr-<n>, owned by the parent, labelled, pinned at the head SHA fetched from the pull ref', () => {
    const pr = pullRequest(12);
    const [create] = ofKind(planFor(parentApp(), [pr]), 'createChild');
    expect(create?.why).toBe(PreviewReason.Opened);
    const m = create?.manifest;
    expect(m?.metadata).toMatchObject({
      name: 'weather-pr-12',
      namespace: 'team',
      labels: { [LABEL_PREVIEW_OF]: 'weather', [LABEL_PULL_REQUEST]: '12' },
      annotations: { [ANN_PR_HEAD]: pr.headSha, [ANN_PR_REF]: 'refs/pull/12/head', [ANN_ACTIVE_AT]: NOW.toISOString() },
      ownerReferences: [{ kind: 'App', name: 'weather', uid: 'parent-uid', controller: true }],
    });
    expect(m?.spec.source?.git).toMatchObject({ url: 'https://git.example.com/team/weather-app.git', ref: pr.headSha });
  });

  it("builds with the previews' image repository and push Secret, never the parent's, and is a valid App", () => {
    const [create] = ofKind(planFor(parentApp(), [pullRequest(1)]), 'createChild');
    const child = valid(create?.manifest);
    expect(child.spec.build).toMatchObject({
      image: 'harbor.example.com/previews/weather',
      pushSecretRef: { name: 'previews-push' },
    });
    expect(child.spec.previews).toBeUndefined();
    expect(specProblems(child)).toEqual([]);
  });

  it("takes replicas from spec.previews and drops the parent's Services, routes and gates", () => {
    const app = parentApp((p, input) => {
      p.replicas = 2;
      input.spec.replicas = 5;
      input.spec.strategy = {
        blueGreen: {
          activeService: 'weather-live',
          previewService: 'weather-next',
          switch: { readinessGates: ['x/y'] },
        },
      };
    });
    const [create] = ofKind(planFor(app, [pullRequest(1)]), 'createChild');
    expect(create?.manifest.spec.replicas).toBe(2);
    const bg = create?.manifest.spec.strategy.blueGreen;
    expect(bg?.activeService).toBeUndefined();
    expect(bg?.previewService).toBeUndefined();
    expect(bg?.switch).toBeUndefined();
  });

  it('writes a child again only when what it should say changed', () => {
    const app = parentApp();
    const pr = pullRequest(3);
    const children = childrenOf(planFor(app, [pr]));
    const again = planFor(app, [pr], { children, now: at(MINUTE) });
    expect(ofKind(again, 'createChild')).toEqual([]);
    expect(ofKind(again, 'updateChild')).toEqual([]);
  });

  it('moves the child to a new commit, and says so', () => {
    const app = parentApp();
    const children = childrenOf(planFor(app, [pullRequest(3)]));
    const next = pullRequest(3, { headSha: commit('second') });
    const [update] = ofKind(planFor(app, [next], { children, now: at(MINUTE) }), 'updateChild');
    expect(update?.why).toBe(PreviewReason.NewCommit);
    expect(update?.manifest.spec.source?.git.ref).toBe(commit('second'));
  });

  it('skips pull requests that do not match the filter: labels, target branches, drafts', () => {
    const app = parentApp((p) => {
      p.filter = { labels: ['preview'], targetBranches: ['main'], includeDrafts: false };
    });
    const prs = [
      pullRequest(1, { labels: ['preview'] }),
      pullRequest(2),
      pullRequest(3, { labels: ['preview'], baseBranch: 'release' }),
      pullRequest(4, { labels: ['preview'], draft: true }),
    ];
    expect(ofKind(planFor(app, prs), 'createChild').map((a) => a.number)).toEqual([1]);
  });

  it('skips a pull request whose head is not a full SHA or whose ref is not a ref, and says which', () => {
    const prs = [pullRequest(1, { headSha: 'abc' }), pullRequest(2, { headRef: '--upload-pack=x' }), pullRequest(3)];
    const p = planFor(parentApp(), prs);
    expect(ofKind(p, 'createChild').map((a) => a.number)).toEqual([3]);
    expect(p.condition).toMatchObject({ status: 'True', reason: 'PullRequestsSkipped' });
    expect(p.condition?.message).toMatch(/#1: its head is not a full 40-hex commit SHA; pull request #2: its head ref/);
  });
});

describe('deleting previews', () => {
  const app = parentApp((p) => {
    p.filter = { labels: ['preview'], targetBranches: [], includeDrafts: false };
  });
  const pr = pullRequest(5, { labels: ['preview'] });
  const children = childrenOf(planFor(app, [pr]));

  it('deletes the child of a pull request no longer listed (closed or merged), even with no webhook', () => {
    const [del] = ofKind(planFor(app, [], { children }), 'deleteChild');
    expect(del).toMatchObject({ name: 'weather-pr-5', uid: 'uid-weather-pr-5', why: PreviewReason.Closed });
  });

  it('deletes the child of a pull request that lost its label', () => {
    const [del] = ofKind(planFor(app, [{ ...pr, labels: [] }], { children }), 'deleteChild');
    expect(del?.why).toBe(PreviewReason.Unmatched);
  });

  it('leaves alone an App with the label that the parent does not own', () => {
    const foreign = valid({
      ...structuredClone(children[0]),
      metadata: { ...children[0]?.metadata, ownerReferences: [] },
    });
    expect(ofKind(planFor(app, [], { children: [foreign] }), 'deleteChild')).toEqual([]);
  });

  it('leaves the child of a pull request whose data cannot be read this time', () => {
    const unreadable = { ...pr, headSha: 'not-a-sha' };
    expect(ofKind(planFor(app, [unreadable], { children }), 'deleteChild')).toEqual([]);
  });

  it('deletes every child when spec.previews is removed', () => {
    const without = valid({ ...structuredClone(app), spec: { ...structuredClone(app.spec), previews: undefined } });
    const p = planFor(without, [pr], { children });
    expect(p.actions).toEqual([expect.objectContaining({ kind: 'deleteChild', why: PreviewReason.PreviewsOff })]);
    expect(p.status).toBeUndefined();
  });
});

describe('a provider error', () => {
  const app = parentApp();
  const children = childrenOf(planFor(app, [pullRequest(1)]));

  it('changes nothing: no child deleted, no report; a condition with the reason, the next try at its retry time', () => {
    const retryAt = at(7 * MINUTE).toISOString();
    const p = plan({
      app,
      listing: { ok: false, error: { reason: 'RateLimited', message: 'secondary rate limit', retryAt } },
      listedAt: NOW,
      children,
      now: NOW,
    });
    expect(p.actions).toEqual([]);
    expect(p.condition).toEqual({
      type: 'PreviewsListed',
      status: 'False',
      reason: 'RateLimited',
      message: 'secondary rate limit',
    });
    expect(p.pollAt).toBe(retryAt);
    expect(p.requeueAfterMs).toBe(7 * MINUTE);
  });

  it('says its message without credentials', () => {
    const message = 'GET https://x-access-token:ghs_abcdefghijklmnopqrstuvwxyz012345@api.github.com/repos failed';
    const p = plan({
      app,
      listing: { ok: false, error: { reason: 'Unauthorized', message } },
      listedAt: NOW,
      children,
      now: NOW,
    });
    expect(p.condition?.message).toBe('GET https://api.github.com/repos failed');
    expect(p.pollAt).toBe(at(5 * MINUTE).toISOString());
  });

  it('is InvalidSpec, not a listing, when spec.previews cannot be planned', () => {
    const bad = parentApp((p) => {
      p.provider = 'gitea';
    });
    const p = planFor(bad, [pullRequest(1)]);
    expect(p.actions).toEqual([]);
    expect(p.condition).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(p.condition?.message).toMatch(/spec\.previews\.apiURL: required for provider gitea/);
  });
});

describe('status.previews', () => {
  it('records at most 1000 pull requests, the newest, so the status always fits its schema', () => {
    // Forks awaiting approval, untitled, nothing reported: records small enough that the count, not the bytes, binds.
    const app = parentApp((p) => {
      p.report = { commitStatus: false, comment: false };
    });
    const prs = Array.from({ length: 1005 }, (_, i) => pullRequest(i + 1, { fromFork: true, title: '' }));
    const entries = planFor(app, prs).status?.pullRequests ?? [];
    expect(entries).toHaveLength(1000);
    expect(entries[0]?.number).toBe(6);
    expect(() =>
      valid({ ...structuredClone(parentApp()), status: { previews: { pullRequests: entries } } }),
    ).not.toThrow();
  });

  it("records each pull request's title as one line of text and its page only when it is a plain http(s) URL (issue #28 item 10)", () => {
    const hostile = `<img src=x onerror=alert(1)> @admin ghp_${'a'.repeat(36)} \u202eevil\n${'x'.repeat(300)}`;
    const prs = [
      pullRequest(1),
      pullRequest(2, { title: hostile, webUrl: 'javascript:alert(1)' }),
      pullRequest(3, { webUrl: 'https://user:secret@github.com/team/weather-app/pull/3' }),
    ];
    const entries = planFor(parentApp(), prs).status?.pullRequests ?? [];
    expect(entries[0]).toMatchObject({
      number: 1,
      title: 'Change number 1',
      webUrl: 'https://github.com/team/weather-app/pull/1',
    });
    const [, second, third] = entries;
    expect(second?.title).toHaveLength(200);
    // Text as given (the dashboard and kubectl show it as text), on one line, cut, its token masked.
    expect(second?.title).toMatch(/^<img src=x onerror=alert\(1\)> @admin \*+ \u202eevil x+\.\.\.$/);
    expect(second).not.toHaveProperty('webUrl');
    expect(third).not.toHaveProperty('webUrl');
    expect(() =>
      valid({ ...structuredClone(parentApp()), status: { previews: { pullRequests: entries } } }),
    ).not.toThrow();
  });
});

describe('polling', () => {
  it('lists again one interval after the last listing, exactly', () => {
    const p = planFor(parentApp(), [], { listedAt: at(-MINUTE) });
    expect(p.pollAt).toBe(at(4 * MINUTE).toISOString());
    expect(p.wakeAt).toBe(p.pollAt);
    expect(p.requeueAfterMs).toBe(4 * MINUTE);
  });
});

describe('cost control', () => {
  const app = parentApp((p) => {
    p.sleepAfter = '2h';
    p.deleteAfter = '24h';
  });
  const pr = pullRequest(9);
  const made = childrenOf(planFor(app, [pr]));

  it('wakes up exactly when the next preview falls asleep', () => {
    const p = planFor(app, [pr], { children: made, now: at(HOUR), listedAt: at(HOUR) });
    expect(p.wakeAt).toBe(at(5 * MINUTE + HOUR).toISOString());
    const late = planFor(app, [pr], { children: made, now: at(HOUR + 58 * MINUTE), listedAt: at(HOUR + 58 * MINUTE) });
    expect(late.wakeAt).toBe(at(2 * HOUR).toISOString());
  });

  it('sleeps a preview idle past sleepAfter: replicas 0', () => {
    const [update] = ofKind(planFor(app, [pr], { children: made, now: at(2 * HOUR) }), 'updateChild');
    expect(update?.why).toBe(PreviewReason.Idle);
    expect(update?.manifest.spec.replicas).toBe(0);
  });

  it('wakes a sleeping preview on a new commit', () => {
    const asleep = childrenOf(planFor(app, [pr], { children: made, now: at(2 * HOUR) }));
    const next = { ...pr, headSha: commit('later') };
    const [update] = ofKind(planFor(app, [next], { children: asleep, now: at(3 * HOUR) }), 'updateChild');
    expect(update?.why).toBe(PreviewReason.NewCommit);
    expect(update?.manifest.spec.replicas).toBe(1);
  });

  it('wakes a sleeping preview on a wake request, and counts idle time from it', () => {
    const asleep = childrenOf(planFor(app, [pr], { children: made, now: at(2 * HOUR) }));
    const child = asleep[0];
    if (!child) throw new Error('no child');
    child.metadata.annotations = { ...child.metadata.annotations, [ANN_WAKE]: at(3 * HOUR).toISOString() };
    const p = planFor(app, [pr], { children: [child], now: at(3 * HOUR), listedAt: at(3 * HOUR) });
    const [update] = ofKind(p, 'updateChild');
    expect(update?.why).toBe(PreviewReason.Woken);
    expect(update?.manifest.spec.replicas).toBe(1);
    expect(update?.manifest.metadata.annotations[ANN_ACTIVE_AT]).toBe(at(3 * HOUR).toISOString());
  });

  it('ignores a wake request in the future', () => {
    const asleep = childrenOf(planFor(app, [pr], { children: made, now: at(2 * HOUR) }));
    const child = asleep[0];
    if (!child) throw new Error('no child');
    child.metadata.annotations = { ...child.metadata.annotations, [ANN_WAKE]: at(100 * HOUR).toISOString() };
    expect(ofKind(planFor(app, [pr], { children: [child], now: at(3 * HOUR) }), 'updateChild')).toEqual([]);
  });

  it('deletes a preview idle past deleteAfter, and makes it again only for a new commit', () => {
    const p = planFor(app, [pr], { children: made, now: at(24 * HOUR) });
    expect(ofKind(p, 'deleteChild')).toEqual([expect.objectContaining({ why: PreviewReason.Expired })]);
    expect(p.status?.pullRequests?.[0]).toMatchObject({ number: 9, state: 'Expired', expired: pr.headSha });
    const after = valid({ ...structuredClone(app), status: { previews: p.status } });
    expect(ofKind(planFor(after, [pr], { now: at(25 * HOUR) }), 'createChild')).toEqual([]);
    const next = { ...pr, headSha: commit('new') };
    expect(ofKind(planFor(after, [next], { now: at(25 * HOUR) }), 'createChild')).toHaveLength(1);
  });
});

describe('maxActive', () => {
  it('keeps at most maxActive awake: the oldest idle sleep first', () => {
    const app = parentApp((p) => {
      p.maxActive = 2;
    });
    const prs = [1, 2, 3, 4].map((n) => pullRequest(n));
    // Made at 1, 2, 3 and 4 hours before now: #4 the newest.
    const children = prs.map((pr) => {
      const [create] = ofKind(planFor(app, [pr], { now: at(-(5 - pr.number) * HOUR) }), 'createChild');
      if (!create) throw new Error('no child');
      return observedChild(create.manifest);
    });
    const p = planFor(app, prs, { children });
    const slept = ofKind(p, 'updateChild');
    expect(slept.map((a) => [a.number, a.manifest.spec.replicas, a.why])).toEqual([
      [1, 0, PreviewReason.OverMaxActive],
      [2, 0, PreviewReason.OverMaxActive],
    ]);
  });

  it('with 50 pull requests and maxActive 10, makes 50 children, 10 of them awake', () => {
    const app = parentApp((p) => {
      p.maxActive = 10;
    });
    const prs = Array.from({ length: 50 }, (_, i) => pullRequest(i + 1));
    const made = ofKind(planFor(app, prs), 'createChild');
    expect(made).toHaveLength(50);
    expect(made.filter((a) => a.manifest.spec.replicas > 0)).toHaveLength(10);
  });
});

describe('a pull-request webhook (teal.dev/previews-requested-at on the parent)', () => {
  const requested = (value: string) =>
    parentApp((_p, input) => {
      input.metadata = { ...input.metadata, annotations: { [ANN_PREVIEWS_REQUESTED]: value } };
    });

  it('lists at once when it is newer than the last listing', () => {
    const p = planFor(requested(at(-MINUTE).toISOString()), [], { listedAt: at(-2 * MINUTE) });
    expect(p.pollAt).toBe(NOW.toISOString());
    expect(p.requeueAfterMs).toBe(0);
    expect(p.problems).toBeUndefined();
  });

  it('changes nothing once the listing is newer than it', () => {
    const p = planFor(requested(at(-2 * MINUTE).toISOString()), [], { listedAt: at(-MINUTE) });
    expect(p.pollAt).toBe(at(4 * MINUTE).toISOString());
  });

  it("never lists sooner than the provider's retryAt", () => {
    const retryAt = at(3 * MINUTE).toISOString();
    const p = plan({
      app: requested(at(-MINUTE).toISOString()),
      listing: { ok: false, error: { reason: 'RateLimited', message: 'secondary rate limit', retryAt } },
      listedAt: at(-2 * MINUTE),
      children: [],
      now: NOW,
    });
    expect(p.pollAt).toBe(retryAt);
    expect(p.requeueAfterMs).toBe(3 * MINUTE);
  });

  it('lists at once after a provider error without retryAt', () => {
    const p = plan({
      app: requested(at(-MINUTE).toISOString()),
      listing: { ok: false, error: { reason: 'Unavailable', message: '502 Bad Gateway' } },
      listedAt: at(-2 * MINUTE),
      children: [],
      now: NOW,
    });
    expect(p.pollAt).toBe(NOW.toISOString());
  });

  it.each([
    ['not a time', 'yesterday', /is not an RFC 3339 time|expected an RFC 3339 time|RFC 3339/],
    ['in the future', at(MINUTE).toISOString(), /is in the future/],
  ])('is ignored when %s, with the reason kept', (_what, value, why) => {
    const p = planFor(requested(value), [], { listedAt: at(-MINUTE) });
    expect(p.pollAt).toBe(at(4 * MINUTE).toISOString());
    expect(p.problems).toEqual([{ reason: 'InvalidAnnotation', message: expect.stringMatching(why) }]);
    expect(p.problems?.[0]?.message).toContain(`App team/weather: annotation ${ANN_PREVIEWS_REQUESTED}`);
  });
});
