#!/usr/bin/env bash
# Installs the Debian packages that real image builds in the tests need, when
# some are missing: the registry builds push to, runc and rootlesskit (BuildKit
# rootless; kaniko inside a container), uidmap (subuid/subgid user namespaces),
# busybox-static and debootstrap (base images made locally) and apache2-utils
# (htpasswd, for the registry with auth); and nftables, for kube-proxy in the
# traffic tests' data plane (test/cluster/data-plane.ts). Quiet, and no apt at all, when
# everything is there (debian-packages.sh).
set -euo pipefail
source "$(dirname "$0")/debian-packages.sh"
ensure_debian_packages install-build-packages \
  docker-registry runc rootlesskit uidmap busybox-static debootstrap apache2-utils nftables

# The package's service would listen on every interface on :5000 with Debian's
# config; the tests start their own registries on 127.0.0.1 with their own
# configs (test/cluster/registry.ts), so keep the service stopped and disabled.
if [[ " ${installed_now[*]} " == *" docker-registry "* ]]; then
  if [[ -d /run/systemd/system ]]; then
    as_root systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
  else
    as_root service docker-registry stop >/dev/null 2>&1 || true
  fi
fi

