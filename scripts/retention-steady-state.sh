#!/usr/bin/env bash
# Memory and disk under a steady workload with a short retention (issue 14, point 4):
#
#   bash scripts/retention-steady-state.sh [--tasks 1000000] [--retention 60s] [--minutes 15] BIN
#
# One host (echo partner) with --task-retention RETENTION and --event-retention-secs equal to it,
# and --awaiting-completion-timeout-ms 1 so that every started task completes by itself 1 ms
# after it rests (and so ends, and falls under retention). wrk starts new tasks (16 connections)
# until the host has run TASKS invocations or MINUTES pass. Every 10 s: elapsed seconds, tasks
# started so far, the host's RSS (MiB) and the data directory's size (MiB). With retention the
# last two should stop growing once the first tasks are past it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tasks=1000000 retention=60s minutes=15 bin=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --tasks) tasks="$2"; shift 2 ;;
        --retention) retention="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        *) bin="$1"; shift ;;
    esac
done
[[ -n "$bin" ]] || { echo "usage: $0 [--tasks N] [--retention 60s] [--minutes M] BIN" >&2; exit 2; }
secs=${retention%s}
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents plugins/dist --log error \
    --max-live-tasks 1000000000 --task-retention "$retention" --event-retention-secs "$secs" \
    --awaiting-completion-timeout-ms 1 >/dev/null 2>&1 &
pid=$!
trap 'kill $pid $load 2>/dev/null || true; rm -rf "$data"' EXIT
load=""
url="http://127.0.0.1:$port"
for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
metric() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
wrk -t2 -c16 -d"${minutes}m" -s bench/wrk/start.lua "$url/agents/echo/rpc" -- awaiting-completion steady >/dev/null &
load=$!
start=$(date +%s)
echo "| seconds | tasks started | RSS MiB | data dir MiB |"
echo "| ---: | ---: | ---: | ---: |"
while kill -0 "$load" 2>/dev/null; do
    sleep 10
    done_tasks=$(metric aiphost_invocations_total)
    rss=$(awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
    disk=$(du -sm "$data" | cut -f1)
    echo "| $(( $(date +%s) - start )) | $done_tasks | $rss | $disk |"
    (( done_tasks >= tasks )) && break
done
