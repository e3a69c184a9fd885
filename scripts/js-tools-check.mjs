#!/usr/bin/env node
// Checks that the JavaScript SDK's build tools installed in SDK/node_modules are the pinned ones
// for this platform. Usage: node scripts/js-tools-check.mjs SDK LOCK
//
// Why not compare the lock file's bytes after `npm install`: the registry keeps publishing
// platform packages of old versions (componentize-qjs 0.4.5 for win32 appeared after our lock was
// written), and npm rightly adds them to the lock. That changes nothing that is installed here.
// What matters is what runs on this machine, so this checks, against the committed LOCK:
// - every dependency in SDK/package.json is an exact version, and the one the lock pins;
// - every package the lock lists that npm installs on this platform (optional dependencies for
//   another os, cpu or libc are left out, as npm leaves them out) is installed at its locked version: the tools themselves (componentize-qjs, ComponentizeJS,
//   esbuild) and their native bindings for this platform included.
// Packages the lock lists only for other platforms are not looked at.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [sdk, lockPath] = process.argv.slice(2);
if (!sdk || !lockPath) {
    console.error("usage: node js-tools-check.mjs SDK_DIR COMMITTED_LOCK");
    process.exit(2);
}

const lock = JSON.parse(readFileSync(lockPath, "utf8"));
const manifest = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8"));
const libc = process.report.getReport().header.glibcVersionRuntime ? "glibc" : "musl";

// npm's own rule for os/cpu/libc lists: a name matches, "!name" excludes.
function allows(list, value) {
    if (!list || list.length === 0) return true;
    const excluded = list.filter((v) => v.startsWith("!")).map((v) => v.slice(1));
    if (excluded.includes(value)) return false;
    const wanted = list.filter((v) => !v.startsWith("!"));
    return wanted.length === 0 || wanted.includes(value);
}
function forThisPlatform(entry) {
    return (
        allows(entry.os, process.platform) &&
        allows(entry.cpu, process.arch) &&
        (process.platform !== "linux" || allows(entry.libc, libc))
    );
}

const problems = [];
for (const [name, spec] of Object.entries(manifest.dependencies ?? {})) {
    const locked = lock.packages?.[`node_modules/${name}`]?.version;
    if (!/^\d+\.\d+\.\d+$/.test(spec)) {
        problems.push(`${name}: package.json asks for "${spec}", which is not an exact version`);
    } else if (locked !== spec) {
        problems.push(`${name}: package.json pins ${spec} but the lock pins ${locked ?? "nothing"}`);
    }
}

// Walk the dependency graph from package.json as npm resolves it (a name is looked up in the
// nearest node_modules going up), skipping optional dependencies for other platforms: what is left
// is exactly what npm installs here.
function resolve(from, name) {
    let dir = from;
    for (;;) {
        const path = dir === "" ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
        if (lock.packages?.[path]) return path;
        if (dir === "") return null;
        const up = dir.lastIndexOf("/node_modules/");
        dir = up < 0 ? "" : dir.slice(0, up);
    }
}
const seen = new Set();
const queue = [""];
let checked = 0;
while (queue.length > 0) {
    const at = queue.shift();
    const entry = lock.packages?.[at] ?? {};
    const wants = [
        ...Object.keys(entry.dependencies ?? {}).map((n) => [n, false]),
        ...Object.keys(entry.optionalDependencies ?? {}).map((n) => [n, true]),
    ];
    for (const [name, optional] of wants) {
        const path = resolve(at, name);
        if (path === null) {
            if (!optional) problems.push(`${name}: needed by ${at || "package.json"}, not in the lock`);
            continue;
        }
        const pinned = lock.packages[path];
        if (seen.has(path) || (optional && !forThisPlatform(pinned))) continue;
        seen.add(path);
        queue.push(path);
        let installed;
        try {
            installed = JSON.parse(readFileSync(join(sdk, path, "package.json"), "utf8")).version;
        } catch {
            problems.push(`${name}: pinned ${pinned.version} for ${process.platform}-${process.arch}, not installed (${path})`);
            continue;
        }
        checked += 1;
        if (installed !== pinned.version) {
            problems.push(`${name}: installed ${installed}, pinned ${pinned.version} (${path})`);
        }
    }
}

if (problems.length > 0) {
    console.error(`error: the JavaScript SDK tools installed in ${join(sdk, "node_modules")} are not the pinned ones:`);
    for (const p of problems) console.error(`  - ${p}`);
    console.error("the lock is sdk/js/package-lock.json; to move a tool to another version, change package.json and");
    console.error("run `npm install` in sdk/js, then commit both files");
    process.exit(1);
}
console.log(`${checked} packages for ${process.platform}-${process.arch} (${libc}) at their pinned versions`);
