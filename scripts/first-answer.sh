#!/usr/bin/env bash
# How long a newcomer waits for a first answer (issue 28): from starting the host to
#   - /healthz answering (the port is bound, the host is alive),
#   - the first answered `start` of the echo partner (awaiting-completion, its product checked),
#   - /readyz answering 200 (every bundled partner compiled),
# for `aiphost serve` of plugins/dist on a fresh data directory (empty compiled cache: every
# partner is compiled) and on a warm restart of the same directory; or, with --serve-sh, for
# `scripts/serve.sh` itself in this checkout (which builds what is missing first).
#
#   scripts/first-answer.sh [--runs N] BIN          # e.g. target/release/aiphost
#   scripts/first-answer.sh --serve-sh              # one run of scripts/serve.sh as it is
#
# Prints one line per run and, for several runs, the medians with min–max. Every answer is checked.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
runs=5
serve_sh=false
bin=""
while (( $# > 0 )); do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --serve-sh) serve_sh=true; shift ;;
        *) bin="$1"; shift ;;
    esac
done

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Poll until `check` succeeds (every 20 ms, up to 30 minutes); print the ms since $start.
until_ok() {
    local start="$1"; shift
    for _ in $(seq 1 90000); do
        if "$@" >/dev/null 2>&1; then echo $(( $(now_ms) - start )); return 0; fi
        sleep 0.02
    done
    echo "timed out: $*" >&2; return 1
}

healthz() { curl -sf -o /dev/null "$1/healthz"; }
readyz() { curl -sf -o /dev/null "$1/readyz"; }
# A start of echo that answered awaiting-completion with the input echoed back.
echo_start() {
    local answer
    answer="$(curl -sf "$1/agents/echo/rpc" -H 'content-type: application/json' -d '{"jsonrpc":"2.0","method":"rpc","id":"1","params":{"command":{"type":"task-command","id":"m-'"$RANDOM$RANDOM"'","sentAt":"2025-09-01T12:00:00+08:00","senderRole":"leader","senderId":"1.2.156.3088.1.1.BENCH.LEADER.1.0000","command":"start","taskId":"first-'"$RANDOM$RANDOM"'","dataItems":[{"type":"text","text":"first words"}]}}}')" || return 1
    grep -q '"awaiting-completion"' <<<"$answer" && grep -q 'first words' <<<"$answer"
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%d (%d–%d)", m, a[1], a[NR]}'; }

if $serve_sh; then
    port=18080
    url="http://127.0.0.1:$port"
    start="$(now_ms)"
    data="$(mktemp -d)"
    # Its own process group, so the host that cargo runs stops with it.
    setsid bash scripts/serve.sh --listen "127.0.0.1:$port" --data "$data" >/tmp/first-answer-serve.log 2>&1 &
    pid=$!
    trap 'kill -- -$pid 2>/dev/null; rm -rf "$data"' EXIT
    h="$(until_ok "$start" healthz "$url")"
    e="$(until_ok "$start" echo_start "$url")"
    r="$(until_ok "$start" readyz "$url")"
    echo "scripts/serve.sh: /healthz ${h} ms, first echo start ${e} ms, /readyz ${r} ms"
    exit 0
fi

[[ -x "$bin" ]] || { echo "usage: $0 [--runs N] BIN | --serve-sh" >&2; exit 2; }
bash scripts/build-plugins.sh >/dev/null
declare -a H E R W
for i in $(seq 1 "$runs"); do
    data="$(mktemp -d)"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    url="http://127.0.0.1:$port"
    start="$(now_ms)"
    "$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents plugins/dist --log error &
    pid=$!
    h="$(until_ok "$start" healthz "$url")"
    e="$(until_ok "$start" echo_start "$url")"
    r="$(until_ok "$start" readyz "$url")"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    # A warm restart: the compiled cache and the store are there.
    start="$(now_ms)"
    "$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents plugins/dist --log error &
    pid=$!
    w="$(until_ok "$start" echo_start "$url")"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
    echo "run $i: fresh data dir: /healthz ${h} ms, first echo start ${e} ms, /readyz ${r} ms; warm restart: first echo start ${w} ms"
    H+=("$h"); E+=("$e"); R+=("$r"); W+=("$w")
done
if (( runs > 1 )); then
    echo "medians of $runs runs (min–max), ms:"
    echo "  fresh data dir: /healthz $(printf '%s\n' "${H[@]}" | median), first echo start $(printf '%s\n' "${E[@]}" | median), /readyz $(printf '%s\n' "${R[@]}" | median)"
    echo "  warm restart: first echo start $(printf '%s\n' "${W[@]}" | median)"
fi
