// Where `kubectl teal get` looks for an App's build Jobs, whichever reader reads
// them (kube.ts's Session, rest.ts): the App's namespace, or the operator's
// build namespace that status.build.namespace names (issue #27 §3).
import { describe, expect, it } from 'vitest';
import { LABEL_APP_UID } from '../../src/app/labels.ts';
import { type AppObject, buildJobsQuery } from '../../src/cli/app-object.ts';

const app = (buildNamespace?: string): AppObject => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u-1' },
  spec: {},
  ...(buildNamespace ? { status: { build: { namespace: buildNamespace } } as AppObject['status'] } : {}),
});

describe('buildJobsQuery', () => {
  it('looks in the App namespace for Jobs the App owns', () => {
    const q = buildJobsQuery(app(), 'shop');
    expect(q).toMatchObject({ namespace: 'shop', labelSelector: 'teal.dev/app=web' });
    expect(q.isOwn({ metadata: { ownerReferences: [{ uid: 'u-1' }] } })).toBe(true);
    expect(q.isOwn({ metadata: { ownerReferences: [{ uid: 'other' }] } })).toBe(false);
  });

  it('looks in the build namespace for Jobs labelled with the App namespace and uid', () => {
    const q = buildJobsQuery(app('teal-builds'), 'shop');
    expect(q.namespace).toBe('teal-builds');
    expect(q.labelSelector).toBe('teal.dev/app=web,teal.dev/app-namespace=shop');
    expect(q.isOwn({ metadata: { labels: { [LABEL_APP_UID]: 'u-1' } } })).toBe(true);
    // The same App name made again (another uid), or one of another namespace's: not its own.
    expect(q.isOwn({ metadata: { labels: { [LABEL_APP_UID]: 'u-0' } } })).toBe(false);
    expect(q.isOwn({ metadata: {} })).toBe(false);
  });
});
