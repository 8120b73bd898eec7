// The build runner's kubelet rules (test/cluster/build-runner/pod-plan.ts),
// applied to the pods of Teal's own build Jobs.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { buildJobManifest } from '../../src/build/job.ts';
import {
  ContainerConfigError,
  finishedStatus,
  imageConfig,
  LOG_TAIL_MAX_LINES,
  MESSAGE_MAX_BYTES,
  planContainer,
  type SecretData,
} from '../cluster/build-runner/pod-plan.ts';
import { imageBuildPod } from '../cluster/operator-image.ts';
import { gitApp } from '../fixtures/apps.ts';

const COMMIT = 'a'.repeat(40);

function app(engine: 'buildkit' | 'kaniko'): App {
  const input = gitApp('weather');
  input.metadata = { name: 'weather', namespace: 'ns', uid: 'u1', generation: 1 };
  if (input.spec.build) input.spec.build.engine = engine;
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.app;
}

/** The pod a build Job of this engine makes, as the API server stores it. */
function buildPod(engine: 'buildkit' | 'kaniko', gitSecretKeys = ['username', 'password']): V1Pod {
  const job = buildJobManifest({
    app: app(engine),
    commit: COMMIT,
    ref: 'refs/heads/main',
    images: DEFAULT_BUILD_IMAGES,
    gitSecretKeys,
  });
  return { metadata: { name: `${job.metadata.name}-x1`, namespace: 'ns' }, spec: job.spec.template.spec } as V1Pod;
}

const secrets: Record<string, SecretData> = {
  'weather-git': { username: Buffer.from('teal'), password: Buffer.from('a-token') },
  'harbor-push': { '.dockerconfigjson': Buffer.from('{"auths":{}}') },
};
const lookup = (name: string) => secrets[name];

describe('planContainer', () => {
  it('runs the BuildKit pod as the Job says: its sh -c script, its env, its Secret and emptyDir at their paths', () => {
    const plan = planContainer(buildPod('buildkit'), lookup);
    expect(plan.config.engine).toBe('buildkit');
    expect(plan.argv.slice(0, 2)).toEqual(['sh', '-c']);
    expect(plan.argv[2]).toContain('buildctl-daemonless.sh build "$@"');
    expect(plan.env).toMatchObject({
      HOME: '/home/user',
      XDG_RUNTIME_DIR: '/run/user/1000',
      BUILDKITD_FLAGS: '--oci-worker-no-process-sandbox',
      GIT_USERNAME: 'teal',
      GIT_PASSWORD: 'a-token',
      TEAL_IMAGE: `harbor.example.com/team/weather:${COMMIT}`,
    });
    expect(plan.mounts).toEqual([
      {
        kind: 'files',
        mountPath: '/home/user/.docker',
        readOnly: true,
        files: [{ path: 'config.json', content: Buffer.from('{"auths":{}}'), mode: 0o644 }],
      },
      { kind: 'emptyDir', mountPath: '/home/user/.local/share/buildkit' },
    ]);
    expect(plan.fallbackToLogs).toBe(true);
    expect(plan.terminationMessagePath).toBe('/dev/termination-log');
  });

  it("puts kaniko's args after the image's entrypoint, /kaniko/executor", () => {
    const plan = planContainer(buildPod('kaniko'), lookup);
    expect(plan.argv[0]).toBe('/kaniko/executor');
    expect(plan.argv).toContain('--digest-file=/dev/termination-log');
    expect(plan.env).toMatchObject({
      GIT_USERNAME: 'teal',
      GIT_PASSWORD: 'a-token',
      DOCKER_CONFIG: '/kaniko/.docker/',
    });
  });

  it('leaves out an optional Secret key that is missing, and refuses a missing Secret volume', () => {
    const noToken = planContainer(buildPod('buildkit'), (n) =>
      n === 'weather-git' ? { username: Buffer.from('teal') } : lookup(n),
    );
    expect(noToken.env.GIT_USERNAME).toBe('teal');
    expect(noToken.env.GIT_PASSWORD).toBeUndefined();
    expect(() => planContainer(buildPod('buildkit'), (n) => (n === 'harbor-push' ? undefined : lookup(n)))).toThrow(
      new ContainerConfigError('secret "harbor-push" not found'),
    );
  });

  it("lays out the build CAs' projected volume: the App's Secret key and the operator's ConfigMap key, one file each", () => {
    const input = gitApp('weather');
    input.metadata = { name: 'weather', namespace: 'ns', uid: 'u1', generation: 1 };
    if (input.spec.build) input.spec.build.caSecretRef = { name: 'corp-ca' };
    const result = validateApp(input);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const job = buildJobManifest({
      app: result.app,
      commit: COMMIT,
      ref: 'refs/heads/main',
      images: DEFAULT_BUILD_IMAGES,
      network: { caConfigMap: { name: 'bundle', key: 'root.pem' } },
    });
    const pod = { metadata: { name: 'p', namespace: 'ns' }, spec: job.spec.template.spec } as V1Pod;
    const withCa = (n: string) =>
      n === 'corp-ca' ? { 'ca.crt': Buffer.from('A'), 'tls.key': Buffer.from('K') } : lookup(n);
    const plan = planContainer(pod, withCa, (n) => (n === 'bundle' ? { 'root.pem': Buffer.from('B') } : undefined));
    expect(plan.mounts).toContainEqual({
      kind: 'files',
      mountPath: '/home/user/.teal-ca',
      readOnly: true,
      files: [
        { path: 'app-ca.crt', content: Buffer.from('A'), mode: 0o444 },
        { path: 'cluster-ca.crt', content: Buffer.from('B'), mode: 0o444 },
      ],
    });
    expect(() => planContainer(pod, withCa, () => undefined)).toThrow(
      new ContainerConfigError('configmap "bundle" not found'),
    );
  });

  it("binds the operator image's build folders as hostPaths, read-only where the pod says so", () => {
    const pod = imageBuildPod('/repo', '/cache/buildkit', '/out', { push: '127.0.0.1:5000/teal:dev' });
    const plan = planContainer(pod, () => undefined);
    expect(plan.config.engine).toBe('buildkit');
    expect(plan.env.BUILDKITD_FLAGS).toBe('--oci-worker-no-process-sandbox');
    expect(plan.argv).toContain('--output=type=image,name=127.0.0.1:5000/teal:dev,push=true');
    expect(plan.mounts).toEqual([
      { kind: 'hostPath', path: '/repo', mountPath: '/home/user/context', readOnly: true },
      { kind: 'hostPath', path: '/out', mountPath: '/home/user/out', readOnly: false },
      { kind: 'hostPath', path: '/cache/buildkit', mountPath: '/home/user/.local/share/buildkit', readOnly: false },
    ]);
    const oci = planContainer(imageBuildPod('/repo', '/c', '/out', { ociArchive: '/x/teal.oci.tar' }), () => undefined);
    expect(oci.argv).toContain('--output=type=oci,dest=/home/user/out/image.oci.tar');
  });

  it('knows the engines by image, and no other image', () => {
    expect(imageConfig(DEFAULT_BUILD_IMAGES.buildkit)?.engine).toBe('buildkit');
    expect(imageConfig('docker.io/moby/buildkit:v0.26.2-rootless@sha256:abc')?.engine).toBe('buildkit');
    expect(imageConfig('moby/buildkit:v0.26.2')).toBeUndefined();
    expect(imageConfig(DEFAULT_BUILD_IMAGES.kaniko)?.engine).toBe('kaniko');
    expect(imageConfig('busybox')).toBeUndefined();
  });
});

describe('finishedStatus', () => {
  const plan = { containerName: 'build', image: DEFAULT_BUILD_IMAGES.buildkit };
  const times = { startedAt: new Date(0), finishedAt: new Date(1000) };
  const terminated = (s: ReturnType<typeof finishedStatus>) => s.containerStatuses[0]?.state.terminated;

  it('succeeds with the termination log as the message (the digest)', () => {
    const status = finishedStatus(plan, {
      exitCode: 0,
      terminationLog: 'sha256:abc\n',
      log: 'pushing\n',
      fallbackToLogs: true,
      ...times,
    });
    expect(status.phase).toBe('Succeeded');
    expect(terminated(status)).toMatchObject({ exitCode: 0, reason: 'Completed', message: 'sha256:abc\n' });
  });

  it('fails with the log tail when the termination log is empty under FallbackToLogsOnError', () => {
    const log = `${Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n')}\nerror: failed to solve\n`;
    const status = finishedStatus(plan, { exitCode: 1, terminationLog: '', log, fallbackToLogs: true, ...times });
    expect(status.phase).toBe('Failed');
    const message = terminated(status)?.message ?? '';
    expect(terminated(status)).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(message.endsWith('error: failed to solve\n')).toBe(true);
    expect(message.split('\n').length).toBeLessThanOrEqual(LOG_TAIL_MAX_LINES + 1);
    expect(message).not.toContain('line 100\n');
  });

  it('keeps the last 4096 bytes of a long termination message, and no log without the fallback', () => {
    const long = `${'x'.repeat(5000)}end`;
    expect(
      terminated(finishedStatus(plan, { exitCode: 0, terminationLog: long, log: '', fallbackToLogs: false, ...times }))
        ?.message,
    ).toHaveLength(MESSAGE_MAX_BYTES);
    expect(
      terminated(
        finishedStatus(plan, { exitCode: 2, terminationLog: '', log: 'boom\n', fallbackToLogs: false, ...times }),
      )?.message,
    ).toBe('');
  });
});
