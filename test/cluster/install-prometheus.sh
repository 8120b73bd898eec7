#!/usr/bin/env bash
# Puts Prometheus, from Debian's `prometheus` package, in the test cache beside
# the control-plane binaries, for the checks that query it (test/cluster/prometheus.ts).
# The package is downloaded and unpacked, not installed: installing it would add
# a system user and a service that its postinst starts (or enables, under
# systemd) on 0.0.0.0:9090, while the tests start their own on 127.0.0.1 only.
# So no root is needed, unless apt has no package lists yet (a fresh container):
# then `apt-get update` runs as root or through sudo, as for stress-ng.
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail

cache_root="${TEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/teal}"
home="$cache_root/prometheus"
link="$home/bin/prometheus"
log() { echo "install-prometheus: $*" >&2; }

if [[ -x "$link" ]]; then echo "$link"; exit 0; fi

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || {
  log "apt-get and dpkg-deb are needed (Debian or Ubuntu); elsewhere set TEAL_PROMETHEUS to a prometheus binary"
  exit 1
}
mkdir -p "$home/bin"
# Two test runs on a fresh machine would unpack into the same folder at once.
exec 9>"$home.lock"
flock 9
if [[ -x "$link" ]]; then echo "$link"; exit 0; fi

candidate() { apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: //p'; }

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; return; fi
  command -v sudo >/dev/null || { log "apt has no package lists: run apt-get update as root"; exit 1; }
  sudo "$@"
}

version="$(candidate)"
if [[ -z "$version" || "$version" == "(none)" ]]; then
  log "apt knows no prometheus package yet: apt-get update"
  as_root apt-get update -qq >&2
  version="$(candidate)"
  [[ -n "$version" && "$version" != "(none)" ]] || { log "no prometheus package in this system's apt sources"; exit 1; }
fi

start=$(date +%s)
work="$(mktemp -d "$home/.unpack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "downloading Debian's prometheus $version"
# As root, apt would hand the download to its _apt user, who cannot write to a
# private temporary folder; it falls back with a warning. Say so up front instead.
sandbox=()
[[ "$(id -u)" -eq 0 ]] && sandbox=(-o APT::Sandbox::User=root)
(cd "$work" && apt-get download -qq "${sandbox[@]}" "prometheus=$version" >&2)
dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
"$work/root/usr/bin/prometheus" --version >&2

dest="$home/$version"
rm -rf "$dest"
mkdir -p "$dest"
mv "$work/root/usr/bin/prometheus" "$dest/prometheus"
ln -sfn "$dest/prometheus" "$link"
log "prometheus $version ready in $(( $(date +%s) - start ))s: $link"
echo "$link"
