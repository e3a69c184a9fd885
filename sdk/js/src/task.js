// The task an invocation is about, what a partner's functions return, and the errors of the host.

import { DataItem, checkItem, describe, isPlainObject, itemToWit, parseObject, productToWit, toBytes, utf8Decode } from "./items.js";
import { toForm } from "./forms.js";

/** The AIP task states (spec section 4.2), by their AIP names. */
export const State = Object.freeze({
  Accepted: "accepted",
  Working: "working",
  AwaitingInput: "awaiting-input",
  AwaitingCompletion: "awaiting-completion",
  Completed: "completed",
  Canceled: "canceled",
  Failed: "failed",
  Rejected: "rejected",
});

const STATES = new Set(Object.values(State));
const FINAL = new Set(["completed", "canceled", "failed", "rejected"]);

/** Whether `state` is final (completed, canceled, failed or rejected). */
export function isFinal(state) {
  return FINAL.has(state);
}

/** Why a task reached `completed` / `canceled`: the Leader sent the command, or a timeout ran out. */
export const EndReason = Object.freeze({ Leader: "leader", Timeout: "timeout" });

/** Which text of a product a delta extends: what the partner answers, or what it thinks. */
export const Channel = Object.freeze({ Answer: "answer", Reasoning: "reasoning" });
const CHANNELS = new Set(Object.values(Channel));

/** What the value thrown by a component import carries (the `err` payload of a WIT result). */
export function errPayload(e) {
  if (e !== null && typeof e === "object" && "payload" in e) return e.payload;
  return e;
}

/**
 * The host refused a report. `code` is `invalid-transition`, `task-ended`, `products-too-large`,
 * `invalid-data` or `limit-reached` (the task's activity cap is used up; the task is unchanged).
 */
export class ReportError extends Error {
  constructor(code, detail) {
    super(ReportError.#message(code, detail));
    this.name = "ReportError";
    /** @type {"invalid-transition"|"task-ended"|"products-too-large"|"invalid-data"|"limit-reached"} */
    this.code = code;
    /** The host's detail: the transition, the byte limit, what is malformed, the cap (or null). */
    this.detail = detail ?? null;
  }

  /** Whether the task is over after this error (`task-ended` or `products-too-large`). */
  get endsTask() {
    return this.code === "task-ended" || this.code === "products-too-large";
  }

  static #message(code, detail) {
    switch (code) {
      case "invalid-transition":
        return `invalid state transition: ${detail}`;
      case "task-ended":
        return "the task has already ended";
      case "products-too-large":
        return `the products would exceed maxProductsBytes (${detail})`;
      case "invalid-data":
        return `invalid data: ${detail}`;
      case "limit-reached":
        return `activity limit reached: ${detail}`;
      default:
        return `report refused: ${code}`;
    }
  }

  /** From the `report-error` variant an import threw. */
  static fromWit(thrown) {
    const err = errPayload(thrown);
    if (err && typeof err === "object" && typeof err.tag === "string") {
      const detail = err.val === undefined ? null : typeof err.val === "bigint" ? Number(err.val) : err.val;
      return new ReportError(err.tag, detail);
    }
    return new ReportError("invalid-data", String(err));
  }
}

/**
 * A key-value operation failed. `code` is `too-large`, `quota-exceeded`, `unavailable`, or `json`
 * (a stored value is not the JSON expected, or a value cannot be encoded as JSON).
 */
export class KvError extends Error {
  constructor(code, detail) {
    const what = {
      "too-large": "key or value too large",
      "quota-exceeded": "storage quota exceeded",
      unavailable: "key-value store unavailable",
      json: "JSON value error",
    }[code] ?? code;
    super(`${what}: ${detail}`);
    this.name = "KvError";
    /** @type {"too-large"|"quota-exceeded"|"unavailable"|"json"} */
    this.code = code;
    this.detail = detail;
  }

  static fromWit(thrown) {
    const err = errPayload(thrown);
    if (err && typeof err === "object" && typeof err.tag === "string") return new KvError(err.tag, String(err.val ?? ""));
    return new KvError("unavailable", String(err));
  }
}

/**
 * The durable key-value store the host keeps for a partner: the current task's entries
 * (`task.kv`) or the entries shared by all tasks of the partner (`task.agentKv`).
 */
export class Kv {
  /** @param {object} host @param {"task"|"agent"} scope */
  constructor(host, scope) {
    this.#host = host;
    /** @type {"task"|"agent"} */ this.scope = scope;
  }
  #host;

  /** The bytes stored under `key`, or null. */
  get(key) {
    let value;
    try {
      value = this.#host.kvGet(this.scope, String(key));
    } catch (e) {
      throw KvError.fromWit(e);
    }
    return value === null || value === undefined ? null : toBytes(value, "a stored value");
  }

  /** The value under `key` as UTF-8 text, or null. */
  getText(key) {
    const bytes = this.get(key);
    return bytes === null ? null : utf8Decode(bytes);
  }

  /** The value under `key` decoded from JSON, or null when there is none. */
  getJson(key) {
    const text = this.getText(key);
    if (text === null) return null;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new KvError("json", `${key}: ${e.message}`);
    }
  }

  /** Stores `value` (a Uint8Array, or a string stored as UTF-8) under `key`. */
  set(key, value) {
    const bytes = toBytes(value, "a kv value");
    try {
      this.#host.kvSet(this.scope, String(key), bytes);
    } catch (e) {
      throw KvError.fromWit(e);
    }
  }

  /** Stores `value` under `key` as JSON. */
  setJson(key, value) {
    const text = JSON.stringify(value);
    if (text === undefined) throw new KvError("json", `${key}: ${describe(value)} has no JSON form`);
    this.set(key, text);
  }

  /** Removes `key` (removing a missing key is not an error). */
  delete(key) {
    try {
      this.#host.kvDelete(this.scope, String(key));
    } catch (e) {
      throw KvError.fromWit(e);
    }
  }
}

/**
 * The task the current invocation is about: what the host told the partner about it, and the
 * reports the partner can make on it. A Task lives for one invocation; whatever must last to the
 * next one goes into `task.kv`.
 */
export class Task {
  /** @internal Built by the SDK from the host's invocation. */
  constructor(invocation, host) {
    const event = invocation.event.tag;
    /** The task id. */ this.id = invocation.taskId;
    /** The session the task belongs to, if the Leader gave one. */
    this.sessionId = invocation.sessionId ?? null;
    /** The Leader's identity (its AIC), if it gave one. */
    this.leaderId = invocation.leaderId ?? null;
    /** Whether this invocation starts the task. */ this.isStart = event === "start";
    /** Whether this invocation continues the task with new input. */
    this.isContinue = event === "continue";
    /** The state the task was in when this invocation began (null for a new task). */
    this.initialState = invocation.state ?? null;
    /** The Leader's maxProductsBytes, or null. */
    this.maxProductsBytes = toNumber(invocation.maxProductsBytes);
    /** Product bytes the task already held when this invocation began. */
    this.productsBytes = toNumber(invocation.productsBytes) ?? 0;
    const params = invocation.commandParams ?? "";
    /** The command's commandParams (an empty object when there were none). */
    this.params = params.trim() === "" ? {} : parseObject(params, "commandParams");
    this.#host = host;
    /** This task's key-value entries (kept by the host across invocations). */
    this.kv = new Kv(host, "task");
    /** The key-value entries shared by all tasks of this partner. */
    this.agentKv = new Kv(host, "agent");
  }
  #host;

  /** How many more product bytes maxProductsBytes allows (as of the invocation's start), or null. */
  get productsBytesLeft() {
    return this.maxProductsBytes === null ? null : Math.max(0, this.maxProductsBytes - this.productsBytes);
  }

  /** The task's state right now, asked of the host (null while a new task is not yet accepted). */
  state() {
    return this.#host.currentState() ?? null;
  }

  /**
   * Streams (part of) a product now. With `append` the items are added to the product with the
   * same id (or start it); without it the product is replaced. `last` says the product is whole.
   * Throws a ReportError; when `err.endsTask` the task is over: stop working.
   */
  emitChunk(product, append = false, last = true) {
    const chunk = { product: productToWit(product), append: Boolean(append), lastChunk: Boolean(last) };
    try {
      this.#host.emitProductChunk(chunk);
    } catch (e) {
      throw ReportError.fromWit(e);
    }
  }

  /**
   * Appends `text` to a product's text of `channel` (`answer` or `reasoning`), as an LLM streams
   * tokens; `last` says the product is whole. The task must be accepted or working. The SDK closes
   * the products left open when `work` returns normally (see the README). Throws a ReportError;
   * when `err.endsTask` the task is over: stop working.
   * @param {{productId: string, channel: "answer"|"reasoning", text: string, last?: boolean}} delta
   */
  streamText({ productId, channel, text, last = false } = {}) {
    if (typeof productId !== "string") throw new TypeError(`streamText: productId is a string, got ${describe(productId)}`);
    if (!CHANNELS.has(channel)) throw new TypeError(`streamText: channel is "answer" or "reasoning", got ${describe(channel)}`);
    if (typeof text !== "string") throw new TypeError(`streamText: text is a string, got ${describe(text)}`);
    this.#report(() => this.#host.streamText({ productId, channel, text, last: Boolean(last) }));
  }

  /**
   * Streams reasoning: `text` appended to the reasoning of the product `productId` (default
   * `reasoning`). A chat UI may fold it away.
   * @param {string} text
   * @param {{productId?: string, last?: boolean}} [options]
   */
  think(text, { productId = "reasoning", last = false } = {}) {
    this.streamText({ productId, channel: Channel.Reasoning, text, last });
  }

  /**
   * Streams the answer: `text` appended to the answer text of the product `productId` (default
   * `answer`).
   * @param {string} text
   * @param {{productId?: string, last?: boolean}} [options]
   */
  say(text, { productId = "answer", last = false } = {}) {
    this.streamText({ productId, channel: Channel.Answer, text, last });
  }

  /**
   * Reports a tool call: `callId` names it again in `toolResult`, `args` is a plain object (sent
   * as JSON). Shown as activity of the task, never stored as a product. The task must be working.
   * @param {string} callId
   * @param {string} name
   * @param {Record<string, unknown>} [args]
   */
  toolCall(callId, name, args = {}) {
    if (typeof callId !== "string") throw new TypeError(`toolCall: callId is a string, got ${describe(callId)}`);
    if (typeof name !== "string") throw new TypeError(`toolCall: name is a string, got ${describe(name)}`);
    if (!isPlainObject(args)) throw new TypeError(`toolCall: args is a plain object, got ${describe(args)}`);
    const call = { callId, name, arguments: toJson(args, "toolCall: args") };
    this.#report(() => this.#host.reportToolCall(call));
  }

  /**
   * Reports what the tool call `callId` gave back. A string is sent as text (the `text` output);
   * any other value (an object, an array, a number, a boolean, null) as JSON (the `json` output),
   * so a string meant as JSON goes as `JSON.parse(s)`. `isError`: the tool failed and `output`
   * says how. The task must be working.
   * @param {string} callId
   * @param {unknown} output
   * @param {{isError?: boolean}} [options]
   */
  toolResult(callId, output, { isError = false } = {}) {
    if (typeof callId !== "string") throw new TypeError(`toolResult: callId is a string, got ${describe(callId)}`);
    const wit =
      typeof output === "string"
        ? { tag: "text", val: output }
        : { tag: "json", val: toJson(output, "toolResult: output") };
    this.#report(() => this.#host.reportToolResult({ callId, output: wit, isError: Boolean(isError) }));
  }

  /**
   * Reports the token usage of the model calls behind this invocation; every field is optional.
   * The task must be working.
   * @param {{model?: string|null, inputTokens?: number|null, outputTokens?: number|null,
   *          reasoningTokens?: number|null}} usage
   */
  usage({ model = null, inputTokens = null, outputTokens = null, reasoningTokens = null } = {}) {
    if (model !== null && typeof model !== "string") throw new TypeError(`usage: model is a string, got ${describe(model)}`);
    const usage = {
      model,
      inputTokens: tokens(inputTokens, "inputTokens"),
      outputTokens: tokens(outputTokens, "outputTokens"),
      reasoningTokens: tokens(reasoningTokens, "reasoningTokens"),
    };
    this.#report(() => this.#host.reportUsage(usage));
  }

  /** Runs a report of the host's; its refusal becomes a ReportError. */
  #report(fn) {
    try {
      fn();
    } catch (e) {
      throw ReportError.fromWit(e);
    }
  }

  /**
   * Moves the task to `state` with explanatory items: the low-level escape hatch (the SDK already
   * reports what a Decision or an Outcome implies). Throws a ReportError when the host refuses.
   */
  setStatus(state, items = []) {
    if (!STATES.has(state)) throw new TypeError(`unknown task state ${describe(state)}`);
    const wit = items.map((item) => itemToWit(checkItem(item)));
    try {
      this.#host.setStatus(state, wit);
    } catch (e) {
      throw ReportError.fromWit(e);
    }
  }
}

function toNumber(value) {
  if (value === null || value === undefined) return null;
  return Number(value);
}

/** `value` as JSON text; a value without one (undefined, a function, a cycle, a BigInt) is a TypeError. */
function toJson(value, what) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new TypeError(`${what} has no JSON form: ${e.message}`);
  }
  if (text === undefined) throw new TypeError(`${what} has no JSON form: ${describe(value)}`);
  return text;
}

/** A token count: null, or a non-negative safe integer. */
function tokens(value, what) {
  if (value === null || value === undefined) return null;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`usage: ${what} is a non-negative integer, got ${describe(value)}`);
  }
  return value;
}

/** Items from a string (one text item) or DataItems. */
function toItems(value, what) {
  if (typeof value === "string") return [DataItem.text(value)];
  if (!Array.isArray(value)) throw new TypeError(`${what} is a string or an array of DataItems, got ${describe(value)}`);
  return value.map(checkItem);
}

/** What `decide` says about a new task. */
export class Decision {
  /** @private */
  constructor(accept, reason, message = null) {
    /** @type {boolean} */ this.accept = accept;
    /** @type {string|null} */ this.reason = reason;
    /** The plain reply (`Decision.reply`), or null. @type {DataItem[]|null} */ this.message = message;
  }

  /** Take the task on: the SDK reports `accepted`, then `working`, then calls `work`. */
  static accept() {
    return new Decision(true, null);
  }

  /** Refuse it: the SDK reports `rejected` with this reason as a text item. */
  static reject(reason) {
    return new Decision(false, String(reason));
  }

  /**
   * Answer at once with a plain message and create no task: `work` is not called. A client whose
   * protocol has plain replies (A2A) gets a message; an AIP Leader gets a task completed at once
   * with the message as its product. `message` is a text, or DataItems (at least one).
   * @param {string|DataItem[]} message
   */
  static reply(message) {
    const items = toItems(message, "Decision.reply");
    if (items.length === 0) throw new TypeError("Decision.reply needs at least one item");
    return new Decision(false, null, items);
  }
}

/** What `work` says happens next. Build one with the static functions. */
export class Outcome {
  /** @private */
  constructor(kind, fields) {
    /** @type {"need-input"|"ask"|"done"|"reply"|"fail"|"abort"} */ this.kind = kind;
    Object.assign(this, fields);
  }

  /**
   * The partner needs more from the Leader: `awaiting-input` with these items (a question, what is
   * missing). The answer arrives as a continue.
   */
  static needInput(items) {
    return new Outcome("need-input", { items: items.map(checkItem) });
  }

  /**
   * Ask the Leader. With a string: `needInput` with that one text question. With a form
   * (`{form, message?}`, or a Form alone): `awaiting-input` with the form, whose answer arrives on
   * the continue (read it with `formAnswer(input, requestId)`); `message` (a text or DataItems) goes
   * on the status too.
   * @param {string|import("./forms.js").Form|{form: object, message?: string|DataItem[]}} question
   */
  static ask(question) {
    if (typeof question === "string") return Outcome.needInput([DataItem.text(question)]);
    const request = question !== null && typeof question === "object" && "form" in question ? question : { form: question };
    const items = request.message === undefined || request.message === null ? [] : toItems(request.message, "Outcome.ask message");
    return new Outcome("ask", { form: toForm(request.form), items });
  }

  /**
   * The work is done: each product is emitted whole (replacing an earlier one with the same id),
   * then `awaiting-completion`. Products already streamed with `task.emitChunk` stay.
   */
  static done(products = []) {
    return new Outcome("done", { products: [...products] });
  }

  /** Like `done`, with these items on the `awaiting-completion` status (what the partner says). */
  static reply(products, message) {
    return new Outcome("reply", { products: [...products], message: message.map(checkItem) });
  }

  /**
   * The work failed. With a string: `failed` with it as a text item. With `{code, message,
   * retryable, detail}`: `failed` with a code a client can act on (`code`: 1-64 characters of
   * `A-Z 0-9 _`; `retryable`: trying again may succeed, default false; `detail`: a plain object).
   * @param {string|{code: string, message: string, retryable?: boolean, detail?: object|null}} reason
   */
  static fail(reason) {
    if (reason === null || typeof reason !== "object") return new Outcome("fail", { reason: String(reason), failure: null });
    const { code, message, retryable = false, detail = null } = reason;
    if (typeof code !== "string") throw new TypeError(`Outcome.fail: code is a string, got ${describe(code)}`);
    if (typeof message !== "string") throw new TypeError(`Outcome.fail: message is a string, got ${describe(message)}`);
    if (detail !== null && !isPlainObject(detail)) {
      throw new TypeError(`Outcome.fail: detail is a plain object, got ${describe(detail)}`);
    }
    const failure = { code, message, retryable: Boolean(retryable), detail };
    return new Outcome("fail", { reason: message, failure });
  }

  /**
   * Give up without a report: the invocation returns an error with this reason and the host fails
   * the task with it. Prefer `fail`; this is for when reporting itself went wrong.
   */
  static abort(reason) {
    return new Outcome("abort", { reason: String(reason) });
  }
}

