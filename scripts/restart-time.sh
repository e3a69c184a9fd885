#!/usr/bin/env bash
# Restart time of a host holding many stored tasks (issue 14, point 6):
#
#   bash scripts/restart-time.sh [--tasks 1000000] [--restarts 5] [--load-seconds 2] [--data DIR]
#       [--agents DIR] BIN
#
# Fill: one host (echo partner, retention off, --awaiting-completion-timeout-ms 1 so that every
# started task completes by itself and stays stored) takes new tasks from wrk (16 connections)
# until it has taken TASKS start commands; then it is killed with SIGKILL under that load (a
# crash, not a clean stop). Then RESTARTS times: start the host on the same data, time from the
# exec to the first answer of /healthz (the listener opens only once the store is recovered and
# the engine has re-armed its timers and found its running tasks), check that the first task
# stored (started before the fill) is there and completed, put it under load again for
# LOAD_SECONDS (default 2) and SIGKILL it before that load ends, so every restart recovers from a crash under load.
# Prints each restart, then the median with min-max, the data directory's size and the host's RSS
# after the last restart. --data DIR keeps the data in DIR (made if missing; filled only if it
# holds no store yet), so one fill serves several runs. --agents DIR (default plugins/dist): the
# partners served; a directory holding only `echo` makes every start-up compile nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tasks=1000000 restarts=5 bin="" data="" keep="" load_seconds=2 agents=plugins/dist
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tasks) tasks="$2"; shift 2 ;;
        --restarts) restarts="$2"; shift 2 ;;
        --data) data="$2"; keep=1; shift 2 ;;
        --load-seconds) load_seconds="$2"; shift 2 ;;
        --agents) agents="$2"; shift 2 ;;
        *) bin="$1"; shift ;;
    esac
done
[[ -n "$bin" ]] || { echo "usage: $0 [--tasks N] [--restarts R] BIN" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is missing (scripts/bench.sh installs it)" >&2; exit 2; }
[[ -n "$data" ]] || data=$(mktemp -d)
mkdir -p "$data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
pid="" load=""
trap 'kill -9 $pid $load 2>/dev/null || true; [[ -n "$keep" ]] || rm -rf "$data"' EXIT
serve() {
    "$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$agents" --log error \
        --max-live-tasks 1000000000 --task-retention off --awaiting-completion-timeout-ms 1 \
        >/dev/null 2>&1 &
    pid=$!
}
metric() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
now_ms() { date +%s%3N; }

probe() {
    echo '{"jsonrpc":"2.0","method":"rpc","id":"probe","params":{"command":{"type":"task-command","id":"m-'"$1"'","sentAt":"2026-01-01T00:00:00+00:00","senderRole":"leader","senderId":"1.2.156.3088.1.1.BENCH.LEADER.1.0000","command":"'"$1"'","dataItems":[{"type":"text","text":"hello"}],"taskId":"restart-probe","sessionId":"bench"}}}'
}
if [[ -e "$data/filled" ]]; then
    taken=$(cat "$data/filled")
else
    serve
    for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
    # The task checked after each restart: the first one stored.
    curl -s -H 'Content-Type: application/json' -d "$(probe start)" "$url/agents/echo/rpc" >/dev/null
    wrk -t2 -c16 -d60m -s bench/wrk/start.lua "$url/agents/echo/rpc" -- awaiting-completion fill >/dev/null &
    load=$!
    started=$(date +%s)
    while :; do
        sleep 5
        taken=$(metric aiphost_commands_total)
        echo "fill: ${taken:-0} tasks after $(( $(date +%s) - started )) s" >&2
        (( ${taken:-0} >= tasks )) && break
    done
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    kill "$load"; wait "$load" 2>/dev/null || true
    echo "$taken" >"$data/filled"
fi
echo "stored: $taken tasks (and more started by the loads between restarts), data dir $(du -sm "$data" | cut -f1) MiB"

echo "| restart | ms to ready | first task |"
echo "| ---: | ---: | --- |"
times=()
for r in $(seq 1 "$restarts"); do
    t0=$(now_ms)
    serve
    until curl -sf -o /dev/null "$url/readyz"; do
        kill -0 "$pid" 2>/dev/null || { echo "the host died while starting" >&2; exit 1; }
        sleep 0.01
    done
    ms=$(( $(now_ms) - t0 ))
    reply=$(curl -s -H 'Content-Type: application/json' -d "$(probe get)" "$url/agents/echo/rpc")
    state=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["status"]["state"])' <<<"$reply" 2>/dev/null || true)
    [[ "$state" == completed ]] || { echo "restart $r: the first task reads '$state', not completed: ${reply:0:300}" >&2; exit 1; }
    echo "| $r | $ms | $state |"
    times+=("$ms")
    rss=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
    wrk -t2 -c16 -d"$(( load_seconds + 1 ))s" -s bench/wrk/start.lua "$url/agents/echo/rpc" -- awaiting-completion "crash$r-$t0" >/dev/null &
    load=$!
    sleep "$load_seconds"
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    wait "$load" 2>/dev/null || true
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo
echo "restart to ready: median ${sorted[$(( ${#sorted[@]} / 2 ))]} ms (${sorted[0]}-${sorted[-1]}), $taken stored tasks, host RSS after the last restart $rss MiB"
