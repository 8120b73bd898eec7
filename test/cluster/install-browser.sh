#!/usr/bin/env bash
# Installs Debian's chromium-headless-shell, the browser the dashboard's tests
# drive through playwright-core (test/support/browser.ts), when it is missing:
# no browser download from npm, the distribution's package as for every other
# tool of the tests.
set -euo pipefail
source "$(dirname "$0")/debian-packages.sh"
ensure_debian_packages install-browser chromium-headless-shell
