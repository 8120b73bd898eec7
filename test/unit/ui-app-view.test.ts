// The App page's pure view (src/ui/app-view.ts): the release timeline, the
// scale-down countdown, the actions' explanations and bodies, without a browser.
import { describe, expect, it } from 'vitest';
import {
  type ActionEntryLike,
  type AppDetailLike,
  actionBody,
  checksSummary,
  countdown,
  curlWithBody,
  digestOf,
  isStale,
  kubectlWithBody,
  notificationLines,
  restartProgress,
  shortDigest,
  sparkline,
  timelineOf,
  whyDisabled,
} from '../../src/ui/app-view.ts';

const NOW = Date.parse('2026-11-26T12:00:00Z');
const DIGEST = 'sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae';

/** An App with revision 2 active, revision 3 in preview and its checks running, revision 1 scaling down. */
function inPreview(): AppDetailLike {
  return {
    metadata: { namespace: 'shop', name: 'web' },
    status: {
      phase: 'Paused',
      source: { ref: 'main', commit: 'c'.repeat(40), shortCommit: 'ccccccc', author: 'Ann', subject: 'Faster' },
      build: { job: 'web-build-3', phase: 'Succeeded' },
    },
    revisions: {
      active: { revision: 2, image: `reg/web@sha256:${'a'.repeat(64)}` },
      preview: { revision: 3, image: `reg/web@${DIGEST}` },
      history: [
        { revision: 1, promotedAt: '2026-11-26T10:00:00Z', promotedBy: 'ann', promotedVia: 'first-release' },
        { revision: 2, promotedAt: '2026-11-26T11:58:00Z', promotedBy: 'bob', promotedVia: 'dashboard' },
      ],
    },
    analysis: {
      prePromotion: {
        revision: 3,
        phase: 'Running',
        checks: [
          { name: 'errors', phase: 'Successful' },
          { name: 'latency', phase: 'Successful' },
          { name: 'smoke', phase: 'Running' },
        ],
      },
    },
    replicaSets: [
      { revision: 3, desired: 1, available: 1 },
      { revision: 2, desired: 2, available: 2 },
      { revision: 1, desired: 2, available: 2, scaleDownAt: '2026-11-26T12:04:05Z' },
    ],
  };
}

const states = (view: AppDetailLike) => timelineOf(view, NOW).map((s) => `${s.key}:${s.state}`);
const facts = (view: AppDetailLike, key: string) =>
  Object.fromEntries(timelineOf(view, NOW).find((s) => s.key === key)?.facts ?? []);

describe('the release timeline', () => {
  it('follows commit, build, preview, checks, promotion, active and the old revision scaling down', () => {
    const view = inPreview();
    expect(states(view)).toEqual([
      'commit:done',
      'build:done',
      'preview:current',
      'checks:current',
      'promotion:waiting',
      'active:done',
      'scale-down:current',
    ]);
    expect(facts(view, 'commit')).toMatchObject({ commit: 'ccccccc', subject: 'Faster', author: 'Ann' });
    expect(facts(view, 'preview')).toEqual({ revision: '3', digest: 'sha256:2c26b46b68ff…', 'pods available': '1/1' });
    expect(facts(view, 'promotion')).toEqual({});
    expect(facts(view, 'checks')).toEqual({ revision: '3', result: 'Running: 2 of 3 passed' });
    expect(facts(view, 'active')).toMatchObject({ revision: '2', 'pods available': '2/2' });
    expect(facts(view, 'scale-down')).toEqual({ revision: '1', pods: '2/2', 'scales down': 'in 4m 05s' });
  });

  it('once promoted: the promotion done, who and how, active current, nothing in preview', () => {
    const view = inPreview();
    view.revisions = { ...view.revisions, active: { revision: 3, image: `reg/web@${DIGEST}` } };
    delete view.revisions.preview;
    view.revisions.history?.push({
      revision: 3,
      promotedAt: '2026-11-26T12:00:00Z',
      promotedBy: 'carol',
      promotedVia: 'dashboard',
      checksSkipped: true,
    });
    view.analysis = { prePromotion: { revision: 3, phase: 'Successful', checks: [] } };
    expect(states(view)).toEqual([
      'commit:done',
      'build:done',
      'preview:done',
      'checks:done',
      'promotion:done',
      'active:current',
      // Revision 2 has no deadline yet and revision 1's is counted: the earliest due.
      'scale-down:current',
    ]);
    expect(facts(view, 'promotion')).toEqual({
      revision: '3',
      by: 'carol',
      via: 'dashboard, checks skipped',
      at: '2026-11-26T12:00:00Z',
    });
  });

  it('an image App has no commit or build; a failed build and failed checks show as failed', () => {
    const view: AppDetailLike = {
      metadata: { namespace: 'shop', name: 'web' },
      status: { build: { phase: 'Failed', job: 'j', message: 'exit 1' } },
    };
    expect(states(view).slice(0, 3)).toEqual(['commit:none', 'build:failed', 'preview:waiting']);
    const checks = inPreview();
    checks.analysis = { prePromotion: { revision: 3, phase: 'Failed', checks: [{ name: 'e', phase: 'Failed' }] } };
    expect(states(checks)[3]).toBe('checks:failed');
  });

  it('a promotion under way names who asked and how', () => {
    expect(shortDigest(`reg/web@${DIGEST}`)).toBe('sha256:2c26b46b68ff…');
    expect(shortDigest('reg/web:1.2')).toBe('1.2');
    const view = inPreview();
    view.status = {
      ...view.status,
      promotion: { revision: 3, by: 'dan', via: 'dashboard', at: '2026-11-26T12:00:01Z' },
    };
    expect(facts(view, 'promotion')).toEqual({
      revision: '3',
      by: 'dan',
      via: 'dashboard',
      at: '2026-11-26T12:00:01Z',
    });
    expect(states(view)[4]).toBe('promotion:current');
  });
});

describe('live', () => {
  it('reads the App again when its live row has another version than the view shown, and only then', () => {
    expect(isStale('41', '42')).toBe(true);
    expect(isStale('42', '42')).toBe(false);
    // Not loaded yet (the first read is under way), or no row yet (the stream has not said).
    expect(isStale(undefined, '42')).toBe(false);
    expect(isStale('42', undefined)).toBe(false);
  });
});

describe('the countdown and the other lines', () => {
  it('counts down in seconds, minutes and hours, and says now once due', () => {
    expect(countdown('2026-11-26T12:00:09Z', NOW)).toBe('in 9s');
    expect(countdown('2026-11-26T12:04:05Z', NOW)).toBe('in 4m 05s');
    expect(countdown('2026-11-26T14:02:00Z', NOW)).toBe('in 2h 02m');
    expect(countdown('2026-11-26T11:59:00Z', NOW)).toBe('now');
    expect(countdown('not a time', NOW)).toBe('');
    expect(countdown(undefined, NOW)).toBe('');
  });

  it('reads a digest, or a tag without one', () => {
    expect(digestOf(`reg.example.com:5000/web@${DIGEST}`)).toBe(DIGEST);
    expect(digestOf('reg.example.com:5000/web:1.2')).toBe('1.2');
    expect(digestOf('reg.example.com:5000/web')).toBe('');
  });

  it('summarises checks, restart progress and notifications', () => {
    expect(checksSummary({ phase: 'Failed', checks: [{ phase: 'Failed' }, { phase: 'Successful' }] })).toBe(
      'Failed: 1 of 2 passed',
    );
    const view = inPreview();
    view.status = {
      restart: { revision: 2, by: 'ann', via: 'dashboard', evicting: ['p1', 'p2'] },
      notifications: {
        pending: [{ trigger: 'promoted', destination: 'slack', at: 't1' }],
        lastFailure: { trigger: 'degraded', destination: 'hook', at: 't0', message: '500' },
      },
    };
    expect(restartProgress(view)).toBe('revision 2 restarting, 2 pods being evicted, requested by ann (dashboard)');
    expect(notificationLines(view)).toEqual([
      ['waiting', 'promoted to slack at t1'],
      ['failed', 'degraded to hook at t0: 500'],
    ]);
    view.status.restart = { revision: 2, by: 'ann', via: 'cli', finishedAt: 't2', podsReplaced: 3 };
    expect(restartProgress(view)).toBe('revision 2 restarted: 3 pods replaced, requested by ann (cli)');
  });

  it('draws numeric measurements oldest first, top is the highest; fewer than two numbers draw nothing', () => {
    expect(sparkline(['1', '3', '2'], 100, 20)).toBe('0,20 50,0 100,10');
    expect(sparkline(['1', 'n/a', '2'], 100, 20)).toBe('0,20 100,0');
    expect(sparkline(['5', '5'], 10, 10)).toBe('0,10 10,10');
    expect(sparkline(['ok', '1'], 100, 20)).toBeUndefined();
  });
});

const entry = (over: Partial<ActionEntryLike>): ActionEntryLike => ({
  action: 'promote',
  allowed: true,
  rules: { allowed: true },
  rbac: { allowed: true },
  args: [
    { name: 'revision', flag: '--revision' },
    { name: 'toRevision', flag: '--to-revision' },
  ],
  kubectl: 'kubectl teal promote web -n shop',
  curl: 'curl -sS -X POST -H "Authorization: Bearer $TOKEN" "$TEAL/api/v1/namespaces/shop/apps/web/promote"',
  ...over,
});

describe('the actions', () => {
  it('a disabled action says why: the rules’ reason, RBAC’s denial, or both', () => {
    expect(whyDisabled(entry({}))).toBeUndefined();
    const rules = 'App shop/web: checks still running, 2 of 3 passed';
    expect(whyDisabled(entry({ allowed: false, rules: { allowed: false, reason: rules } }))).toBe(rules);
    const rbac = 'user "v" cannot promote apps.teal.dev in shop';
    expect(whyDisabled(entry({ allowed: false, rbac: { allowed: false, reason: rbac } }))).toBe(`not allowed: ${rbac}`);
    expect(
      whyDisabled(
        entry({ allowed: false, rbac: { allowed: false, reason: rbac }, rules: { allowed: false, reason: rules } }),
      ),
    ).toBe(`not allowed: ${rbac}; ${rules}`);
  });

  it('promote pins the revision shown in preview; undo names its revision; the others send nothing', () => {
    expect(actionBody('promote', inPreview())).toEqual({ revision: 3 });
    expect(actionBody('promote', { metadata: { namespace: 'a', name: 'b' } })).toEqual({});
    expect(actionBody('undo', inPreview(), 1)).toEqual({ toRevision: 1 });
    expect(actionBody('abort', inPreview())).toEqual({});
  });

  it('shows the command and the call with that body', () => {
    expect(kubectlWithBody(entry({}), { revision: 3 })).toBe('kubectl teal promote web -n shop --revision 3');
    expect(kubectlWithBody(entry({ kubectl: 'kubectl teal undo web -n shop' }), { toRevision: 1 })).toBe(
      'kubectl teal undo web -n shop --to-revision 1',
    );
    expect(curlWithBody(entry({}).curl, { revision: 3 })).toBe(
      `curl -sS -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"revision":3}' "$TEAL/api/v1/namespaces/shop/apps/web/promote"`,
    );
    expect(curlWithBody(entry({}).curl, {})).toBe(entry({}).curl);
  });
});
