# shellcheck shell=bash
# What the CPU-per-request benchmarks share (scripts/a2a-cpu-per-request.sh,
# scripts/chat-cpu-per-request.sh): sourced, never run. The script that sources it sets
# `bin` (the aiphost binary), `threads`, `connections`, `seconds`, `warmup`, `targets` and defines
#
#   setup_target TARGET   start TARGET's server (start_host, or its own, setting `pid` and
#                         `base`) and set `url`, `script` (a bench/wrk script whose `done` prints
#                         the RESULT line, bench/wrk/result.lua) and `args` (its arguments before
#                         the run's name); for aiphost also `per_request` (the partner invocations
#                         one request needs); for another server leave `per_request` empty and
#                         define `external_count URL` (a count of the work it did, read before and
#                         after, that must grow by one per request). `t`, `per_unit` and
#                         `cut_commands` may be changed from their defaults (wrk threads;
#                         requests per measured unit; the commands a request wrk cut off may
#                         still cause, 1: its own).
#
# then calls `run_all` and `summary`, and prints its own ratio lines with `median_of` and
# `ratios`. Each target, each run: a fresh server (for aiphost: a fresh data dir, the echo
# partner alone), a wrk warm-up, a short settle, then a measured wrk run (-tT -cC) with the
# server's utime+stime read from /proc/PID/stat before and after. CPU per request = the
# difference / requests. Checks, else the row says NO and `summary` exits 1: no wrong reply, no
# socket error; aiphost did the work (`aiphost_commands_total` grew by the requests wrk counted
# and `aiphost_invocations_total` by `per_request` times as many); another server by its count.
# wrk counts a request it cut off at the end of a run while the server may still have done it: up
# to C more are allowed (C × `cut_commands` more commands: at the MCP door a call whose
# connection closes is cancelled, a second command).

tick=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { sed -E "s/.*[ ]$1=([0-9.]+).*/\1/" <<<" $2"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2; found = 1 } END { if (found) printf "%.0f\n", s }'; }

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

# wait_up URL WHAT: until URL answers at all (any status), or the server died.
wait_up() {
    for _ in $(seq 1 600); do
        curl -s -o /dev/null "$1" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$2 did not come up" >&2; return 1
}

# One measured run of one target; prints its row and appends "us rate" to results[target].
declare -A results
failed=0
measure() {
    local target=$1 run=$2 before_cpu after_cpu out line
    local before_cmd before_inv before_tr after_cmd after_inv after_tr before_work after_work
    t=$threads per_unit=1 per_request="" cut_commands=1
    setup_target "$target"
    run_wrk -t"$t" -c"$connections" -d"${warmup}s" -s "$script" "$url" -- "${args[@]}" "warm$run" >/dev/null
    settle
    if [[ -z "$per_request" ]]; then
        before_work=$(external_count "$url")
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
    if [[ -z "$per_request" ]]; then
        settle
        after_work=$(external_count "$url")
        local done_work=$((after_work - before_work))
        (( done_work >= requests && done_work <= requests + connections )) || why+=("$done_work done")
        work="$done_work done"
    else
        after_inv=$(steady_metric "$base" aiphost_invocations_total)
        after_cmd=$(metric "$base" aiphost_commands_total)
        after_tr=$(metric "$base" aiphost_transitions_total)
        local commands=$((after_cmd - before_cmd)) invocations=$((after_inv - before_inv))
        local transitions=$((after_tr - before_tr))
        (( commands >= requests && commands <= requests + cut_commands * connections )) || why+=("$commands commands")
        (( invocations >= per_request * requests && invocations <= per_request * (requests + connections) )) ||
            why+=("$invocations invocations, $per_request per request expected")
        work="$commands commands, $invocations invocations, $(awk -v t="$transitions" -v r="$requests" -v u="$per_unit" 'BEGIN { printf "%.2f", t / (r / u) }') transitions/$( ((per_unit > 1)) && echo "$per_unit requests" || echo request)"
    fi
    stop
    if [[ ${#why[@]} -gt 0 ]]; then
        ok="NO: $(IFS=';'; echo "${why[*]}")"
        failed=1
        grep '^WRONG' <<<"$out" >&2 || true
    fi
    local rate us
    rate=$(awk -v r="$requests" -v s="$secs" -v u="$per_unit" 'BEGIN { printf "%.0f", r / u / s }')
    # CPU per request (per unit of per_unit requests).
    us=$(awk -v c="$((after_cpu - before_cpu))" -v t="$tick" -v r="$requests" -v u="$per_unit" 'BEGIN { printf "%.1f", r ? c / t * 1e6 / (r / u) : 0 }')
    echo "| $run | $target | $requests | $rate | $us | $(awk -v v="$p50" 'BEGIN { printf "%.2f", v / 1000 }') | $(awk -v v="$p99" 'BEGIN { printf "%.2f", v / 1000 }') | $work | $ok |"
    results[$target]+="$us $rate"$'\n'
}

# Every run of every target, the order rotating from run to run so no target always follows the
# same one.
run_all() {
    echo "| run | target | requests | requests/s | CPU µs per request | p50 ms | p99 ms | work done | right |"
    echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
    local run shift_by order target
    for run in $(seq 1 "$runs"); do
        shift_by=$(( (run - 1) % ${#targets[@]} ))
        order=("${targets[@]:shift_by}" "${targets[@]:0:shift_by}")
        for target in "${order[@]}"; do
            measure "$target" "$run"
        done
    done
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stats() { sort -g | awk '{ v[NR] = $1 } END { printf "%s (%s–%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
# median_of TARGET [COLUMN]: the median CPU per request (column 1) or requests/s (column 2).
median_of() { awk -v c="${2:-1}" 'NF { print $c }' <<<"${results[$1]}" | median; }
# ratios A B PCT: the per-run ratios of A's CPU to B's (each run's targets shared the machine's
# mood), median (min–max); as a percentage over B when PCT is 1.
ratios() {
    paste <(awk 'NF { print $1 }' <<<"${results[$1]}") <(awk 'NF { print $1 }' <<<"${results[$2]}") |
        awk -v pct="$3" '{ if (pct) printf "%+.1f\n", ($1 / $2 - 1) * 100; else printf "%.3f\n", $1 / $2 }' | stats
}
# over A B: A's median CPU over B's, as a percentage.
over() { awk -v a="$(median_of "$1")" -v b="$(median_of "$2")" 'BEGIN { printf "%+.1f %%", (a / b - 1) * 100 }'; }
# multiple A B: A's median CPU as a multiple of B's.
multiple() { awk -v a="$(median_of "$1")" -v b="$(median_of "$2")" 'BEGIN { printf "%.3f", a / b }'; }

# The medians table.
summary_table() {
    echo
    echo "| target | CPU µs per request, median (min–max) | requests/s, median (min–max) |"
    echo "| --- | ---: | ---: |"
    local target cpu rate
    for target in "${targets[@]}"; do
        cpu=$(awk 'NF { print $1 }' <<<"${results[$target]}" | stats)
        rate=$(awk 'NF { print $2 }' <<<"${results[$target]}" | stats)
        echo "| $target | $cpu | $rate |"
    done
    echo
}

# The end of a script: exit 1 when some run did wrong or missing work.
finish() {
    if (( failed )); then
        echo "FAILED: some run did wrong or missing work (rows marked NO)" >&2
        exit 1
    fi
}
