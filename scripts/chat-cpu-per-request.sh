#!/usr/bin/env bash
# CPU per request of one echo chat turn at each chat door (issue 32 point 5), side by side in one
# run with AIP `start` and with agentscope-runtime's own server, runs interleaved so the targets
# share the machine's mood:
#
#   bash scripts/chat-cpu-per-request.sh [--runs 5] [--seconds 10] [--warmup 2] [--connections 16] [--only T,T...] [BIN]
#
# BIN: the aiphost binary (default target/release/aiphost). Targets, in an order that rotates
# from run to run:
#
#   agentapi  aiphost's Agent API door: `POST /agents/echo/process`, one user message
#             "echo <id>" in a new session <id> (the session look-up real clients cause),
#             answered as SSE until the response completed (bench/wrk/agent-api.lua checks every
#             reply: the last event the completed response, a message echoing this request);
#   aiflowy   aiphost's AIFlowy chat door: `POST /agents/echo/aiflowy/chat`, prompt
#             "echo <id>" in a new conversation <id>, until `done` (bench/wrk/aiflowy-chat.lua);
#   rpc       aiphost's AIP rpc `start` of a new task, reply once `awaiting-completion` is durable
#             (bench/wrk/start.lua, as scripts/cpu-per-start.sh);
#   agentapp  agentscope-runtime 1.1.6.post2's own `AgentApp` serving an echo agent
#             (bench/python/agentscope_echo_app.py in .venv-agentscope, one uvicorn worker, in
#             memory: no durability, no sandbox, no tenancy), checked by the same agent-api.lua;
#             its work is counted by the app itself (`GET /bench/turns`).
#
# A chat turn runs the partner twice (its start, then it hears the completion the door sends
# once the partner has a result), so the aiphost chat targets must show 2 invocations per
# request, rpc 1. How each target is measured and checked: scripts/lib/cpu-per-request.sh. Prints
# each run, the median with min–max per target, and the ratios. The checks are about correctness
# only; no ratio fails the script (the smoke run in scripts/bench.sh relies on that). Needs wrk
# (scripts/bench.sh installs it), plugins/dist and, for agentapp, .venv-agentscope
# (scripts/python-env.sh agentscope). --only measures some of the targets (default: all four).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage="usage: $0 [--runs N] [--seconds S] [--warmup S] [--connections C] [--only T,T...] [--python PY] [BIN]"
runs=5 seconds=10 warmup=2 connections=16 bin=target/release/aiphost only=agentapi,aiflowy,rpc,agentapp
python=.venv-agentscope/bin/python
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        -h|--help) echo "$usage"; exit 0 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) bin="$1"; shift ;;
    esac
done
command -v wrk >/dev/null || { echo "wrk is missing (scripts/bench.sh installs it)" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "no aiphost binary at $bin" >&2; exit 2; }
IFS=, read -r -a targets <<<"$only"
for target in "${targets[@]}"; do
    [[ " agentapi aiflowy rpc agentapp " == *" $target "* ]] || { echo "unknown target $target" >&2; exit 2; }
done
has() { [[ ",$only," == *",$1,"* ]]; }
if has agentapp; then
    [[ -x "$python" ]] || { echo "no Python at $python (bash scripts/python-env.sh agentscope)" >&2; exit 2; }
fi
threads=2; (( connections < threads )) && threads=$connections
(( runs >= 1 && seconds >= 1 && warmup >= 1 && connections >= 1 )) || { echo "$usage" >&2; exit 2; }

# shellcheck source=scripts/lib/cpu-per-request.sh
source scripts/lib/cpu-per-request.sh

# The turns the AgentApp's echo agent answered.
external_count() { curl -s "$base/bench/turns"; }

start_agentapp() {
    local port
    port=$(free_port)
    # The measured process is this Python interpreter: uvicorn with one worker runs in it.
    "$python" bench/python/agentscope_echo_app.py --port "$port" >/dev/null 2>&1 &
    pid=$!
    base="http://127.0.0.1:$port"
    wait_up "$base/bench/turns" "agentscope-runtime's AgentApp"
}

setup_target() {
    case "$1" in
        agentapi) start_host; url="$base/agents/echo/process"; script=bench/wrk/agent-api.lua; args=(); per_request=2 ;;
        aiflowy) start_host; url="$base/agents/echo/aiflowy/chat"; script=bench/wrk/aiflowy-chat.lua; args=(); per_request=2 ;;
        rpc) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/start.lua; args=(awaiting-completion); per_request=1 ;;
        agentapp) start_agentapp; url="$base/process"; script=bench/wrk/agent-api.lua; args=() ;;
    esac
}

echo "# $connections connections, wrk -t$threads, ${warmup} s warm-up, ${seconds} s measured, $runs runs; aiphost: $bin"
echo
run_all
summary_table
for door in agentapi aiflowy; do
    has "$door" || continue
    if has rpc; then
        echo "- $door over rpc: $(over "$door" rpc) (medians); per run $(ratios "$door" rpc 1) %"
    fi
    if has agentapp; then
        echo "- $door / agentapp CPU per request: $(multiple "$door" agentapp) (medians); per run $(ratios "$door" agentapp 0)"
    fi
done
finish
