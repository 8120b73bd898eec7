// The one rule of how a preview reads (src/app/previews-view.ts), shared by
// kubectl teal previews, the API's App page and the dashboard's Previews tab
// (the join itself is in test/unit/cli-previews.test.ts), and the API's
// previews part of an App's page from the App cache (src/api/app-page.ts).
import { describe, expect, it } from 'vitest';
import { appPreviews } from '../../src/api/app-page.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import { LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from '../../src/app/preview-labels.ts';
import { PREVIEW_STATES } from '../../src/app/previews-schema.ts';
import { previewOf, safeWebUrl, stateText, stateTone } from '../../src/app/previews-view.ts';
import { readAppStatus } from '../../src/app/status-reader.ts';

const SHA = (c: string) => c.repeat(40);

function cached(name: string, over: Partial<CachedApp> = {}, labels?: Record<string, string>): CachedApp {
  return {
    metadata: { name, namespace: 'shop', resourceVersion: '1', ...(labels ? { labels } : {}) },
    spec: {},
    status: {},
    ...over,
  };
}

const childLabels = (parent: string, number: string) => ({ [LABEL_PREVIEW_OF]: parent, [LABEL_PULL_REQUEST]: number });

describe('how a preview reads', () => {
  it('gives every state a tone of an App phase, and says a row without a record', () => {
    expect(Object.fromEntries(PREVIEW_STATES.map((s) => [s, stateTone(s)]))).toEqual({
      AwaitingApproval: 'Progressing',
      Building: 'Progressing',
      Deploying: 'Progressing',
      Ready: 'Healthy',
      Failed: 'Degraded',
      Asleep: 'ScaledDown',
      Expired: 'ScaledDown',
    });
    expect(stateText(undefined)).toBe('not recorded');
    expect(stateTone(undefined)).toBe('Progressing');
  });

  it('links only a plain http(s) URL without credentials', () => {
    expect(safeWebUrl('https://github.com/team/web/pull/3')).toBe('https://github.com/team/web/pull/3');
    expect(safeWebUrl('http://127.0.0.1:3000/team/web/pulls/3')).toBe('http://127.0.0.1:3000/team/web/pulls/3');
    for (const bad of [
      'javascript:alert(1)',
      'JAVASCRIPT:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'https://user:token@github.com/team/web/pull/3',
      'https://github.com/team/web/pull/3 onclick=x',
      '//github.com/team/web',
      `https://github.com/${'a'.repeat(2048)}`,
      42,
      undefined,
    ]) {
      expect(safeWebUrl(bad)).toBeUndefined();
    }
  });

  it("reads a child App's parent and pull request from its labels, only when both are right", () => {
    expect(previewOf(childLabels('web', '12'))).toEqual({ app: 'web', number: 12 });
    expect(previewOf(childLabels('web', '012'))).toBeUndefined();
    expect(previewOf(childLabels('', '12'))).toBeUndefined();
    expect(previewOf({ [LABEL_PREVIEW_OF]: 'web' })).toBeUndefined();
    expect(previewOf(undefined)).toBeUndefined();
  });
});

describe("the API's previews part of an App page", () => {
  const parent = cached('web', {
    metadata: { name: 'web', namespace: 'shop', resourceVersion: '1', uid: 'web-uid' },
    spec: { previews: { provider: 'github' } },
    status: {
      previews: { pullRequests: [{ number: 12, name: 'web-pr-12', head: SHA('a'), state: 'Ready', title: 'A' }] },
    },
  });
  const apps = [
    parent,
    cached('web-pr-12', { status: { phase: 'Healthy' } }, childLabels('web', '12')),
    cached('web-pr-20', {}, childLabels('web', '20')),
    cached('other-pr-1', {}, childLabels('other', '1')),
    // Labelled as web's, but owned by another App of that name (deleted and made again): not web's.
    {
      ...cached('web-pr-30', {}, childLabels('web', '30')),
      metadata: {
        ...cached('web-pr-30', {}, childLabels('web', '30')).metadata,
        ownerReferences: [{ apiVersion: 'teal.dev/v1alpha1', kind: 'App', name: 'web', uid: 'old-uid' }],
      },
    },
    cached('plain'),
  ];

  it("joins a parent's records with the Apps labelled as its children", () => {
    const view = appPreviews(
      parent,
      () => readAppStatus(parent.status),
      () => apps,
    );
    expect(view.previewOf).toBeUndefined();
    expect(view.previews?.previews.map((r) => [r.number, r.title, r.child, r.app, r.phase])).toEqual([
      [12, 'A', 'found', 'web-pr-12', 'Healthy'],
      [20, undefined, 'unrecorded', 'web-pr-20', undefined],
    ]);
  });

  it('gives a child its parent, and an App without spec.previews no previews (nor reads its namespace)', () => {
    const child = apps[1] as CachedApp;
    const none = () => {
      throw new Error('read the namespace');
    };
    expect(appPreviews(child, () => ({}), none)).toEqual({ previewOf: { app: 'web', number: 12 } });
    expect(appPreviews(cached('plain'), () => ({}), none)).toEqual({});
  });
});
