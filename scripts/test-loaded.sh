#!/usr/bin/env bash
# `make test` while a CPU hog keeps every core busy, as on a loaded CI runner:
# the suite's waits must hold there too. The hog (Debian's stress-ng, installed
# if missing) starts once the npm packages and the control-plane binaries are
# in place, so a cold build is not slowed by it, and stops when the suite ends,
# fails or is interrupted.
#   TEAL_LOAD_CPUS   hog workers (default: every core, from nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "test-loaded: $*" >&2; }

if ! command -v stress-ng >/dev/null; then
  log "installing stress-ng (Debian package)"
  sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || { log "stress-ng is missing: apt-get install stress-ng, as root"; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng >&2
fi

make --no-print-directory deps binaries

cpus="${TEAL_LOAD_CPUS:-$(nproc)}"
# Its own last bound too (--timeout), beyond any run of the suite.
stress-ng --cpu "$cpus" --timeout 3h --quiet >/dev/null 2>&1 &
hog=$!
# Killed outright (SIGKILL), this script runs no trap: a watchdog ends the hog once it is gone.
(while kill -0 $$ 2>/dev/null; do sleep 2; done; kill "$hog" 2>/dev/null) </dev/null >/dev/null 2>&1 &
watchdog=$!
stop_hog() {
  kill "$watchdog" "$hog" 2>/dev/null || true
  wait "$hog" 2>/dev/null || true
}
trap stop_hog EXIT
log "stress-ng --cpu $cpus (pid $hog) keeps the cores busy while the suite runs"

make --no-print-directory test
