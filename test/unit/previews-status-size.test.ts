// status.previews always fits in the App (issue #28): pull requests are written
// by anyone, and status.previews shares etcd's 1.5 MiB object limit with the
// App's spec and the rest of its status. With 1,100 pull requests whose titles,
// pages and failure messages are at the schema maxima and full of characters the
// API server stores as 6 bytes, the planned status stays under its budget round
// after round, the children keep their records, and nothing accepted is written
// on a pull request again.
import { describe, expect, it } from 'vitest';
import { MAX_PREVIEW_CHILDREN, MAX_TEXT_BYTES, PREVIEWS_STATUS_BUDGET } from '../../src/app/previews-status-schema.ts';
import { childApp } from '../../src/previews/child.ts';
import type { PreviewsPlan } from '../../src/previews/plan.ts';
import { PreviewReason } from '../../src/previews/reasons.ts';
import {
  childrenOf,
  hostilePullRequests,
  NOW,
  observedChild,
  ofKind,
  parentApp,
  planFor,
  pullRequest,
  rounds,
  valid,
} from '../fixtures/previews.ts';

/**
 * The bytes as the API server stores them, measured here on its own (not with
 * src/app/stored-bytes.ts): Go's encoding/json writes "<", ">", "&" as \\u003c
 * (6 bytes) and U+2028, U+2029 as \\u2028 (6 bytes, 3 in UTF-8).
 */
const asStored = (value: unknown): number => {
  const json = JSON.stringify(value);
  const escaped = (json.match(/[<>&]/g)?.length ?? 0) * 5 + (json.match(/[\u2028\u2029]/g)?.length ?? 0) * 3;
  return Buffer.byteLength(json, 'utf8') + escaped;
};

const reports = (p: PreviewsPlan) => [...ofKind(p, 'setCommitStatus'), ...ofKind(p, 'editComment')];
const made = (plans: PreviewsPlan[]) => new Set(plans.flatMap((p) => ofKind(p, 'createChild').map((a) => a.number)));

describe('status.previews with 1,100 hostile pull requests at the maxima', () => {
  // The oldest 40 are the repository's own (a child App each, their builds failing with a 4 KiB
  // hostile log); the 1,060 newer ones are forks awaiting approval.
  const own = (n: number) => n <= 40;
  const plans = rounds(
    parentApp(),
    hostilePullRequests(1100, (n) => !own(n)),
    4,
  );
  const last = plans.at(-1) as PreviewsPlan;
  const records = last.status?.pullRequests ?? [];

  it('serialises under its byte budget as the API server stores it, in every round, and is a valid App status', () => {
    for (const p of plans) {
      expect(asStored(p.status)).toBeLessThanOrEqual(PREVIEWS_STATUS_BUDGET);
      expect(() => valid({ ...structuredClone(parentApp()), status: { previews: p.status } })).not.toThrow();
    }
    expect(records.filter((r) => r.state === 'AwaitingApproval').length).toBeGreaterThan(100);
  });

  it('keeps the record of every pull request with a child App, before newer ones without', () => {
    const children = records.filter((r) => r.name !== undefined);
    expect(children.map((r) => r.number)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(children.every((r) => r.state === 'Failed' && r.reported?.status?.state === 'failure')).toBe(true);
    // The records left out are the oldest of those without a child.
    const forks = records.filter((r) => r.name === undefined).map((r) => r.number);
    expect(forks.at(-1)).toBe(1100);
    expect(forks).toEqual(Array.from({ length: forks.length }, (_, i) => 1101 - forks.length + i));
  });

  it('writes no commit status or comment again once the provider accepted it, recorded or not', () => {
    expect(reports(plans[0] as PreviewsPlan).length).toBeGreaterThan(0);
    // A pull request is written on only when its record is kept: what the provider accepts lands in status.
    for (const p of plans) {
      const recorded = new Set(p.status?.pullRequests?.map((r) => r.number));
      expect(reports(p).filter((a) => !recorded.has(a.number))).toEqual([]);
    }
    // Round 2 writes the failures; after it there is nothing new to say, and no record
    // comes and goes (one that did would lose what it was told, and be told again).
    for (const p of plans.slice(2)) {
      expect(reports(p)).toEqual([]);
      expect(p.status?.pullRequests?.map((r) => r.number)).toEqual(records.map((r) => r.number));
    }
  });

  it('records each text as a bounded summary: one line, at most 512 bytes stored; a page past that is not recorded', () => {
    for (const r of records) {
      expect(r).not.toHaveProperty('webUrl');
      for (const text of [r.title, r.message, r.url]) {
        if (text !== undefined) expect(asStored(text) - 2).toBeLessThanOrEqual(MAX_TEXT_BYTES);
      }
      expect(r.title).toMatch(/^[^\n]+\.\.\.$/);
      expect(r.title).not.toMatch(/ghp_/);
    }
    const child = records.find((r) => r.number === 1);
    expect(child?.message).toMatch(/^\*+ <b>&amp;[^\n]+\.\.\.$/);
    expect(child?.message?.length).toBeLessThanOrEqual(256);
    expect(child?.url).toBe('https://pr-1.preview.example.com/');
  });
});

describe('more previews than status can always record', () => {
  const plans = rounds(parentApp(), hostilePullRequests(1100), 3);
  const last = plans.at(-1) as PreviewsPlan;

  it('makes at most MAX_PREVIEW_CHILDREN child Apps, the newest, each recorded, and names the pull requests skipped', () => {
    expect(MAX_PREVIEW_CHILDREN).toBeGreaterThanOrEqual(50);
    const children = made(plans);
    expect(children.size).toBe(MAX_PREVIEW_CHILDREN);
    expect(Math.min(...children)).toBe(1100 - MAX_PREVIEW_CHILDREN + 1);
    const records = last.status?.pullRequests ?? [];
    expect(records.map((r) => r.number)).toEqual([...children].sort((a, b) => a - b));
    expect(records.every((r) => r.name !== undefined)).toBe(true);
    expect(asStored(last.status)).toBeLessThanOrEqual(PREVIEWS_STATUS_BUDGET);
    expect(last.condition).toMatchObject({ status: 'True', reason: 'PullRequestsSkipped' });
    expect(last.condition?.message).toMatch(
      new RegExp(
        `^pull requests #1, #2, #3, .*#20 and ${1100 - MAX_PREVIEW_CHILDREN - 20} more: no preview, more than the ${MAX_PREVIEW_CHILDREN} previews`,
      ),
    );
    expect(reports(last)).toEqual([]);
  });
});

describe('the children a parent has', () => {
  const app = parentApp();
  const prs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => pullRequest(from + i));

  it('keep their preview when newer pull requests come past the cap: the newer ones are named, none made', () => {
    const children = childrenOf(planFor(app, prs(1, MAX_PREVIEW_CHILDREN)));
    expect(children).toHaveLength(MAX_PREVIEW_CHILDREN);
    const p = planFor(app, prs(1, MAX_PREVIEW_CHILDREN + 3), { children });
    expect(ofKind(p, 'createChild')).toEqual([]);
    expect(ofKind(p, 'deleteChild')).toEqual([]);
    const n = MAX_PREVIEW_CHILDREN;
    expect(p.condition?.message).toBe(
      `pull requests #${n + 1}, #${n + 2}, #${n + 3}: no preview, more than the ${n} previews status.previews can always record`,
    );
    expect(p.status?.pullRequests?.map((r) => r.number)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it('beyond the cap (made before it was one) are deleted, the oldest first, as TooManyPreviews', () => {
    const over = MAX_PREVIEW_CHILDREN + 2;
    const children = prs(1, over).map((pr) =>
      observedChild(
        childApp(app, app.spec.previews as NonNullable<typeof app.spec.previews>, {
          pr,
          head: pr.headSha,
          headRef: pr.headRef,
          awake: true,
          activeAt: NOW.getTime(),
        }),
      ),
    );
    const p = planFor(app, prs(1, over), { children });
    expect(ofKind(p, 'deleteChild').map((a) => [a.number, a.why])).toEqual([
      [1, PreviewReason.TooMany],
      [2, PreviewReason.TooMany],
    ]);
    expect(p.status?.pullRequests).toHaveLength(MAX_PREVIEW_CHILDREN);
  });
});
