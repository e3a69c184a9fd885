#!/usr/bin/env bash
# What exporting traces costs a durable start (issue 34): host CPU per rpc `start` of one binary
# with trace export off and on (`--otlp-endpoint` at a local collector that drops what it gets,
# scripts/lib/otlp-sink.py), runs interleaved by scripts/cpu-per-start.sh, every request checked
# for its invocation. The collector is stopped whatever happens.
#
#   bash scripts/tracing-cost.sh [--runs 5] [--seconds 10] [--connections 16] [OTHER_BIN...] BIN
#
# OTHER_BINs (an older build, say) run interleaved beside BIN, with their own defaults.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

args=()
while [[ $# -gt 1 ]]; do args+=("$1"); shift; done
bin="${1:?usage: $0 [--runs N] [--seconds S] [--connections C] BIN}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 scripts/lib/otlp-sink.py "$port" &
sink=$!
trap 'kill "$sink" 2>/dev/null || true; wait "$sink" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
# The standard sampler, and no OTEL_* of the caller's environment in the "off" runs.
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SDK_DISABLED
bash scripts/cpu-per-start.sh "${args[@]}" "$bin" "$bin::--otlp-endpoint http://127.0.0.1:$port"
