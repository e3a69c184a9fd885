#!/usr/bin/env bash
# Makes sure `promtool` (Prometheus' own linter of the /metrics text) is installed, for the e2e
# test metrics_promtool: uses the one on PATH, else installs Debian's `prometheus` package, which
# ships it (bookworm: 2.42). Idempotent; fails loudly (the test fails without it, it does not
# skip).
set -euo pipefail

step() { printf '==> %s\n' "$*"; }

if command -v promtool >/dev/null 2>&1; then
    step "promtool already installed ($(promtool --version 2>&1 | head -1))"
    exit 0
fi

step "installing prometheus (apt-get), for promtool"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq prometheus >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq prometheus >/dev/null
}
# The package starts a Prometheus server; the tests need only its promtool.
command -v systemctl >/dev/null 2>&1 && systemctl stop prometheus >/dev/null 2>&1 || true
command -v promtool >/dev/null 2>&1 || { echo "promtool is still missing after installing prometheus" >&2; exit 1; }
step "promtool installed ($(promtool --version 2>&1 | head -1))"
