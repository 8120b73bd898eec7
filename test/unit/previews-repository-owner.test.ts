// One App previews a repository (issue #28): the oldest App whose spec.previews
// names it (then namespace/name), by provider, API URL and repository as the
// clients normalise them; any other gets PreviewsListed False naming the owner.
import { describe, expect, it } from 'vitest';
import { ListedReason } from '../../src/previews/reasons.ts';
import {
  type PreviewingApp,
  previewedElsewhere,
  previewedRepository,
  repositoryOwner,
} from '../../src/previews/repository-owner.ts';

const GIT = 'https://git.example.com/team/shop.git';

/** A spec as the App cache holds it: not validated. */
function spec(previews: Record<string, unknown>, url: string | undefined = GIT): unknown {
  return { ...(url !== undefined ? { source: { git: { url } } } : {}), previews };
}

const app = (namespace: string, name: string, creationTimestamp?: string, deleting?: boolean): PreviewingApp => ({
  namespace,
  name,
  creationTimestamp,
  deleting,
});

describe('previewedRepository', () => {
  it('names provider, API URL and repository; the same repository written two ways is one key', () => {
    const key = previewedRepository(spec({ provider: 'gitea', apiURL: 'https://git.example.com/api/v1' }));
    expect(key).toBe('gitea https://git.example.com/api/v1 team/shop');
    for (const other of [
      spec({ provider: 'gitea', apiURL: 'https://GIT.example.com:443/api/v1/' }, 'ssh://git@git.example.com/team/shop'),
      spec({ provider: 'gitea', apiURL: 'https://git.example.com/api/v1', repository: 'Team/Shop.git' }, undefined),
      spec({ provider: 'gitea', apiURL: 'https://git.example.com/api/v1//', repository: ' team/shop ' }),
    ]) {
      expect(previewedRepository(other)).toBe(key);
    }
  });

  it("uses the provider's public API when apiURL is left out, and tells providers and APIs apart", () => {
    const github = previewedRepository(spec({ provider: 'github' }, 'https://github.com/team/shop'));
    expect(github).toBe('github https://api.github.com team/shop');
    expect(previewedRepository(spec({ provider: 'github', apiURL: 'https://ghe.example.com/api/v3' }))).not.toBe(
      github,
    );
    expect(previewedRepository(spec({ provider: 'gitlab' }, 'https://github.com/team/shop'))).not.toBe(github);
    expect(previewedRepository(spec({ provider: 'github', repository: 'team/shop-two' }))).not.toBe(github);
  });

  it('is undefined without spec.previews, or when provider, API URL or repository is not usable', () => {
    expect(previewedRepository({ source: { git: { url: GIT } } })).toBeUndefined();
    expect(previewedRepository(undefined)).toBeUndefined();
    expect(previewedRepository(spec({ provider: 'sourceforge' }))).toBeUndefined();
    expect(previewedRepository(spec({ provider: 'gitea' }))).toBeUndefined(); // gitea has no public API
    expect(previewedRepository(spec({ provider: 'github', apiURL: 'http://example.com' }))).toBeUndefined();
    expect(previewedRepository(spec({ provider: 'github' }, 'file:///srv/shop'))).toBeUndefined();
    expect(previewedRepository(spec({ provider: 'github', repository: '../etc' }))).toBeUndefined();
    expect(previewedRepository({ previews: 'github' })).toBeUndefined();
  });
});

describe('repositoryOwner', () => {
  it('is the oldest App, whatever order the cache lists them in', () => {
    const a = app('prod', 'shop', '2026-11-27T09:00:00Z');
    const b = app('staging', 'shop', '2026-11-27T08:00:00Z');
    expect(repositoryOwner([a, b])).toBe(b);
    expect(repositoryOwner([b, a])).toBe(b);
  });

  it('breaks a tie of creation times by namespace, then name', () => {
    const at = '2026-11-27T09:00:00Z';
    const apps = [app('prod', 'shop', at), app('dev', 'shop-b', at), app('dev', 'shop-a', at)];
    expect(repositoryOwner(apps)).toMatchObject({ namespace: 'dev', name: 'shop-a' });
    expect(repositoryOwner([...apps].reverse())).toMatchObject({ namespace: 'dev', name: 'shop-a' });
  });

  it('passes over an App being deleted: the next oldest takes over', () => {
    const old = app('prod', 'shop', '2026-11-27T08:00:00Z', true);
    const next = app('staging', 'shop', '2026-11-27T09:00:00Z');
    expect(repositoryOwner([old, next])).toBe(next);
    expect(repositoryOwner([old])).toBeUndefined();
  });
});

describe('previewedElsewhere', () => {
  const repository = 'gitea https://git.example.com/api/v1 team/shop';
  const apps = [app('staging', 'shop', '2026-11-27T08:00:00Z'), app('prod', 'shop', '2026-11-27T09:00:00Z')];

  it('is nothing for the owner', () => {
    expect(previewedElsewhere('staging/shop', repository, apps)).toBeUndefined();
  });

  it('is PreviewsListed False for any other, naming the owner and the repository', () => {
    const condition = previewedElsewhere('prod/shop', repository, apps);
    expect(condition).toMatchObject({
      type: 'PreviewsListed',
      status: 'False',
      reason: ListedReason.PreviewedElsewhere,
    });
    expect(condition?.message).toContain('App staging/shop previews team/shop at https://git.example.com/api/v1');
    expect(condition?.message).toContain('remove spec.previews from one');
  });

  it('is nothing once the owner is being deleted: the other takes over', () => {
    const [owner, other] = apps;
    const going = [{ ...owner, deleting: true } as PreviewingApp, other as PreviewingApp];
    expect(previewedElsewhere('prod/shop', repository, going)).toBeUndefined();
  });
});
