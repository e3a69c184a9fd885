#!/usr/bin/env bash
# Installs the JavaScript SDK's pinned tools (componentize-qjs, ComponentizeJS, esbuild) into
# sdk/js/node_modules from the committed package-lock.json. Idempotent: a second run
# with the same lock file is a quick no-op. Needs Node.js 20+ and npm. Works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdk="$root/sdk/js"
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

want="$(sha256sum "$sdk/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "==> JavaScript SDK tools already installed (sdk/js/node_modules)"
    exit 0
fi
echo "==> installing the JavaScript SDK tools (npm install from sdk/js/package-lock.json)"
# `npm ci` would be the tool, but it refuses this lock file: some platform packages of the pinned
# versions were never published (componentize-qjs 0.4.5 for win32, some rolldown bindings), so npm
# leaves them out of the lock and `npm ci` then calls the lock out of sync. `npm install` with the
# lock present installs exactly the locked versions; the check below makes sure it changed nothing.
# No install scripts: the native parts come as prebuilt optional dependencies.
cp "$sdk/package-lock.json" "$sdk/.package-lock.before"
(cd "$sdk" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
if ! cmp -s "$sdk/package-lock.json" "$sdk/.package-lock.before"; then
    mv -f "$sdk/.package-lock.before" "$sdk/package-lock.json"
    echo "error: npm wanted to change sdk/js/package-lock.json (restored); the installed tools may not be the pinned ones" >&2
    exit 1
fi
rm -f "$sdk/.package-lock.before"
echo "$want" >"$stamp"
