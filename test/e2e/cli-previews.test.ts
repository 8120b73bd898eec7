// `kubectl teal previews APP` end to end (issue #28 item 10), on the real API
// server through the real kubectl, from the bundle and from the sources: a
// parent App with spec.previews, its status.previews written through the status
// subresource as the operator writes it, and child Apps labelled and owned as
// the planner makes them (src/app/preview-labels.ts). No operator runs, so what is
// written stays as written. Users are real: ServiceAccount tokens meet RBAC.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ANN_PR_HEAD, LABEL_PREVIEW_OF, LABEL_PULL_REQUEST } from '../../src/app/preview-labels.ts';
import type { PreviewsView } from '../../src/app/previews-view.ts';
import type { AppStatus } from '../../src/app/schema.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp, previewsApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import { CLI_FROM, type CliFrom, type CliResult, teal as runTeal, startTeal } from '../support/cli.ts';
import { clients, createNamespace, kubectl, tokenKubeconfig, waitFor } from '../support/kube.ts';
import { allowed, bind, serviceAccount, userOf } from '../support/users.ts';

const ROLES = new URL('../../config/rbac/roles.yaml', import.meta.url);
const SHA = (c: string) => c.repeat(40);
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');

/** The bundle users install and the sources; the single executable runs the same code as the bundle (cli.test.ts). */
const FROM = CLI_FROM.filter((from) => from !== 'standalone');

describe.each(FROM)('kubectl teal previews, run from the %s', (from: CliFrom) => {
  let ns: string;
  let removeNs: () => Promise<void>;
  let root: string;

  const teal = (args: string[], kubeconfig = inject('kubeconfig')): Promise<CliResult> =>
    runTeal([...args, '-n', ns], kubeconfig, from);

  /** Writes an App's status through the status subresource, as the operator does (a merge patch). */
  async function writeStatus(name: string, status: AppStatus): Promise<void> {
    await clients().custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** A child App as the planner makes it: labelled with its parent and pull request, owned by the parent. */
  async function childApp(parentUid: string, number: number, phase: 'Healthy' | 'Progressing'): Promise<void> {
    const body = e2eApp(`weather-pr-${number}`);
    body.metadata = {
      name: `weather-pr-${number}`,
      labels: { [LABEL_PREVIEW_OF]: 'weather', [LABEL_PULL_REQUEST]: String(number) },
      annotations: { [ANN_PR_HEAD]: SHA('c') },
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: 'weather', uid: parentUid, controller: true }],
    };
    await createApp(ns, body);
    await writeStatus(body.metadata.name, { phase });
  }

  beforeAll(async () => {
    ({ name: ns, remove: removeNs } = await createNamespace('cli-previews'));
    root = await mkdtemp(join(tmpdir(), 'teal-cli-previews-'));
    const parent = await createApp(ns, previewsApp('weather'));
    await writeStatus('weather', {
      previews: {
        listedAt: minutesAgo(2),
        pullRequests: [
          {
            number: 12,
            name: 'weather-pr-12',
            head: SHA('a'),
            state: 'Ready',
            url: 'https://pr-12.preview.example.com',
          },
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
          lastTransitionTime: minutesAgo(1),
        },
      ],
    });
    // pr-12 recorded and found; pr-7 recorded, its child gone; pr-15 a child without a record.
    await childApp(parent.metadata.uid, 12, 'Healthy');
    await childApp(parent.metadata.uid, 15, 'Progressing');
    await createApp(ns, e2eApp('plain'));
  });

  afterAll(async () => {
    await removeNs?.();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The table's rows as cells (columns are three spaces apart or more); the AGE column is left out. */
  const rowsOf = (stdout: string): string[][] => {
    const lines = stdout.trimEnd().split('\n');
    const header = lines.findIndex((line) => line.startsWith('PR '));
    return lines.slice(header + 1).map((line) => line.split(/\s{3,}/).filter((_, i) => i !== 6));
  };

  const EXPECTED_ROWS = [
    ['3', 'AwaitingApproval', '-', '-', 'ddddddd', '-', 'a fork: waits for preview-approved'],
    [
      '7',
      'Failed',
      'weather-pr-7',
      'not found',
      'bbbbbbb',
      '-',
      'child App weather-pr-7 not found; build failed: exit 1',
    ],
    ['12', 'Ready', 'weather-pr-12', 'Healthy', 'aaaaaaa', 'https://pr-12.preview.example.com'],
    [
      '15',
      'not recorded',
      'weather-pr-15',
      'Progressing',
      'ccccccc',
      '-',
      'a child App that status.previews does not record',
    ],
  ];

  it('shows the previews as a table, joined with the child Apps, and why the list is stale', async () => {
    const shown = await teal(['previews', 'weather']);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(`^App weather \\(namespace ${ns}\\): 4 previews, last listed \\d+m(\\d+s)? ago$`),
    );
    expect(lines[1]).toBe('PreviewsListed: False (RateLimited): github answered 403');
    expect(lines[3]?.split(/\s{3,}/)).toEqual(['PR', 'STATE', 'APP', 'PHASE', 'HEAD', 'URL', 'AGE', 'MESSAGE']);
    expect(rowsOf(shown.stdout)).toEqual(EXPECTED_ROWS);
  });

  it('prints the same as JSON with -o json', async () => {
    const shown = await teal(['previews', 'weather', '-o', 'json']);
    expect(shown.code, shown.stderr).toBe(0);
    const view = JSON.parse(shown.stdout) as PreviewsView;
    expect(view).toMatchObject({
      app: 'weather',
      namespace: ns,
      notListed: { status: 'False', reason: 'RateLimited', message: 'github answered 403' },
    });
    expect(view.previews.map((r) => [r.number, r.state ?? null, r.child, r.app ?? null, r.phase ?? null])).toEqual([
      [3, 'AwaitingApproval', 'none', null, null],
      [7, 'Failed', 'missing', 'weather-pr-7', null],
      [12, 'Ready', 'found', 'weather-pr-12', 'Healthy'],
      [15, null, 'unrecorded', 'weather-pr-15', 'Progressing'],
    ]);
    expect(view.previews[2]?.head).toBe(SHA('a'));
  });

  it('refuses an App without spec.previews, and a missing App, in one line with exit code 1', async () => {
    const plain = await teal(['previews', 'plain']);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toBe('error: App "plain" has no spec.previews (docs/previews.md)\n');
    const missing = await teal(['previews', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`error: App "nope" not found in namespace "${ns}"\n`);
  });

  it('shows a teal-viewer the same table; a user who may only get Apps, the records with a warning', async () => {
    const applied = await kubectl(['apply', '-f', ROLES.pathname]);
    expect(applied.code, applied.stderr).toBe(0);
    const viewerToken = await serviceAccount(ns, 'viewer');
    await bind(ns, 'viewer', 'ClusterRole', 'teal-viewer');
    await allowed(ns, 'viewer', 'list');
    const viewer = await tokenKubeconfig(join(root, 'viewer.kubeconfig'), 'viewer', viewerToken, ns);
    const seen = await teal(['previews', 'weather'], viewer);
    expect(seen.code, seen.stderr).toBe(0);
    expect(rowsOf(seen.stdout)).toEqual(EXPECTED_ROWS);

    const getter = await tokenKubeconfig(
      join(root, 'getter.kubeconfig'),
      'getter',
      await serviceAccount(ns, 'getter', ['get']),
      ns,
    );
    const got = await teal(['previews', 'weather'], getter);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain(
      `warning: user "${userOf(ns, 'getter')}" cannot list apps.teal.dev in namespace "${ns}" (RBAC: needs "list" on apps.teal.dev): the child Apps' phases are not shown`,
    );
    // The records alone: the children's phases unknown, and no child without a record.
    expect(rowsOf(got.stdout).map((row) => row.slice(0, 4))).toEqual([
      ['3', 'AwaitingApproval', '-', '-'],
      ['7', 'Failed', 'weather-pr-7', 'unknown'],
      ['12', 'Ready', 'weather-pr-12', 'unknown'],
    ]);
  });

  it('--watch draws again when a child App changes', async () => {
    const watching = startTeal(['previews', 'weather', '--watch', '-n', ns], inject('kubeconfig'), from);
    try {
      await waitFor('the first draw', async () =>
        /weather-pr-15\s+Progressing/.test(watching.stdout()) ? true : undefined,
      );
      await writeStatus('weather-pr-15', { phase: 'Healthy' });
      await waitFor('a draw with the child Healthy', async () =>
        /weather-pr-15\s+Healthy/.test(watching.stdout()) ? true : undefined,
      );
    } finally {
      expect(await watching.interrupt(), watching.stderr()).toBe(0);
    }
  });
});
