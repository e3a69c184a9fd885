#!/usr/bin/env bash
# How durable a durable start is, and how many starts share a sync: one fresh host (echo
# partner), a 2 s wrk warm-up, then a measured wrk run of rpc starts while strace counts the
# host's fdatasync/fsync/pwrite64/sync_file_range calls (all threads):
#
#   bash scripts/syncs-per-start.sh [--seconds 5] [--connections 16] [--agents DIR] BIN
#
# (--agents defaults to plugins/dist; a directory holding only `echo` is ready in a second)
# Prints wrk's result (requests, p50/p99), the invocations, task changes and committer syncs the
# host counted (its /metrics), and strace's counts. Every request must be an invocation (task ids
# are unique, bench/wrk/start.lua). strace slows the host: read latency and rate from a run
# without it (scripts/cpu-per-start.sh); the counts per request are what this shows.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=5 connections=16 bin="" agents=plugins/dist
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --agents) agents="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        *) bin="$1"; shift ;;
    esac
done
[[ -n "$bin" ]] || { echo "usage: $0 [--seconds S] [--connections C] [--agents DIR] BIN" >&2; exit 2; }
command -v strace >/dev/null || apt-get install -y -qq strace >/dev/null
data=$(mktemp -d)
trace=$(mktemp)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$agents" --log error \
    --max-live-tasks 1000000000 >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$data" "$trace"' EXIT
url="http://127.0.0.1:$port"
for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
metric() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
rpc="$url/agents/echo/rpc"
wrk -t2 -c"$connections" -d2s -s bench/wrk/start.lua "$rpc" -- awaiting-completion warm >/dev/null
i0=$(metric aiphost_invocations_total); c0=$(metric aiphost_store_changes_total); s0=$(metric aiphost_store_flushes_total)
strace -f -c -e trace=fdatasync,fsync,pwrite64,sync_file_range -p "$pid" -o "$trace" &
tracer=$!
sleep 0.5
out=$(wrk -t2 -c"$connections" -d"${seconds}s" -s bench/wrk/start.lua "$rpc" -- awaiting-completion run)
i1=$(metric aiphost_invocations_total); c1=$(metric aiphost_store_changes_total); s1=$(metric aiphost_store_flushes_total)
kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
grep '^RESULT' <<<"$out"
echo "connections=$connections invocations=$((i1 - i0)) task_changes=$((c1 - c0)) committer_syncs=$((s1 - s0))"
awk -v c=$((c1 - c0)) -v s=$((s1 - s0)) 'BEGIN { if (s > 0) printf "task changes per sync: %.2f\n", c / s }'
grep -E 'calls|fdatasync|fsync|pwrite64|sync_file_range|total' "$trace"
