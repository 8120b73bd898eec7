// A preview's commit and the pull ref it is fetched through (issue #28 item 3):
// which Apps the annotation is read on, which values are taken, what status.source
// and the build Job then say.
import { describe, expect, it } from 'vitest';
import { ANN_PR_REF, LABEL_PREVIEW_OF } from '../../src/app/preview-labels.ts';
import type { App } from '../../src/app/schema.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { buildJobManifest } from '../../src/build/job.ts';
import { planBuild } from '../../src/build/plan.ts';
import { withSource } from '../../src/build/status.ts';
import { childApp } from '../../src/previews/child.ts';
import { PULL_REF, readPullRef, throughPullRef } from '../../src/previews/pull-ref.ts';
import { commit, NOW, parentApp, pullRequest, valid } from '../fixtures/previews.ts';

const HEAD = commit('fork-head');

/** The child App exactly as the planner makes it, as the cluster shows it. */
function child(headRef = 'refs/pull/7/head', over: (c: ReturnType<typeof childApp>) => void = () => {}): App {
  const parent = parentApp();
  const previews = parent.spec.previews;
  if (!previews) throw new Error('the parent has spec.previews');
  const manifest = childApp(parent, previews, {
    pr: pullRequest(7, { headSha: HEAD, headRef, fromFork: true }),
    head: HEAD,
    headRef,
    awake: true,
    activeAt: NOW.getTime(),
  });
  over(manifest);
  return valid({ ...manifest, metadata: { ...manifest.metadata, uid: 'child-uid' } });
}

const withAnnotation = (value: string) =>
  child('refs/pull/7/head', (c) => {
    c.metadata.annotations[ANN_PR_REF] = value;
  });

describe('readPullRef', () => {
  it("takes the planner's refs/pull/N/head on a child App that pins a full SHA", () => {
    expect(readPullRef(child())).toEqual({ ref: 'refs/pull/7/head', problems: [] });
  });

  it("takes GitLab's refs/merge-requests/N/head", () => {
    expect(readPullRef(child('refs/merge-requests/12/head')).ref).toBe('refs/merge-requests/12/head');
  });

  it.each([
    ['an option for git', '--upload-pack=touch /tmp/x'],
    ['a branch', 'refs/heads/main'],
    ['the merge ref', 'refs/pull/7/merge'],
    ['a path out of the pull refs', 'refs/pull/7/head/../../heads/main'],
    ['a number with a leading zero', 'refs/pull/07/head'],
    ['a ref with a newline', 'refs/pull/7/head\n--upload-pack=x'],
    ['an empty value', ''],
  ])('ignores %s and reports it as InvalidAnnotation naming the annotation', (_what, value) => {
    const read = readPullRef(withAnnotation(value));
    expect(read.ref).toBeUndefined();
    expect(read.problems).toHaveLength(1);
    expect(read.problems[0]?.reason).toBe('InvalidAnnotation');
    expect(read.problems[0]?.message).toContain(`App weather-pr-7: annotation ${ANN_PR_REF}=`);
    expect(read.problems[0]?.message).toContain('refs/pull/<number>/head or refs/merge-requests/<number>/head');
  });

  it('reads nothing on an App that is not a preview: no parent label, or no ownerReference to that parent', () => {
    const unlabelled = child('refs/pull/7/head', (c) => {
      delete c.metadata.labels[LABEL_PREVIEW_OF];
    });
    const unowned = child('refs/pull/7/head', (c) => {
      c.metadata.ownerReferences = [];
    });
    const ownedByAnother = child('refs/pull/7/head', (c) => {
      c.metadata.labels[LABEL_PREVIEW_OF] = 'another-app';
    });
    for (const app of [unlabelled, unowned, ownedByAnother]) expect(readPullRef(app)).toEqual({ problems: [] });
  });

  it('reads nothing when the App follows a branch rather than a pinned commit', () => {
    const app = child('refs/pull/7/head', (c) => {
      if (c.spec.source) c.spec.source.git.ref = 'main';
    });
    expect(readPullRef(app)).toEqual({ problems: [] });
  });

  it('PULL_REF is the whole rule: digits only, no other namespace', () => {
    expect(PULL_REF.test('refs/pull/1/head')).toBe(true);
    expect(PULL_REF.test('refs/merge-requests/1/head')).toBe(true);
    expect(PULL_REF.test('refs/pull/x/head')).toBe(false);
    expect(PULL_REF.test('refs/changes/1/head')).toBe(false);
  });
});

describe("a preview's status.source and build", () => {
  const resolved = { ref: HEAD, commit: HEAD, resolvedAt: NOW.toISOString() };

  it('names the pinned commit by its pull ref in status.source', () => {
    const source = withSource(
      undefined,
      throughPullRef(resolved, 'refs/pull/7/head'),
      undefined,
      1,
      NOW.toISOString(),
    ).source;
    expect(source).toMatchObject({
      ref: 'refs/pull/7/head',
      commit: HEAD,
      revision: `refs/pull/7/head@sha1:${HEAD}`,
    });
  });

  it('leaves a commit resolved from a branch, and a pinned commit without a pull ref, as they were', () => {
    const branch = { ref: 'refs/heads/main', commit: HEAD, resolvedAt: NOW.toISOString() };
    expect(throughPullRef(branch, 'refs/pull/7/head')).toEqual(branch);
    expect(throughPullRef(resolved, undefined)).toEqual(resolved);
  });

  it('fetches the exact commit by its SHA with both engines; the Job names the pull ref', () => {
    const app = child();
    const source = throughPullRef(resolved, readPullRef(app).ref);
    const status = withSource(undefined, source, undefined, 1, NOW.toISOString());
    const images = DEFAULT_BUILD_IMAGES;
    const plan = planBuild({ app: { ...app, status }, jobs: [], pods: [], images });
    const create = plan.actions.find((a) => a.kind === 'createJob');
    if (create?.kind !== 'createJob') throw new Error('a build Job');
    expect(create.manifest.metadata.annotations['teal.dev/ref']).toBe('refs/pull/7/head');
    expect(create.manifest.metadata.labels['teal.dev/commit']).toBe(HEAD);
    const env = (create.manifest.spec.template.spec.containers[0] as { env: { name: string; value?: string }[] }).env;
    const url = app.spec.source?.git.url.replace(/(\.git)?$/, '.git');
    expect(env.find((e) => e.name === 'TEAL_CONTEXT')?.value).toBe(`${url}#${HEAD}`);

    const kanikoApp = structuredClone(app);
    if (kanikoApp.spec.build) kanikoApp.spec.build.engine = 'kaniko';
    const kaniko = buildJobManifest({ app: kanikoApp, commit: HEAD, ref: source.ref, images });
    const args = (kaniko.spec.template.spec.containers[0] as { args: string[] }).args;
    const host = (app.spec.source?.git.url ?? '').replace(/^https:\/\//, 'git://');
    expect(args).toContain(`--context=${host}#${HEAD}#${HEAD}`);
    const gitlab = buildJobManifest({ app: kanikoApp, commit: HEAD, ref: 'refs/merge-requests/3/head', images });
    expect((gitlab.spec.template.spec.containers[0] as { args: string[] }).args).toContain(
      `--context=${host}#${HEAD}#${HEAD}`,
    );
    // A branch is still cloned by its name, then the commit checked out.
    const branch = buildJobManifest({ app: kanikoApp, commit: HEAD, ref: 'refs/heads/main', images });
    expect((branch.spec.template.spec.containers[0] as { args: string[] }).args).toContain(
      `--context=${host}#refs/heads/main#${HEAD}`,
    );
  });
});
