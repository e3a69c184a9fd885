// The SDK inside a real component: fixtures/talker (kept outside test/, whose every .js file
// node --test would run) is built with the QuickJS backend, run in Node through jco's transpiler
// (the toolchain the build already installs), and its imports are recorded. The mock host cannot
// show this: it checks that the names and shapes the SDK passes are the ones the componentized
// bindings of wit/partner.wit expect (`stream-text` is `streamText`, `call-id` is `callId`,
// variants are {tag, val}, a u64 goes in as a Number).
// Skipped when the build tools are not installed (scripts/js-env.sh installs them).

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import v8 from "node:v8";

const FIXTURE = fileURLToPath(new URL("../fixtures/talker", import.meta.url));

/** The tools, or null when they are not installed. */
async function tools() {
  try {
    const { transpile } = await import("@bytecodealliance/jco-transpile");
    const shim = await import("@bytecodealliance/preview2-shim");
    await import("componentize-qjs");
    const { main } = await import("../bin/aiphost-build.mjs");
    return { transpile, shim, build: main };
  } catch {
    return null;
  }
}

/** `wasi:cli/terminal-input` from preview2-shim (`cli.terminalInput`). */
function wasi(shim, name) {
  const [, ns, iface] = name.match(/^wasi:([a-z-]+)\/([a-z-]+)/);
  return shim[ns][iface.replace(/-([a-z])/g, (_, c) => c.toUpperCase())];
}

/** A task invocation in the WIT shape, as the host sends it. */
function invocation(event, items) {
  return {
    event: { tag: event },
    taskId: "t-1",
    sessionId: undefined,
    leaderId: undefined,
    state: event === "start" ? undefined : "working",
    dataItems: items,
    maxProductsBytes: undefined,
    productsBytes: 0n,
    commandParams: "{}",
  };
}

const text = (t) => ({ kind: { tag: "text", val: t }, metadata: undefined });

test("every report of 0.2.0 reaches the component's imports by the bindings' names", async (t) => {
  const found = await tools();
  if (found === null) return t.skip("the build tools are not installed (scripts/js-env.sh)");
  // QuickJS components use extended constant expressions, which Node 20 has behind a flag.
  v8.setFlagsFromString("--experimental-wasm-extended-const");
  const scratch = mkdtempSync(join(tmpdir(), "aiphost-sdk-component-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const wasm = join(scratch, "talker.wasm");
  await found.build([FIXTURE, "-o", wasm]);
  const out = join(scratch, "js");
  const { files } = await found.transpile(wasm, { name: "talker", instantiation: "async", outDir: out });
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  }
  const component = await import(pathToFileURL(join(out, "talker.js")).href);

  let calls = [];
  let state;
  const record = (name) => (...args) => {
    calls.push([name, ...args]);
  };
  const imports = {
    "aiphost:partner/task": {
      setStatus: (s, items) => {
        calls.push(["setStatus", s, items]);
        state = s;
      },
      emitProductChunk: record("emitProductChunk"),
      currentState: () => state,
      streamText: record("streamText"),
      reportToolCall: record("reportToolCall"),
      reportToolResult: record("reportToolResult"),
      reportUsage: record("reportUsage"),
      ask: record("ask"),
      fail: record("fail"),
      reply: record("reply"),
    },
    "aiphost:partner/log": { log: () => {} },
    "aiphost:partner/kv": { get: () => undefined, set: () => {}, delete: () => {} },
    "aiphost:partner/config": {
      get: () => {
        throw { tag: "not-granted" };
      },
    },
  };
  const resolve = new Proxy(imports, {
    get: (known, name) => known[name] ?? (typeof name === "string" && name.startsWith("wasi:") ? wasi(found.shim, name) : undefined),
  });
  const instance = await component.instantiate((name) => WebAssembly.compile(readFileSync(join(out, name))), resolve);
  const run = (event, items) => {
    calls = [];
    state = event === "start" ? undefined : "working";
    instance.handler.handle(invocation(event, items));
    return calls;
  };

  assert.deepEqual(run("start", [text("talk")]), [
    ["setStatus", "accepted", []],
    ["setStatus", "working", []],
    ["streamText", { productId: "reasoning", channel: "reasoning", text: "hmm", last: false }],
    ["reportToolCall", { callId: "c1", name: "lookup", arguments: '{"query":"x"}' }],
    ["reportToolResult", { callId: "c1", output: { tag: "json", val: '{"found":"x"}' }, isError: false }],
    ["reportToolResult", { callId: "c1", output: { tag: "text", val: "gone" }, isError: true }],
    // jco's host side hands a u64 over as a BigInt and a none as undefined.
    ["reportUsage", { model: "tiny", inputTokens: 3n, outputTokens: 4n, reasoningTokens: undefined }],
    ["streamText", { productId: "out", channel: "answer", text: "done", last: true }],
    ["streamText", { productId: "reasoning", channel: "reasoning", text: "", last: true }],
    ["setStatus", "awaiting-completion", []],
  ]);
  assert.deepEqual(run("start", [text("form")]), [
    ["setStatus", "accepted", []],
    ["setStatus", "working", []],
    ["ask", { requestId: "trip", title: "Trip", description: undefined, schema: '{"type":"object"}' }, [text("Where to?")]],
  ]);
  const answer = {
    kind: { tag: "data", val: '{"city":"Oslo","days":3}' },
    metadata: '{"aiphost.kind":"input-answer","requestId":"trip"}',
  };
  assert.deepEqual(run("continue", [answer]), [
    ["streamText", { productId: "answer", channel: "answer", text: "Oslo for 3 days", last: false }],
    ["streamText", { productId: "answer", channel: "answer", text: "", last: true }],
    ["setStatus", "awaiting-completion", []],
  ]);
  assert.deepEqual(run("start", [text("fail")]), [
    ["setStatus", "accepted", []],
    ["setStatus", "working", []],
    ["fail", { code: "TALKER_FAILED", message: "no", retryable: true, detail: '{"why":"asked"}' }],
  ]);
  assert.deepEqual(run("start", [text("reply")]), [
    ["reply", [text("hi"), { kind: { tag: "data", val: '{"n":1}' }, metadata: undefined }]],
  ]);
});
