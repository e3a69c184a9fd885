#!/usr/bin/env bash
# Sets up a Python environment of the interop tests. Two, because their packages conflict
# (agentscope-runtime requires a2a-sdk below 1.0, the A2A test needs 1.3.0):
#
# - no argument: a virtualenv at <repo>/.venv with the official reference SDK acps-sdk 2.1.0 (and
#   its dependencies: httpx, pydantic, ...) and the official A2A SDK a2a-sdk 1.3.0 with its HTTP
#   server extra (the A2A client test and the A2A benchmark's reference server); the official MCP
#   SDK mcp 2.3.0 (tests/interop/mcp_client.py: its client drives the MCP door over Streamable
#   HTTP, protocol revision 2026-07-28, with its HTTP library httpx2); and for Python
#   partners: the Python SDK of this checkout (sdk/python, installed editable), componentize-py
#   0.25.1 (builds them into components) and pytest (their unit tests).
# - `agentscope`: a virtualenv at <repo>/.venv-agentscope with agentscope-runtime 1.1.6.post2 (the
#   Agent API's reference: its HTTPAgentAPIClient and schema classes drive the Agent API door in
#   tests/interop/agent_api_client.py, its AgentApp serves the benchmark's reference echo),
#   agentscope 1.0.21 and mcp 1.x (the newest releases, 2.x, break agentscope-runtime's imports),
#   httpx and uvicorn, and what agentscope imports without declaring it (greenlet, tqdm).
#
# Each environment installs with every transitive dependency pinned by its constraints file, and is
# installed anew when that file changes. Idempotent and quick when already set up; works from any
# directory. Progress goes to stderr; the LAST line of stdout is the path of the venv's python.
#
# PYTHON selects the interpreter that creates the venv (default: python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

step() { printf '==> %s\n' "$*" >&2; }

case "${1:-}" in
"")
    sdk_version=2.1.0
    # The reference partner (acps-sdk's own FastAPI server) runs under uvicorn, which acps-sdk does
    # not pull in.
    uvicorn_version=0.54.0
    a2a_version=1.3.0
    mcp_version=2.3.0
    componentize_py_version=0.25.1
    pytest_version=9.2.0
    name=.venv
    constraints="$root/scripts/python-constraints.txt"
    what="acps-sdk $sdk_version, a2a-sdk $a2a_version, mcp $mcp_version, componentize-py $componentize_py_version, pytest $pytest_version and the Python SDK"
    packages=("acps-sdk==$sdk_version" "uvicorn==$uvicorn_version" "a2a-sdk[http-server]==$a2a_version"
        "mcp==$mcp_version" "componentize-py==$componentize_py_version" "pytest==$pytest_version")
    # Editable: partners built and tested from this checkout use the SDK as it is here.
    editable="$root/sdk/python"
    check="
import acps_sdk, uvicorn, a2a.client, sse_starlette, starlette, importlib.metadata as m
assert m.version('acps-sdk') == '$sdk_version', m.version('acps-sdk')
assert m.version('uvicorn') == '$uvicorn_version', m.version('uvicorn')
assert m.version('a2a-sdk') == '$a2a_version', m.version('a2a-sdk')
import mcp, mcp_types, httpx2
assert m.version('mcp') == '$mcp_version', m.version('mcp')
assert m.version('mcp-types') == '$mcp_version', m.version('mcp-types')
assert m.version('componentize-py') == '$componentize_py_version', m.version('componentize-py')
assert m.version('pytest') == '$pytest_version', m.version('pytest')
import aiphost_sdk, componentize_py, pytest, os
assert os.path.realpath(aiphost_sdk.__file__).startswith(os.path.realpath('$root/sdk/python/src') + os.sep), aiphost_sdk.__file__
"
    ;;
agentscope)
    runtime_version=1.1.6.post2
    agentscope_version=1.0.21
    # The newest mcp the first clean resolve took below 2 (scripts/python-constraints-agentscope.txt
    # pins it, as everything else).
    mcp_version=1.30.0
    httpx_version=0.28.1
    uvicorn_version=0.54.0
    # agentscope 1.0.21 imports both at its top without declaring them: SQLAlchemy's asyncio
    # extension needs greenlet (optional since SQLAlchemy 2.1), its benchmarks tqdm.
    greenlet_version=3.5.6
    tqdm_version=4.70.1
    name=.venv-agentscope
    constraints="$root/scripts/python-constraints-agentscope.txt"
    what="agentscope-runtime $runtime_version, agentscope $agentscope_version and mcp $mcp_version"
    packages=("agentscope-runtime==$runtime_version" "agentscope==$agentscope_version" "mcp==$mcp_version"
        "httpx==$httpx_version" "uvicorn==$uvicorn_version" "greenlet==$greenlet_version" "tqdm==$tqdm_version")
    editable=""
    # `agentscope_runtime.engine` imports AgentApp and Runner, so the whole tree must import;
    # `agentscope` itself too (the benchmark's echo app yields its `Msg`).
    check="
import agentscope_runtime.engine, agentscope, uvicorn, httpx, importlib.metadata as m
from agentscope.message import Msg
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import AgentRequest, AgentResponse, Message
assert m.version('agentscope-runtime') == '$runtime_version', m.version('agentscope-runtime')
assert m.version('agentscope') == '$agentscope_version', m.version('agentscope')
assert m.version('mcp') == '$mcp_version', m.version('mcp')
assert m.version('httpx') == '$httpx_version', m.version('httpx')
assert m.version('uvicorn') == '$uvicorn_version', m.version('uvicorn')
"
    ;;
*)
    echo "usage: $0 [agentscope]" >&2
    exit 2
    ;;
esac

venv="$root/$name"
python="$venv/bin/python"
# Every transitive dependency pinned too (a new release of one must not break a fresh machine).
stamp="$venv/.aiphost-constraints"
want="$(sha256sum "$constraints" | cut -d' ' -f1)"

# Tests that need the venv may run this at the same time: one sets it up, the others wait.
exec 9>"$root/$name.lock"
flock 9

ready() {
    [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$python" -c "$check" >/dev/null 2>&1
}

if ready; then
    step "$what already installed in $name"
else
    # A venv that cannot run pip (made by another interpreter, or left half made) is made anew.
    if [[ ! -x "$python" ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
        step "creating virtualenv $name"
        rm -rf "$venv"
        "${PYTHON:-python3}" -m venv "$venv" >&2
    fi
    step "installing ${packages[*]} into $name"
    "$python" -m pip install --quiet --disable-pip-version-check --constraint "$constraints" "${packages[@]}" >&2
    if [[ -n "$editable" ]]; then
        step "installing ${editable#"$root/"} (editable) into $name"
        "$python" -m pip install --quiet --disable-pip-version-check --constraint "$constraints" --editable "$editable" >&2
    fi
    echo "$want" >"$stamp"
    if ! ready; then
        rm -f "$stamp"
        echo "error: $what still not importable from $python:" >&2
        "$python" -c "$check" >&2 || true
        exit 1
    fi
    step "$what installed in $name"
fi

echo "$python"
