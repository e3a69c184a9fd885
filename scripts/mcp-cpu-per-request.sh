#!/usr/bin/env bash
# CPU per tool call at the MCP door (issue 33 point 9), side by side in one run with AIP `start`
# and with the official Python MCP SDK's own server, runs interleaved so the targets share the
# machine's mood:
#
#   bash scripts/mcp-cpu-per-request.sh [--runs 5] [--seconds 10] [--warmup 2] [--connections 16] [--only T,T...] [BIN]
#
# BIN: the aiphost binary (default target/release/aiphost). Targets, in an order that rotates
# from run to run:
#
#   mcp     aiphost's MCP door: `POST /agents/echo/mcp`, a 2026-07-28 stateless `tools/call` of
#           the echo partner's tool `echo` (its skill's id) with `{"text":"echo <id>"}` and the
#           request's `_meta` (protocolVersion, clientInfo, clientCapabilities `{}`), and the
#           headers rmcp checks (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Accept, Content-Type);
#           answered with one JSON body once the task completed (bench/wrk/mcp-call.lua checks
#           every reply: 200, JSON, this request's id, no error, the first content block the text
#           "echo <id>");
#   rpc     aiphost's AIP rpc `start` of a new task, reply once `awaiting-completion` is durable
#           (bench/wrk/start.lua, as scripts/cpu-per-start.sh);
#   mcpref  the Python MCP SDK (mcp 2.3.0) serving one `echo` tool over its own Streamable HTTP
#           app, stateless, JSON replies (bench/python/mcp_echo_server.py in .venv, one uvicorn
#           worker, in memory: no durability, no sandbox, no tenancy), checked by the same
#           mcp-call.lua; its work is counted by the server itself (`GET /bench/calls`).
#
# A tool call runs the partner twice (its start, then it hears the completion the door sends
# once the partner has a result), so the mcp target must show 2 invocations per request, rpc 1;
# a call wrk cuts off when a run ends is cancelled by the door (its connection closed), so up to
# two commands (start, cancel) per connection more than the requests are allowed there.
# How each target is measured and checked: scripts/lib/cpu-per-request.sh. Prints each run, the
# median with min–max per target, and the ratios. The checks are about correctness only; no
# ratio fails the script (the smoke run in scripts/bench.sh relies on that). Needs wrk
# (scripts/bench.sh installs it), plugins/dist and, for mcpref, .venv (scripts/python-env.sh).
# --only measures some of the targets (default: all three).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage="usage: $0 [--runs N] [--seconds S] [--warmup S] [--connections C] [--only T,T...] [--python PY] [BIN]"
runs=5 seconds=10 warmup=2 connections=16 bin=target/release/aiphost only=mcp,rpc,mcpref
python=.venv/bin/python
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
    [[ " mcp rpc mcpref " == *" $target "* ]] || { echo "unknown target $target" >&2; exit 2; }
done
has() { [[ ",$only," == *",$1,"* ]]; }
if has mcpref; then
    [[ -x "$python" ]] || { echo "no Python at $python (bash scripts/python-env.sh)" >&2; exit 2; }
fi
threads=2; (( connections < threads )) && threads=$connections
(( runs >= 1 && seconds >= 1 && warmup >= 1 && connections >= 1 )) || { echo "$usage" >&2; exit 2; }

# The echo partner's one tool: its skill's id (plugins/dist/echo/partner.toml), which fits the
# tool-name rule as it is.
tool=echo

# shellcheck source=scripts/lib/cpu-per-request.sh
source scripts/lib/cpu-per-request.sh

# The calls the SDK server's echo tool answered.
external_count() { curl -s "$base/bench/calls"; }

start_mcpref() {
    local port
    port=$(free_port)
    # The measured process is this Python interpreter: uvicorn with one worker runs in it.
    "$python" bench/python/mcp_echo_server.py "$port" >/dev/null 2>&1 &
    pid=$!
    base="http://127.0.0.1:$port"
    wait_up "$base/bench/calls" "the mcp SDK server"
}

setup_target() {
    case "$1" in
        # A call wrk cuts off at the end of a run is cancelled when its connection closes (the
        # spec's MUST at 2026-07-28): its start and that cancel, two commands.
        mcp) start_host; url="$base/agents/echo/mcp"; script=bench/wrk/mcp-call.lua; args=("$tool")
             per_request=2 cut_commands=2 ;;
        rpc) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/start.lua; args=(awaiting-completion); per_request=1 ;;
        mcpref) start_mcpref; url="$base/mcp"; script=bench/wrk/mcp-call.lua; args=("$tool") ;;
    esac
}

echo "# $connections connections, wrk -t$threads, ${warmup} s warm-up, ${seconds} s measured, $runs runs; aiphost: $bin"
echo
run_all
summary_table
if has mcp && has rpc; then
    echo "- mcp over rpc: $(over mcp rpc) (medians); per run $(ratios mcp rpc 1) %"
fi
if has mcp && has mcpref; then
    echo "- mcp / mcpref CPU per request: $(multiple mcp mcpref) (medians); per run $(ratios mcp mcpref 0)"
    echo "- mcp / mcpref requests per second: $(awk -v a="$(median_of mcp 2)" -v s="$(median_of mcpref 2)" 'BEGIN { printf "%.2f", a / s }') (medians)"
fi
finish
