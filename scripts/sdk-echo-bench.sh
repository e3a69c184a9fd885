#!/usr/bin/env bash
# The same echo partner written with each SDK, side by side (issue 16 item 8): echo (Rust),
# echo-py (Python, componentize-py) and echo-js (JavaScript, QuickJS).
#
#   bash scripts/sdk-echo-bench.sh [--runs 5] [--seconds 5] BIN
#
# BIN is an aiphost binary (target/release/aiphost for figures that mean something). For each
# partner, in runs interleaved so the three share the machine's mood:
#   - size: the component's bytes;
#   - build: wall time of its SDK's build of an unchanged partner, the toolchain's caches warm
#     (Rust: cargo build --release after touching src/lib.rs; Python: python -m aiphost_sdk
#     build; JS: node sdk/js/bin/aiphost-build.mjs);
#   - cold load: a host serving that bundle alone, from its start to /healthz, with an empty
#     compiled cache (the compile), then again with the cache filled (warm load);
#   - at 1 and 16 connections, wrk of rpc `start` (a new task each, answered once
#     awaiting-completion is durable): round trips per second, the median latency, and the
#     host's CPU per start. Every measured request must have done the work it claims: the host's
#     aiphost_invocations_total grows by the number of requests wrk counted, and no reply is
#     wrong (bench/wrk/start.lua checks each).
# Prints every run, then the median with min–max of each figure. Needs wrk and plugins/dist.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=5 seconds=5
bin=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        *) bin="$1"; shift ;;
    esac
done
[[ -n "$bin" ]] || { echo "usage: $0 [--runs N] [--seconds S] BIN" >&2; exit 2; }
if ! command -v wrk >/dev/null; then
    echo "==> installing wrk (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi
agents=(echo echo-py echo-js)
python="$(bash scripts/python-env.sh 2>/dev/null | tail -n 1)"
tick=$(getconf CLK_TCK)
now() { date +%s.%N; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
field() { sed -E "s/.*$1=([0-9.]+).*/\1/" <<<"$2"; }

build() {
    case "$1" in
        echo) touch plugins/echo/src/lib.rs
              cargo build --quiet --release --target wasm32-wasip2 --manifest-path plugins/Cargo.toml -p echo ;;
        echo-py) "$python" -m aiphost_sdk build plugins/echo-py --output "$scratch/echo-py.wasm" --quiet ;;
        echo-js) node sdk/js/bin/aiphost-build.mjs plugins/echo-js -o "$scratch/echo-js.wasm" >/dev/null 2>&1 ;;
    esac
}

# Serve bundle $1 alone with data dir $2 on a free port; sets pid, url, and `ready` (seconds).
serve() {
    local port started
    port=$(free_port)
    started=$(now)
    "$bin" serve --listen "127.0.0.1:$port" --data "$2" --agents "$scratch/bundles/$1" \
        --max-live-tasks 1000000000 --log error >/dev/null 2>&1 &
    pid=$!
    url="http://127.0.0.1:$port"
    for _ in $(seq 1 6000); do curl -sf -o /dev/null "$url/readyz" && break; sleep 0.05; done
    ready=$(awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
}

scratch=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
for agent in "${agents[@]}"; do
    mkdir -p "$scratch/bundles/$agent"
    cp -r "plugins/dist/$agent" "$scratch/bundles/$agent/"
done

declare -A figures
record() { figures["$1 $2"]+="$3 "; }
echo "| run | partner | size (bytes) | build (s) | cold load (s) | warm load (s) | c | round trips/s | p50 (µs) | CPU µs per start | work checked |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for run in $(seq 1 "$runs"); do
    for agent in "${agents[@]}"; do
        size=$(wc -c <"plugins/dist/$agent/partner.wasm")
        started=$(now)
        build "$agent"
        built=$(awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
        data=$(mktemp -d -p "$scratch")
        serve "$agent" "$data"
        cold=$ready
        kill "$pid"; wait "$pid" 2>/dev/null || true
        # The same data dir: the compiled cache is filled now.
        serve "$agent" "$data"
        warm=$ready
        record "$agent" size "$size"
        record "$agent" build "$built"
        record "$agent" cold "$cold"
        record "$agent" warm "$warm"
        rpc="$url/agents/$agent/rpc"
        for c in 1 16; do
            wrk -t1 -c"$c" -d1s -s bench/wrk/start.lua "$rpc" -- awaiting-completion "warm$run$c" >/dev/null
            before_inv=$(metric "$url" aiphost_invocations_total)
            before_cpu=$(cpu_ticks "$pid")
            threads=$((c > 1 ? 2 : 1))
            out=$(wrk -t"$threads" -c"$c" -d"${seconds}s" -s bench/wrk/start.lua "$rpc" -- awaiting-completion "run$run$c")
            after_cpu=$(cpu_ticks "$pid")
            after_inv=$(metric "$url" aiphost_invocations_total)
            line=$(grep '^RESULT' <<<"$out")
            requests=$(field requests "$line")
            secs=$(field seconds "$line")
            wrong=$(field wrong "$line")
            p50=$(field p50_us "$line")
            invocations=$((after_inv - before_inv))
            ok="yes"
            # wrk counts a request it cut off at the end of the run; the host may still do it.
            if [[ "$wrong" != 0 ]] || ((invocations < requests || invocations > requests + c)); then
                ok="NO ($invocations invocations for $requests requests, $wrong wrong)"
                echo "error: $agent run $run at $c connections did not do the work it claims: $ok" >&2
                exit 1
            fi
            rate=$(awk -v r="$requests" -v s="$secs" 'BEGIN { printf "%.0f", r / s }')
            us=$(awk -v t="$((after_cpu - before_cpu))" -v k="$tick" -v r="$requests" 'BEGIN { printf "%.1f", t / k * 1e6 / r }')
            record "$agent" "rate$c" "$rate"
            record "$agent" "p50$c" "$p50"
            record "$agent" "cpu$c" "$us"
            echo "| $run | $agent | $size | $built | $cold | $warm | $c | $rate | $p50 | $us | $ok |"
        done
        kill "$pid"; wait "$pid" 2>/dev/null || true
        rm -rf "$data"
    done
done

# "median (min–max)" of the numbers in $1.
summary() {
    tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '
        { v[NR] = $1 }
        END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.10g (%.10g–%.10g)", m, v[1], v[NR]
        }'
}
echo
echo "Medians of $runs runs (min–max), $bin, ${seconds} s per wrk run:"
echo
echo "| partner | size (bytes) | build (s) | cold load (s) | warm load (s) | round trips/s c=1 | p50 µs c=1 | CPU µs/start c=1 | round trips/s c=16 | p50 µs c=16 | CPU µs/start c=16 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for agent in "${agents[@]}"; do
    row="| $agent"
    for f in size build cold warm rate1 p501 cpu1 rate16 p5016 cpu16; do
        row+=" | $(summary "${figures["$agent $f"]}")"
    done
    echo "$row |"
done
