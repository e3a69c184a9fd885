#!/usr/bin/env bash
# Runs the official A2A conformance kit (../shared/a2a-tck, a2a-tck 1.0.0) at level MUST against
# a host serving the bundled partners, on the `tck` partner (plugins/tck), over JSON-RPC and
# HTTP+JSON. Fails unless at least MIN_MUST_PERCENT (default 95) of the MUST requirements that
# were tested pass; prints the MUST/SHOULD/MAY results and keeps the kit's reports.
#
# Installs what it needs idempotently: a virtualenv at <repo>/.venv-tck with the kit's
# dependencies from PyPI (the kit itself runs from a copy under the target dir, so its caches
# and reports never land in ../shared). Needs the host built (AIPHOST_BIN, default
# target/debug/aiphost) and the partners bundled (scripts/build-plugins.sh).
#
#   bash scripts/a2a-tck.sh [--level must|all]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

level=must
while [[ $# -gt 0 ]]; do
    case "$1" in
        --level) level="$2"; shift 2 ;;
        *) echo "usage: $0 [--level must|all]" >&2; exit 2 ;;
    esac
done
min="${MIN_MUST_PERCENT:-95}"
kit_src="$root/../shared/a2a-tck"
target="${CARGO_TARGET_DIR:-$root/target}"
bin="${AIPHOST_BIN:-$target/debug/aiphost}"
venv="$root/.venv-tck"
python="$venv/bin/python"
# The kit's dependencies (its pyproject), at the versions it was checked with here.
deps=(
    "pytest==9.2.0" "pytest-asyncio==1.5.0" "httpx==0.28.1" "grpcio==1.85.1" "protobuf==7.36.2"
    "googleapis-common-protos==1.76.0" "jsonschema==4.26.0" "pytest-html==4.2.0"
    "gherkin-official>=29.0" "Jinja2==3.1.6"
)

step() { printf '==> %s\n' "$*"; }

[[ -f "$kit_src/run_tck.py" ]] || { echo "error: the conformance kit is not at $kit_src" >&2; exit 1; }
[[ -x "$bin" ]] || { echo "error: no host binary at $bin (cargo build -p aiphost)" >&2; exit 1; }
[[ -f "$root/plugins/dist/tck/partner.wasm" ]] || { echo "error: plugins/dist/tck is missing (bash scripts/build-plugins.sh)" >&2; exit 1; }

ready() {
    [[ -x "$python" ]] && "$python" -c "import pytest, pytest_asyncio, httpx, grpc, google.protobuf, jsonschema, pytest_html, gherkin, jinja2" >/dev/null 2>&1
}
if ready; then
    step "conformance kit dependencies already in .venv-tck"
else
    if [[ ! -x "$python" ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
        step "creating virtualenv .venv-tck"
        rm -rf "$venv"
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    step "installing the conformance kit's dependencies into .venv-tck"
    "$python" -m pip install --quiet --disable-pip-version-check "${deps[@]}"
    ready || { echo "error: the kit's dependencies are still not importable from $python" >&2; exit 1; }
fi

kit="$target/a2a-tck"
step "copying the kit to $kit"
rm -rf "$kit"
mkdir -p "$target"
cp -r "$kit_src" "$kit"

port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
data="$(mktemp -d)"
log="$kit/host.log"
step "serving the bundled partners on 127.0.0.1:$port"
# The kit's webhook receiver (push notification delivery) listens on localhost, which the
# address policy refuses unless the operator allows private targets. The kit lists tasks, which an
# open partner answers only when the operator turns it on (its clients share one namespace).
"$bin" serve --listen "127.0.0.1:$port" --data "$data" --agents "$root/plugins/dist" \
    --webhook-allow-private --list-tasks-on tck >"$log" 2>&1 &
host_pid=$!
cleanup() { kill "$host_pid" 2>/dev/null || true; wait "$host_pid" 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT
for _ in $(seq 1 600); do
    if "$python" -c "import httpx,sys; sys.exit(0 if httpx.get('http://127.0.0.1:$port/readyz').status_code == 200 else 1)" 2>/dev/null; then
        break
    fi
    kill -0 "$host_pid" 2>/dev/null || { cat "$log" >&2; echo "error: the host exited" >&2; exit 1; }
    sleep 0.5
done

step "running the conformance kit (level $level) against /agents/tck"
args=(--sut-host "http://127.0.0.1:$port/agents/tck" --transport jsonrpc,http_json)
[[ "$level" == must ]] && args+=(--level must)
# The kit exits non-zero when any requirement fails; the verdict is the threshold below.
(cd "$kit" && timeout 900 "$python" run_tck.py "${args[@]}" >"$kit/run.log" 2>&1) || true
tail -n 25 "$kit/run.log"

"$python" - "$kit/reports/compatibility.json" "$min" <<'EOF'
import json, sys
from collections import Counter
report = json.load(open(sys.argv[1]))
minimum = float(sys.argv[2])
per = report["per_requirement"]
for level in ("MUST", "SHOULD", "MAY"):
    counts = Counter(v["status"] for v in per.values() if v["level"] == level)
    print(f"{level}: {counts.get('PASS', 0)} passed, {counts.get('FAIL', 0)} failed, "
          f"{counts.get('SKIPPED', 0)} skipped, {counts.get('NOT TESTED', 0)} not tested")
for name, v in sorted(per.items()):
    if v["status"] == "FAIL":
        print(f"  failed {v['level']} {name}: {'; '.join(v.get('errors', []))[:300]}")
must = Counter(v["status"] for v in per.values() if v["level"] == "MUST")
tested = must.get("PASS", 0) + must.get("FAIL", 0)
percent = 100.0 * must.get("PASS", 0) / tested if tested else 0.0
print(f"MUST: {percent:.1f} % of {tested} tested requirements (at least {minimum:g} % needed)")
sys.exit(0 if tested and percent >= minimum else 1)
EOF
