// A build's CAs (spec.build.caSecretRef, --build-ca-configmap) and proxy
// (--build-http-proxy, --build-https-proxy, --build-no-proxy): the flags' rules,
// what each engine's pod gets, the checks of a CA's content, and the masking of
// a proxy's password. The real builds that trust the CAs and go through the
// proxy are test/e2e/real-build-ca.test.ts.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { buildJobManifest, buildJobName, buildSecretCopyManifest, buildSpecHash } from '../../src/build/job.ts';
import { logScrubber, podProxyCredentials } from '../../src/build/log-scrub.ts';
import {
  type BuildNetwork,
  caBundleProblem,
  caSourceProblem,
  parseConfigMapRef,
  proxyCredentials,
} from '../../src/build/network.ts';
import { type ObservedJob, planBuild } from '../../src/build/plan.ts';
import { parseConfig } from '../../src/config.ts';
import { gitApp } from '../fixtures/apps.ts';
import { selfSignedCertificate } from '../support/git-server.ts';

const C1 = 'a'.repeat(40);
const images = DEFAULT_BUILD_IMAGES;
const PROXY_PASSWORD = 'pr0xy-s3cret';
const network: BuildNetwork = {
  caConfigMap: { name: 'cluster-bundle', key: 'bundle.pem' },
  proxy: {
    http: `http://builds:${PROXY_PASSWORD}@proxy.corp:3128`,
    https: `http://builds:${PROXY_PASSWORD}@proxy.corp:3128`,
    noProxy: '.cluster.local,10.0.0.0/8',
  },
};

function app(edit: (a: ReturnType<typeof gitApp>) => void = () => {}): App {
  const input = gitApp('weather');
  input.metadata = { name: 'weather', namespace: 'ns', uid: 'u1', generation: 1 };
  edit(input);
  const result = validateApp(input);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const commit = C1;
  return {
    ...result.app,
    status: {
      source: { ref: 'refs/heads/main', commit, shortCommit: commit.slice(0, 7), revision: `main@sha1:${commit}` },
    },
  } as App;
}

const withCa = (engine: 'buildkit' | 'kaniko', key?: string) =>
  app((x) => {
    x.spec.build = { ...x.spec.build, engine, caSecretRef: { name: 'app-ca', ...(key ? { key } : {}) } };
  });

type Container = {
  command?: string[];
  args?: string[];
  env: { name: string; value?: string }[];
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
};

function podOf(manifest: ReturnType<typeof buildJobManifest>) {
  const spec = manifest.spec.template.spec;
  const container = spec.containers[0] as Container;
  const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
  return { spec, container, env, volumes: spec.volumes as { name: string; projected?: unknown }[] };
}

describe('the build CA and proxy flags', () => {
  it('--build-ca-configmap NAME[/KEY]: the key defaults to ca.crt, as Flux and cert-manager name it', () => {
    expect(parseConfigMapRef('corp-bundle')).toEqual({ name: 'corp-bundle', key: 'ca.crt' });
    expect(parseConfigMapRef('corp-bundle/bundle.pem')).toEqual({ name: 'corp-bundle', key: 'bundle.pem' });
    expect(parseConfig(['--build-ca-configmap', 'trust/root.pem'], {})).toMatchObject({
      buildCaConfigmap: { name: 'trust', key: 'root.pem' },
    });
  });

  it.each([
    ['--build-ca-configmap', 'Corp_Bundle', /--build-ca-configmap: must be NAME\[\/KEY\] with NAME a ConfigMap name/],
    ['--build-ca-configmap', 'bundle/a b', /--build-ca-configmap: must be NAME\[\/KEY\] with KEY a ConfigMap key/],
    [
      '--build-http-proxy',
      'socks5://u:pw-in-flag@proxy:1080',
      /--build-http-proxy: must be an http:\/\/ or https:\/\//,
    ],
    ['--build-https-proxy', 'http://u:pw-in-flag@proxy:3128/path', /--build-https-proxy: must be scheme:\/\//],
    ['--build-https-proxy', 'pw-in-flag', /--build-https-proxy: must be a URL/],
    ['--build-no-proxy', 'a.example;rm', /--build-no-proxy: must be a comma-separated list/],
  ])('%s %s is refused, naming the flag and never quoting the value', (flag, value, message) => {
    let error = '';
    try {
      parseConfig([flag, value], {});
    } catch (err) {
      error = (err as Error).message;
    }
    expect(error).toMatch(message);
    expect(error).not.toContain('pw-in-flag');
  });

  it('take proxies with a user and password, and a NO_PROXY list', () => {
    const config = parseConfig(
      [
        '--build-http-proxy',
        network.proxy?.http ?? '',
        '--build-https-proxy',
        'https://proxy.corp:3129',
        '--build-no-proxy',
        '.cluster.local, 10.0.0.0/8,localhost',
      ],
      {},
    );
    expect(config).toMatchObject({
      buildHttpProxy: network.proxy?.http,
      buildHttpsProxy: 'https://proxy.corp:3129',
      buildNoProxy: '.cluster.local, 10.0.0.0/8,localhost',
    });
  });
});

describe('a build that trusts private CAs', () => {
  it('buildkit: the Secret and the ConfigMap as one folder, TEAL_CA_DIR naming it for the script', () => {
    const { container, env, volumes } = podOf(
      buildJobManifest({ app: withCa('buildkit'), commit: C1, ref: 'refs/heads/main', images, network }),
    );
    expect(volumes).toContainEqual({
      name: 'teal-ca',
      projected: {
        defaultMode: 0o444,
        sources: [
          { secret: { name: 'app-ca', items: [{ key: 'ca.crt', path: 'app-ca.crt' }] } },
          { configMap: { name: 'cluster-bundle', items: [{ key: 'bundle.pem', path: 'cluster-ca.crt' }] } },
        ],
      },
    });
    expect(container.volumeMounts).toContainEqual({
      name: 'teal-ca',
      mountPath: '/home/user/.teal-ca',
      readOnly: true,
    });
    expect(env.TEAL_CA_DIR).toBe('/home/user/.teal-ca');
  });

  it('kaniko: SSL_CERT_DIR keeps the image folder of system CAs, then the build CAs', () => {
    const { container, env, volumes } = podOf(
      buildJobManifest({ app: withCa('kaniko', 'root.pem'), commit: C1, ref: 'refs/heads/main', images }),
    );
    expect(volumes).toContainEqual({
      name: 'teal-ca',
      projected: {
        defaultMode: 0o444,
        sources: [{ secret: { name: 'app-ca', items: [{ key: 'root.pem', path: 'app-ca.crt' }] } }],
      },
    });
    expect(container.volumeMounts).toContainEqual({ name: 'teal-ca', mountPath: '/kaniko/teal-ca', readOnly: true });
    expect(env.SSL_CERT_DIR).toBe('/kaniko/ssl/certs:/kaniko/teal-ca');
  });

  it('the operator ConfigMap alone is enough', () => {
    const { env, volumes } = podOf(
      buildJobManifest({
        app: app(),
        commit: C1,
        ref: 'refs/heads/main',
        images,
        network: { caConfigMap: { name: 'b', key: 'ca.crt' } },
      }),
    );
    expect(volumes.find((v) => v.name === 'teal-ca')?.projected).toEqual({
      defaultMode: 0o444,
      sources: [{ configMap: { name: 'b', items: [{ key: 'ca.crt', path: 'cluster-ca.crt' }] } }],
    });
    expect(env.TEAL_CA_DIR).toBe('/home/user/.teal-ca');
  });

  it('no CA: no volume, no variable, and the Job keeps the name it had', () => {
    const manifest = buildJobManifest({ app: app(), commit: C1, ref: 'refs/heads/main', images });
    const { env, volumes } = podOf(manifest);
    expect(volumes.map((v) => v.name)).not.toContain('teal-ca');
    expect(env.TEAL_CA_DIR).toBeUndefined();
    expect(env.SSL_CERT_DIR).toBeUndefined();
    // Another CA Secret is another build of the commit (one that failed for want of it is retried).
    expect(buildSpecHash(withCa('buildkit'))).not.toBe(
      buildSpecHash(
        app((x) => {
          x.spec.build = { ...x.spec.build, engine: 'buildkit' };
        }),
      ),
    );
  });

  it('in the build namespace: the CA Secret is copied with its CA key only, as an Opaque Secret owned by the Job', () => {
    const manifest = buildJobManifest({
      app: withCa('buildkit'),
      commit: C1,
      ref: 'refs/heads/main',
      images,
      buildNamespace: 'teal-builds',
    });
    const name = buildJobName(withCa('buildkit'), C1, {}, 'teal-builds');
    const { volumes } = podOf(manifest);
    expect(volumes.find((v) => v.name === 'teal-ca')?.projected).toEqual({
      defaultMode: 0o444,
      sources: [{ secret: { name: `${name}-ca`, items: [{ key: 'ca.crt', path: 'app-ca.crt' }] } }],
    });
    const plan = planBuild({
      app: withCa('buildkit'),
      jobs: [suspended(name)],
      pods: [],
      images,
      buildNamespace: 'teal-builds',
    });
    const start = plan.actions.find((a) => a.kind === 'startJob');
    expect(start && 'copies' in start ? start.copies : []).toContainEqual({
      source: 'app-ca',
      name: `${name}-ca`,
      keys: ['ca.crt'],
    });
    const copy = buildSecretCopyManifest(
      { source: 'app-ca', name: `${name}-ca`, keys: ['ca.crt'] },
      { namespace: 'teal-builds', name, uid: 'job-uid' },
      { type: 'kubernetes.io/tls', data: { 'ca.crt': 'Q0E=', 'tls.crt': 'Q1JU', 'tls.key': 'S0VZ' } },
    );
    expect(copy.type).toBe('Opaque');
    expect(copy.data).toEqual({ 'ca.crt': 'Q0E=' });
    expect(copy.metadata.ownerReferences[0]).toMatchObject({ kind: 'Job', name, uid: 'job-uid' });
  });

  it("the git Secret's ca.crt: trusted beside the system's and the build's CAs, by both engines, in both modes", () => {
    const gitCa = (secret: string) => ({
      secret: { name: secret, items: [{ key: 'ca.crt', path: 'git-ca.crt' }], optional: true },
    });
    const keys = ['username', 'password', 'ca.crt'];
    for (const engine of ['buildkit', 'kaniko'] as const) {
      const a = withCa(engine);
      const here = podOf(
        buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, network, gitSecretKeys: keys }),
      );
      expect(here.volumes.find((v) => v.name === 'teal-ca')?.projected, engine).toEqual({
        defaultMode: 0o444,
        sources: [
          { secret: { name: 'app-ca', items: [{ key: 'ca.crt', path: 'app-ca.crt' }] } },
          { configMap: { name: 'cluster-bundle', items: [{ key: 'bundle.pem', path: 'cluster-ca.crt' }] } },
          gitCa('weather-git'),
        ],
      });
      if (engine === 'kaniko') expect(here.env.SSL_CERT_DIR).toBe('/kaniko/ssl/certs:/kaniko/teal-ca');
      else expect(here.env.TEAL_CA_DIR).toBe('/home/user/.teal-ca');
      // In the build namespace: the git Secret's copy, which is whole, so its ca.crt is there.
      const name = buildJobName(a, C1, {}, 'teal-builds');
      const away = podOf(
        buildJobManifest({
          app: a,
          commit: C1,
          ref: 'refs/heads/main',
          images,
          buildNamespace: 'teal-builds',
          gitSecretKeys: keys,
        }),
      );
      expect(away.volumes.find((v) => v.name === 'teal-ca')?.projected, engine).toEqual({
        defaultMode: 0o444,
        sources: [
          { secret: { name: `${name}-ca`, items: [{ key: 'ca.crt', path: 'app-ca.crt' }] } },
          gitCa(`${name}-git`),
        ],
      });
      const copy = buildSecretCopyManifest(
        { source: 'weather-git', name: `${name}-git` },
        { namespace: 'teal-builds', name, uid: 'job-uid' },
        { data: { username: 'dQ==', password: 'cA==', 'ca.crt': 'Q0E=' } },
      );
      expect(copy.data['ca.crt']).toBe('Q0E=');
    }
    // The git Secret's ca.crt alone is enough, for a kaniko build too (its image's system CAs kept).
    const plain = app((x) => {
      x.spec.build = { ...x.spec.build, engine: 'kaniko' };
    });
    const alone = podOf(
      buildJobManifest({ app: plain, commit: C1, ref: 'refs/heads/main', images, gitSecretKeys: keys }),
    );
    expect(alone.volumes.find((v) => v.name === 'teal-ca')?.projected).toEqual({
      defaultMode: 0o444,
      sources: [gitCa('weather-git')],
    });
    expect(alone.env.SSL_CERT_DIR).toBe('/kaniko/ssl/certs:/kaniko/teal-ca');
    // A git Secret without ca.crt adds nothing.
    const none = podOf(
      buildJobManifest({
        app: plain,
        commit: C1,
        ref: 'refs/heads/main',
        images,
        gitSecretKeys: ['username', 'password'],
      }),
    );
    expect(none.volumes.map((v) => v.name)).not.toContain('teal-ca');
  });

  it('buildkit script: the system bundle plus the build CAs, bound over the system bundle by the buildkitd wrapper', async () => {
    const manifest = buildJobManifest({ app: withCa('buildkit'), commit: C1, ref: 'refs/heads/main', images });
    const script = (manifest.spec.template.spec.containers[0] as Container).command?.[2] ?? '';
    const home = mkdtempSync(join(tmpdir(), 'teal-buildkit-ca-'));
    try {
      const caDir = join(home, 'ca');
      const bin = join(home, 'bin');
      for (const dir of [caDir, bin]) await promisify(execFile)('mkdir', ['-p', dir]);
      writeFileSync(join(caDir, 'app-ca.crt'), 'APP CA\n');
      writeFileSync(join(caDir, 'cluster-ca.crt'), 'CLUSTER CA\n');
      writeFileSync(join(bin, 'buildctl-daemonless.sh'), '#!/bin/sh\necho "BUILDKITD=$BUILDKITD"\n', { mode: 0o755 });
      const upToBuild = script.split('\n').slice(0, -1).join('\n');
      const { stdout } = await promisify(execFile)('sh', ['-c', upToBuild], {
        env: {
          PATH: `${bin}:/usr/bin:/bin`,
          HOME: home,
          TEAL_CA_DIR: caDir,
          TEAL_CONTEXT: 'x',
          TEAL_DOCKERFILE: 'D',
          TEAL_IMAGE: 'i',
        },
      });
      expect(stdout).toContain(`BUILDKITD=${home}/.teal-buildkitd`);
      const bundle = readFileSync(join(home, '.teal-ca-bundle.crt'), 'utf8');
      const system = readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8');
      // Appended, not replaced: the system's CAs first.
      expect(bundle.startsWith(system)).toBe(true);
      expect(bundle.slice(system.length)).toBe('APP CA\nCLUSTER CA\n');
      const wrapper = readFileSync(join(home, '.teal-buildkitd'), 'utf8');
      expect(wrapper).toBe(
        '#!/bin/sh\nmount -o bind "$TEAL_CA_BUNDLE" /etc/ssl/certs/ca-certificates.crt || exit 1\nexec buildkitd "$@"\n',
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

function suspended(name: string): ObservedJob {
  return {
    namespace: 'teal-builds',
    name,
    resourceVersion: '1',
    uid: 'job-uid',
    app: 'weather',
    appNamespace: 'ns',
    appUid: 'u1',
    suspended: true,
    commit: C1,
    buildSpec: buildSpecHash(withCa('buildkit')),
    createdAt: '2026-11-27T06:00:00Z',
    active: 0,
    deleting: false,
  };
}

describe('a build behind a proxy', () => {
  it('every engine gets HTTP_PROXY, HTTPS_PROXY and NO_PROXY, upper and lower case', () => {
    for (const engine of ['buildkit', 'kaniko'] as const) {
      const a = app((x) => {
        x.spec.build = { ...x.spec.build, engine };
      });
      const { env } = podOf(buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, network }));
      for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) {
        expect(env[name], `${engine} ${name}`).toBe(network.proxy?.http);
      }
      expect(env.NO_PROXY).toBe('.cluster.local,10.0.0.0/8');
      expect(env.no_proxy).toBe('.cluster.local,10.0.0.0/8');
    }
  });

  it("kaniko passes each to the Dockerfile's RUN steps as a --build-arg read from its environment (no value in args)", () => {
    const a = app((x) => {
      x.spec.build = { ...x.spec.build, engine: 'kaniko' };
    });
    const { container } = podOf(buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, network }));
    expect(container.args?.filter((arg) => arg.startsWith('--build-arg'))).toEqual([
      '--build-arg=HTTP_PROXY',
      '--build-arg=http_proxy',
      '--build-arg=HTTPS_PROXY',
      '--build-arg=https_proxy',
      '--build-arg=NO_PROXY',
      '--build-arg=no_proxy',
    ]);
    expect(JSON.stringify(container.args)).not.toContain(PROXY_PASSWORD);
  });

  it('buildkit passes those set to the Dockerfile as build args', async () => {
    const manifest = buildJobManifest({ app: app(), commit: C1, ref: 'refs/heads/main', images, network });
    const script = (manifest.spec.template.spec.containers[0] as Container).command?.[2] ?? '';
    const bin = mkdtempSync(join(tmpdir(), 'teal-buildkit-proxy-'));
    try {
      writeFileSync(join(bin, 'buildctl-daemonless.sh'), '#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n', {
        mode: 0o755,
      });
      const { stdout } = await promisify(execFile)('sh', ['-c', script.split('\n').slice(0, -1).join('\n')], {
        env: {
          PATH: `${bin}:/usr/bin:/bin`,
          TEAL_CONTEXT: 'x',
          TEAL_DOCKERFILE: 'D',
          TEAL_IMAGE: 'i',
          HTTPS_PROXY: 'http://p:3128',
          no_proxy: '.local',
        },
      });
      const args = stdout.trim().split('\n');
      expect(args).toContain('build-arg:HTTPS_PROXY=http://p:3128');
      expect(args).toContain('build-arg:no_proxy=.local');
      expect(args.filter((arg) => arg.startsWith('build-arg:'))).toHaveLength(2);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("the proxy's password is masked in the build log and in a failed build's status", () => {
    const a = app();
    const pod = buildJobManifest({ app: a, commit: C1, ref: 'refs/heads/main', images, network }).spec.template;
    const scrub = logScrubber(podProxyCredentials(pod));
    const auth = Buffer.from(`builds:${PROXY_PASSWORD}`).toString('base64');
    const line = `RUN env: HTTPS_PROXY=${PROXY_PASSWORD} Proxy-Authorization: Basic ${auth}`;
    expect(scrub(line)).not.toContain(PROXY_PASSWORD);
    expect(scrub(line)).not.toContain(auth);
    const name = buildJobName(a, C1);
    const failed = planBuild({
      app: a,
      jobs: [{ ...suspended(name), namespace: 'ns', suspended: false, buildSpec: buildSpecHash(a), outcome: 'Failed' }],
      pods: [
        {
          namespace: 'ns',
          name: 'p',
          resourceVersion: '1',
          job: name,
          phase: 'Failed',
          message: `proxy refused: password ${PROXY_PASSWORD}`,
        },
      ],
      images,
      network,
    });
    expect(failed.failure).toContain('proxy refused');
    expect(failed.failure).not.toContain(PROXY_PASSWORD);
    expect(JSON.stringify(failed.build)).not.toContain(PROXY_PASSWORD);
  });

  it('proxyCredentials: the password and user:password of each URL, decoded', () => {
    expect(proxyCredentials(['http://u:p%40ss@h:1', 'http://h:2', undefined, 'not a url'])).toEqual(['p@ss', 'u:p@ss']);
  });
});

describe('the CA a build is to trust', () => {
  it('is one or more PEM certificates', async () => {
    const { cert } = await selfSignedCertificate();
    const other = (await selfSignedCertificate()).cert;
    expect(caBundleProblem(cert)).toBeUndefined();
    expect(caBundleProblem(`# corp roots\n${cert}\n${other}`)).toBeUndefined();
    expect(caBundleProblem('just text')).toBe('holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
    expect(caBundleProblem(`${cert}\n-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n`)).toBe(
      'certificate 2 of 2 is not a valid X.509 certificate',
    );
  });

  it.each([
    [undefined, 'spec.build.caSecretRef: Secret ns/app-ca not found'],
    [{ other: 'x' }, 'spec.build.caSecretRef: Secret ns/app-ca has no key "ca.crt"'],
    [
      { 'ca.crt': 'private-key-material-not-a-cert' },
      'spec.build.caSecretRef: Secret ns/app-ca key "ca.crt" holds no PEM certificate (-----BEGIN CERTIFICATE-----)',
    ],
  ])('a bad source is named by its field, never by its content (%j)', (data, message) => {
    const problem = caSourceProblem({
      field: 'spec.build.caSecretRef',
      kind: 'Secret',
      namespace: 'ns',
      ref: { name: 'app-ca', key: 'ca.crt' },
      data,
    });
    expect(problem).toBe(message);
  });

  it('a CA problem fails the build with its message and makes no Job', () => {
    const problem = '--build-ca-configmap: ConfigMap ns/cluster-bundle not found';
    const plan = planBuild({ app: withCa('buildkit'), jobs: [], pods: [], images, network, caProblem: problem });
    expect(plan.actions).toEqual([]);
    expect(plan.build).toMatchObject({ phase: 'Failed', message: problem });
    expect(plan.failure).toBe(problem);
  });
});
