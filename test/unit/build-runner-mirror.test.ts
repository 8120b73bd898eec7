// The Docker Hub mirror the build runner gives each engine (test setup, from
// outside the build Job): buildkitd's config and kaniko's variable.
import { describe, expect, it } from 'vitest';
import { buildkitdConfig, kanikoMirrorEnv } from '../cluster/build-runner/registry-mirror.ts';

describe('the Docker Hub mirror of real builds', () => {
  it('sends docker.io pulls to the mirror over plain HTTP in buildkitd.toml', () => {
    const toml = buildkitdConfig('127.0.0.1:5000');
    expect(toml).toContain('[registry."docker.io"]\n  mirrors = ["127.0.0.1:5000"]\n');
    expect(toml).toContain('[registry."127.0.0.1:5000"]\n  http = true\n');
  });

  it("is kaniko's KANIKO_REGISTRY_MIRROR, and nothing without a mirror", () => {
    expect(kanikoMirrorEnv('127.0.0.1:5000')).toEqual({ KANIKO_REGISTRY_MIRROR: '127.0.0.1:5000' });
    expect(kanikoMirrorEnv(undefined)).toEqual({});
  });
});
