#!/usr/bin/env bash
# Host CPU per durable rpc `start` (echo partner, v2, reply once `awaiting-completion` is on disk),
# side by side for one or more aiphost binaries, runs interleaved so they share the machine's mood:
#
#   bash scripts/cpu-per-start.sh [--runs 5] [--seconds 10] [--connections 16] [--echo BENCH] [--agent NAME] BIN [BIN...]
#
# --agent NAME: the partner started (default echo; echo-py and echo-js are the same echo built
# with the Python and JavaScript SDKs).
#
# A BIN may carry extra `serve` arguments after `::`, space-separated, e.g.
# `target/release/aiphost::--otlp-endpoint http://127.0.0.1:4318` (the same binary with traces
# exported: scripts/lib/otlp-sink.py is a collector that takes and drops them); with
# `--agents DIR` among them, that binary serves DIR instead of plugins/dist (the same echo partner
# built another way).
#
# --echo BENCH (target/release/aiphost-bench) adds the floor to every run: a bare axum JSON echo
# (`aiphost-bench echo-server`) under the same wrk load, measured the same way (its reply must
# carry the request's text).
# Each run: a fresh host (fresh data dir), a 2 s wrk warm-up, then a measured wrk run with the
# host's utime+stime read from /proc/PID/stat before and after. CPU per start = the difference /
# requests. Every measured request must have done the work it claims: the host's
# `aiphost_invocations_total` must grow by exactly the number of requests wrk counted (task ids
# are unique per run, bench/wrk/start.lua), and no reply may be wrong. Each run also says how
# many keys the store wrote to sled per start (`aiphost_store_keys_written_total` over the
# invocations; issue 35 asks for at most 3). Prints each run, then the
# median with min–max per binary. Needs wrk (scripts/bench.sh installs it) and plugins/dist.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=5 seconds=10 connections=16 echo="" agent=echo
bins=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        --echo) echo="$2"; shift 2 ;;
        --agent) agent="$2"; shift 2 ;;
        *) bins+=("$1"); shift ;;
    esac
done
[[ ${#bins[@]} -gt 0 ]] || { echo "usage: $0 [--runs N] [--seconds S] [--connections C] [--echo BENCH] [--agent NAME] BIN [BIN...]" >&2; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { sed -E "s/.*$1=([0-9.]+).*/\1/" <<<"$2"; }
tick=$(getconf CLK_TCK)
# wrk needs no more threads than connections.
threads=$(( connections < 2 ? connections : 2 ))

# A family's value, every series added up (`aiphost_invocations_total` has one per partner and
# outcome).
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

declare -A results
echo "| run | binary | requests/s | CPU µs per start | sled keys per start | invocations = requests |"
echo "| ---: | --- | ---: | ---: | ---: | --- |"
for run in $(seq 1 "$runs"); do
    for bin in "${bins[@]}"; do
        data=$(mktemp -d)
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        exe="${bin%%::*}"
        extra=()
        [[ "$bin" == *::* ]] && read -r -a extra <<<"${bin#*::}"
        # Lift the cap of live tasks where the binary has one (a run starts tens of thousands).
        "$exe" serve --help | grep -q -- --max-live-tasks && extra+=(--max-live-tasks 1000000000)
        # A binary may bring its own partners (`BIN::--agents DIR`: the same echo built otherwise).
        [[ " ${extra[*]} " == *" --agents "* ]] || extra+=(--agents plugins/dist)
        "$exe" serve --listen "127.0.0.1:$port" --data "$data" --log error \
            "${extra[@]}" >/dev/null 2>&1 &
        pid=$!
        url="http://127.0.0.1:$port"
        for _ in $(seq 1 600); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.1; done
        rpc="$url/agents/$agent/rpc"
        wrk -t"$threads" -c"$connections" -d2s -s bench/wrk/start.lua "$rpc" -- awaiting-completion "warm$run" >/dev/null
        before_inv=$(metric "$url" aiphost_invocations_total)
        before_keys=$(metric "$url" aiphost_store_keys_written_total)
        before_cpu=$(cpu_ticks "$pid")
        out=$(wrk -t"$threads" -c"$connections" -d"${seconds}s" -s bench/wrk/start.lua "$rpc" -- awaiting-completion "run$run")
        after_cpu=$(cpu_ticks "$pid")
        after_inv=$(metric "$url" aiphost_invocations_total)
        after_keys=$(metric "$url" aiphost_store_keys_written_total)
        kill "$pid"; wait "$pid" 2>/dev/null || true
        rm -rf "$data"
        line=$(grep '^RESULT' <<<"$out")
        requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")
        secs=$(sed -E 's/.*seconds=([0-9.]+).*/\1/' <<<"$line")
        wrong=$(sed -E 's/.*wrong=([0-9]+).*/\1/' <<<"$line")
        invocations=$((after_inv - before_inv))
        # wrk counts a request it cut off at the end of the run; the host may still have done it.
        ok="yes"
        if [[ "$wrong" != 0 ]] || (( invocations < requests || invocations > requests + connections )); then
            ok="NO ($invocations invocations, $wrong wrong)"
        fi
        rate=$(awk -v r="$requests" -v s="$secs" 'BEGIN { printf "%.0f", r / s }')
        us=$(awk -v c="$((after_cpu - before_cpu))" -v t="$tick" -v r="$requests" 'BEGIN { printf "%.1f", c / t * 1e6 / r }')
        # Keys written to sled per start (a binary from before the metric: "-").
        keys="-"
        [[ -n "$before_keys" && -n "$after_keys" ]] &&
            keys=$(awk -v k="$((after_keys - before_keys))" -v r="$invocations" 'BEGIN { printf "%.1f", k / r }')
        echo "| $run | $bin | $rate | $us | $keys | $ok |"
        results[$bin]+="$us $rate"$'\n'
    done
    if [[ -n "$echo" ]]; then
        port=$(free_port)
        "$echo" echo-server --port "$port" >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$port/rpc" && break; sleep 0.1; done
        wrk -t"$threads" -c"$connections" -d2s -s bench/wrk/start.lua "http://127.0.0.1:$port/rpc" -- hello "warm$run" >/dev/null
        before_cpu=$(cpu_ticks "$pid")
        out=$(wrk -t"$threads" -c"$connections" -d"${seconds}s" -s bench/wrk/start.lua "http://127.0.0.1:$port/rpc" -- hello "run$run")
        after_cpu=$(cpu_ticks "$pid")
        kill "$pid"; wait "$pid" 2>/dev/null || true
        line=$(grep '^RESULT' <<<"$out")
        requests=$(field requests "$line"); secs=$(field seconds "$line"); wrong=$(field wrong "$line")
        ok="yes"; [[ "$wrong" == 0 ]] || ok="NO ($wrong wrong)"
        rate=$(awk -v r="$requests" -v s="$secs" 'BEGIN { printf "%.0f", r / s }')
        us=$(awk -v c="$((after_cpu - before_cpu))" -v t="$tick" -v r="$requests" 'BEGIN { printf "%.1f", c / t * 1e6 / r }')
        echo "| $run | bare axum echo | $rate | $us | - | $ok |"
        results[echo]+="$us $rate"$'\n'
    fi
done
[[ -n "$echo" ]] && bins+=(echo)
echo
echo "| binary | CPU µs per start, median (min–max) | requests/s, median (min–max) |"
echo "| --- | ---: | ---: |"
for bin in "${bins[@]}"; do
    stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%s (%s–%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
    cpu=$(awk 'NF { print $1 }' <<<"${results[$bin]}" | stats)
    rate=$(awk 'NF { print $2 }' <<<"${results[$bin]}" | stats)
    echo "| $bin | $cpu | $rate |"
done
