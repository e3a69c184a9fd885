#!/usr/bin/env bash
# Builds every example partner in plugins/ and assembles one bundle per agent:
#   plugins/dist/<agent-id>/partner.toml   (the manifest)
#   plugins/dist/<agent-id>/partner.wasm   (the component)
# Rust partners (a Cargo.toml; members of plugins/Cargo.toml) are built by cargo for wasm32-wasip2,
# Python partners (a pyproject.toml) by the Python SDK's build command (componentize-py, from the
# .venv that scripts/python-env.sh sets up), only when their sources, the SDK or componentize-py
# changed.
# Idempotent; works from any directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target=wasm32-wasip2
plugins="$root/plugins"
dist="$plugins/dist"
out="${CARGO_TARGET_DIR:-$plugins/target}/$target/release"

step() { printf '==> %s\n' "$*"; }

if ! command -v rustup >/dev/null 2>&1; then
    step "rustup not found; assuming the $target target is installed"
elif rustup target list --installed | grep -qx "$target"; then
    step "target $target already installed"
else
    step "installing target $target"
    rustup target add "$target"
fi

step "building partners (cargo build --release --target $target)"
# From plugins/, so that plugins/.cargo/config.toml (the partners' small stack) applies.
(cd "$plugins" && cargo build --locked --release --target "$target")

# The value of `key = "..."` in the [section] table of a TOML file (plain string values only).
toml_string() {
    local file="$1" section="$2" key="$3"
    awk -v want="[$section]" -v key="$key" '
        /^[[:space:]]*\[/ { header = $0; gsub(/[[:space:]]/, "", header); in_section = (header == want); next }
        in_section && $0 ~ "^[[:space:]]*" key "[[:space:]]*=" {
            sub(/^[^=]*=[[:space:]]*"/, ""); sub(/".*$/, ""); print; exit
        }' "$file"
}

# Copies $1 to $2 unless they are the same already; the replacement is atomic (a rename), so a
# host reading the bundle never sees half a file.
install_file() {
    if ! cmp -s "$1" "$2"; then
        cp "$1" "$2.tmp.$$"
        mv -f "$2.tmp.$$" "$2"
    fi
}

mkdir -p "$dist"
count=0
# Bundles agent $1: its manifest $2 and component $3 in plugins/dist/$1/.
bundle() {
    local agent="$1" manifest="$2" wasm="$3"
    mkdir -p "$dist/$agent"
    install_file "$manifest" "$dist/$agent/partner.toml"
    install_file "$wasm" "$dist/$agent/partner.wasm"
    step "bundled $agent: plugins/dist/$agent ($(wc -c <"$dist/$agent/partner.wasm") bytes)"
    count=$((count + 1))
}
for manifest in "$plugins"/*/partner.toml; do
    dir="$(dirname "$manifest")"
    # Rust partners here; the Python and JavaScript ones are built by their SDKs below.
    [[ -f "$dir/Cargo.toml" ]] || continue
    crate="$(toml_string "$dir/Cargo.toml" package name)"
    agent="$(toml_string "$manifest" agent id)"
    if [[ -z "$crate" || -z "$agent" ]]; then
        echo "error: cannot read the package name of $dir/Cargo.toml or the agent id of $manifest" >&2
        exit 1
    fi
    wasm="$out/${crate//-/_}.wasm"
    if [[ ! -f "$wasm" ]]; then
        echo "error: $wasm was not built (is $dir a member of plugins/Cargo.toml?)" >&2
        exit 1
    fi
    bundle "$agent" "$manifest" "$wasm"
done

# Python partners (a pyproject.toml): built by the Python SDK's own build command into
# $py_out/<agent>.wasm, with a stamp of what went in, so an unchanged partner is not rebuilt (a
# componentize-py build takes a while).
py_out="${CARGO_TARGET_DIR:-$plugins/target}/python"
python=""
for manifest in "$plugins"/*/partner.toml; do
    dir="$(dirname "$manifest")"
    [[ -f "$dir/pyproject.toml" && ! -f "$dir/Cargo.toml" ]] || continue
    agent="$(toml_string "$manifest" agent id)"
    if [[ -z "$agent" ]]; then
        echo "error: cannot read the agent id of $manifest" >&2
        exit 1
    fi
    if [[ -z "$python" ]]; then
        python="$(bash "$root/scripts/python-env.sh" | tail -n 1)"
    fi
    wasm="$py_out/$agent.wasm"
    # What the component is made of: the partner's modules (not its tests), the SDK with the WIT
    # it ships, and componentize-py's version.
    stamp="$(
        {
            "$python" -c "import importlib.metadata as m; print('componentize-py', m.version('componentize-py'))"
            find "$dir" "$root/sdk/python/src/aiphost_sdk" \
                \( -name tests -o -name __pycache__ -o -name build -o -name dist -o -name '.*' \) -prune \
                -o -type f \( -name '*.py' -o -name '*.wit' -o -name pyproject.toml \) -print |
                LC_ALL=C sort | xargs sha256sum
        } | sha256sum | cut -d' ' -f1
    )"
    if [[ -f "$wasm" && "$(cat "$wasm.stamp" 2>/dev/null)" == "$stamp" ]]; then
        step "python partner $agent unchanged"
    else
        step "building python partner $agent (python -m aiphost_sdk build)"
        mkdir -p "$py_out"
        # Written aside and renamed: a build running at the same time never reads half a component.
        "$python" -m aiphost_sdk build "$dir" --output "$wasm.tmp.$$" --quiet
        mv -f "$wasm.tmp.$$" "$wasm"
        echo "$stamp" >"$wasm.stamp"
    fi
    bundle "$agent" "$manifest" "$wasm"
done

# JavaScript and TypeScript partners (a package.json): built by the JavaScript SDK's build tool
# (sdk/js/bin/aiphost-build.mjs, the tools from scripts/js-env.sh) into $js_out/<agent>.wasm; it
# does nothing when the component is newer than the partner's sources and the SDK (--if-changed).
js_out="${CARGO_TARGET_DIR:-$plugins/target}/js"
js_ready=""
for manifest in "$plugins"/*/partner.toml; do
    dir="$(dirname "$manifest")"
    [[ -f "$dir/package.json" && ! -f "$dir/Cargo.toml" ]] || continue
    agent="$(toml_string "$manifest" agent id)"
    if [[ -z "$agent" ]]; then
        echo "error: cannot read the agent id of $manifest" >&2
        exit 1
    fi
    if [[ -z "$js_ready" ]]; then
        bash "$root/scripts/js-env.sh" >/dev/null
        js_ready=1
    fi
    wasm="$js_out/$agent.wasm"
    node "$root/sdk/js/bin/aiphost-build.mjs" "$dir" -o "$wasm" --if-changed
    bundle "$agent" "$manifest" "$wasm"
done

step "$count partner bundles in plugins/dist"
