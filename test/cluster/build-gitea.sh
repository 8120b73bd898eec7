#!/usr/bin/env bash
# Builds Gitea, a real git hosting server (pull requests, pull refs, webhooks,
# commit statuses, comments, permissions), from Go modules for the pull-request
# preview tests (test/cluster/gitea.ts), cached outside the repo and keyed by
# version like the cluster binaries. Prints the folder holding bin/gitea and the
# runtime files it reads from disk (options/, templates/) on stdout; progress
# goes to stderr. With --cached it only prints the folder when it is built, and
# fails otherwise.
#
# It is built inside a copy of its module source, as the main module, so that
# its own go.mod (replace directives included) decides every dependency, as in
# Gitea's own builds. Its SQLite driver (mattn/go-sqlite3) needs cgo and the
# sqlite build tags; gcc compiles SQLite's C source on the first build.
# Why v1.26.0 and not a later release: v1.27.3 moved to a pure-Go SQLite driver,
# but its module names itself gitea.dev and needs gitea.dev/actions-proto-go and
# gitea.dev/sdk, which the Go module proxy answers with 403.
# The web assets (web_src, built by pnpm) are not built: the tests use the API
# and git over HTTP only. Without the bindata tag Gitea reads options/ and
# templates/ from disk: they are kept beside the binary, and the harness points
# STATIC_ROOT_PATH at this folder.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
out="$cache_root/gitea/$GITEA_VERSION"
binary="$out/bin/gitea"
module=code.gitea.io/gitea

have_all() { [[ -x "$binary" && -d "$out/options/label" && -d "$out/templates" ]]; }
if have_all; then echo "$out"; exit 0; fi
# --cached: whether it is built (exit 1 when not), never a build: `make dev` asks so, to run Gitea only when it is there.
if [[ "${1:-}" == "--cached" ]]; then exit 1; fi

command -v go >/dev/null || { echo "build-gitea: Go is required (go 1.26.4+)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "build-gitea: gcc is required (cgo builds SQLite)" >&2; exit 1; }
command -v git >/dev/null || { echo "build-gitea: git is required (Gitea runs it to serve repositories)" >&2; exit 1; }
log() { echo "build-gitea: $*" >&2; }
mkdir -p "$out"
# Test files started at once would build into the same folder: one builds, the others wait.
exec 9>"$out.lock"
if ! flock -n 9; then
  log "another build of Gitea $GITEA_VERSION is running; waiting for it"
  flock 9
fi
if have_all; then echo "$out"; exit 0; fi
export CGO_ENABLED=1 GOFLAGS="-trimpath -mod=mod" GOTOOLCHAIN=local
tags="sqlite sqlite_unlock_notify"

probe="$out/probe"
mkdir -p "$probe"
log "resolving $module@$GITEA_VERSION"
info="$(cd "$probe" && go mod download -json "$module@$GITEA_VERSION")"
field() { sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p" <<<"$info"; }
module_dir="$(field Dir)"
[[ -d "$module_dir" ]] || { log "no source folder for $module@$GITEA_VERSION: $info"; exit 1; }

# The module cache is read-only; the copy is made writable so go can write
# go.sum updates into it and a rebuild can remove it.
src="$out/src"
rm -rf "$src"
cp -r "$module_dir" "$src"
chmod -R u+w "$src"

start=$(date +%s)
log "building gitea $GITEA_VERSION (cold: about 430 CPU-seconds, and gcc compiles SQLite)"
ld="-s -w -X main.Version=${GITEA_VERSION#v} -X 'main.Tags=$tags'"
(cd "$src" && go build -tags "$tags" -ldflags "$ld" -o "$binary.tmp" . >&2)
mv "$binary.tmp" "$binary"
rm -rf "$out/options" "$out/templates"
cp -r "$src/options" "$src/templates" "$out/"
rm -rf "$src" "$probe"
have_all || { log "the binary or its options/templates are missing in $out"; exit 1; }
log "Gitea ready in $(( $(date +%s) - start ))s: $out"
echo "$out"
