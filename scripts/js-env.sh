#!/usr/bin/env bash
# Installs the JavaScript SDK's pinned tools (componentize-qjs, ComponentizeJS, esbuild) into
# sdk/js/node_modules (or SDK_DIR/node_modules) from the committed package-lock.json, and checks
# that what is installed for this platform is what the lock pins. Idempotent: a second run with
# the same package.json and lock is a quick no-op. Needs Node.js 20+ and npm. Works from any
# directory. Usage: js-env.sh [SDK_DIR]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The SDK directory: this checkout's sdk/js, or the one given (the tests install copies).
sdk="$(cd "${1:-$root/sdk/js}" && pwd)"
stamp="$sdk/node_modules/.aiphost-lock"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "error: the JavaScript SDK needs Node.js 20+ and npm (https://nodejs.org); install them and run $0 again" >&2
    exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if (( major < 20 )); then
    echo "error: the JavaScript SDK needs Node.js 20+, found $(node --version)" >&2
    exit 1
fi

want="$(cat "$sdk/package.json" "$sdk/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "==> JavaScript SDK tools already installed ($sdk/node_modules)"
    exit 0
fi
echo "==> installing the JavaScript SDK tools into $sdk/node_modules (npm install from its package-lock.json)"
# `npm ci` would be the tool, but it refuses this lock file: some platform packages of the pinned
# versions were never published (some rolldown bindings), so npm leaves them out of the lock and
# `npm ci` then calls the lock out of sync. `npm install` with the lock present installs the
# locked versions, and may add to the lock the platform packages the registry has published since
# (componentize-qjs 0.4.5 for win32 came later): that is no reason to fail, nothing installed here
# changes. So the lock's bytes are not compared; js-tools-check.mjs checks what is installed for
# this platform against the committed lock, and the committed lock is put back afterwards.
# No install scripts: the native parts come as prebuilt optional dependencies.
committed="$(mktemp)"
trap 'rm -f "$committed"' EXIT
cp "$sdk/package-lock.json" "$committed"
rm -f "$stamp"
status=0
(cd "$sdk" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error) || status=$?
cp "$committed" "$sdk/package-lock.json"
if (( status != 0 )); then
    echo "error: npm install in $sdk failed (exit $status); see npm's message above" >&2
    exit 1
fi
node "$root/scripts/js-tools-check.mjs" "$sdk" "$committed"
echo "$want" >"$stamp"
