#!/usr/bin/env bash
# CPU per request of A2A `SendMessage` (issue 15 point 7), side by side in one run, runs
# interleaved so the targets share the machine's mood:
#
#   bash scripts/a2a-cpu-per-request.sh [--runs 5] [--seconds 10] [--warmup 2] [--connections 16] [--pair] [BIN]
#
# BIN: the aiphost binary (default target/release/aiphost). Three targets per run (four with
# --pair), in an order that rotates from run to run:
#
#   a2a  aiphost's A2A door: JSON-RPC `SendMessage` to /agents/echo/a2a (`A2A-Version: 1.0`, a
#        unique messageId, no taskId: a new task each time), answered with the task completed
#        and its one artifact (bench/wrk/a2a-send.lua checks every reply);
#   rpc  aiphost's AIP rpc `start` of a new task, reply once `awaiting-completion` is durable
#        (bench/wrk/start.lua, as scripts/cpu-per-start.sh);
#   sdk  the official Python A2A SDK (a2a-sdk 1.3.0, its own JSON-RPC app, in-memory task store,
#        one uvicorn worker: bench/python/a2a_echo_server.py) answering the same `SendMessage`
#        with the same completed task and artifact, checked by the same script.
#   pair (with --pair) the same work asked for over AIP: an rpc `start`, then the rpc `complete`
#        of that task (bench/wrk/a2a-aip-pair.lua, one connection per wrk thread: -tC -cC); a
#        SendMessage stores the task's result and its completion and runs the partner twice
#        (its start, then it hears the completion), as these two commands do. Per pair.
#
# Each target, each run: a fresh server (for aiphost: a fresh data dir, the echo partner alone),
# a wrk warm-up, a short settle, then a measured wrk run (-t2 -cC) with the server's
# utime+stime read from /proc/PID/stat before and after. CPU per request = the difference /
# requests. Checks, else the run's row says NO and the script exits 1 at the end: no wrong
# reply, no socket error; aiphost did the work: `aiphost_commands_total` grew by the requests
# wrk counted and `aiphost_invocations_total` by as many times the invocations one request
# needs (a2a: 2, the start and the partner hearing the completion; rpc and each request of a
# pair: 1); the SDK server stored a task per request (its `ListTasks` totalSize). wrk counts a
# request it cut off at the end of a run while the server may still have done it: up to C more
# are allowed. Prints each run, then the median with min–max per target and the ratios (of the
# medians, and per run). The checks are about correctness only; no ratio fails the script (the
# smoke run in scripts/bench.sh relies on that). Needs wrk (scripts/bench.sh installs it),
# plugins/dist and .venv (scripts/python-env.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage="usage: $0 [--runs N] [--seconds S] [--warmup S] [--connections C] [--pair] [--python PY] [BIN]"
runs=5 seconds=10 warmup=2 connections=16 bin=target/release/aiphost pair=false
python=.venv/bin/python
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --warmup) warmup="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --pair) pair=true; shift ;;
        -h|--help) echo "$usage"; exit 0 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) bin="$1"; shift ;;
    esac
done
command -v wrk >/dev/null || { echo "wrk is missing (scripts/bench.sh installs it)" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "no aiphost binary at $bin" >&2; exit 2; }
[[ -x "$python" ]] || { echo "no Python at $python (bash scripts/python-env.sh)" >&2; exit 2; }
threads=2; (( connections < threads )) && threads=$connections
(( runs >= 1 && seconds >= 1 && warmup >= 1 && connections >= 1 )) || { echo "$usage" >&2; exit 2; }

tick=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { sed -E "s/.*[ ]$1=([0-9.]+).*/\1/" <<<" $2"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
a2a_headers=(-H 'Content-Type: application/json' -H 'A2A-Version: 1.0')
sdk_tasks() {
    curl -s "$1" "${a2a_headers[@]}" \
        -d '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":1}}' |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["totalSize"])'
}

# The server of the target being measured and the load on it; killed (and the host's data dir
# removed) whatever happens. wrk runs in the background and is waited for, so that a signal is
# handled at once rather than when the load ends.
pid="" data="" load=""
scratch=$(mktemp -d)
stop() {
    if [[ -n "$load" ]]; then kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true; fi
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    if [[ -n "$data" ]]; then rm -rf "$data"; fi
    pid="" data="" load=""
}
trap 'stop; rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
# The host serves the echo partner alone: start-up compiles every partner it is given (tens of
# seconds for all of plugins/dist in a debug build), and only echo is measured.
mkdir "$scratch/agents"
cp -r plugins/dist/echo "$scratch/agents/echo"
# wrk ARGS...: its output on stdout, once it has ended.
# A reply slower than --timeout counts as a socket error: the default 2 s would fail a debug
# build's smoke run on a loaded machine for nothing.
run_wrk() {
    wrk --timeout 10s "$@" >"$scratch/wrk.out" &
    load=$!
    wait "$load" || { load=""; echo "wrk failed" >&2; return 1; }
    load=""
    cat "$scratch/wrk.out"
}

# After a wrk run: the requests the server may still be finishing, and hooks they spawned.
settle() { sleep 0.5; }

# Wait until a counter stops moving (the completion hooks run after the replies).
steady_metric() {
    local url=$1 name=$2 last now
    last=$(metric "$url" "$name")
    for _ in $(seq 1 50); do
        sleep 0.1
        now=$(metric "$url" "$name")
        [[ "$now" == "$last" ]] && break
        last=$now
    done
    echo "$last"
}

# Lift the cap of live tasks where the binary has one (a run starts tens of thousands).
uncapped=()
[[ "$("$bin" serve --help)" == *--max-live-tasks* ]] && uncapped=(--max-live-tasks 1000000000)

start_host() {
    data=$(mktemp -d)
    local port
    port=$(free_port)
    "$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$scratch/agents" --log error \
        "${uncapped[@]}" >/dev/null 2>&1 &
    pid=$!
    base="http://127.0.0.1:$port"
    for _ in $(seq 1 1200); do
        curl -sf -o /dev/null "$base/readyz" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "aiphost did not come up" >&2; return 1
}

start_sdk() {
    local port
    port=$(free_port)
    # The measured process is this Python interpreter: uvicorn with one worker runs in it.
    "$python" bench/python/a2a_echo_server.py "$port" >/dev/null 2>&1 &
    pid=$!
    base="http://127.0.0.1:$port"
    for _ in $(seq 1 600); do
        curl -s -o /dev/null "$base/.well-known/agent-card.json" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "the a2a-sdk server did not come up" >&2; return 1
}

# One measured run of one target; prints its row and appends "us rate" to results[target].
declare -A results
failed=0
measure() {
    local target=$1 run=$2 url script args per_request before_cpu after_cpu out line
    local t=$threads per_unit=1
    local before_cmd before_inv before_tr after_cmd after_inv after_tr before_tasks after_tasks
    case "$target" in
        a2a) start_host; url="$base/agents/echo/a2a"; script=bench/wrk/a2a-send.lua; args=(); per_request=2 ;;
        rpc) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/start.lua; args=(awaiting-completion); per_request=1 ;;
        sdk) start_sdk; url="$base/a2a"; script=bench/wrk/a2a-send.lua; args=() ;;
        pair) start_host; url="$base/agents/echo/rpc"; script=bench/wrk/a2a-aip-pair.lua; args=()
              per_request=1 per_unit=2 t=$connections ;;
    esac
    run_wrk -t"$t" -c"$connections" -d"${warmup}s" -s "$script" "$url" -- "${args[@]}" "warm$run" >/dev/null
    settle
    if [[ "$target" == sdk ]]; then
        before_tasks=$(sdk_tasks "$url")
    else
        # The warm-up's last requests and their completion hooks first, then the counters.
        before_inv=$(steady_metric "$base" aiphost_invocations_total)
        before_cmd=$(metric "$base" aiphost_commands_total)
        before_tr=$(metric "$base" aiphost_transitions_total)
    fi
    before_cpu=$(cpu_ticks "$pid")
    run_wrk -t"$t" -c"$connections" -d"${seconds}s" -s "$script" "$url" -- "${args[@]}" "run$run" >"$scratch/out"
    out=$(cat "$scratch/out")
    after_cpu=$(cpu_ticks "$pid")
    line=$(grep '^RESULT' <<<"$out")
    local requests secs wrong errors p50 p99
    requests=$(field requests "$line"); secs=$(field seconds "$line")
    wrong=$(field wrong "$line"); errors=$(field errors "$line")
    p50=$(field p50_us "$line"); p99=$(field p99_us "$line")
    local ok=yes why=() work
    [[ "$wrong" == 0 ]] || why+=("$wrong wrong replies")
    [[ "$errors" == 0 ]] || why+=("$errors socket errors")
    if [[ "$target" == sdk ]]; then
        settle
        after_tasks=$(sdk_tasks "$url")
        local tasks=$((after_tasks - before_tasks))
        (( tasks >= requests && tasks <= requests + connections )) || why+=("$tasks tasks stored")
        work="$tasks tasks"
    else
        after_inv=$(steady_metric "$base" aiphost_invocations_total)
        after_cmd=$(metric "$base" aiphost_commands_total)
        after_tr=$(metric "$base" aiphost_transitions_total)
        local commands=$((after_cmd - before_cmd)) invocations=$((after_inv - before_inv))
        local transitions=$((after_tr - before_tr))
        (( commands >= requests && commands <= requests + connections )) || why+=("$commands commands")
        (( invocations >= per_request * requests && invocations <= per_request * (requests + connections) )) ||
            why+=("$invocations invocations, $per_request per request expected")
        work="$commands commands, $invocations invocations, $(awk -v t="$transitions" -v r="$requests" -v u="$per_unit" 'BEGIN { printf "%.2f", t / (r / u) }') transitions/$([[ $target == pair ]] && echo pair || echo request)"
    fi
    stop
    if [[ ${#why[@]} -gt 0 ]]; then
        ok="NO: $(IFS=';'; echo "${why[*]}")"
        failed=1
        grep '^WRONG' <<<"$out" >&2 || true
    fi
    local rate us
    rate=$(awk -v r="$requests" -v s="$secs" -v u="$per_unit" 'BEGIN { printf "%.0f", r / u / s }')
    # CPU per request (per pair of requests for `pair`).
    us=$(awk -v c="$((after_cpu - before_cpu))" -v t="$tick" -v r="$requests" -v u="$per_unit" 'BEGIN { printf "%.1f", r ? c / t * 1e6 / (r / u) : 0 }')
    echo "| $run | $target | $requests | $rate | $us | $(awk -v v="$p50" 'BEGIN { printf "%.2f", v / 1000 }') | $(awk -v v="$p99" 'BEGIN { printf "%.2f", v / 1000 }') | $work | $ok |"
    results[$target]+="$us $rate"$'\n'
}

targets=(a2a rpc sdk)
$pair && targets+=(pair)
echo "# $connections connections, wrk -t$threads$($pair && echo " (pair: -t$connections)"), ${warmup} s warm-up, ${seconds} s measured, $runs runs; aiphost: $bin"
echo
echo "| run | target | requests | requests/s (pair: pairs/s) | CPU µs per request (pair: per pair) | p50 ms | p99 ms | work done | right |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
for run in $(seq 1 "$runs"); do
    # Rotate the order so no target always follows the same one.
    shift_by=$(( (run - 1) % ${#targets[@]} ))
    order=("${targets[@]:shift_by}" "${targets[@]:0:shift_by}")
    for target in "${order[@]}"; do
        measure "$target" "$run"
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stats() { sort -g | awk '{ v[NR] = $1 } END { printf "%s (%s–%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo
echo "| target | CPU µs per request (pair: per pair), median (min–max) | requests/s (pair: pairs/s), median (min–max) |"
echo "| --- | ---: | ---: |"
for target in "${targets[@]}"; do
    cpu=$(awk 'NF { print $1 }' <<<"${results[$target]}" | stats)
    rate=$(awk 'NF { print $2 }' <<<"${results[$target]}" | stats)
    echo "| $target | $cpu | $rate |"
done
a2a=$(awk 'NF { print $1 }' <<<"${results[a2a]}" | median)
rpc=$(awk 'NF { print $1 }' <<<"${results[rpc]}" | median)
sdk=$(awk 'NF { print $1 }' <<<"${results[sdk]}" | median)
# Per-run ratios too (each run's targets shared the machine's mood).
ratios() {
    paste <(awk 'NF { print $1 }' <<<"${results[$1]}") <(awk 'NF { print $1 }' <<<"${results[$2]}") |
        awk -v pct="$3" '{ if (pct) printf "%+.1f\n", ($1 / $2 - 1) * 100; else printf "%.3f\n", $1 / $2 }' | stats
}
echo
echo "- a2a / sdk CPU per request: $(awk -v a="$a2a" -v s="$sdk" 'BEGIN { printf "%.3f", a / s }') (medians); per run $(ratios a2a sdk 0)"
a2a_rate=$(awk 'NF { print $2 }' <<<"${results[a2a]}" | median)
sdk_rate=$(awk 'NF { print $2 }' <<<"${results[sdk]}" | median)
echo "- a2a / sdk requests per second: $(awk -v a="$a2a_rate" -v s="$sdk_rate" 'BEGIN { printf "%.2f", a / s }') (medians)"
echo "- a2a over rpc: $(awk -v a="$a2a" -v r="$rpc" 'BEGIN { printf "%+.1f %%", (a / r - 1) * 100 }') (medians); per run $(ratios a2a rpc 1) %; target ≤ +10 %"
if $pair; then
    pr=$(awk 'NF { print $1 }' <<<"${results[pair]}" | median)
    echo "- a2a over pair (AIP start + complete, the same work): $(awk -v a="$a2a" -v r="$pr" 'BEGIN { printf "%+.1f %%", (a / r - 1) * 100 }') (medians); per run $(ratios a2a pair 1) %"
fi
if (( failed )); then
    echo "FAILED: some run did wrong or missing work (rows marked NO)" >&2
    exit 1
fi
