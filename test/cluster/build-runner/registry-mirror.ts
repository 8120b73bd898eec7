// A Docker Hub mirror for real builds, as test setup: this machine has no
// Docker Hub, so a Dockerfile's `FROM python:3.12-slim` (docker.io) is served
// by the test registry. Each engine takes the mirror the way an operator of a
// cluster would configure it, outside the build Job: BuildKit from the build
// user's buildkitd.toml, kaniko from its KANIKO_REGISTRY_MIRROR variable. The
// Job itself stays as users get it.

/** Where rootless buildkitd reads its config: $HOME/.config/buildkit (HOME=/home/user in the image). */
export const BUILDKITD_CONFIG_PATH = '/home/user/.config/buildkit/buildkitd.toml';

/**
 * buildkitd.toml sending docker.io pulls to the mirror (host:port), over plain
 * HTTP: the test registry has no TLS (BuildKit would also fall back to HTTP
 * for a loopback address, but saying so does not depend on that).
 */
export function buildkitdConfig(mirror: string): string {
  return [
    '[registry."docker.io"]',
    `  mirrors = [${JSON.stringify(mirror)}]`,
    '',
    `[registry.${JSON.stringify(mirror)}]`,
    '  http = true',
    '',
  ].join('\n');
}

/**
 * kaniko's own variable for --registry-mirror; a loopback mirror is plain HTTP
 * to its registry client without --insecure-pull.
 */
export function kanikoMirrorEnv(mirror: string | undefined): Record<string, string> {
  return mirror ? { KANIKO_REGISTRY_MIRROR: mirror } : {};
}
