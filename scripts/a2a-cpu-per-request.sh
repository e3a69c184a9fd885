#!/usr/bin/env bash
# CPU per request of A2A `SendMessage` (issue 15 point 7), side by side in one run, runs
# interleaved so the targets share the machine's mood:
#
#   bash scripts/a2a-cpu-per-request.sh [--runs 5] [--seconds 10] [--warmup 2] [--connections 16] [--pair] [BIN]
#
# BIN: the aiphost binary (default target/release/aiphost). Three targets per run (four with
# --pair), in an order that rotates from run to run:
#
#   a2a  aiphost's A2A door: JSON-RPC `SendMessage` to /agents/echo/a2a (`A2A-Version: 1.0`, a
#        unique messageId, no taskId: a new task each time), answered with the task completed
#        and its one artifact (bench/wrk/a2a-send.lua checks every reply);
#   rpc  aiphost's AIP rpc `start` of a new task, reply once `awaiting-completion` is durable
#        (bench/wrk/start.lua, as scripts/cpu-per-start.sh);
#   sdk  the official Python A2A SDK (a2a-sdk 1.3.0, its own JSON-RPC app, in-memory task store,
#        one uvicorn worker: bench/python/a2a_echo_server.py) answering the same `SendMessage`
#        with the same completed task and artifact, checked by the same script.
#   pair (with --pair) the same work asked for over AIP: an rpc `start`, then the rpc `complete`
#        of that task (bench/wrk/a2a-aip-pair.lua, one connection per wrk thread: -tC -cC); a
#        SendMessage stores the task's result and its completion and runs the partner twice
#        (its start, then it hears the completion), as these two commands do. Per pair.
#
# How each target is measured and checked (a fresh server per target and run, warm-up, CPU from
# /proc, every reply checked, the work done counted: for aiphost its invocations, a2a 2 per
# request, the start and the partner hearing the completion, rpc and each request of a pair 1;
# for the SDK server the tasks it stored, its `ListTasks` totalSize): scripts/lib/cpu-per-request.sh.
# Prints each run, then the median with min–max per target and the ratios (of the
# medians, and per run). The checks are about correctness only; no ratio fails the script (the
# smoke run in scripts/bench.sh relies on that). Needs wrk (scripts/bench.sh installs it),
# plugins/dist and .venv (scripts/python-env.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage="usage: $0 [--runs N] [--seconds S] [--warmup S] [--connections C] [--pair] [--python PY] [BIN]"
runs=5 seconds=10 warmup=2 connections=16 bin=target/release/aiphost pair=false
python=.venv/bin/python
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --pair) pair=true; shift ;;
        -h|--help) echo "$usage"; exit 0 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) bin="$1"; shift ;;
    esac
done
command -v wrk >/dev/null || { echo "wrk is missing (scripts/bench.sh installs it)" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "no aiphost binary at $bin" >&2; exit 2; }
[[ -x "$python" ]] || { echo "no Python at $python (bash scripts/python-env.sh)" >&2; exit 2; }
threads=2; (( connections < threads )) && threads=$connections
(( runs >= 1 && seconds >= 1 && warmup >= 1 && connections >= 1 )) || { echo "$usage" >&2; exit 2; }

a2a_headers=(-H 'Content-Type: application/json' -H 'A2A-Version: 1.0')
# shellcheck source=scripts/lib/cpu-per-request.sh
source scripts/lib/cpu-per-request.sh

# The SDK server stored a task per request: its `ListTasks` totalSize.
external_count() {
    curl -s "$1" "${a2a_headers[@]}" \
        -d '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1}}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["totalSize"])'
}

start_sdk() {
    local port
    port=$(free_port)
    # The measured process is this Python interpreter: uvicorn with one worker runs in it.
    "$python" bench/python/a2a_echo_server.py "$port" >/dev/null 2>&1 &
    pid=$!
    base="http://127.0.0.1:$port"
    wait_up "$base/.well-known/agent-card.json" "the a2a-sdk server"
}

setup_target() {
    case "$1" in
        a2a) start_host; url="$base/agents/echo/a2a"; script=bench/wrk/a2a-send.lua; args=(); per_request=2 ;;
        rpc) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/start.lua; args=(awaiting-completion); per_request=1 ;;
        sdk) start_sdk; url="$base/a2a"; script=bench/wrk/a2a-send.lua; args=() ;;
        pair) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/a2a-aip-pair.lua; args=()
              per_request=1 per_unit=2 t=$connections ;;
    esac
}

targets=(a2a rpc sdk)
$pair && targets+=(pair)
echo "# $connections connections, wrk -t$threads$($pair && echo " (pair: -t$connections; its rows per pair of requests)"), ${warmup} s warm-up, ${seconds} s measured, $runs runs; aiphost: $bin"
echo
run_all
summary_table
echo "- a2a / sdk CPU per request: $(multiple a2a sdk) (medians); per run $(ratios a2a sdk 0)"
echo "- a2a / sdk requests per second: $(awk -v a="$(median_of a2a 2)" -v s="$(median_of sdk 2)" 'BEGIN { printf "%.2f", a / s }') (medians)"
echo "- a2a over rpc: $(over a2a rpc) (medians); per run $(ratios a2a rpc 1) %; target ≤ +10 %"
if $pair; then
    echo "- a2a over pair (AIP start + complete, the same work): $(over a2a pair) (medians); per run $(ratios a2a pair 1) %"
fi
finish
