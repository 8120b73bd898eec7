#!/usr/bin/env bash
# Installs Debian's chromium-headless-shell, the browser the dashboard's tests
# drive through playwright-core (test/support/browser.ts), when it is missing:
# no browser download from npm, the distribution's package as for every other
# tool of the tests. Quiet, and no apt at all, when it is there. Needs root (or
# passwordless sudo) only to install.
set -euo pipefail

packages=(chromium-headless-shell)
log() { echo "install-browser: $*" >&2; }

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

# Two runs on a fresh machine would both call apt-get; apt's own lock makes the
# second fail rather than wait, so they queue here instead. The lock is the one
# install-build-packages.sh takes, as both run apt-get.
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

for p in "${packages[@]}"; do installed "$p" || { log "$p is still not installed"; exit 1; }; done
log "installed in $(( $(date +%s) - start ))s: ${missing[*]}"
