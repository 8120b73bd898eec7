// The kubectl plugin end to end: the real kubectl finds `kubectl-teal` on
// PATH and runs it against Apps that a real operator (a child process)
// releases on the real control plane, once for each place the plugin runs
// from: its bundle as `make cli` builds it, the sources, and the single
// executable `make cli` builds. Users are real
// too: a ServiceAccount token in its own kubeconfig meets the API server's RBAC.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp, phase, waitForApp } from '../support/apps.ts';
import {
  buildStandalone,
  CLI_FROM,
  type CliFrom,
  type CliResult,
  cliEnv,
  completeTeal,
  teal as runTeal,
} from '../support/cli.ts';
import { createRepo, type TestRepo } from '../support/git-server.ts';
import { clients, createNamespace, tokenKubeconfig, WAIT_MS, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { serviceAccount, userOf } from '../support/users.ts';

const { authn } = clients();
const bash = promisify(execFile).bind(null, 'bash');

describe.each(CLI_FROM)('kubectl teal, run from the %s', (from: CliFrom) => {
  let ns: string;
  let removeNs: () => Promise<void>;
  let operator: Operator;
  let root: string;
  let repo: TestRepo;
  let admin: string;

  /** `kubectl teal ...` through the real kubectl binary. */
  const teal = (args: string[], kubeconfig = inject('kubeconfig')): Promise<CliResult> =>
    runTeal(args, kubeconfig, from);

  /** kubectl teal with -n of this file's namespace. */
  const tealNs = (...args: string[]) => teal([...args, '-n', ns]);

  function imageApp(
    name: string,
    extra: Partial<AppInput['spec']> = {},
    blueGreen: Record<string, unknown> = {},
  ): AppInput {
    return e2eApp(name, {
      blueGreen: { scaleDownDelaySeconds: 600, abortScaleDownDelaySeconds: 2, ...blueGreen },
      spec: extra,
    });
  }

  async function released(body: AppInput): Promise<void> {
    await createApp(ns, body);
    await waitForApp(ns, body.metadata.name, 'first release Healthy', phase('Healthy'));
  }

  /** Sets a new image with the CLI and waits for its preview. */
  async function preview(name: string, tag: string): Promise<void> {
    const set = await tealNs('set', 'image', name, `registry.example.com/team/web:${tag}`);
    expect(set.code, set.stderr).toBe(0);
    await waitForApp(ns, name, `preview of ${tag}`, (a) => phase('Paused')(a) && a.status?.preview !== undefined);
  }

  beforeAll(async () => {
    if (from === 'standalone') await buildStandalone();
    ({ name: ns, remove: removeNs } = await createNamespace('cli'));
    root = await mkdtemp(join(tmpdir(), 'teal-cli-'));
    repo = await createRepo(join(root, 'repo'));
    await repo.commit('add Dockerfile', { Dockerfile: 'FROM scratch\n' });
    const review = await authn.createSelfSubjectReview({ body: {} });
    admin = review.status?.userInfo?.username ?? '';
    operator = await startOperator({ namespace: ns, extraArgs: ['--allow-file-git'] });
  });

  afterAll(async () => {
    await operator?.stop();
    await removeNs?.();
    if (root) await rm(root, { recursive: true, force: true });
  });

  describe('commands', () => {
    it('is found by kubectl as a plugin, and prints its version and help', async () => {
      const version = await teal(['version']);
      expect(version.code, version.stderr).toBe(0);
      expect(version.stdout).toMatch(/^kubectl-teal v\d+\.\d+\.\d+/);
      const help = await teal(['promote', '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('kubectl teal promote APP [--full] [--revision N]');
      const bad = await teal(['promote']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('error: promote needs APP');
    });

    it('lists Apps with their phase, revisions and age, and as JSON', async () => {
      await released(imageApp('web'));
      const list = await tealNs('list');
      expect(list.code, list.stderr).toBe(0);
      const [header, ...rows] = list.stdout.trimEnd().split('\n');
      expect(header?.split(/\s+/)).toEqual([
        'NAME',
        'PHASE',
        'ACTIVE',
        'PREVIEW',
        'COMMIT',
        'DESIRED',
        'CURRENT',
        'UP-TO-DATE',
        'AVAILABLE',
        'AGE',
      ]);
      expect(
        rows
          .find((r) => r.startsWith('web '))
          ?.split(/\s+/)
          .slice(0, 5),
      ).toEqual(['web', 'Healthy', '1', '-', '-']);

      const all = await teal(['list', '-A']);
      expect(all.stdout.split('\n')[0]?.split(/\s+/)[0]).toBe('NAMESPACE');
      expect(all.stdout).toMatch(new RegExp(`^${ns}\\s+web\\s+Healthy`, 'm'));

      const json = await tealNs('list', '-o', 'json');
      const parsed = JSON.parse(json.stdout) as { items: { metadata: { name: string }; status: { phase: string } }[] };
      expect(parsed.items.find((a) => a.metadata.name === 'web')?.status.phase).toBe('Healthy');
    });

    it('shows the tree with active and preview marked, ReplicaSets and pods; status exits 2 while Paused', async () => {
      await preview('web', '2');
      const app = await getApp(ns, 'web');
      const activeRs = app.status?.active?.replicaSet ?? '';
      const previewRs = app.status?.preview?.replicaSet ?? '';

      const tree = await tealNs('get', 'web');
      expect(tree.code, tree.stderr).toBe(0);
      expect(tree.stdout).toMatch(/^Phase:\s+॥ Paused$/m);
      expect(tree.stdout).toMatch(/^Message:\s+revision 2 is ready in preview, waiting for promotion$/m);
      expect(tree.stdout).toMatch(/# revision:2/);
      expect(tree.stdout).toMatch(new RegExp(`⧉ ${previewRs}\\s+ReplicaSet\\s+✔ Healthy\\s+\\S+\\s+preview$`, 'm'));
      expect(tree.stdout).toMatch(
        new RegExp(`⧉ ${activeRs}\\s+ReplicaSet\\s+✔ Healthy\\s+\\S+\\s+stable,active$`, 'm'),
      );
      expect(tree.stdout).toMatch(new RegExp(`□ ${previewRs}-\\w+\\s+Pod\\s+✔ Running\\s+\\S+\\s+ready:1/1`));
      expect(tree.stdout.match(new RegExp(`□ ${activeRs}-`, 'g'))).toHaveLength(2);

      const json = JSON.parse((await tealNs('get', 'web', '-o', 'json')).stdout) as {
        phase: string;
        revisions: { revision: number; marks: string[]; replicaSet: { name: string }; pods: unknown[] }[];
      };
      expect(json.phase).toBe('Paused');
      expect(json.revisions.map((r) => [r.revision, r.marks, r.replicaSet.name, r.pods.length])).toEqual([
        [2, ['preview'], previewRs, 1],
        [1, ['stable', 'active'], activeRs, 2],
      ]);

      const status = await tealNs('status', 'web');
      expect(status.code).toBe(2);
      expect(status.stdout).toContain('App "web" is Paused: revision 2 waits for "kubectl teal promote web"');
    });

    it('refuses a promote of a revision not in preview, naming both, and changes nothing', async () => {
      const stale = await tealNs('promote', 'web', '--revision', '9');
      expect(stale.code).toBe(1);
      expect(stale.stderr.trim()).toBe(
        'error: revision 9 is not in preview: App "web" has revision 2 in preview; nothing changed',
      );
      const app = await getApp(ns, 'web');
      expect(app.metadata).not.toHaveProperty(['annotations', 'intents.teal.dev/promote']);
    });

    it('promotes: the App ends Healthy on the new revision, recorded as by the user via the CLI', async () => {
      const promote = await tealNs('promote', 'web', '--revision', '2');
      expect(promote.code, promote.stderr).toBe(0);
      expect(promote.stdout).toContain(`app "web" promotion of revision 2 requested (by ${admin}`);
      // status waits for the operator to carry the intent out, then for the promotion to finish.
      const status = await tealNs('status', 'web', '--timeout', `${WAIT_MS / 1000}s`);
      expect(status.code, status.stdout).toBe(0);
      expect(status.stdout.trimEnd().split('\n').at(-1)).toBe('✔ Healthy - revision 2 is active');
      const app = await getApp(ns, 'web');
      expect(app.status?.phase).toBe('Healthy');
      expect(app.status?.active?.revision).toBe(2);
      expect(app.status?.history?.at(-1)).toMatchObject({ revision: 2, promotedBy: admin, promotedVia: 'cli' });

      const again = await tealNs('promote', 'web');
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(
        'App "web" has no revision in preview to promote (phase Healthy; revision 2 is active)',
      );
    });

    it('undo returns to the previous revision; --to-revision to a missing one is refused', async () => {
      const missing = await tealNs('undo', 'web', '--to-revision', '7');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('revision 7 of App "web" has no ReplicaSet left');
      const undo = await tealNs('undo', 'web');
      expect(undo.code, undo.stderr).toBe(0);
      expect(undo.stdout).toContain('undo to revision 1 requested');
      await waitForApp(ns, 'web', 'back on revision 1', (a) => a.status?.active?.revision === 1 && phase('Healthy')(a));
      expect((await tealNs('status', 'web', '-o', 'json')).code).toBe(0);
    });

    it('aborts a preview (status exits 1, Degraded) and retries it', async () => {
      await released(imageApp('halt'));
      await preview('halt', '2');
      const abort = await tealNs('abort', 'halt');
      expect(abort.code, abort.stderr).toBe(0);
      expect(abort.stdout).toContain('abort of revision 2 requested');
      const status = await tealNs('status', 'halt', '-o', 'json');
      expect(status.code).toBe(1);
      expect(JSON.parse(status.stdout)).toMatchObject({
        result: 'Degraded',
        exitCode: 1,
        phase: 'Degraded',
        active: 1,
      });
      const app = await getApp(ns, 'halt');
      expect(app.status?.conditions?.find((c) => c.type === 'Aborted')?.status).toBe('True');

      const retry = await tealNs('retry', 'halt');
      expect(retry.code, retry.stderr).toBe(0);
      await waitForApp(ns, 'halt', 'preview again', (a) => phase('Paused')(a) && a.status?.preview?.revision === 2);
      const noAbort = await tealNs('retry', 'halt');
      expect(noAbort.code).toBe(1);
      expect(noAbort.stderr).toContain('App "halt" has nothing aborted to retry');
    });

    it('pause holds a new image back until resume', async () => {
      await released(imageApp('hold'));
      const pause = await tealNs('pause', 'hold');
      expect(pause.code, pause.stderr).toBe(0);
      await waitForApp(ns, 'hold', 'paused', (a) => a.status?.pause !== undefined);
      expect((await tealNs('get', 'hold')).stdout).toMatch(new RegExp(`^Paused by:\\s+${admin} \\(cli\\)$`, 'm'));
      await tealNs('set', 'image', 'hold', 'registry.example.com/team/web:2');
      const status = await tealNs('status', 'hold');
      expect(status.code).toBe(2);
      expect((await getApp(ns, 'hold')).status?.preview).toBeUndefined();
      const resume = await tealNs('resume', 'hold');
      expect(resume.code, resume.stderr).toBe(0);
      await waitForApp(
        ns,
        'hold',
        'preview after resume',
        (a) => a.status?.preview?.revision === 2 && phase('Paused')(a),
      );
    });

    it('status gives up with exit code 3 at its timeout', async () => {
      await createApp(
        ns,
        imageApp('slow', {
          progressDeadlineSeconds: 3600,
          template: {
            metadata: { labels: { 'kwok.teal.dev/not-ready': 'true' } },
            spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] },
          },
        }),
      );
      const started = Date.now();
      const status = await tealNs('status', 'slow', '--timeout', '2s');
      expect(status.code).toBe(3);
      expect(status.stdout).toContain('timed out after 2s waiting for App "slow" to settle');
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      const bad = await tealNs('status', 'slow', '--timeout', 'soon');
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('--timeout: invalid duration "soon"');
    });

    it('get --watch draws again when the App changes', async () => {
      await released(imageApp('live'));
      const child = spawn(join(inject('binDir'), 'kubectl'), ['teal', 'get', 'live', '--watch', '-n', ns], {
        env: cliEnv(inject('kubeconfig'), from),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await waitFor('the first draw', async () => (out.includes('# revision:1') ? true : undefined));
        await preview('live', '2');
        await waitFor('a draw with the preview', async () =>
          /Phase:\s+॥ Paused/.test(out) && /# revision:2/.test(out) ? true : undefined,
        );
      } finally {
        child.kill('SIGINT');
      }
      expect(await exited).toBe(0);
    });

    it('set image is refused for an App built from git; logs of a build are shown or explained', async () => {
      const body: AppInput = {
        apiVersion: 'teal.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'built' },
        spec: {
          source: { git: { url: `file://${repo.dir}`, ref: 'main', pollInterval: '0' } },
          build: { image: 'registry.example.com/team/built' },
          replicas: 1,
          template: { spec: { containers: [{ name: 'app' }] } },
          service: { ports: [{ port: 80, targetPort: 8080 }] },
        },
      };
      await createApp(ns, body);
      const app = await waitForApp(ns, 'built', 'first release', phase('Healthy'));
      const head = await repo.revParse('HEAD');

      const set = await tealNs('set', 'image', 'built', 'registry.example.com/team/built:2');
      expect(set.code).toBe(1);
      expect(set.stderr).toContain('error: App "built" is built from git');

      const tree = await tealNs('get', 'built');
      expect(tree.stdout).toMatch(
        new RegExp(`⚙ ${app.status?.build?.job}\\s+Job\\s+✔ Succeeded\\s+\\S+\\s+commit:${head.slice(0, 7)}`),
      );

      // KWOK's nodes serve no container logs: the CLI says so, and shows what the pod did leave.
      for (const args of [
        ['logs', 'built'],
        ['logs', 'built', '--commit', head.slice(0, 8)],
      ]) {
        const logs = await tealNs(...args);
        if (logs.code === 0) {
          expect(logs.stdout.length > 0 || /has no logs to show/.test(logs.stderr)).toBe(true);
        } else {
          expect(logs.code).toBe(1);
          expect(logs.stderr).toMatch(/^error: build pod "built-build-[^"]+" has no logs to show: .+$/m);
          expect(logs.stdout.trim()).toBe(app.status?.build?.image?.split('@')[1]);
        }
      }
      const none = await tealNs('logs', 'built', '--commit', 'abcdef1');
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('App "built" has no build of commit abcdef1');
      const image = await tealNs('logs', 'web');
      expect(image.stderr).toContain('App "web" deploys a ready image (spec.image): it has no builds');
    });

    it('shows the log tail a failed build left in its termination message', async () => {
      await createApp(ns, {
        apiVersion: 'teal.dev/v1alpha1',
        kind: 'App',
        metadata: { name: 'broken' },
        spec: {
          source: { git: { url: `file://${repo.dir}`, ref: 'main', pollInterval: '0' } },
          build: { image: 'registry.example.com/team/broken', dockerfile: 'fail.Dockerfile' },
          template: { spec: { containers: [{ name: 'app' }] } },
          service: { ports: [{ port: 80, targetPort: 8080 }] },
        },
      });
      await waitForApp(ns, 'broken', 'failed build', (a) => a.status?.build?.phase === 'Failed');
      const logs = await tealNs('logs', 'broken');
      expect(logs.stdout + logs.stderr).toContain('error: failed to solve');
    });

    it('explains a missing App and a user without permission in one line', async () => {
      const missing = await tealNs('get', 'nope');
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toBe(`error: App "nope" not found in namespace "${ns}"`);

      // A ServiceAccount that may only get and list Apps, with its own token in its own kubeconfig.
      const token = await serviceAccount(ns, 'viewer', ['get', 'list']);
      const kubeconfig = await tokenKubeconfig(join(root, 'viewer.kubeconfig'), 'viewer', token, ns);
      const user = userOf(ns, 'viewer');

      const list = await teal(['list'], kubeconfig);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^web\s+Healthy/m);

      const promote = await teal(['promote', 'halt'], kubeconfig);
      expect(promote.code).toBe(1);
      expect(promote.stderr).toBe(
        `error: user "${user}" cannot promote apps.teal.dev "halt" in namespace "${ns}" (RBAC: grant the teal-promoter role, or the "promote" verb on apps.teal.dev)\n`,
      );
      const set = await teal(['set', 'image', 'web', 'registry.example.com/team/web:9'], kubeconfig);
      expect(set.code).toBe(1);
      expect(set.stderr.trim().split('\n')).toHaveLength(1);
      expect(set.stderr).toContain(
        `error: user "${user}" cannot set the image of apps.teal.dev "web" in namespace "${ns}"`,
      );
      const all = await teal(['list', '-A'], kubeconfig);
      expect(all.code).toBe(1);
      expect(all.stderr.trim()).toBe(
        `error: user "${user}" cannot list apps.teal.dev in any namespace (RBAC: needs "list" on apps.teal.dev)`,
      );
      // Nothing was written on the refused requests.
      const halt = (await getApp(ns, 'halt')) as { metadata: { annotations?: Record<string, string> } };
      expect(halt.metadata.annotations?.['intents.teal.dev/promote']).toBeUndefined();
    });
  });

  describe('completion', () => {
    /** kubectl's own completion of `kubectl teal <words>`, which runs kubectl_complete-teal. */
    const complete = (...words: string[]) => completeTeal(words, inject('kubeconfig'), from);

    it('completes commands and flags through kubectl __complete', async () => {
      const command = await complete('pro');
      expect(command.values, command.stderr).toEqual(['promote']);
      expect(command.directive).toBe(4);
      const flag = await complete('promote', 'web', '--skip');
      expect(flag.values, flag.stderr).toEqual(['--skip-checks']);
      const value = await complete('get', 'web', '-o', '');
      expect(value.values, value.stderr).toEqual(['json', 'yaml']);
    });

    it("completes the names of the Apps in -n's namespace, and quietly none on an error", async () => {
      await createApp(ns, imageApp('complete-me'));
      await createApp(ns, imageApp('completely'));
      const names = await complete('get', '-n', ns, 'complete');
      expect(names.values, names.stderr).toEqual(['complete-me', 'completely']);
      expect(names.directive).toBe(4);
      const after = await complete('promote', '--namespace', ns, 'complete-');
      expect(after.values, after.stderr).toEqual(['complete-me']);
      const broken = await complete('get', '--kubeconfig', join(root, 'missing'), '-n', ns, '');
      expect(broken).toMatchObject({ values: [], code: 0 });
      expect(broken.stderr).not.toMatch(/error|warning|\n\s+at /i);
    });

    it('prints a bash script that sources without error and completes kubectl-teal', async () => {
      const script = [
        'set -e',
        'source <(kubectl teal completion bash)',
        'COMP_WORDS=(kubectl-teal get -n "$1" complete-)',
        'COMP_CWORD=4',
        '_kubectl_teal',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
        'printf "%s\\n" "${COMPREPLY[@]}"',
      ].join('\n');
      const { stdout, stderr } = await bash(['-c', script, 'bash', ns], { env: cliEnv(inject('kubeconfig'), from) });
      expect(stderr).toBe('');
      expect(stdout).toBe('complete-me\n');
    });
  });
});
