#!/usr/bin/env bash
# Builds the test control plane from Go modules and caches the binaries outside
# the repo, keyed by version: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kube-proxy (Kubernetes; kube-proxy for the traffic
# tests' data plane, test/support/data-plane.ts), etcd, kwok and kwokctl; and helm, for
# the chart tests, cached apart under its own version and linked in.
# Prints the binary folder on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
key="k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
bin="$cache_root/cluster/$key/bin"
kube_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl kube-proxy)
want=("${kube_cmds[@]}" etcd kwok kwokctl)

helm_bin="$cache_root/helm/$HELM_VERSION/bin/helm"

have_helm() { [[ -x "$helm_bin" && "$(readlink "$bin/helm")" == "$helm_bin" ]]; }
have_all() {
  for b in "${want[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
  have_helm
}
if have_all; then echo "$bin"; exit 0; fi

command -v go >/dev/null || { echo "build-binaries: Go is required (go 1.26+)" >&2; exit 1; }
log() { echo "build-binaries: $*" >&2; }
mkdir -p "$bin"
# Two test runs on a fresh machine would build into the same folders at once and
# break each other: one builds, the others wait for it and then reuse its binaries.
exec 9>"$cache_root/cluster/$key.lock"
if ! flock -n 9; then
  log "another build of the same binaries is running; waiting for it"
  flock 9
fi
if have_all; then echo "$bin"; exit 0; fi
work="$cache_root/cluster/$key/src"
mkdir -p "$work"
export CGO_ENABLED=0 GOFLAGS="-trimpath -mod=mod" GOTOOLCHAIN=local

# Kubernetes: k8s.io/kubernetes pins its staging modules at v0.0.0 with replaces
# into its own tree, so it cannot be `go install`ed. A wrapper module replaces
# each of them with the published vX.Y.Z release instead. Builds the commands
# named (those missing), so a cache made before kube-proxy was added gains it
# without relinking the others.
build_kube() {
  local dir="$work/kube" gomod c t0 pkgs=()
  mkdir -p "$dir"
  log "resolving k8s.io/kubernetes@$KUBE_VERSION"
  gomod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module teal.dev/testcluster/kube"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$gomod" | awk -v v="$KUBE_STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
    echo
    for c in "${kube_cmds[@]}"; do echo "tool k8s.io/kubernetes/cmd/$c"; done
  } >"$dir/go.mod"
  log "$(grep -c '^replace' "$dir/go.mod") staging modules replaced with $KUBE_STAGING_VERSION"
  (cd "$dir" && go mod tidy >&2)
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2) -X $p.gitTreeState=clean"
  done
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  log "building Kubernetes $KUBE_VERSION: $* (cold, all five: 15-35 min on 2 cores)"
  t0=$(date +%s)
  (cd "$dir" && go build -ldflags "$ld" -o "$bin/" "${pkgs[@]}" >&2)
  log "built $* in $(( $(date +%s) - t0 ))s"
}

# etcd's server module has relative replaces too; a wrapper builds it from the
# published sibling modules.
build_etcd() {
  local dir="$work/etcd"
  mkdir -p "$dir"
  printf 'module teal.dev/testcluster/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n\ntool go.etcd.io/etcd/server/v3\n' "$ETCD_VERSION" >"$dir/go.mod"
  (cd "$dir" && go mod tidy >&2)
  log "building etcd $ETCD_VERSION"
  (cd "$dir" && go build -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3 >&2)
}

build_kwok() {
  log "installing kwok and kwokctl $KWOK_VERSION"
  GOFLAGS="-trimpath" GOBIN="$bin" go install -ldflags "-s -w" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION" >&2
}

# Helm's main module has no replace directives, so go install builds it as released.
build_helm() {
  if [[ ! -x "$helm_bin" ]]; then
    log "installing helm $HELM_VERSION"
    local major="${HELM_VERSION%%.*}"
    GOFLAGS="-trimpath" GOBIN="$(dirname "$helm_bin")" go install \
      -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/$major/cmd/helm@$HELM_VERSION" >&2
  fi
  ln -sfn "$helm_bin" "$bin/helm"
}

start=$(date +%s)
have_helm || build_helm
[[ -x "$bin/kwokctl" && -x "$bin/kwok" ]] || build_kwok
[[ -x "$bin/etcd" ]] || build_etcd
missing_kube=()
for b in "${kube_cmds[@]}"; do [[ -x "$bin/$b" ]] || missing_kube+=("$b"); done
[[ ${#missing_kube[@]} -eq 0 ]] || build_kube "${missing_kube[@]}"
have_all || { log "some binaries are missing in $bin"; exit 1; }
log "binaries ready in $(( $(date +%s) - start ))s: $bin"
echo "$bin"
