// spec.previews (issue #28 item 1): its defaults, and the combinations its schema
// cannot refuse, which the reconciler reports as InvalidSpec naming the field.
import { describe, expect, it } from 'vitest';
import { hostTemplateProblem, previewsRepository } from '../../src/app/previews-problems.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { specProblems } from '../../src/rollout/spec-problems.ts';
import { previewsApp } from '../fixtures/apps.ts';

type PreviewsInput = NonNullable<AppInput['spec']['previews']>;

function valid(input: AppInput) {
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.app;
}

function problemsOf(change: (previews: PreviewsInput, app: AppInput) => void, defaults = {}): string[] {
  const input = previewsApp();
  change(input.spec.previews as PreviewsInput, input);
  return specProblems(valid(input), defaults);
}

describe('spec.previews', () => {
  it('fills its defaults: approve forks with a label, poll every 5m, one replica, report both ways', () => {
    const previews = valid(previewsApp()).spec.previews;
    expect(previews).toMatchObject({
      provider: 'github',
      tokenSecretRef: { name: 'weather-github', key: 'token' },
      filter: { labels: [], targetBranches: [], includeDrafts: false },
      forks: { policy: 'approve', approvalLabel: 'preview-approved' },
      interval: '5m',
      replicas: 1,
      secrets: [],
      report: { commitStatus: true, comment: true },
    });
  });

  it('is valid as the fixture has it, with no spec problem', () => {
    expect(specProblems(valid(previewsApp()))).toEqual([]);
  });

  it('accepts http to the loopback only, for a git server beside the operator', () => {
    const input = previewsApp();
    (input.spec.previews as PreviewsInput).apiURL = 'http://127.0.0.1:3000/api/v1';
    expect(validateApp(input).ok).toBe(true);
  });

  it('needs spec.source: an App from a ready image has no pull requests to build', () => {
    const input = previewsApp();
    delete input.spec.source;
    delete input.spec.build;
    input.spec.image = 'repo/app:1';
    expect(specProblems(valid(input))).toContainEqual(expect.stringMatching(/^spec\.previews: needs spec\.source/));
  });

  it('needs apiURL for gitea, which has no public API', () => {
    expect(problemsOf((p) => (p.provider = 'gitea'))).toContainEqual(
      expect.stringMatching(/^spec\.previews\.apiURL: required for provider gitea/),
    );
    expect(
      problemsOf((p) => Object.assign(p, { provider: 'gitea', apiURL: 'https://git.example.com/api/v1' })),
    ).toEqual([]);
  });

  it("refuses the parent's own image repository and push Secret: previews never push with production's credentials", () => {
    const problems = problemsOf((p) => {
      p.build = { image: 'harbor.example.com/team/weather', pushSecretRef: { name: 'harbor-push' } };
    });
    expect(problems).toContainEqual(expect.stringMatching(/^spec\.previews\.build\.image: must differ/));
    expect(problems).toContainEqual(expect.stringMatching(/^spec\.previews\.build\.pushSecretRef: must differ/));
  });

  it("refuses the operator's default push Secret when the parent pushes with it", () => {
    const problems = problemsOf(
      (p, app) => {
        delete app.spec.build?.pushSecretRef;
        p.build = { image: 'harbor.example.com/previews/weather', pushSecretRef: { name: 'default-push' } };
      },
      { pushSecret: 'default-push' },
    );
    expect(problems).toContainEqual(expect.stringMatching(/^spec\.previews\.build\.pushSecretRef: must differ/));
  });

  it('refuses a patch env that reads a Secret not listed in previews.secrets', () => {
    const env = [{ name: 'DB', valueFrom: { secretKeyRef: { name: 'prod-db', key: 'url' } } }];
    expect(problemsOf((p) => (p.templatePatch = { env }))).toEqual([
      'spec.previews.templatePatch.env[0].valueFrom.secretKeyRef.name: "prod-db" is not one of spec.previews.secrets',
    ]);
    expect(problemsOf((p) => Object.assign(p, { templatePatch: { env }, secrets: ['prod-db'] }))).toEqual([]);
  });

  it('refuses a host template that would give every pull request the same host, or an unknown placeholder', () => {
    expect(problemsOf((p) => (p.exposure = { ingress: { host: 'preview.example.com' } }))).toEqual([
      'spec.previews.exposure.ingress.host: needs {{number}} or {{name}}: one host per pull request',
    ]);
    expect(
      problemsOf(
        (p) => (p.exposure = { httpRoute: { hostname: '{{title}}.example.com', parentRefs: [{ name: 'gw' }] } }),
      ),
    ).toEqual([
      'spec.previews.exposure.httpRoute.hostname: unknown placeholder {{title}}: use {{number}}, {{app}}, {{name}}',
    ]);
  });

  it.each([
    ['pr-{{number}}.preview.example.com', undefined],
    ['{{name}}.example.com', undefined],
    ['{{app}}-{{number}}.example.com', undefined],
    ['{{number}.example.com', 'a brace outside a {{placeholder}}'],
    ['pr-{{number}}..example.com', 'an empty label'],
  ])('host template %s: %s', (template, problem) => {
    expect(hostTemplateProblem(template)).toBe(problem);
  });

  it.each([
    ['https://git.example.com/team/weather-app.git', 'team/weather-app'],
    ['https://gitlab.example.com/group/sub/project', 'group/sub/project'],
    ['ssh://git@git.example.com:2222/team/app.git', 'team/app'],
    ['git@github.com:team/app.git', 'team/app'],
    ['file:///tmp/repos/app', undefined],
  ])('reads the repository of %s as %s', (url, repository) => {
    const source = { git: { url } };
    expect(previewsRepository({ source })).toBe(repository);
  });

  it('needs repository when the git URL has no owner/name path', () => {
    const fileUrl = (_: PreviewsInput, app: AppInput) => {
      if (app.spec.source) app.spec.source.git.url = 'file:///tmp/repos/app';
    };
    expect(problemsOf(fileUrl)).toEqual([
      'spec.previews.repository: required, since spec.source.git.url has no owner/name path',
    ]);
  });
});
