#!/usr/bin/env bash
# A CPU profile of the host under a durable-start load (echo partner, v2 rpc starts, wrk):
#
#   bash scripts/profile-start.sh BIN OUT_PREFIX [connections] [agents dir, default plugins/dist] [agent, default echo]
#
# Starts a fresh host, warms it up for 2 s, then records 3 s of perf samples (cpu-clock, 499 Hz,
# DWARF call graphs) in the middle of an 8 s wrk run. Writes OUT_PREFIX.perf.data,
# OUT_PREFIX-threads.txt (share of samples per thread: tokio workers, the committer, sled's I/O
# pool, …) and OUT_PREFIX-children.txt (inclusive share per symbol, the top 100).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${1:?BIN} out=${2:?OUT_PREFIX} conns=${3:-16} agents=${4:-plugins/dist} agent=${5:-echo}
command -v perf >/dev/null || apt-get install -y -qq linux-perf >/dev/null
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$agents" --log error \
    --max-live-tasks 1000000000 >/dev/null 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
wrk -t2 -c"$conns" -d2s -s bench/wrk/start.lua "$url/agents/$agent/rpc" -- awaiting-completion warm >/dev/null
wrk -t2 -c"$conns" -d8s -s bench/wrk/start.lua "$url/agents/$agent/rpc" -- awaiting-completion run >"$out.wrk" &
load=$!
sleep 1
perf record -e cpu-clock -F 499 --call-graph dwarf,16384 -p "$pid" -o "$out.perf.data" -- sleep 3 2>/dev/null
wait "$load"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$data"
perf report -i "$out.perf.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep "%" >"$out-threads.txt"
perf report -i "$out.perf.data" --children --sort sym --stdio -g none 2>/dev/null | grep -v "^#" | grep "%" | head -100 >"$out-children.txt"
