#!/usr/bin/env bash
# Latency of a durable start and task changes per sync, without strace: one fresh host (echo),
# a 2 s warm-up, a 5 s wrk run; prints wrk's RESULT line (p50/p90/p99) and the host's counts.
#
#   bash scripts/latency-per-start.sh BIN [connections] [agents dir]
# (the agents dir defaults to plugins/dist; one holding only `echo` is ready in a second)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$1 conns=${2:-16} agents=${3:-plugins/dist}
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$agents" --log error --max-live-tasks 1000000000 >/dev/null 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
m() { curl -s "$url/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
wrk -t2 -c"$conns" -d2s -s bench/wrk/start.lua "$url/agents/echo/rpc" -- awaiting-completion warm >/dev/null
f0=$(m aiphost_store_flushes_total); c0=$(m aiphost_store_changes_total); i0=$(m aiphost_invocations_total)
wrk -t2 -c"$conns" -d5s -s bench/wrk/start.lua "$url/agents/echo/rpc" -- awaiting-completion run | grep RESULT
f1=$(m aiphost_store_flushes_total); c1=$(m aiphost_store_changes_total); i1=$(m aiphost_invocations_total)
echo "conns=$conns invocations=$((i1-i0)) changes=$((c1-c0)) syncs=$((f1-f0)) changes/sync=$(python3 -c "print(round(($c1-$c0)/max(1,$f1-$f0),2))")"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$data"
