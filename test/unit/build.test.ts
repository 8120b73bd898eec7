import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { IMAGE_REPOSITORY } from '../../src/app/patterns.ts';
import type { App } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import {
  buildJobManifest,
  buildJobName,
  buildSecretCopies,
  buildSecretCopyManifest,
  buildSpecHash,
  gitContextUrl,
} from '../../src/build/job.ts';
import {
  BUILD_HISTORY,
  lastLines,
  type ObservedBuildPod,
  type ObservedJob,
  orphanedJobs,
  planBuild,
  stoppedAtUsage,
  usageError,
} from '../../src/build/plan.ts';
import { imageRepository, pushSecretName, registryProblem } from '../../src/build/registry.ts';
import { gitApp } from '../fixtures/apps.ts';

const C1 = 'a'.repeat(40);
const C2 = 'b'.repeat(40);
const DIGEST = `sha256:${'c'.repeat(64)}`;

function app(commit = C1, edit: (a: ReturnType<typeof gitApp>) => void = () => {}): App {
  const input = gitApp('weather');
  input.metadata = { name: 'weather', namespace: 'ns', uid: 'u1', generation: 1 };
  edit(input);
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return {
    ...result.app,
    status: {
      source: {
        ref: 'refs/heads/feature/new-ui',
        commit,
        shortCommit: commit.slice(0, 7),
        revision: `feature/new-ui@sha1:${commit}`,
        resolvedAt: '2026-11-21T10:00:00Z',
      },
    },
  };
}

function job(commit: string, extra: Partial<ObservedJob> = {}): ObservedJob {
  return {
    namespace: 'ns',
    name: buildJobName(app(commit), commit),
    resourceVersion: '1',
    uid: 'job-uid',
    app: 'weather',
    appNamespace: 'ns',
    suspended: false,
    commit,
    buildSpec: buildSpecHash(app(commit)),
    createdAt: '2026-11-21T10:00:00Z',
    active: 1,
    deleting: false,
    ...extra,
  };
}

/** The pod of C1's build Job, finished with this phase and termination message. */
function pod(phase: string, message?: string): ObservedBuildPod {
  return {
    namespace: 'ns',
    name: 'p',
    resourceVersion: '1',
    job: job(C1).name,
    phase,
    ...(message ? { message } : {}),
  };
}

const images = DEFAULT_BUILD_IMAGES;

/** A git App that leaves the registry to the operator: no build.image, no pushSecretRef. */
const unnamed = (commit = C1) =>
  app(commit, (x) => {
    x.spec.build = {};
  });
const defaults = { registry: 'registry.local:5000/apps', pushSecret: 'platform-push' };

describe('the image repository', () => {
  it('is spec.build.image when set, whatever the operator defaults', () => {
    expect(imageRepository(app(), defaults)).toBe('harbor.example.com/team/weather');
    expect(imageRepository(app(), {})).toBe('harbor.example.com/team/weather');
  });

  it('else <default registry>/<namespace>/<name>, a valid repository', () => {
    const repository = imageRepository(unnamed(), defaults);
    expect(repository).toBe('registry.local:5000/apps/ns/weather');
    expect(repository).toMatch(IMAGE_REPOSITORY);
    expect(imageRepository(unnamed(), { registry: 'harbor.example.com' })).toBe('harbor.example.com/ns/weather');
  });

  it('is undefined without a default registry, and for an App that names a ready image', () => {
    expect(imageRepository(unnamed(), {})).toBeUndefined();
    expect(imageRepository(unnamed(), { pushSecret: 'platform-push' })).toBeUndefined();
    const a = app();
    expect(imageRepository({ ...a, spec: { ...a.spec, build: undefined } }, defaults)).toBeUndefined();
  });

  it('pushes with spec.build.pushSecretRef, else the default push Secret', () => {
    expect(pushSecretName(app(), defaults)).toBe('harbor-push');
    expect(pushSecretName(unnamed(), defaults)).toBe('platform-push');
    expect(pushSecretName(unnamed(), {})).toBeUndefined();
  });

  it.each([
    'harbor.example.com/apps',
    'registry.local:5000/apps',
    'localhost:5000',
    'harbor.example.com',
    '10.0.0.1:5000/team/apps',
  ])('accepts the default registry %s', (registry) => {
    expect(registryProblem(registry)).toBeUndefined();
  });

  it.each([
    ['a scheme', 'https://harbor.example.com/apps', /scheme/],
    ['a tag', 'harbor.example.com/apps:v1', /without tag or digest/],
    ['a digest', `harbor.example.com/apps@sha256:${'a'.repeat(64)}`, /without tag or digest/],
    ['a trailing slash', 'harbor.example.com/apps/', /registry host/],
    ['an uppercase path', 'harbor.example.com/Apps', /lowercase path/],
    ['no registry host (a Docker Hub path)', 'apps/team', /registry host/],
    ['too long a path', `harbor.example.com/${'a'.repeat(120)}`, /at most 127 characters/],
    ['nothing', '', /registry host/],
  ])('rejects a default registry with %s', (_title, registry, message) => {
    expect(registryProblem(registry)).toMatch(message);
  });
});

describe('build Jobs', () => {
  it('have a deterministic name per App and commit, a DNS label of at most 63 characters', () => {
    const a = app();
    expect(buildJobName(a, C1)).toBe(buildJobName(a, C1));
    expect(buildJobName(a, C1)).not.toBe(buildJobName(a, C2));
    const long = app(C1, (x) => {
      x.metadata.name = `w${'x'.repeat(54)}`;
    });
    const name = buildJobName(long, C1);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it('buildkit: user input only in env values, no secret in the spec, digest to the termination log', () => {
    const manifest = buildJobManifest({ app: app(), commit: C1, ref: 'refs/heads/feature/new-ui', images });
    const json = JSON.stringify(manifest);
    expect(manifest.spec.backoffLimit).toBe(0);
    expect(manifest.spec.activeDeadlineSeconds).toBe(900);
    const container = manifest.spec.template.spec.containers[0] as {
      command: string[];
      env: { name: string; value?: string; valueFrom?: unknown }[];
    };
    expect(container.command[0]).toBe('sh');
    // The script is fixed: no App value is spliced into it.
    expect(container.command[2]).not.toContain('git.example.com');
    expect(container.command[2]).toContain('/dev/termination-log');
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env.TEAL_CONTEXT).toBe(`https://git.example.com/team/weather-app.git#${C1}`);
    expect(env.TEAL_IMAGE).toBe(`harbor.example.com/team/weather:${C1}`);
    expect(env.GIT_USERNAME).toEqual({ secretKeyRef: { name: 'weather-git', key: 'username', optional: true } });
    expect(env.GIT_PASSWORD).toEqual({ secretKeyRef: { name: 'weather-git', key: 'password', optional: true } });
    expect(env.GIT_BEARER_TOKEN).toEqual({
      secretKeyRef: { name: 'weather-git', key: 'bearerToken', optional: true },
    });
    expect(json).not.toMatch(/password"\s*:\s*"[^"]/);
    expect(manifest.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'App', name: 'weather', controller: true });
  });

  it('buildkit: an https URL without ".git" gets it, or BuildKit would fetch the page as a tarball', () => {
    const manifest = buildJobManifest({
      app: app(C1, (x) => {
        if (x.spec.source) x.spec.source.git.url = 'https://github.com/team/weather-app/';
      }),
      commit: C1,
      ref: 'refs/heads/main',
      images,
    });
    const env = (manifest.spec.template.spec.containers[0] as { env: { name: string; value?: string }[] }).env;
    expect(env.find((e) => e.name === 'TEAL_CONTEXT')?.value).toBe(`https://github.com/team/weather-app.git#${C1}`);
    expect(gitContextUrl('https://git.example.com/team/app.git')).toBe('https://git.example.com/team/app.git');
    expect(gitContextUrl('ssh://git@git.example.com/team/app')).toBe('ssh://git@git.example.com/team/app');
    expect(gitContextUrl('git@github.com:team/app')).toBe('git@github.com:team/app');
  });

  it('buildkit: the pod runs with fsGroup 1000, so BuildKit (uid 1000) can read the ssh key, mounted group-readable only', () => {
    const manifest = buildJobManifest({
      app: app(),
      commit: C1,
      ref: 'refs/heads/main',
      images,
      gitSecretKeys: ['identity', 'known_hosts'],
    });
    const spec = manifest.spec.template.spec as {
      securityContext?: { fsGroup?: number };
      volumes: { name: string; secret?: { defaultMode?: number } }[];
    };
    expect(spec.securityContext?.fsGroup).toBe(1000);
    expect(spec.volumes.find((v) => v.name === 'git-ssh')?.secret?.defaultMode).toBe(0o440);
  });

  it.each([
    [
      'username and password: basic auth as that user',
      { GIT_USERNAME: 'teal-bot', GIT_PASSWORD: 's3cret' },
      `GIT_AUTH_HEADER=basic ${Buffer.from('teal-bot:s3cret').toString('base64')}`,
    ],
    ['a bearerToken: bearer auth', { GIT_BEARER_TOKEN: 'tok' }, 'GIT_AUTH_HEADER=bearer tok'],
    ["a password alone: BuildKit's token (x-access-token)", { GIT_PASSWORD: 's3cret' }, 'GIT_AUTH_TOKEN=s3cret'],
  ])('buildkit script: the git Secret with %s', async (_what, env, expected) => {
    const manifest = buildJobManifest({ app: app(), commit: C1, ref: 'refs/heads/main', images });
    const script = (manifest.spec.template.spec.containers[0] as { command: string[] }).command[2] ?? '';
    // Up to the build itself, with buildctl-daemonless.sh replaced by one that prints what it got.
    const upToBuild = script.split('\n').slice(0, -1).join('\n');
    const bin = mkdtempSync(join(tmpdir(), 'teal-buildkit-script-'));
    writeFileSync(
      join(bin, 'buildctl-daemonless.sh'),
      '#!/bin/sh\necho "args: $*"\nenv | grep -E "^GIT_AUTH_(HEADER|TOKEN)=" || true\n',
      { mode: 0o755 },
    );
    const { stdout } = await promisify(execFile)('sh', ['-c', upToBuild], {
      env: { PATH: `${bin}:/usr/bin:/bin`, TEAL_CONTEXT: 'x', TEAL_DOCKERFILE: 'Dockerfile', TEAL_IMAGE: 'i', ...env },
    });
    rmSync(bin, { recursive: true, force: true });
    expect(stdout).toContain(expected);
    const id = expected.startsWith('GIT_AUTH_HEADER') ? 'GIT_AUTH_HEADER' : 'GIT_AUTH_TOKEN';
    expect(stdout).toContain(`--secret id=${id},env=${id}`);
  });

  it('buildkit: a sub-directory context for monorepos', () => {
    const manifest = buildJobManifest({
      app: app(C1, (x) => {
        if (x.spec.source) x.spec.source.git.path = 'services/api';
      }),
      commit: C1,
      ref: 'refs/heads/main',
      images,
    });
    const env = (manifest.spec.template.spec.containers[0] as { env: { name: string; value?: string }[] }).env;
    expect(env.find((e) => e.name === 'TEAL_CONTEXT')?.value).toBe(
      `https://git.example.com/team/weather-app.git#${C1}:services/api`,
    );
  });

  it('kaniko: exec arguments, no shell, digest file on the termination log', () => {
    const manifest = buildJobManifest({
      app: app(C1, (x) => {
        if (x.spec.build) x.spec.build.engine = 'kaniko';
      }),
      commit: C1,
      ref: 'refs/heads/main',
      images,
    });
    const container = manifest.spec.template.spec.containers[0] as { args: string[]; command?: string[] };
    expect(container.command).toBeUndefined();
    expect(container.args).toContain(`--context=git://git.example.com/team/weather-app.git#refs/heads/main#${C1}`);
    expect(container.args).toContain(`--destination=harbor.example.com/team/weather:${C1}`);
    expect(container.args).toContain('--digest-file=/dev/termination-log');
  });
});

describe('build Jobs with the operator defaults', () => {
  it('push to the default repository with the default push Secret', () => {
    for (const engine of ['buildkit', 'kaniko'] as const) {
      const a = unnamed();
      if (a.spec.build) a.spec.build.engine = engine;
      const manifest = buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, defaults });
      const json = JSON.stringify(manifest);
      expect(json).toContain(`"TEAL_IMAGE","value":"registry.local:5000/apps/ns/weather:${C1}"`);
      expect(manifest.metadata.annotations['teal.dev/target-image']).toBe(`registry.local:5000/apps/ns/weather:${C1}`);
      expect(manifest.spec.template.spec.volumes).toContainEqual(
        expect.objectContaining({ name: 'registry', secret: expect.objectContaining({ secretName: 'platform-push' }) }),
      );
    }
  });

  it("an App's own pushSecretRef wins over the default", () => {
    const manifest = buildJobManifest({ app: app(), commit: C1, ref: 'refs/heads/main', images, defaults });
    expect(manifest.spec.template.spec.volumes).toContainEqual(
      expect.objectContaining({ name: 'registry', secret: expect.objectContaining({ secretName: 'harbor-push' }) }),
    );
  });

  it('mount no registry Secret when there is none to use', () => {
    const manifest = buildJobManifest({
      app: unnamed(),
      commit: C1,
      ref: 'refs/heads/main',
      images,
      defaults: { registry: defaults.registry },
    });
    expect(manifest.spec.template.spec.volumes.map((v) => (v as { name: string }).name)).not.toContain('registry');
  });

  it('another default registry is another image: the commit is built again', () => {
    const other = { ...defaults, registry: 'harbor.example.com/apps' };
    expect(buildSpecHash(unnamed(), other)).not.toBe(buildSpecHash(unnamed(), defaults));
    expect(buildJobName(unnamed(), C1, other)).not.toBe(buildJobName(unnamed(), C1, defaults));
    // An App that names its image does not care.
    expect(buildSpecHash(app(), other)).toBe(buildSpecHash(app(), {}));
  });
});

describe('planBuild', () => {
  it('builds nothing for an App without build.image when the operator has no default registry', () => {
    expect(planBuild({ app: unnamed(), jobs: [], pods: [], images }).actions).toEqual([]);
    expect(planBuild({ app: unnamed(), jobs: [], pods: [], images, defaults: {} }).running).toBe(false);
  });

  it('builds an App without build.image into the default repository, and deploys that by digest', () => {
    const first = planBuild({ app: unnamed(), jobs: [], pods: [], images, defaults });
    expect(first.actions.map((a) => a.kind)).toEqual(['createJob']);
    const name = buildJobName(unnamed(), C1, defaults);
    expect(first.build?.job).toBe(name);
    const done = planBuild({
      app: unnamed(),
      jobs: [job(C1, { name, buildSpec: buildSpecHash(unnamed(), defaults), outcome: 'Complete', active: 0 })],
      pods: [{ namespace: 'ns', name: 'p', resourceVersion: '1', job: name, phase: 'Succeeded', message: DIGEST }],
      images,
      defaults,
    });
    expect(done.actions).toEqual([]);
    expect(done.build).toMatchObject({ phase: 'Succeeded', image: `registry.local:5000/apps/ns/weather@${DIGEST}` });
  });

  it('creates the Job for the resolved commit, once', () => {
    const first = planBuild({ app: app(), jobs: [], pods: [], images });
    expect(first.actions.map((a) => a.kind)).toEqual(['createJob']);
    expect(first.running).toBe(true);
    const again = planBuild({ app: app(), jobs: [job(C1)], pods: [], images });
    expect(again.actions).toEqual([]);
  });

  it('builds the commit again when the build settings change, superseding the running build', () => {
    const changed = app(C1, (x) => {
      if (x.spec.build) x.spec.build.dockerfile = 'other.Dockerfile';
    });
    expect(buildJobName(changed, C1)).not.toBe(job(C1).name);
    const plan = planBuild({ app: changed, jobs: [job(C1)], pods: [], images });
    expect(plan.actions).toEqual([
      expect.objectContaining({ kind: 'deleteJob', name: job(C1).name }),
      expect.objectContaining({ kind: 'createJob' }),
    ]);
  });

  it('supersedes a running older build when a newer commit arrives', () => {
    const plan = planBuild({ app: app(C2), jobs: [job(C1)], pods: [], images });
    expect(plan.actions).toEqual([
      expect.objectContaining({ kind: 'deleteJob', name: job(C1).name }),
      expect.objectContaining({ kind: 'createJob' }),
    ]);
  });

  it('reads the digest from the termination message and deploys by digest', () => {
    const plan = planBuild({
      app: app(),
      jobs: [job(C1, { outcome: 'Complete', active: 0 })],
      pods: [pod('Succeeded', `${DIGEST}\n`)],
      images,
    });
    expect(plan.build).toMatchObject({ phase: 'Succeeded', image: `harbor.example.com/team/weather@${DIGEST}` });
    expect(plan.running).toBe(false);
  });

  it.each([
    ['no digest at all', undefined],
    ['a digest of the wrong shape', 'sha256:xyz'],
    ['a log line instead of a digest', 'pushed!'],
  ])('fails a completed build with %s', (_title, message) => {
    const plan = planBuild({
      app: app(),
      jobs: [job(C1, { outcome: 'Complete', active: 0 })],
      pods: [pod('Succeeded', message)],
      images,
    });
    expect(plan.build?.phase).toBe('Failed');
    expect(plan.failure).toMatch(/without an image digest/);
  });

  it('reports a failed build with its last log lines and does not rebuild the commit', () => {
    const logs = Array.from({ length: 30 }, (_, i) => `step ${i}`).join('\n');
    const plan = planBuild({
      app: app(),
      jobs: [job(C1, { outcome: 'Failed', active: 0, failureMessage: 'BackoffLimitExceeded' })],
      pods: [pod('Failed', logs)],
      images,
    });
    expect(plan.actions).toEqual([]);
    expect(plan.build?.phase).toBe('Failed');
    expect(plan.failure).toMatch(/^BackoffLimitExceeded: step 20\n/);
    expect(plan.failure).toMatch(/step 29$/);
  });

  it(`keeps ${BUILD_HISTORY} finished older builds and deletes the rest`, () => {
    const old = ['1', '2', '3', '4', '5'].map((d) =>
      job(d.repeat(40), { outcome: 'Complete', active: 0, createdAt: `2026-11-2${d}T00:00:00Z` }),
    );
    const plan = planBuild({ app: app(), jobs: [job(C1, { outcome: 'Complete' }), ...old], pods: [], images });
    const deleted = plan.actions
      .filter((a) => a.kind === 'deleteJob')
      .map((a) => (a.kind === 'deleteJob' ? a.name : ''));
    expect(deleted).toEqual([old[1]?.name, old[0]?.name]);
  });

  it('does nothing for an App that names a ready image', () => {
    const a = app();
    const plain = { ...a, spec: { ...a.spec, image: 'repo/app:1', source: undefined, build: undefined } };
    expect(planBuild({ app: plain, jobs: [], pods: [], images }).actions).toEqual([]);
  });
});

describe('the failure a build pod leaves', () => {
  it('is its error line when the engine printed its usage after it (kaniko failing before the build)', () => {
    const log = [
      'Enumerating objects: 14, done.',
      'Counting objects:  14% (2/14)',
      'Error: error resolving source context: authentication required',
      'Usage:',
      '  executor [flags]',
      '  executor [command]',
      '',
      'Flags:',
      '      --snapshot-mode string   Change the file attributes inspected during snapshotting (default "full")',
      'Use "executor [command] --help" for more information about a command.',
    ].join('\n');
    expect(usageError(log)).toBe('Error: error resolving source context: authentication required');
    expect(lastLines(log)).toContain('--snapshot-mode');
  });

  it("is found at the head of the log when the kubelet's tail holds the usage only (stoppedAtUsage)", () => {
    const tail = [
      '      --snapshot-mode string   Change the file attributes inspected during snapshotting (default "full")',
      '  -v, --verbosity string       Log level (trace, debug, info, warn, error, fatal, panic) (default "info")',
      '',
      'Use "executor [command] --help" for more information about a command.',
    ].join('\n');
    expect(stoppedAtUsage(tail)).toBe(true);
    const head =
      'Error: error resolving source context: x509: certificate signed by unknown authority\nUsage:\n  executor [flags]';
    expect(stoppedAtUsage(`${head}\n${tail}`)).toBe(false);
    expect(stoppedAtUsage('ERROR: process "/bin/sh -c exit 3" did not complete successfully: exit code: 3')).toBe(
      false,
    );
    const failed = planBuild({
      app: app(),
      jobs: [job(C1, { outcome: 'Failed', active: 0 })],
      pods: [pod('Failed', `${head}\n${tail}`)],
      images,
    });
    expect(failed.failure).toMatch(
      /Error: error resolving source context: x509: certificate signed by unknown authority$/,
    );
  });

  it('is the tail of the log otherwise', () => {
    const log = '#5 [2/2] RUN exit 3\nERROR: process "/bin/sh -c exit 3" did not complete successfully: exit code: 3';
    expect(usageError(log)).toBeUndefined();
  });
});

describe('credentials the engine cannot send', () => {
  const kaniko = () =>
    app(C1, (x) => {
      if (x.spec.build) x.spec.build.engine = 'kaniko';
    });

  it('kaniko with a bearerToken-only git Secret: no Job, a failed build naming the field and the fix', () => {
    const plan = planBuild({ app: kaniko(), jobs: [], pods: [], images, gitSecretKeys: ['bearerToken'] });
    expect(plan.actions).toEqual([]);
    expect(plan.build?.phase).toBe('Failed');
    expect(plan.failure).toMatch(
      /^spec\.build\.engine: kaniko sends git credentials as "username" and "password".*use engine buildkit/,
    );
  });

  it('kaniko with username and password, and BuildKit with a bearerToken, make their Job', () => {
    expect(
      planBuild({ app: kaniko(), jobs: [], pods: [], images, gitSecretKeys: ['username', 'password'] }).actions[0]
        ?.kind,
    ).toBe('createJob');
    expect(planBuild({ app: app(), jobs: [], pods: [], images, gitSecretKeys: ['bearerToken'] }).actions[0]?.kind).toBe(
      'createJob',
    );
  });
});

describe('build Jobs in the build namespace (--build-namespace)', () => {
  const away = (a: App) =>
    buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, buildNamespace: 'builds' });
  const other = () =>
    app(C1, (x) => {
      x.metadata.namespace = 'ns2';
    });

  it('run there, name their App by labels (no ownerReference crosses namespaces) and start suspended', () => {
    const manifest = away(app());
    expect(manifest.metadata.namespace).toBe('builds');
    expect(manifest.metadata.ownerReferences).toBeUndefined();
    expect(manifest.spec.suspend).toBe(true);
    expect(manifest.metadata.labels).toMatchObject({
      'teal.dev/app': 'weather',
      'teal.dev/app-namespace': 'ns',
      'teal.dev/app-uid': 'u1',
    });
    expect(manifest.spec.template.metadata.labels).toEqual(manifest.metadata.labels);
  });

  it('have names that keep two Apps of one name in two namespaces apart, within 63 characters', () => {
    expect(away(app()).metadata.name).not.toBe(away(other()).metadata.name);
    const long = app(C1, (x) => {
      x.metadata.name = `w${'x'.repeat(54)}`;
    });
    const name = away(long).metadata.name;
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it("mount the Job's own copies of the git and push Secrets, never the App namespace's names", () => {
    const manifest = away(app());
    const json = JSON.stringify(manifest.spec);
    const name = manifest.metadata.name;
    expect(json).toContain(`"${name}-git"`);
    expect(json).toContain(`"${name}-push"`);
    expect(json).not.toContain('"weather-git"');
    expect(buildSecretCopies(name, 'weather-git', 'push')).toEqual([
      { source: 'weather-git', name: `${name}-git` },
      { source: 'push', name: `${name}-push` },
    ]);
  });

  it('a Secret copy is owned by its Job, so it goes with it', () => {
    const copy = buildSecretCopyManifest(
      { source: 'weather-git', name: 'j-git' },
      { namespace: 'builds', name: 'j', uid: 'job-uid' },
      { type: 'kubernetes.io/basic-auth', data: { password: 'cw==' } },
    );
    expect(copy.metadata.namespace).toBe('builds');
    expect(copy.metadata.ownerReferences).toEqual([
      { apiVersion: 'batch/v1', kind: 'Job', name: 'j', uid: 'job-uid', controller: true, blockOwnerDeletion: true },
    ]);
    expect(copy.type).toBe('kubernetes.io/basic-auth');
  });

  it('the planner creates one there, starts it once suspended, and says where in status', () => {
    const first = planBuild({ app: app(), jobs: [], pods: [], images, buildNamespace: 'builds' });
    expect(first.actions.map((a) => a.kind)).toEqual(['createJob']);
    expect(first.build).toMatchObject({ namespace: 'builds', phase: 'Pending' });
    const name = buildJobName(app(), C1, {}, 'builds');
    const made = job(C1, { namespace: 'builds', name, appUid: 'u1', suspended: true });
    const suspended = planBuild({ app: app(), jobs: [made], pods: [], images, buildNamespace: 'builds' });
    expect(suspended.actions).toEqual([
      {
        kind: 'startJob',
        namespace: 'builds',
        name,
        uid: 'job-uid',
        appNamespace: 'ns',
        copies: [
          { source: 'weather-git', name: `${name}-git` },
          { source: 'harbor-push', name: `${name}-push` },
        ],
      },
    ]);
    expect(suspended.build).toMatchObject({ namespace: 'builds', job: name });
    const started = planBuild({
      app: app(),
      jobs: [{ ...made, suspended: false }],
      pods: [],
      images,
      buildNamespace: 'builds',
    });
    expect(started.actions).toEqual([]);
  });

  it('Jobs of an App deleted (or deleted and made again) are deleted, as GC deletes those it owns', () => {
    const old = job(C2, { namespace: 'builds', name: 'old', appUid: 'u0', outcome: 'Complete', active: 0 });
    const plan = planBuild({ app: app(), jobs: [old], pods: [], images, buildNamespace: 'builds' });
    expect(plan.actions).toContainEqual({
      kind: 'deleteJob',
      namespace: 'builds',
      name: 'old',
      why: 'its App was deleted and made again',
    });
    expect(orphanedJobs([old], undefined)).toEqual([
      { kind: 'deleteJob', namespace: 'builds', name: 'old', why: 'its App was deleted' },
    ]);
    expect(orphanedJobs([{ ...old, deleting: true }], undefined)).toEqual([]);
    // A Job beside its App is GC's to delete: it has no uid label.
    expect(orphanedJobs([job(C1)], 'u1')).toEqual([]);
  });
});
