#!/usr/bin/env bash
# Builds the example partners and serves them: http://127.0.0.1:8080/agents/echo and friends,
# data under ./aiphost-data. Extra arguments go to `aiphost serve` (see `--help`).
# The first run compiles the host in release mode, which takes several minutes on 2 cores.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/build-plugins.sh >&2
exec cargo run --locked --release -p aiphost -- serve --agents plugins/dist "$@"
