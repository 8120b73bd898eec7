#!/usr/bin/env bash
# Builds the image-build toolchain of the real-build tests from Go modules and
# caches it outside the repo, keyed by version (the versions of the build Job's
# default images, test/cluster/versions.env): BuildKit's buildctl, buildkitd
# and buildctl-daemonless.sh, and kaniko's executor.
# Prints the binary folder on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
key="buildkit-${BUILDKIT_VERSION}_kaniko-${KANIKO_VERSION}"
bin="$cache_root/build-tools/$key/bin"
want=(buildctl buildkitd buildctl-daemonless.sh executor)

have_all() {
  for b in "${want[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}
if have_all; then echo "$bin"; exit 0; fi

command -v go >/dev/null || { echo "build-toolchain: Go is required (go 1.26+)" >&2; exit 1; }
log() { echo "build-toolchain: $*" >&2; }
mkdir -p "$bin"
# Two test runs on a fresh machine would build into the same folders at once and
# break each other: one builds, the others wait for it and then reuse its binaries.
exec 9>"$cache_root/build-tools/$key.lock"
if ! flock -n 9; then
  log "another build of the same toolchain is running; waiting for it"
  flock 9
fi
if have_all; then echo "$bin"; exit 0; fi
work="$cache_root/build-tools/$key/src"
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod" GOTOOLCHAIN=local

# Neither module can be `go install`ed: BuildKit's go.mod has exclude lines, and
# the module proxy refuses kaniko's version list. Both build as the main module
# of a writable copy of their downloaded source instead; their vendor folders
# are stale for that, hence -mod=mod.
module_copy() {
  local module="$1" version="$2" dest="$3" dir
  log "downloading $module@$version"
  dir="$(cd "$work" && go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  [[ -n "$dir" && -d "$dir" ]] || { log "go mod download gave no folder for $module@$version"; exit 1; }
  rm -rf "$dest"
  cp -r "$dir" "$dest"
  chmod -R u+w "$dest"
}

build_buildkit() {
  local src="$work/buildkit" pkg=github.com/moby/buildkit
  module_copy "$pkg" "$BUILDKIT_VERSION" "$src"
  # What BuildKit's own release build stamps, so --version names the release.
  local ld="-s -w -X $pkg/version.Version=$BUILDKIT_VERSION -X $pkg/version.Package=$pkg"
  log "building buildctl and buildkitd $BUILDKIT_VERSION (cold: about 200 CPU-seconds)"
  (cd "$src" && go build -ldflags "$ld" -o "$bin/buildctl" ./cmd/buildctl >&2)
  (cd "$src" && go build -tags "osusergo netgo static_build seccomp" -ldflags "$ld" \
    -o "$bin/buildkitd" ./cmd/buildkitd >&2)
  install -m 0755 "$src/examples/buildctl-daemonless/buildctl-daemonless.sh" "$bin/buildctl-daemonless.sh"
}

build_kaniko() {
  local src="$work/kaniko" pkg=github.com/GoogleContainerTools/kaniko
  module_copy "$pkg" "$KANIKO_VERSION" "$src"
  log "building kaniko's executor $KANIKO_VERSION (cold: about 170 CPU-seconds)"
  (cd "$src" && go build -ldflags "-s -w -X $pkg/pkg/version.version=$KANIKO_VERSION" \
    -o "$bin/executor" ./cmd/executor >&2)
}

start=$(date +%s)
mkdir -p "$work"
[[ -x "$bin/buildctl" && -x "$bin/buildkitd" && -x "$bin/buildctl-daemonless.sh" ]] || build_buildkit
[[ -x "$bin/executor" ]] || build_kaniko
# The copies are only build input; the module cache keeps the source.
rm -rf "$work"
have_all || { log "some binaries are missing in $bin"; exit 1; }
log "toolchain ready in $(( $(date +%s) - start ))s: $bin"
echo "$bin"
