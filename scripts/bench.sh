#!/usr/bin/env bash
# The benchmark suite, one command (not part of CI except `--smoke`):
#
#   bash scripts/bench.sh            # everything, release build; results to bench-results/
#   bash scripts/bench.sh --smoke    # a tiny run of each benchmark against the debug build (CI)
#
# Installs wrk (Debian package) and the reference partner's Python environment if missing,
# builds the example partners and the binaries, then runs, one after the other on a quiet
# machine: the side-by-side rpc comparison (aiphost vs the reference partner vs a bare axum echo,
# wrk, 16 connections), the Criterion micro-benchmark of instantiate + invoke, streaming
# fan-out, group round trips through RabbitMQ, start-up with 100 published partners, memory
# with 100k tasks awaiting input, 10k idle SSE streams, 1M completed tasks, the store alone
# under the same 1M tasks' writes, and hostile neighbours (echo latency while partners loop; RSS
# after product floods), and A2A `SendMessage` against AIP rpc and the official a2a-sdk server
# (CPU per request, scripts/a2a-cpu-per-request.sh), and one echo chat turn at the Agent API and
# AIFlowy doors against AIP start and agentscope-runtime's AgentApp (scripts/chat-cpu-per-request.sh),
# and one echo tool call at the MCP door against AIP start and the Python mcp SDK's own server
# (scripts/mcp-cpu-per-request.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { printf '==> %s\n' "$*" >&2; }

smoke=false
[[ "${1:-}" == "--smoke" ]] && smoke=true

if ! command -v wrk >/dev/null; then
    step "installing wrk (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi
bash scripts/build-plugins.sh >&2
# 10k streams need 10k descriptors in the host and as many in the load generator.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

if $smoke; then
    step "benchmark smoke run (debug build, tiny workloads; the figures mean nothing)"
    # The same build as the test script's (a no-op after it): one feature set for everything.
    cargo build --workspace --all-targets >&2
    target="${CARGO_TARGET_DIR:-$root/target}"
    bench=("$target/debug/aiphost-bench" --aiphost "$target/debug/aiphost")
    "${bench[@]}" compare --seconds 1 --no-reference
    "${bench[@]}" memory completed --tasks 200 --sample-every 100
    "${bench[@]}" memory store --tasks 200 --sample-every 100
    "${bench[@]}" memory awaiting-input --tasks 50
    "${bench[@]}" memory sse --streams 20
    "${bench[@]}" memory startup --partners 2
    "${bench[@]}" stream --fanout 2 --events 100
    "${bench[@]}" neighbours --loopers 0,1 --seconds 1 --runs 1
    "${bench[@]}" flood --floods 1 --rounds 1 --runs 1 --settle 1
    "${bench[@]}" sled-values --value-kib 16 --rounds 1
    "${bench[@]}" list --tasks 20,60 --calls 3 --runs 1 --page-size 5
    # A2A SendMessage side by side (aiphost's A2A door, AIP rpc, AIP start + complete, the
    # a2a-sdk server from .venv, which the script kills whatever happens): every reply and the
    # work behind it checked; it fails on wrong work only, never on a ratio.
    bash scripts/python-env.sh >/dev/null
    bash scripts/a2a-cpu-per-request.sh --runs 1 --seconds 1 --warmup 1 --connections 2 --pair \
        "$target/debug/aiphost"
    # A chat turn at each chat door next to AIP start and agentscope-runtime's AgentApp (from
    # .venv-agentscope, killed whatever happens): every reply and the work behind it checked.
    bash scripts/python-env.sh agentscope >/dev/null
    bash scripts/chat-cpu-per-request.sh --runs 1 --seconds 1 --warmup 1 --connections 2 \
        "$target/debug/aiphost"
    # An MCP tool call next to AIP start and the mcp SDK's own server (from .venv, set up above;
    # killed whatever happens): every reply and the work behind it checked.
    bash scripts/mcp-cpu-per-request.sh --runs 1 --seconds 1 --warmup 1 --connections 2 \
        "$target/debug/aiphost"
    # A durable start with trace export off and on (a local collector that drops what it gets).
    bash scripts/tracing-cost.sh --runs 1 --seconds 1 --connections 2 "$target/debug/aiphost"
    exit 0
fi

bash scripts/python-env.sh >/dev/null
bash scripts/python-env.sh agentscope >/dev/null
bash scripts/rabbitmq.sh >&2
step "building release binaries"
cargo build --release -p aiphost -p aiphost-bench >&2
mkdir -p bench-results
out="bench-results/$(date -u +%Y-%m-%dT%H%M%SZ).md"
bench=(target/release/aiphost-bench)
{
    echo "# aiphost benchmarks, $(date -u), $(nproc) cores"
    echo
    echo "## rpc start side by side"; "${bench[@]}" compare --seconds 10
    echo; echo "## instantiate + invoke (Criterion)"
    cargo bench -p aiphost-runtime --bench invoke 2>&1 | grep -E "time:|instantiate" || true
    echo; echo "## stream fan-out"; "${bench[@]}" stream --fanout 1,100 --events 10000
    echo; echo "## group round trips"; "${bench[@]}" group --partners 1,10 --seconds 8
    echo; echo "## start-up with 100 published partners"; "${bench[@]}" memory startup --partners 100
    echo; echo "## 100k tasks awaiting input"; "${bench[@]}" memory awaiting-input --tasks 100000
    echo; echo "## 10k idle SSE streams"; "${bench[@]}" memory sse --streams 10000
    echo; echo "## 1M completed tasks"; "${bench[@]}" memory completed --tasks 1000000
    echo; echo "## the store alone, 1M completed tasks' writes"; "${bench[@]}" memory store --tasks 1000000
    echo; echo "## hostile neighbours: echo while partners loop"; "${bench[@]}" neighbours --loopers 0,4,8
    echo; echo "## hostile neighbours: RSS after product floods"; "${bench[@]}" flood --floods 8 --rounds 4
    echo; echo "## ListTasks: host CPU per call at 1k, 10k and 100k tasks"; "${bench[@]}" list --tasks 1000,10000,100000
    echo; echo "## what sled keeps of 1 MiB values, whole and in 8 KiB parts"
    "${bench[@]}" sled-values --value-kib 1024 --rounds 8
    "${bench[@]}" sled-values --value-kib 1024 --split-kib 8 --rounds 8
    echo; echo "## A2A SendMessage: the A2A door, AIP rpc, AIP start + complete, the a2a-sdk server"
    bash scripts/a2a-cpu-per-request.sh --pair target/release/aiphost
    echo; echo "## a chat turn: the Agent API and AIFlowy doors, AIP start, agentscope-runtime's AgentApp"
    bash scripts/chat-cpu-per-request.sh target/release/aiphost
    echo; echo "## an MCP tool call: the MCP door, AIP start, the mcp SDK's own server"
    bash scripts/mcp-cpu-per-request.sh target/release/aiphost
    echo; echo "## a durable start with trace export off and on"
    bash scripts/tracing-cost.sh target/release/aiphost
} 2>&1 | grep -v "listening on" | tee "$out"
step "results in $out"
