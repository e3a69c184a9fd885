// The run loop: one invocation of the partner world's `handle`, turned into calls of the partner's
// functions and the reports they imply. Host-agnostic: the component passes its imports
// (component.js), the testing helper a mock host (testing.js).

import { formToWit } from "./forms.js";
import { describe, itemFromWit, itemToWit, productToWit } from "./items.js";
import { Decision, Outcome, ReportError, Task, errPayload } from "./task.js";

/** The host of the invocation that is running, or null outside one. */
let current = null;

const LEVELS = ["trace", "debug", "info", "warn", "error"];

function fieldPairs(fields) {
  if (fields === undefined || fields === null) return [];
  const entries = Array.isArray(fields) ? fields : Object.entries(fields);
  return entries.map(([k, v]) => [String(k), typeof v === "string" ? v : JSON.stringify(v) ?? String(v)]);
}

/** Logs `message` at `level` with structured `fields` (an object or [key, value] pairs). */
function logAt(level, message, fields) {
  if (!LEVELS.includes(level)) throw new TypeError(`unknown log level ${describe(level)}`);
  const pairs = fieldPairs(fields);
  if (current) {
    current.log(level, String(message), pairs);
  } else {
    const rest = pairs.map(([k, v]) => ` ${k}=${JSON.stringify(v)}`).join("");
    console.error(`${level.toUpperCase()} ${message}${rest}`);
  }
}

/**
 * Structured logging into the host's `tracing`, tagged with the agent and the task. Outside an
 * invocation (plain Node) the lines go to standard error.
 */
export const log = Object.freeze({
  log: logAt,
  trace: (message, fields) => logAt("trace", message, fields),
  debug: (message, fields) => logAt("debug", message, fields),
  info: (message, fields) => logAt("info", message, fields),
  warn: (message, fields) => logAt("warn", message, fields),
  error: (message, fields) => logAt("error", message, fields),
});

/** A config value is not there: `code` is `not-granted` (the manifest does not ask for it) or `not-set`. */
export class ConfigError extends Error {
  constructor(code, name) {
    super(
      code === "not-granted"
        ? `the manifest does not ask for config value ${name}`
        : `config value ${name} is not set`,
    );
    this.name = "ConfigError";
    /** @type {"not-granted"|"not-set"} */ this.code = code;
  }
}

/**
 * Named config values: the manifest asks for names (`[capabilities] config`), the tenant sets the
 * values.
 */
export const config = Object.freeze({
  /** The value of config `name`; throws a ConfigError when it is not granted or not set. */
  get(name) {
    if (!current) throw new Error("config.get works inside an invocation only (the testing host has config too)");
    try {
      return current.configGet(String(name));
    } catch (e) {
      const err = errPayload(e);
      const tag = typeof err === "string" ? err : err?.tag;
      if (tag === "not-granted" || tag === "not-set") throw new ConfigError(tag, name);
      throw e;
    }
  },
  /** The value of config `name`, or `fallback` when it is not granted or not set. */
  getOr(name, fallback) {
    try {
      return config.get(name);
    } catch (e) {
      if (e instanceof ConfigError) return fallback;
      throw e;
    }
  },
});

/** Why the run loop stopped early. */
class Stop {
  /** @param {string|null} error null: the task is over, return quietly */
  constructor(error) {
    this.error = error;
  }
}

/** A report the SDK makes itself: refusals end the run (quietly when the task is over). */
function report(fn) {
  try {
    fn();
  } catch (e) {
    const err = e instanceof ReportError ? e : ReportError.fromWit(e);
    throw new Stop(err.endsTask ? null : `the host refused a report: ${err.message}`);
  }
}

/**
 * `host` with its `streamText` watched: `open` maps each product this invocation streamed text
 * into, and has not closed with `last`, to the channel of its last delta. The SDK closes them when
 * `work` returns, so a client never waits for the end of a product the partner forgot to close.
 */
function watchStreams(host) {
  const open = new Map();
  const watched = {
    ...host,
    streamText(delta) {
      host.streamText(delta);
      if (delta.last) open.delete(delta.productId);
      else open.set(delta.productId, delta.channel);
    },
  };
  return { host: watched, open };
}

/** Closes each product left open with one empty `last` delta (before the task rests). */
function closeStreams(open, host) {
  for (const [productId, channel] of open) {
    try {
      host.streamText({ productId, channel, text: "", last: true });
    } catch (e) {
      const err = e instanceof ReportError ? e : ReportError.fromWit(e);
      // The task's activity cap was used up by the partner's own deltas: its text is all there,
      // only unmarked as whole; failing the task for the SDK's courtesy would lose more.
      if (err.code === "limit-reached") {
        logAt("warn", `product ${productId} left open: ${err.message}`, []);
        continue;
      }
      throw new Stop(err.endsTask ? null : `the host refused a report: ${err.message}`);
    }
  }
  open.clear();
}

/** An exception that escaped the partner's own code. */
class Thrown {
  constructor(where, error) {
    this.where = where;
    this.error = error;
  }
}

const isThenable = (v) => v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function";

/** `fn(value)` now, or when `value` (a promise) settles; exceptions stay exceptions / rejections. */
function then(value, fn) {
  return isThenable(value) ? value.then(fn) : fn(value);
}

/** Calls a partner function; what it throws (or rejects with) is marked as the partner's. */
function call(partner, name, args) {
  let value;
  try {
    value = partner[name](...args);
  } catch (e) {
    throw new Thrown(name, e);
  }
  if (isThenable(value)) {
    return value.then(undefined, (e) => {
      throw new Thrown(name, e);
    });
  }
  return value;
}

/** The partner object behind what a module exports (an object, or a class to instantiate). */
export function resolvePartner(exported) {
  const partner = typeof exported === "function" ? new exported() : exported;
  if (!partner || typeof partner.work !== "function") {
    throw new TypeError(
      "a partner is an object (or class) with a work(task, input) method; export it as the module's default export",
    );
  }
  return partner;
}

/**
 * Handles one invocation (the partner world's `invocation` record) for `partner` against `host`.
 * Returns undefined (or a promise of it) when the invocation succeeded; throws (or rejects with) a
 * string, the reason the host fails the task with, otherwise.
 */
export function handle(partner, invocation, host) {
  current = host;
  let flow;
  try {
    flow = run(partner, invocation, host);
  } catch (e) {
    return finish(e);
  }
  if (isThenable(flow)) return flow.then(() => finish(null), finish);
  return finish(null);
}

function finish(error) {
  try {
    if (error === null) return undefined;
    if (error instanceof Stop) {
      if (error.error === null) return undefined;
      throw error.error;
    }
    if (error instanceof Thrown) {
      const e = error.error;
      // A refusal that ends the task (the Leader canceled it, the products got too large) leaves
      // nothing to report, whoever made the report.
      if (e instanceof ReportError && e.endsTask) return undefined;
      const reason = shortReason(error.where, e);
      const stack = e instanceof Error && e.stack ? String(e.stack) : describe(e);
      logAt("error", `partner ${reason}`, [["stack", stack]]);
      throw reason;
    }
    // The SDK's own failure (a malformed invocation, a host that broke the contract).
    throw error instanceof Error ? error.message : String(error);
  } finally {
    current = null;
  }
}

function shortReason(where, e) {
  let what;
  if (e instanceof Error) what = `${e.name}: ${e.message}`;
  else what = describe(e);
  if (what.length > 300) what = `${what.slice(0, 297)}...`;
  return `${where} threw ${what}`;
}

function run(partner, invocation, plainHost) {
  const event = invocation.event.tag;
  const input = invocation.dataItems.map(itemFromWit);
  const { host, open } = watchStreams(plainHost);
  const task = new Task(invocation, host);
  switch (event) {
    case "start":
      return start(partner, task, input, host, open);
    case "continue":
      return then(call(partner, "work", [task, input]), (outcome) => apply(outcome, host, open));
    case "complete":
      return hook(partner, "completed", task, invocation.event.val);
    case "cancel":
      return hook(partner, "canceled", task, invocation.event.val);
    default:
      throw new Error(`aiphost-sdk: the host sent an unknown event ${event}`);
  }
}

function hook(partner, name, task, reason) {
  if (typeof partner[name] !== "function") return undefined;
  return call(partner, name, [task, reason]);
}

function start(partner, task, input, host, open) {
  const decision = typeof partner.decide === "function" ? call(partner, "decide", [task, input]) : Decision.accept();
  return then(decision, (decision) => {
    if (!(decision instanceof Decision)) {
      throw new Thrown(
        "decide",
        new TypeError(
          `decide returned ${describe(decision)}; return Decision.accept(), Decision.reject(reason) or Decision.reply(message)`,
        ),
      );
    }
    if (decision.message !== null) {
      const items = decision.message.map(itemToWit);
      report(() => host.reply(items));
      return undefined;
    }
    if (!decision.accept) {
      report(() => host.setStatus("rejected", [textItem(decision.reason)]));
      return undefined;
    }
    report(() => host.setStatus("accepted", []));
    report(() => host.setStatus("working", []));
    return then(call(partner, "work", [task, input]), (outcome) => apply(outcome, host, open));
  });
}

/** An Outcome's failure as the partner world's `failure` record. */
function failureToWit({ code, message, retryable, detail }) {
  return { code, message, retryable, detail: detail === null ? null : JSON.stringify(detail) };
}

function textItem(text) {
  return { kind: { tag: "text", val: text }, metadata: null };
}

function apply(outcome, host, open) {
  if (!(outcome instanceof Outcome)) {
    throw new Thrown(
      "work",
      new TypeError(
        `work returned ${describe(outcome)}; return an Outcome (Outcome.done(products), Outcome.ask(question), Outcome.fail(reason), ...)`,
      ),
    );
  }
  let products;
  let message;
  let form;
  let failure;
  try {
    products = (outcome.products ?? []).map(productToWit);
    message = (outcome.items ?? outcome.message ?? []).map(itemToWit);
    form = outcome.form ? formToWit(outcome.form) : null;
    failure = outcome.failure ? failureToWit(outcome.failure) : null;
  } catch (e) {
    throw new Thrown("work", e);
  }
  switch (outcome.kind) {
    case "need-input":
      closeStreams(open, host);
      report(() => host.setStatus("awaiting-input", message));
      break;
    case "ask":
      closeStreams(open, host);
      report(() => host.ask(form, message));
      break;
    case "done":
    case "reply":
      closeStreams(open, host);
      for (const product of products) {
        report(() => host.emitProductChunk({ product, append: false, lastChunk: true }));
      }
      report(() => host.setStatus("awaiting-completion", message));
      break;
    case "fail":
      // A failed task is final: products left open need no closing.
      if (failure) report(() => host.fail(failure));
      else report(() => host.setStatus("failed", [textItem(outcome.reason)]));
      break;
    case "abort":
      throw new Stop(outcome.reason);
    default:
      throw new Thrown("work", new TypeError(`unknown outcome ${describe(outcome.kind)}`));
  }
  return undefined;
}
