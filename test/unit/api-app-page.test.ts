// What GET /api/v1/namespaces/:ns/apps/:name adds for the dashboard's App page
// (src/api/app-page.ts): each revision's pods, scale-down deadline and config
// copies by content hash, and the App's Events, newest first.
import { describe, expect, it } from 'vitest';
import { appEvents, MAX_PAGE_EVENTS, revisionPods } from '../../src/api/app-page.ts';
import type { CachedAppEvent } from '../../src/app/cached.ts';
import type { ObservedReplicaSet } from '../../src/rollout/observed.ts';

const rs = (revision: number, over: Partial<ObservedReplicaSet> = {}): ObservedReplicaSet => ({
  name: `web-hash${revision}`,
  namespace: 'shop',
  resourceVersion: '1',
  app: 'web',
  hash: `hash${revision}`,
  revision,
  image: `reg/web:${revision}`,
  createdAt: '2026-11-26T10:00:00Z',
  generation: 1,
  specReplicas: 2,
  observedGeneration: 1,
  replicas: 2,
  readyReplicas: 2,
  availableReplicas: 1,
  deleting: false,
  ...over,
});

const event = (at: string, over: Partial<CachedAppEvent> = {}): CachedAppEvent => ({
  name: `web.${at}`,
  namespace: 'shop',
  resourceVersion: '1',
  app: 'web',
  appUid: 'uid-1',
  type: 'Normal',
  reason: 'Promoted',
  message: `at ${at}`,
  count: 1,
  at,
  ...over,
});

describe('the App page’s additions to the App view', () => {
  it('lists each revision’s pods, newest first, with its scale-down deadline and config by content hash; not those being deleted', () => {
    const pods = revisionPods([
      rs(1, { scaleDownAt: '2026-11-26T12:00:00Z', copies: ['configmap/flags-0123456789', 'secret/db-abcdef0123'] }),
      rs(3, { deleting: true }),
      rs(2, { commit: 'c'.repeat(40), copies: ['configmap/a-b-c'] }),
    ]);
    expect(pods).toEqual([
      {
        revision: 2,
        podTemplateHash: 'hash2',
        image: 'reg/web:2',
        commit: 'c'.repeat(40),
        desired: 2,
        ready: 2,
        available: 1,
        // A name copyName did not make is shown whole, with no hash.
        config: [{ kind: 'configmap', source: 'a-b-c', hash: '' }],
      },
      {
        revision: 1,
        podTemplateHash: 'hash1',
        image: 'reg/web:1',
        desired: 2,
        ready: 2,
        available: 1,
        scaleDownAt: '2026-11-26T12:00:00Z',
        config: [
          { kind: 'configmap', source: 'flags', hash: '0123456789' },
          { kind: 'secret', source: 'db', hash: 'abcdef0123' },
        ],
      },
    ]);
  });

  it('shows the App’s Events newest first, without those of an App of the same name deleted before it, at most 50', () => {
    const events = [
      event('2026-11-26T10:00:00Z'),
      event('2026-11-26T11:00:00Z', { type: 'Warning', reason: 'PromoteRejected' }),
      event('2026-11-26T12:00:00Z', { appUid: 'uid-old' }),
      event('2026-11-26T09:00:00Z', { appUid: undefined }),
    ];
    expect(appEvents(events, 'uid-1')).toEqual([
      {
        type: 'Warning',
        reason: 'PromoteRejected',
        message: 'at 2026-11-26T11:00:00Z',
        count: 1,
        at: '2026-11-26T11:00:00Z',
      },
      { type: 'Normal', reason: 'Promoted', message: 'at 2026-11-26T10:00:00Z', count: 1, at: '2026-11-26T10:00:00Z' },
      { type: 'Normal', reason: 'Promoted', message: 'at 2026-11-26T09:00:00Z', count: 1, at: '2026-11-26T09:00:00Z' },
    ]);
    const many = Array.from({ length: 80 }, (_, i) => event(`2026-11-26T10:${String(i % 60).padStart(2, '0')}:${i}`));
    expect(appEvents(many, 'uid-1')).toHaveLength(MAX_PAGE_EVENTS);
  });
});
