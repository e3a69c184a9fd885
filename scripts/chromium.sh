#!/usr/bin/env bash
# Makes sure the system's headless Chromium and its WebDriver (Debian's `chromium` and
# `chromium-driver`, built from one source package: installed in one apt-get call so their
# versions match) are installed, for the console's browser tests. Browsers cannot be downloaded
# here; the distribution's packages can. Idempotent; fails loudly (the browser tests must never
# be skipped silently).
set -euo pipefail

step() { printf '==> %s\n' "$*"; }

if command -v chromedriver >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1; then
    step "Chromium already installed: $(chromedriver --version | cut -d' ' -f1-2)"
    exit 0
fi

step "installing chromium and chromium-driver (apt-get)"
export DEBIAN_FRONTEND=noninteractive
packages=(chromium chromium-driver fonts-dejavu-core)
apt-get install -y -qq "${packages[@]}" >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq "${packages[@]}" >/dev/null
}
step "installed: $(chromedriver --version | cut -d' ' -f1-2)"
