#!/usr/bin/env bash
# Installs the Debian packages that real image builds in the tests need, when
# some are missing: the registry builds push to, runc and rootlesskit (BuildKit
# rootless; kaniko inside a container), uidmap (subuid/subgid user namespaces),
# busybox-static and debootstrap (base images made locally) and apache2-utils
# (htpasswd, for the registry with auth); and nftables, for kube-proxy in the
# traffic tests' data plane (test/cluster/data-plane.ts). Quiet, and no apt at all, when
# everything is there. Needs root (or passwordless sudo) only to install.
set -euo pipefail

packages=(docker-registry runc rootlesskit uidmap busybox-static debootstrap apache2-utils nftables)
log() { echo "install-build-packages: $*" >&2; }

installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
[[ ${#missing[@]} -eq 0 ]] && exit 0

command -v apt-get >/dev/null || { log "apt-get is needed (Debian or Ubuntu) to install: ${missing[*]}"; exit 1; }

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; return; fi
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"; return; fi
  log "missing packages: ${missing[*]}"
  log "run as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
}

# Two test runs on a fresh machine would both call apt-get; apt's own lock
# makes the second fail rather than wait, so they queue here instead.
lock="${TMPDIR:-/tmp}/teal-install-build-packages.lock"
exec 9>>"$lock"
flock 9
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
[[ ${#missing[@]} -eq 0 ]] && exit 0

start=$(date +%s)
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
as_root apt-get update -qq >&2
as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

# The package's service would listen on every interface on :5000 with Debian's
# config; the tests start their own registries on 127.0.0.1 with their own
# configs (test/cluster/registry.ts), so keep the service stopped and disabled.
if [[ " ${missing[*]} " == *" docker-registry "* ]]; then
  if [[ -d /run/systemd/system ]]; then
    as_root systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
  else
    as_root service docker-registry stop >/dev/null 2>&1 || true
  fi
fi

for p in "${packages[@]}"; do installed "$p" || { log "$p is still not installed"; exit 1; }; done
log "installed in $(( $(date +%s) - start ))s: ${missing[*]}"
