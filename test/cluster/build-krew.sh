#!/usr/bin/env bash
# Builds krew, kubectl's plugin manager, from Go modules for the standalone
# plugin's install test (test/e2e/cli-standalone.test.ts), cached outside the
# repo and keyed by version like the cluster binaries. Prints the path of the
# kubectl-krew executable on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
out="$cache_root/krew/$KREW_VERSION"
binary="$out/kubectl-krew"
if [[ -x "$binary" ]]; then echo "$binary"; exit 0; fi

command -v go >/dev/null || { echo "build-krew: Go is required (go 1.26+)" >&2; exit 1; }
log() { echo "build-krew: $*" >&2; }
mkdir -p "$out"
# Test files started at once would build into the same folder: one builds, the others wait.
exec 9>"$out.lock"
flock 9
if [[ -x "$binary" ]]; then echo "$binary"; exit 0; fi
start=$(date +%s)
log "building krew $KREW_VERSION"
CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOBIN="$out/bin" go install "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" >&2
# kubectl finds a plugin by its file name: kubectl-krew answers `kubectl krew`.
mv "$out/bin/krew" "$binary"
rmdir "$out/bin"
log "krew ready in $(( $(date +%s) - start ))s: $binary"
echo "$binary"
