#!/usr/bin/env bash
# Sets up the Python environment of the interop tests: a virtualenv at <repo>/.venv with the
# official reference SDK acps-sdk 2.1.0 (and its dependencies: httpx, pydantic, ...) and the official
# A2A SDK a2a-sdk 1.3.0 with its HTTP server extra (the A2A client test and the A2A benchmark's
# reference server); and for Python partners: the Python SDK of this checkout (sdk/python, installed
# editable), componentize-py 0.25.1 (builds them into components) and pytest (their unit tests).
# Idempotent and quick when already set up; works from any directory.
# Progress goes to stderr; the LAST line of stdout is the path of the venv's python.
#
# PYTHON selects the interpreter that creates the venv (default: python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

sdk_version=2.1.0
# The reference partner (acps-sdk's own FastAPI server) runs under uvicorn, which acps-sdk does not pull in.
uvicorn_version=0.54.0
a2a_version=1.3.0
componentize_py_version=0.25.1
pytest_version=9.2.0
venv="$root/.venv"
python="$venv/bin/python"
# Every transitive dependency pinned too (a new release of one must not break a fresh machine).
constraints="$root/scripts/python-constraints.txt"
stamp="$venv/.aiphost-constraints"
want="$(sha256sum "$constraints" | cut -d' ' -f1)"

step() { printf '==> %s\n' "$*" >&2; }

# Tests that need the venv may run this at the same time: one sets it up, the others wait.
exec 9>"$root/.venv.lock"
flock 9

ready() {
    [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$python" -c "
import acps_sdk, uvicorn, a2a.client, sse_starlette, starlette, importlib.metadata as m
assert m.version('acps-sdk') == '$sdk_version', m.version('acps-sdk')
assert m.version('uvicorn') == '$uvicorn_version', m.version('uvicorn')
assert m.version('a2a-sdk') == '$a2a_version', m.version('a2a-sdk')
assert m.version('componentize-py') == '$componentize_py_version', m.version('componentize-py')
assert m.version('pytest') == '$pytest_version', m.version('pytest')
import aiphost_sdk, componentize_py, pytest, os
assert os.path.realpath(aiphost_sdk.__file__).startswith(os.path.realpath('$root/sdk/python/src') + os.sep), aiphost_sdk.__file__
" >/dev/null 2>&1
}

if ready; then
    step "acps-sdk $sdk_version, a2a-sdk $a2a_version, componentize-py $componentize_py_version and the Python SDK already installed in .venv"
else
    # A venv that cannot run pip (made by another interpreter, or left half made) is made anew.
    if [[ ! -x "$python" ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
        step "creating virtualenv .venv"
        rm -rf "$venv"
        "${PYTHON:-python3}" -m venv "$venv" >&2
    fi
    step "installing acps-sdk==$sdk_version, uvicorn==$uvicorn_version, a2a-sdk==$a2a_version, componentize-py==$componentize_py_version and pytest==$pytest_version into .venv"
    "$python" -m pip install --quiet --disable-pip-version-check --constraint "$constraints" "acps-sdk==$sdk_version" \
        "uvicorn==$uvicorn_version" "a2a-sdk[http-server]==$a2a_version" \
        "componentize-py==$componentize_py_version" "pytest==$pytest_version" >&2
    # Editable: partners built and tested from this checkout use the SDK as it is here.
    step "installing the Python SDK (sdk/python, editable) into .venv"
    "$python" -m pip install --quiet --disable-pip-version-check --constraint "$constraints" --editable "$root/sdk/python" >&2
    echo "$want" >"$stamp"
    if ! ready; then
        rm -f "$stamp"
        echo "error: acps-sdk $sdk_version, a2a-sdk $a2a_version, componentize-py $componentize_py_version, pytest $pytest_version or the Python SDK is still not importable from $python" >&2
        exit 1
    fi
    step "acps-sdk $sdk_version, a2a-sdk $a2a_version, componentize-py $componentize_py_version, pytest and the Python SDK installed"
fi

echo "$python"
