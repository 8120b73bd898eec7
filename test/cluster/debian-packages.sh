# Sourced by the install-*.sh scripts: installs the Debian packages given when
# some are missing. Quiet, and no apt at all, when all are there. Needs root
# (or passwordless sudo) only to install. Sets `installed_now` to the packages
# it installed, for a script's own steps after an install.
#   ensure_debian_packages LOG_NAME PACKAGE...

ensure_debian_packages() {
  local name=$1
  shift
  local packages=("$@") missing=() p start
  installed_now=()
  log() { echo "$name: $*" >&2; }
  installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

  for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0

  command -v apt-get >/dev/null || { log "apt-get is needed (Debian or Ubuntu) to install: ${missing[*]}"; exit 1; }
  if [[ "$(id -u)" -ne 0 ]] && ! { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; then
    log "missing packages: ${missing[*]}"
    log "run as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi

  # Two test runs on a fresh machine would both call apt-get; apt's own lock
  # makes the second fail rather than wait, so every install queues on one lock.
  exec 9>>"${TMPDIR:-/tmp}/teal-install-build-packages.lock"
  flock 9
  missing=()
  for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0

  start=$(date +%s)
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >&2
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  for p in "${packages[@]}"; do installed "$p" || { log "$p is still not installed"; exit 1; }; done
  log "installed in $(( $(date +%s) - start ))s: ${missing[*]}"
  installed_now=("${missing[@]}")
}

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo -n "$@"; fi
}
