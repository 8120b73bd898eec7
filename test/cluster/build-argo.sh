#!/usr/bin/env bash
# Builds the Argo Rollouts controller from Go modules for the side-by-side
# benchmark (bench/), cached outside the repo and keyed by version like the
# cluster binaries. Prints the folder holding bin/rollouts-controller and
# crds/ on stdout; progress goes to stderr.
#
# Its metrics and health listeners bind 0.0.0.0 with no flag to change that
# (controller/controller.go, listenAddr). The bench must stay on loopback, so
# the module is copied out of the module cache, that one constant is patched
# to 127.0.0.1, and a wrapper module replaces the release with the copy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
out="$cache_root/argo-rollouts/$ARGO_ROLLOUTS_VERSION"
binary="$out/bin/rollouts-controller"
module=github.com/argoproj/argo-rollouts

have_all() { [[ -x "$binary" && -f "$out/crds/rollout-crd.yaml" ]]; }
if have_all; then echo "$out"; exit 0; fi

command -v go >/dev/null || { echo "build-argo: Go is required (go 1.26+)" >&2; exit 1; }
log() { echo "build-argo: $*" >&2; }
mkdir -p "$out"
# Two bench runs on a fresh machine would build into the same folder at once:
# one builds, the others wait and then reuse its binary.
exec 9>"$out.lock"
if ! flock -n 9; then
  log "another build of Argo Rollouts $ARGO_ROLLOUTS_VERSION is running; waiting for it"
  flock 9
fi
if have_all; then echo "$out"; exit 0; fi
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod" GOTOOLCHAIN=local

wrapper="$out/src/wrapper"
patched="$out/src/argo-rollouts"
mkdir -p "$wrapper"

log "resolving $module@$ARGO_ROLLOUTS_VERSION"
info="$(cd "$wrapper" && go mod download -json "$module@$ARGO_ROLLOUTS_VERSION")"
field() { sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p" <<<"$info"; }
module_dir="$(field Dir)"
gomod="$(field GoMod)"

# The module cache is read-only; the copy is made writable so it can be patched
# and, on a rebuild, removed.
rm -rf "$patched"
cp -r "$module_dir" "$patched"
chmod -R u+w "$patched"
controller_go="$patched/controller/controller.go"
grep -q 'listenAddr *= "0.0.0.0:%d"' "$controller_go" \
  || { log "listenAddr not found in $controller_go: the loopback patch needs updating for $ARGO_ROLLOUTS_VERSION"; exit 1; }
sed -i 's/listenAddr *= "0.0.0.0:%d"/listenAddr = "127.0.0.1:%d"/' "$controller_go"

# Replace directives apply only in the main module, so the wrapper repeats
# Argo's own (its pins of k8s.io/* among them) next to the one to the copy.
{
  echo "module teal.dev/bench/argo-rollouts"
  echo
  echo "go 1.26"
  echo
  echo "require $module $ARGO_ROLLOUTS_VERSION"
  echo
  echo "replace $module => ../argo-rollouts"
  echo
  awk '/^replace \(/ {inside=1; next} inside && /^\)/ {inside=0; next}
       inside && NF {print "replace " $0} /^replace [^(]/ {print}' "$gomod"
  echo
  echo "tool $module/cmd/rollouts-controller"
} >"$wrapper/go.mod"
log "$(grep -c '^replace' "$wrapper/go.mod") replace directives in the wrapper"
(cd "$wrapper" && go mod tidy >&2)

start=$(date +%s)
log "building rollouts-controller $ARGO_ROLLOUTS_VERSION (cold: 5-15 min on 2 cores)"
ld="-s -w -X $module/utils/version.version=${ARGO_ROLLOUTS_VERSION#v}"
(cd "$wrapper" && go build -ldflags "$ld" -o "$binary.tmp" "$module/cmd/rollouts-controller" >&2)
mv "$binary.tmp" "$binary"
rm -rf "$out/crds"
mkdir -p "$out/crds"
cp "$patched"/manifests/crds/*-crd.yaml "$out/crds/"
chmod u+w "$out"/crds/*
have_all || { log "the binary or the CRDs are missing in $out"; exit 1; }
log "Argo Rollouts ready in $(( $(date +%s) - start ))s: $out"
echo "$out"
