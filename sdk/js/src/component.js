// The component side of the SDK: the partner world's imports, and the `handler` export built from
// a partner. Only the component's entry (written by the build tool) imports this module; the rest
// of the SDK never touches the imports, so it runs in plain Node too.

import * as task from "aiphost:partner/task@0.2.0";
import * as wlog from "aiphost:partner/log@0.2.0";
import * as kv from "aiphost:partner/kv@0.2.0";
import * as wconfig from "aiphost:partner/config@0.2.0";
import { handle, resolvePartner } from "./runtime.js";

/**
 * The real host: the component's imports. Both engines' bindings name WIT functions and record
 * fields in camelCase (`stream-text` is `streamText`, `call-id` is `callId`), variants as
 * `{tag, val}`, enums as their case names, an `err` result as an exception, and take a Number
 * for a u64.
 */
const host = {
  setStatus: (state, items) => task.setStatus(state, items),
  emitProductChunk: (chunk) => task.emitProductChunk(chunk),
  currentState: () => task.currentState() ?? null,
  streamText: (delta) => task.streamText(delta),
  reportToolCall: (call) => task.reportToolCall(call),
  reportToolResult: (outcome) => task.reportToolResult(outcome),
  reportUsage: (usage) => task.reportUsage(usage),
  ask: (request, items) => task.ask(request, items),
  fail: (failure) => task.fail(failure),
  reply: (items) => task.reply(items),
  kvGet: (scope, key) => kv.get(scope, key) ?? null,
  kvSet: (scope, key, value) => kv.set(scope, key, value),
  kvDelete: (scope, key) => kv.delete(scope, key),
  log: (level, message, fields) => wlog.log(level, message, fields),
  configGet: (name) => wconfig.get(name),
};

// console.* goes to the host's log too (a component's stdout and stderr go nowhere useful).
function toLog(level) {
  return (...args) => {
    const text = args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ");
    try {
      wlog.log(level, text, []);
    } catch {
      // Logging must never be what breaks a partner.
    }
  };
}
function safeJson(value) {
  if (value instanceof Error) return value.stack ?? String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
globalThis.console = {
  ...globalThis.console,
  log: toLog("info"),
  info: toLog("info"),
  debug: toLog("debug"),
  trace: toLog("trace"),
  warn: toLog("warn"),
  error: toLog("error"),
};

/**
 * The partner world's `handler` export for the partner a module exported. `backend` is the engine
 * the build chose: QuickJS components are synchronous (a promise cannot be waited for there).
 */
export function makeHandler(exported, backend = "quickjs") {
  const partner = resolvePartner(exported);
  return {
    handle(invocation) {
      const result = handle(partner, invocation, host);
      if (backend === "quickjs" && result !== null && typeof result?.then === "function") {
        result.then(undefined, () => {});
        throw (
          "the partner returned a promise (an async function?), and QuickJS partners are synchronous: " +
          "drop the async, or build with --backend starlingmonkey"
        );
      }
      return result;
    },
  };
}
