// The executor's one table of actions: each kind logged before its write,
// written through its one call of the client, and named when it fails.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Previews } from '../../src/app/previews-schema.ts';
import type { App } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { buildJobManifest } from '../../src/build/job.ts';
import {
  ActionFailed,
  type ActionTable,
  type ClusterAction,
  Executor,
  type ExecutorClient,
  NotLeaderError,
} from '../../src/controller/executor.ts';
import { PreviewReason } from '../../src/previews/reasons.ts';
import { configMapDigest, copyName } from '../../src/rollout/config-refs.ts';
import { observeService } from '../../src/rollout/observed.ts';
import { replicaSetManifest } from '../../src/rollout/replicaset.ts';
import { ownedServiceManifest } from '../../src/rollout/service.ts';
import { gitApp } from '../fixtures/apps.ts';
import { childrenOf, ofKind, parentApp, planFor, pullRequest } from '../fixtures/previews.ts';
import { makeApp } from '../support/planner-world.ts';

/** The ConfigMap every copy is read from. */
const SOURCE = { uid: 'src-uid', data: { a: '1' } };

const target = { namespace: 'ns', name: 'web', resourceVersion: '7', finalizers: ['other'] };

/** A client that records each call by name and its arguments, and fails the calls named in `failing`. */
function recordingClient(failing: readonly string[] = []) {
  const calls: string[] = [];
  const record =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push(`${name} ${JSON.stringify(args)}`);
      if (failing.includes(name)) throw new Error(`${name} refused`);
      return name === 'createOnce' || name === 'evictPod' ? true : undefined;
    };
  const client = {
    apply: record('apply'),
    patchReplicaSet: record('patchReplicaSet'),
    patchRoute: record('patchRoute'),
    deleteReplicaSet: record('deleteReplicaSet'),
    readConfigSource: async (...args: unknown[]) => {
      calls.push(`readConfigSource ${JSON.stringify(args)}`);
      return SOURCE;
    },
    createOnce: record('createOnce'),
    deleteConfigCopy: record('deleteConfigCopy'),
    deleteJob: record('deleteJob'),
    resumeJob: record('resumeJob'),
    readOwners: async (...args: unknown[]) => {
      calls.push(`readOwners ${JSON.stringify(args)}`);
      return ['other-uid'];
    },
    evictPod: record('evictPod'),
    patchAppMetadata: record('patchAppMetadata'),
    deleteApp: record('deleteApp'),
  } as ExecutorClient;
  return { client, calls };
}

function capturingLog() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

function everyKind(): ClusterAction[] {
  const app = makeApp();
  const build = validateApp({ ...gitApp('web'), metadata: { name: 'web', namespace: 'ns', uid: 'uid-1' } });
  if (!build.ok) throw new Error(build.errors.join('\n'));
  const built: App = build.app;
  const service = ownedServiceManifest(app, 'active', 'h1');
  const observed = observeService({ metadata: { ...service.metadata, resourceVersion: '1' }, spec: service.spec });
  if (!observed) throw new Error('no observed Service');
  const owner = {
    apiVersion: 'teal.dev/v1alpha1',
    kind: 'App',
    name: 'web',
    uid: 'uid-1',
    controller: true,
    blockOwnerDeletion: true,
  };
  return [
    { kind: 'createReplicaSet', manifest: replicaSetManifest(app, { hash: 'h2', image: 'img:2' }, 2, 1) },
    { kind: 'patchReplicaSet', name: 'web-h1', replicas: 0, scaleDownAt: '2026-11-21T10:00:30Z' },
    { kind: 'deleteReplicaSet', name: 'web-h0' },
    {
      kind: 'createConfigCopy',
      copy: {
        kind: 'configmap',
        source: 'flags',
        name: copyName('uid-1', 'flags', configMapDigest(SOURCE.data, undefined)),
      },
      app: 'web',
      owner,
    },
    { kind: 'deleteConfigCopy', copyKind: 'secret', name: 'db-y', appUid: 'uid-1' },
    { kind: 'applyService', role: 'active', manifest: service },
    {
      kind: 'createJob',
      manifest: buildJobManifest({
        app: built,
        commit: 'a'.repeat(40),
        ref: 'refs/heads/main',
        images: DEFAULT_BUILD_IMAGES,
      }),
    },
    {
      kind: 'startJob',
      namespace: 'builds',
      name: 'web-1a2b3c-aaaaaaaaaa-12345',
      uid: 'job-uid',
      appNamespace: 'ns',
      copies: [{ source: 'git', name: 'web-1a2b3c-aaaaaaaaaa-12345-git' }],
    },
    { kind: 'deleteJob', namespace: 'apps', name: 'web-build-1', why: 'superseded' },
    { kind: 'deleteAnalysisJob', name: 'web-analysis-1', why: 'run ended' },
    { kind: 'addFinalizer' },
    { kind: 'removeFinalizer' },
    { kind: 'restoreService', service: observed },
    { kind: 'evictPod', name: 'web-h1-abcde', why: 'restart' },
    ...previewKinds(),
  ];
}

/** The previews planner's cluster writes: a child App made and changed, deleted by uid, and its Ingress. */
function previewKinds(): ClusterAction[] {
  const app = parentApp((p) => {
    p.exposure = { scheme: 'https', ingress: { host: 'pr-{{number}}.example.com' } } as Previews['exposure'];
  });
  const p = planFor(app, [pullRequest(3)]);
  const [create] = ofKind(p, 'createChild');
  if (!create) throw new Error('no child planned');
  const [exposure] = ofKind(planFor(app, [pullRequest(3)], { children: childrenOf(p) }), 'applyExposure');
  if (!exposure) throw new Error('no exposure planned');
  return [
    create,
    { ...create, kind: 'updateChild', why: PreviewReason.NewCommit },
    { kind: 'deleteChild', number: 3, name: 'weather-pr-3', uid: 'child-uid', why: PreviewReason.Closed },
    exposure,
  ];
}

describe('Executor', () => {
  it('logs every kind of action before its write and writes it through its one call of the client', async () => {
    const { client, calls } = recordingClient();
    const { log, lines } = capturingLog();
    await new Executor(client, () => true).run(target, everyKind(), log);
    expect(calls.map((c) => c.split(' ')[0])).toEqual([
      'apply',
      'patchReplicaSet',
      'deleteReplicaSet',
      'readConfigSource',
      'createOnce',
      'deleteConfigCopy',
      'apply',
      'apply',
      'readConfigSource',
      'createOnce',
      'resumeJob',
      'deleteJob',
      'deleteJob',
      'patchAppMetadata',
      'patchAppMetadata',
      'apply',
      'evictPod',
      'apply',
      'apply',
      'deleteApp',
      'apply',
    ]);
    expect(calls).toContain(`deleteApp ${JSON.stringify(['ns', 'weather-pr-3', 'child-uid'])}`);
    expect(calls).toContain(
      `patchReplicaSet ${JSON.stringify(['ns', 'web-h1', { spec: { replicas: 0 }, metadata: { annotations: { 'teal.dev/scale-down-at': '2026-11-21T10:00:30Z' } } }])}`,
    );
    expect(calls).toContain(
      `patchAppMetadata ${JSON.stringify(['ns', 'web', { resourceVersion: '7', finalizers: ['other', 'teal.dev/restore-services'] }])}`,
    );
    expect(calls).toContain(
      `patchAppMetadata ${JSON.stringify(['ns', 'web', { resourceVersion: '7', finalizers: ['other'] }])}`,
    );
    expect(lines.map((l) => l.msg)).toEqual([
      'creating ReplicaSet',
      'updating ReplicaSet',
      'deleting old ReplicaSet',
      'copying configuration',
      'deleting a configuration copy',
      'applying Service',
      'creating build Job',
      'copying the build Secrets and starting the build Job',
      'deleting build Job',
      'deleting analysis Job',
      "updating the App's finalizers",
      "updating the App's finalizers",
      'restoring the selector of an adopted Service',
      'evicting pod',
      'creating preview App',
      'updating preview App',
      'deleting preview App',
      'exposing preview',
    ]);
  });

  it('stops at the first write refused, naming the object, and writes nothing after it', async () => {
    const { client, calls } = recordingClient(['deleteReplicaSet']);
    const { log } = capturingLog();
    const run = new Executor(client, () => true).run(target, everyKind(), log);
    await expect(run).rejects.toThrow(
      new ActionFailed(
        everyKind()[2] as ClusterAction,
        'deleting ReplicaSet ns/web-h0',
        new Error('deleteReplicaSet refused'),
      ),
    );
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['apply', 'patchReplicaSet', 'deleteReplicaSet']);
  });

  it('writes nothing for an App it may not write for', async () => {
    const { client, calls } = recordingClient();
    const { log } = capturingLog();
    await expect(new Executor(client, () => false).run(target, everyKind(), log)).rejects.toThrow(NotLeaderError);
    expect(calls).toEqual([]);
  });

  it('has a table that does not compile without every kind, each with its words, log line and write', () => {
    // Checked by npm run typecheck, which reads this file; the expect only uses the values.
    // @ts-expect-error: evictPod has no handler
    const withoutKind: ActionTable = { ...({} as Omit<ActionTable, 'evictPod'>) };
    // @ts-expect-error: a handler without its log line
    const withoutLog: ActionTable['evictPod'] = { describe: () => '', write: async () => undefined };
    expect([withoutKind, withoutLog]).toHaveLength(2);
  });
});
