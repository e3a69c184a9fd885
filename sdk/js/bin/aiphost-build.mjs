#!/usr/bin/env node
// aiphost-build: bundles a JavaScript/TypeScript partner with the SDK and componentizes it into an
// aiphost partner component. The one place the build is defined: `aiphost agent build` and
// scripts/build-plugins.sh both run it.
//
//   aiphost-build DIR [-o OUT.wasm] [--backend quickjs|starlingmonkey] [--entry FILE] [--if-changed]

import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const WIT = join(SDK, "wit", "partner.wit");
const BACKENDS = ["quickjs", "starlingmonkey"];
const ENTRIES = ["src/partner.ts", "src/partner.js", "partner.ts", "partner.js", "src/index.ts", "src/index.js"];

const USAGE = `usage: aiphost-build DIR [-o OUT.wasm] [--backend quickjs|starlingmonkey] [--entry FILE] [--if-changed]

Builds the JavaScript/TypeScript partner in DIR (its entry module's default export is the partner)
into a WebAssembly component (default DIR/target/partner.wasm).

  --backend      quickjs (default; small, fast to start) or starlingmonkey (Web APIs and fetch;
                 the default when partner.toml lists [capabilities] http)
  --entry FILE   the entry module (default: package.json "aiphost.entry", "main", or the first of
                 ${ENTRIES.join(", ")})
  --if-changed   do nothing when OUT is newer than every source file and the SDK`;

class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { dir: null, out: null, backend: null, entry: null, ifChanged: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "-o" || arg === "--out") opts.out = value();
    else if (arg === "--backend") opts.backend = value();
    else if (arg === "--entry") opts.entry = value();
    else if (arg === "--if-changed") opts.ifChanged = true;
    else if (arg === "-h" || arg === "--help") {
      console.log(USAGE);
      process.exit(0);
    } else if (arg.startsWith("-")) throw new UsageError(`unknown option ${arg}`);
    else if (opts.dir === null) opts.dir = arg;
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  if (opts.dir === null) throw new UsageError("the partner directory is missing");
  if (opts.backend !== null && !BACKENDS.includes(opts.backend)) {
    throw new UsageError(`--backend must be one of ${BACKENDS.join(", ")}, not ${opts.backend}`);
  }
  return opts;
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`cannot read ${path}: ${e.message}`);
  }
}

/** The string list `key = [...]` in the [section] table of a TOML file (enough for partner.toml). */
export function tomlList(text, section, key) {
  let inSection = false;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/#.*$/, "").trim();
    if (line.startsWith("[")) {
      inSection = line.replace(/\s/g, "") === `[${section}]`;
      continue;
    }
    const m = inSection && line.match(new RegExp(`^"?${key}"?\\s*=\\s*(.*)$`));
    if (m) {
      let value = m[1];
      while (!value.includes("]") && i + 1 < lines.length) value += lines[++i].replace(/#.*$/, "");
      return [...value.matchAll(/"([^"]*)"/g)].map((x) => x[1]);
    }
  }
  return [];
}

function pickEntry(dir, pkg, flag) {
  const candidates = flag ? [flag] : [pkg?.aiphost?.entry, pkg?.main].filter(Boolean);
  for (const c of candidates) {
    const path = resolve(dir, c);
    if (!existsSync(path)) throw new Error(`the entry module ${path} does not exist`);
    return path;
  }
  for (const c of ENTRIES) {
    if (existsSync(join(dir, c))) return join(dir, c);
  }
  throw new Error(`no entry module in ${dir}: add one of ${ENTRIES.join(", ")} or set "main" in package.json`);
}

/** The newest modification time under `path` (skipping build output and dependencies). */
function newest(path, skip) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const name of readdirSync(path)) {
    if (skip.has(name)) continue;
    max = Math.max(max, newest(join(path, name), skip));
  }
  return max;
}

async function bundle(entry, outfile, backend) {
  let esbuild;
  try {
    esbuild = await import("esbuild");
  } catch (e) {
    throw new Error(`esbuild is not usable in ${SDK} (${e.message}): run npm install there (in the aiphost repository: scripts/js-env.sh)`);
  }
  const scratch = dirname(outfile);
  const main = join(scratch, "entry.mjs");
  writeFileSync(
    main,
    `import partner from ${JSON.stringify(entry)};\n` +
      `import { makeHandler } from ${JSON.stringify(join(SDK, "src", "component.js"))};\n` +
      `export const handler = makeHandler(partner, ${JSON.stringify(backend)});\n`,
  );
  // The partner's `@aiphost/sdk` is this SDK, whether or not the partner installed it.
  const sdkAlias = {
    name: "aiphost-sdk",
    setup(build) {
      build.onResolve({ filter: /^@aiphost\/sdk(\/.*)?$/ }, (args) => {
        const sub = args.path.slice("@aiphost/sdk".length);
        const file = { "": "index.js", "/testing": "testing.js" }[sub];
        if (!file) return { errors: [{ text: `@aiphost/sdk has no module ${args.path}` }] };
        return { path: join(SDK, "src", file) };
      });
    },
  };
  await esbuild.build({
    entryPoints: [main],
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    external: ["aiphost:*", "wasi:*"],
    plugins: [sdkAlias],
    outfile,
    logLevel: "warning",
  });
}

// A TypeScript partner is type-checked before it is bundled (esbuild only strips the types): a
// type error should stop the build, not fail the partner at run time. The check uses the
// TypeScript this SDK installed, the partner's own tsconfig.json when it has one, and this SDK for
// `@aiphost/sdk` whether or not the partner installed it.
function typecheck(dir, entry, scratch) {
  let tsc;
  try {
    tsc = join(dirname(createRequire(join(SDK, "package.json")).resolve("typescript/package.json")), "bin", "tsc");
  } catch (e) {
    throw new Error(`TypeScript is not installed in ${SDK} (${e.message}): run npm install there (in the aiphost repository: scripts/js-env.sh)`);
  }
  const own = join(dir, "tsconfig.json");
  const config = {
    ...(existsSync(own) ? { extends: own } : {}),
    compilerOptions: {
      target: "es2022",
      module: "esnext",
      moduleResolution: "bundler",
      strict: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      noEmit: true,
      paths: {
        "@aiphost/sdk": [join(SDK, "src", "index.d.ts")],
        "@aiphost/sdk/testing": [join(SDK, "src", "testing.d.ts")],
      },
    },
    files: [entry],
  };
  const path = join(scratch, "tsconfig.json");
  writeFileSync(path, JSON.stringify(config));
  const run = spawnSync(process.execPath, [tsc, "-p", path, "--pretty", "false"], { encoding: "utf8" });
  if (run.error) throw new Error(`could not run TypeScript (${tsc}): ${run.error.message}`);
  if (run.status !== 0) {
    const said = `${run.stdout}${run.stderr}`.trim();
    throw new Error(`type errors in ${relative(process.cwd(), dir) || dir} (tsc --noEmit):\n${said}`);
  }
}

async function componentize(backend, bundlePath, wantsHttp) {
  if (backend === "quickjs") {
    let qjs;
    try {
      qjs = await import("componentize-qjs");
    } catch (e) {
      throw new Error(`componentize-qjs is not usable in ${SDK} (${e.message}): run npm install there (in the aiphost repository: scripts/js-env.sh)`);
    }
    const { component } = await (qjs.componentize ?? qjs.default.componentize)({
      witPath: WIT,
      jsSource: readFileSync(bundlePath, "utf8"),
      jsPath: bundlePath,
      world: "partner",
      // The host does not implement the component-model async ABI for partners.
      sync: true,
    });
    return component;
  }
  let cjs;
  try {
    cjs = await import("@bytecodealliance/componentize-js");
  } catch (e) {
    throw new Error(`@bytecodealliance/componentize-js is not usable in ${SDK} (${e.message}): run npm install there (in the aiphost repository: scripts/js-env.sh)`);
  }
  const { component } = await cjs.componentize({
    sourcePath: bundlePath,
    witPath: WIT,
    worldName: "partner",
    // A partner handles no incoming HTTP. `fetch` (wasi:http imports) only when the manifest asks
    // for outbound HTTP: a host refuses wasi:http imports it did not grant.
    disableFeatures: wantsHttp ? ["fetch-event"] : ["fetch-event", "http"],
  });
  return component;
}

export async function main(argv) {
  const opts = parseArgs(argv);
  const dir = resolve(opts.dir);
  if (!existsSync(dir)) throw new Error(`${dir} does not exist`);
  const pkgPath = join(dir, "package.json");
  const pkg = existsSync(pkgPath) ? readJson(pkgPath) : null;
  const manifestPath = join(dir, "partner.toml");
  const manifest = existsSync(manifestPath) ? readFileSync(manifestPath, "utf8") : "";
  const entry = pickEntry(dir, pkg, opts.entry);
  const wantsHttp = tomlList(manifest, "capabilities", "http").length > 0;
  const backend = opts.backend ?? pkg?.aiphost?.backend ?? (wantsHttp ? "starlingmonkey" : "quickjs");
  if (!BACKENDS.includes(backend)) throw new Error(`package.json aiphost.backend must be one of ${BACKENDS.join(", ")}`);
  const out = resolve(opts.out ?? join(dir, "target", "partner.wasm"));

  if (opts.ifChanged && existsSync(out)) {
    const skip = new Set(["node_modules", "target", "dist", ".git"]);
    const inputs = [dir, join(SDK, "src"), join(SDK, "bin"), WIT, join(SDK, "package-lock.json")];
    const sources = Math.max(...inputs.map((path) => newest(path, skip)));
    if (statSync(out).mtimeMs > sources) {
      console.error(`${relative(process.cwd(), out) || out} is up to date`);
      return out;
    }
  }

  const started = performance.now();
  const scratch = mkdtempSync(join(tmpdir(), "aiphost-build-"));
  try {
    const bundled = join(scratch, "partner.bundle.js");
    if (entry.endsWith(".ts")) typecheck(dir, entry, scratch);
    await bundle(entry, bundled, backend);
    const component = await componentize(backend, bundled, wantsHttp);
    mkdirSync(dirname(out), { recursive: true });
    const tmp = `${out}.tmp.${process.pid}`;
    writeFileSync(tmp, component);
    renameSync(tmp, out);
    const secs = ((performance.now() - started) / 1000).toFixed(1);
    console.error(`built ${out} (${backend}, ${Math.round(component.length / 1024)} KiB) in ${secs}s`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return out;
}

// Run as a program (also through a symlink, as node_modules/@aiphost/sdk is), not when imported.
if (process.argv[1] && realpathSync(resolve(process.argv[1])) === realpathSync(fileURLToPath(import.meta.url))) {
  main(process.argv.slice(2)).catch((e) => {
    if (e instanceof UsageError) console.error(`aiphost-build: ${e.message}\n\n${USAGE}`);
    else console.error(`aiphost-build: ${e.message ?? e}`);
    process.exit(e instanceof UsageError ? 2 : 1);
  });
}
