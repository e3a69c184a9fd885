#!/usr/bin/env bash
# A CPU profile of the host under one of scripts/a2a-cpu-per-request.sh's loads, to see where an
# A2A `SendMessage` spends what an AIP rpc `start` (or `start` + `complete`) does not:
#
#   bash scripts/profile-a2a.sh BIN OUT_PREFIX a2a|rpc|pair [connections]
#
# A fresh host serving the echo partner alone, a 2 s wrk warm-up, then 6 s of perf samples
# (cpu-clock, 499 Hz, DWARF call graphs) in the middle of a 10 s wrk run (the same wrk scripts
# as the benchmark; pair: one connection per wrk thread). Writes OUT_PREFIX.perf.data,
# OUT_PREFIX.wrk (wrk's RESULT line: check wrong=0), OUT_PREFIX-threads.txt (share of samples
# per thread) and OUT_PREFIX-buckets.md (every sample in one bucket, scripts/profile-buckets.py;
# pass the target's median CPU per request as US to turn shares into µs:
# `perf script -i OUT_PREFIX.perf.data -F comm,ip,sym --no-inline | python3 scripts/profile-buckets.py US`).
# The host and the load are stopped whatever happens.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
usage="usage: $0 BIN OUT_PREFIX a2a|rpc|pair|agentapi [connections]"
[[ $# -ge 3 ]] || { echo "$usage" >&2; exit 2; }
bin=$1 out=$2 target=$3 conns=${4:-16}
command -v perf >/dev/null || { echo "perf is missing (apt-get install linux-perf)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is missing (scripts/bench.sh installs it)" >&2; exit 2; }
threads=2 args=()
case "$target" in
    a2a) path=/agents/echo/a2a script=bench/wrk/a2a-send.lua ;;
    rpc) path=/agents/echo/rpc script=bench/wrk/start.lua args=(awaiting-completion) ;;
    pair) path=/agents/echo/rpc script=bench/wrk/a2a-aip-pair.lua threads=$conns ;;
    agentapi) path=/agents/echo/process script=bench/wrk/agent-api.lua ;;
    *) echo "$usage" >&2; exit 2 ;;
esac

scratch=$(mktemp -d)
pid="" load=""
cleanup() {
    [[ -n "$load" ]] && { kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true; }
    [[ -n "$pid" ]] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Echo alone, as in the benchmark (start-up compiles every partner it is given).
mkdir "$scratch/agents" "$scratch/data"
cp -r plugins/dist/echo "$scratch/agents/echo"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --data "$scratch/data" --agents "$scratch/agents" --log error \
    --max-live-tasks 1000000000 >/dev/null 2>&1 &
pid=$!
url="http://127.0.0.1:$port$path"
for _ in $(seq 1 600); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break
    kill -0 "$pid" 2>/dev/null || { echo "aiphost exited" >&2; exit 1; }
    sleep 0.1
done
wrk --timeout 10s -t"$threads" -c"$conns" -d2s -s "$script" "$url" -- "${args[@]}" warm >/dev/null
wrk --timeout 10s -t"$threads" -c"$conns" -d10s -s "$script" "$url" -- "${args[@]}" run >"$out.wrk" &
load=$!
sleep 2
perf record -e cpu-clock -F 499 --call-graph dwarf,16384 -p "$pid" -o "$out.perf.data" -- sleep 6 2>/dev/null
wait "$load"
load=""
grep '^RESULT' "$out.wrk"
perf report -i "$out.perf.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep "%" >"$out-threads.txt"
perf script -i "$out.perf.data" -F comm,ip,sym --no-inline 2>/dev/null | python3 scripts/profile-buckets.py >"$out-buckets.md"
