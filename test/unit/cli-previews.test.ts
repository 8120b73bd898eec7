// `kubectl teal previews APP` (src/cli/previews.ts): status.previews joined with
// the child Apps found by label, as data and as a table; the command's place in
// the command line and its completion. The reads are in test/e2e/cli-previews.test.ts.
import { describe, expect, it } from 'vitest';
import { ANN_PR_HEAD, LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from '../../src/app/preview-labels.ts';
import { previewsView } from '../../src/app/previews-view.ts';
import type { AppObject } from '../../src/cli/app-object.ts';
import { parse } from '../../src/cli/args.ts';
import { completeWords } from '../../src/cli/completion.ts';
import { CliError } from '../../src/cli/errors.ts';
import { renderPreviews, requirePreviews } from '../../src/cli/previews.ts';

const NOW = Date.parse('2026-11-27T08:00:00Z');
const ago = (minutes: number) => new Date(NOW - minutes * 60_000).toISOString();
const SHA = (c: string) => c.repeat(40);

function parent(status: AppObject['status'] = {}): AppObject {
  return {
    metadata: { name: 'weather', namespace: 'team', uid: 'u1' },
    spec: { previews: { provider: 'github' } },
    status,
  };
}

function child(number: number, phase?: string, minutes = 5): AppObject {
  return {
    metadata: {
      name: `weather-pr-${number}`,
      namespace: 'team',
      labels: { [LABEL_PREVIEW_OF]: 'weather', [LABEL_PULL_REQUEST]: String(number) },
      annotations: { [ANN_PR_HEAD]: SHA('c') },
      creationTimestamp: ago(minutes),
    },
    spec: {},
    ...(phase ? { status: { phase: phase as 'Healthy' } } : {}),
  };
}

const recorded = parent({
  previews: {
    listedAt: ago(2),
    pullRequests: [
      { number: 12, name: 'weather-pr-12', head: SHA('a'), state: 'Ready', url: 'https://pr-12.preview.example.com' },
      { number: 7, name: 'weather-pr-7', head: SHA('b'), state: 'Failed', message: 'build failed: exit 1' },
      { number: 3, head: SHA('d'), state: 'AwaitingApproval', message: 'a fork: waits for preview-approved' },
    ],
  },
  conditions: [
    {
      type: 'PreviewsListed',
      status: 'False',
      reason: 'RateLimited',
      message: 'github answered 403',
      lastTransitionTime: ago(1),
    },
  ],
});

describe('kubectl teal previews: the view', () => {
  it('joins each record with its child App, says a missing child and a child without a record, by number', () => {
    const view = previewsView(recorded, [child(12, 'Healthy', 30), child(15, 'Progressing')]);
    expect(view.previews.map((r) => [r.number, r.state, r.child, r.app, r.phase])).toEqual([
      [3, 'AwaitingApproval', 'none', undefined, undefined],
      [7, 'Failed', 'missing', 'weather-pr-7', undefined],
      [12, 'Ready', 'found', 'weather-pr-12', 'Healthy'],
      [15, undefined, 'unrecorded', 'weather-pr-15', 'Progressing'],
    ]);
    // The unrecorded child's head comes from its own annotation.
    expect(view.previews[3]?.head).toBe(SHA('c'));
    expect(view.listedAt).toBe(ago(2));
    expect(view.notListed).toEqual({ status: 'False', reason: 'RateLimited', message: 'github answered 403' });
    expect(view.childrenRefused).toBeUndefined();
  });

  it('leaves PreviewsListed out when it is True, and shows the rows of status alone when children cannot be listed', () => {
    const listed = parent({
      previews: { pullRequests: [{ number: 1, name: 'weather-pr-1', head: SHA('a'), state: 'Building' }] },
      conditions: [{ type: 'PreviewsListed', status: 'True', reason: 'Listed', lastTransitionTime: ago(1) }],
    });
    const view = previewsView(listed, { refused: 'user "v" cannot list apps.teal.dev' });
    expect(view.notListed).toBeUndefined();
    expect(view.childrenRefused).toBe('user "v" cannot list apps.teal.dev');
    expect(view.previews.map((r) => [r.number, r.child])).toEqual([[1, 'unread']]);
    expect(renderPreviews(view, false, NOW)).toContain(
      'warning: user "v" cannot list apps.teal.dev: the child Apps\' phases are not shown',
    );
  });

  it('draws a header line, the condition, and a table with short heads, ages and messages', () => {
    const text = renderPreviews(previewsView(recorded, [child(12, 'Healthy', 30), child(15)]), false, NOW);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('App weather (namespace team): 4 previews, last listed 2m ago');
    expect(lines[1]).toBe('PreviewsListed: False (RateLimited): github answered 403');
    expect(lines[3]?.split(/\s{3,}/)).toEqual(['PR', 'STATE', 'APP', 'PHASE', 'HEAD', 'URL', 'AGE', 'MESSAGE']);
    const cells = lines.slice(4).map((line) => line.split(/\s{3,}/));
    expect(cells).toEqual([
      ['3', 'AwaitingApproval', '-', '-', 'ddddddd', '-', '-', 'a fork: waits for preview-approved'],
      [
        '7',
        'Failed',
        'weather-pr-7',
        'not found',
        'bbbbbbb',
        '-',
        '-',
        'child App weather-pr-7 not found; build failed: exit 1',
      ],
      ['12', 'Ready', 'weather-pr-12', 'Healthy', 'aaaaaaa', 'https://pr-12.preview.example.com', '30m'],
      [
        '15',
        'not recorded',
        'weather-pr-15',
        '-',
        'ccccccc',
        '-',
        '5m',
        'a child App that status.previews does not record',
      ],
    ]);
  });

  it('says an App not listed yet, with no previews, without a table', () => {
    expect(renderPreviews(previewsView(parent(), []), false, NOW)).toBe(
      'App weather (namespace team): 0 previews, not listed yet\n',
    );
  });

  it('refuses an App without spec.previews, naming it', () => {
    const plain: AppObject = { metadata: { name: 'web', namespace: 'team' }, spec: { image: 'x' } };
    expect(() => requirePreviews(plain)).toThrow(new CliError('App "web" has no spec.previews (docs/previews.md)'));
    expect(() => requirePreviews(parent())).not.toThrow();
  });
});

describe('kubectl teal previews: the command line', () => {
  it('takes APP, --watch and -o, and completes App names', () => {
    const parsed = parse(['previews', 'weather', '-w', '-o', 'json', '-n', 'team']);
    expect(parsed).toMatchObject({
      kind: 'run',
      command: { name: 'previews' },
      args: ['weather'],
      flags: { watch: true, output: 'json', namespace: 'team' },
    });
    const offered = completeWords(['pre']);
    expect(offered.kind === 'candidates' ? offered.candidates.map((c) => c.value) : []).toEqual(['previews']);
    expect(completeWords(['previews', '-n', 'team', 'we'])).toMatchObject({
      kind: 'apps',
      prefix: 'we',
      connect: { namespace: 'team' },
    });
  });
});
