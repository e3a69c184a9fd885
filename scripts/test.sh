#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine of this kind or a warm one: installs what the tests
# need (idempotently), builds the example partners once, then formatting, lints, unit and
# end-to-end tests. Works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Each step says when it began (and the run's seconds so far), so a CI log shows which step grew.
started=$SECONDS
step() { printf '\n==> [%s, %ss in] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - started))" "$*"; }

step "toolchain components (rustfmt, clippy)"
for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" || rustup component add "$component"
done

step "Python environment for the reference-SDK interop test (acps-sdk 2.1.0)"
bash scripts/python-env.sh >/dev/null

step "Python environment for the Agent API interop test (agentscope-runtime 1.1.6.post2)"
bash scripts/python-env.sh agentscope >/dev/null

step "RabbitMQ on 127.0.0.1:5672 for the group-mode tests (installs and starts it if missing)"
bash scripts/rabbitmq.sh

step "headless Chromium and chromedriver for the console's browser tests (Debian packages)"
bash scripts/chromium.sh

step "promtool for the /metrics lint test (installs Debian's prometheus package if missing)"
bash scripts/promtool.sh

step "JavaScript SDK tools (componentize-qjs, ComponentizeJS, esbuild: npm, pinned by sdk/js/package-lock.json)"
bash scripts/js-env.sh

step "example partners (wasm32-wasip2 components; installs the target if missing)"
bash scripts/build-plugins.sh

step "formatting"
cargo fmt --all -- --check
(cd plugins && cargo fmt -- --check)

step "lints"
cargo clippy --locked --workspace --all-targets -- -D warnings
(cd plugins && cargo clippy --locked --target wasm32-wasip2 -- -D warnings)

step "partner unit tests (native)"
(cd plugins && cargo test --locked)
(cd sdk/js && node --test test/)
for dir in sdk/python plugins/*/pyproject.toml; do (cd "${dir%/pyproject.toml}" && "$root/.venv/bin/python" -m pytest -q); done

# One build of everything (tests, binaries, benchmarks) with one feature set: the end-to-end tests
# run this build's binary and the benchmark smoke run its binaries, so nothing is built twice.
step "build (every crate, test and binary, once)"
cargo build --locked --workspace --all-targets
target="${CARGO_TARGET_DIR:-$root/target}"

step "host, SDK and end-to-end tests"
AIPHOST_BIN="$target/debug/aiphost" cargo test --locked --workspace

step "A2A conformance kit at level MUST against the tck partner (../shared/a2a-tck)"
AIPHOST_BIN="$target/debug/aiphost" bash scripts/a2a-tck.sh

step "benchmark smoke run (tiny workloads, debug build: checks that every benchmark runs, measures nothing)"
bash scripts/bench.sh --smoke
step "all steps passed"
