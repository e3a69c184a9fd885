// @aiphost/sdk/testing: run a partner's functions natively in Node against a mock host that keeps
// the task's state, its key-value entries, the logs, config values and the emitted products.
//
//   import { MockHost } from "@aiphost/sdk/testing";
//   const host = new MockHost({ config: { MODEL: "small" } });
//   const turn = await host.start(partner, [DataItem.text("hello")]);
//   assert.equal(turn.state, "awaiting-completion");

import { formAnswerItem } from "./forms.js";
import { DataItem, Product, isPlainObject, itemFromWit, itemToWit, productFromWit, utf8Decode, utf8Encode } from "./items.js";
import { handle, resolvePartner } from "./runtime.js";
import { isFinal } from "./task.js";

/** The transitions a partner may report (the host's table, host/protocol/src/state.rs). */
const ALLOWED = {
  none: ["accepted", "rejected"],
  accepted: ["working"],
  working: ["awaiting-completion", "awaiting-input", "failed"],
};

/** The states the host walks a task through when its invocation fails, from each state. */
const FAILURE_PATH = { none: ["rejected"], accepted: ["working", "failed"], working: ["failed"] };

const KIB = 1024;
/** The host's caps on one report (wit/partner.wit). */
const CAPS = Object.freeze({
  productId: 256,
  deltaText: 64 * KIB,
  callId: 128,
  toolName: 128,
  toolArguments: 64 * KIB,
  toolOutput: 256 * KIB,
  /** Nesting of tool arguments (the host's MAX_JSON_DEPTH). */
  jsonDepth: 64,
  requestId: 128,
  title: 256,
  description: 4 * KIB,
  schema: 64 * KIB,
  schemaDepth: 32,
  code: 64,
  message: 4 * KIB,
  detail: 16 * KIB,
  answerErrors: 20,
});
const REQUEST_ID = /^[A-Za-z0-9._-]+$/;
const CODE = /^[A-Z0-9_]+$/;
// Unicode's control characters (Rust's char::is_control), which a product id may not hold.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

let taskCounter = 0;

/**
 * A continue's form answer does not fit the schema of the form the task asked with: the host
 * refuses the command with these field paths (JSON pointers into the answer), stores nothing and
 * does not invoke the partner.
 */
export class InvalidAnswer extends Error {
  /** @param {{path: string, message: string}[]} errors */
  constructor(errors) {
    super(`the answer does not fit the form: ${errors.map((e) => `${e.path || "/"}: ${e.message}`).join("; ")}`);
    this.name = "InvalidAnswer";
    /** What is wrong, field by field (at most 20). */
    this.errors = errors;
  }
}

/**
 * A mock aiphost for one task at a time: `start`, `continue`, `complete` and `cancel` run the
 * partner as the host would (a fresh invocation each), checking every report against the task
 * state machine and the host's caps. Key-value entries of the agent scope last across tasks of
 * the same MockHost.
 */
export class MockHost {
  /**
   * @param {{config?: Record<string, string>, granted?: string[], kvLimit?: number,
   *          maxProductsBytes?: number|null, taskId?: string, sessionId?: string|null,
   *          leaderId?: string|null, maxActivityEvents?: number, maxActivityBytes?: number}} [options]
   */
  constructor(options = {}) {
    /** Config values the tenant set. */ this.config = { ...(options.config ?? {}) };
    /** Names the manifest asks for (default: every name in `config`). */
    this.granted = new Set(options.granted ?? Object.keys(this.config));
    /** The largest value `kv.set` accepts, in bytes (the host's default is 64 KiB). */
    this.kvLimit = options.kvLimit ?? 64 * KIB;
    /** Activity events (deltas, tool calls and results, usage) a task may report (host: 4096). */
    this.maxActivityEvents = options.maxActivityEvents ?? 4096;
    /** Bytes of tool arguments, tool outputs and usage a task may report (host: 1 MiB). */
    this.maxActivityBytes = options.maxActivityBytes ?? 1024 * KIB;
    /** Every log line of every invocation: {level, message, fields}. */
    this.logs = [];
    /** Entries by scope: `kv.task` (the current task's) and `kv.agent`, values as bytes. */
    this.kv = { task: new Map(), agent: new Map() };
    this.#options = options;
    this.#newTask();
  }
  #options;
  /** The event of the running invocation (`start`, `continue`, ...). */
  #event = null;
  /** Bytes of activity the current task has reported (tool arguments and outputs, usage). */
  #activityBytes = 0;

  #newTask() {
    /** The current task's id. */
    this.taskId = this.#options.taskId ?? `task-${++taskCounter}`;
    /** The task's state (null before a start was accepted or rejected, or after a plain reply). */
    this.state = null;
    /** The task's products by id, as the host merges the chunks and deltas (Product objects). */
    this.products = new Map();
    /** Every status the partner reported on this task: {state, items}. */
    this.statuses = [];
    /** Every activity event of this task, in order (see Turn.activity). */
    this.activity = [];
    /** The form the task waits on (awaiting-input after `Outcome.ask({form})`), or null. */
    this.form = null;
    /** The failure the task ended with (`Outcome.fail({code, ...})`), or null. */
    this.failure = null;
    /** The plain reply a start answered with (`Decision.reply`), or null: then there is no task. */
    this.reply = null;
    this.#activityBytes = 0;
    this.kv.task = new Map();
  }

  /** Starts a new task with `input` (DataItems); resolves to the turn's result. */
  start(partner, input = [], options = {}) {
    this.#newTask();
    return this.#invoke(partner, { tag: "start" }, input, options);
  }

  /**
   * Continues the current task with new input; the task must be awaiting input or completion.
   * When it waits on a form, the answer is checked first as the host checks it: the `data` item
   * tagged with the form's request id (or the one untagged `data` item, which the host tags) must
   * fit the form's schema, else this throws an InvalidAnswer and nothing changes. A continue
   * without data items (a text such as "never mind") reaches the partner as it is.
   */
  continue(partner, input = [], options = {}) {
    if (this.reply !== null) throw new Error("the start was answered with a plain reply: there is no task to continue");
    if (this.state !== "awaiting-input" && this.state !== "awaiting-completion") {
      throw new Error(`cannot continue a task that is ${this.state ?? "not started"}`);
    }
    const items = this.state === "awaiting-input" && this.form !== null ? this.#checkAnswer(input) : input;
    this.state = "working";
    this.form = null;
    return this.#invoke(partner, { tag: "continue" }, items, options);
  }

  /**
   * Answers the form the task waits on with `values` (a continue with the tagged data item, as a
   * door sends it); throws an InvalidAnswer when they do not fit its schema.
   */
  answer(partner, values, options = {}) {
    if (this.state !== "awaiting-input" || this.form === null) {
      throw new Error(`the task does not wait on a form (it is ${this.state ?? "not started"})`);
    }
    return this.continue(partner, [formAnswerItem(this.form.requestId, values)], options);
  }

  /** Completes the current task (reason `leader` or `timeout`) and runs the partner's clean-up. */
  complete(partner, reason = "leader") {
    if (this.state !== "awaiting-completion") throw new Error(`cannot complete a task that is ${this.state}`);
    this.state = "completed";
    return this.#invoke(partner, { tag: "complete", val: reason }, [], {});
  }

  /** Cancels the current task (reason `leader` or `timeout`) and runs the partner's clean-up. */
  cancel(partner, reason = "leader") {
    if (this.state === null || isFinal(this.state)) throw new Error(`cannot cancel a task that is ${this.state}`);
    this.state = "canceled";
    return this.#invoke(partner, { tag: "cancel", val: reason }, [], {});
  }

  /** A stored value decoded from JSON (null when missing), for assertions. */
  kvJson(scope, key) {
    const bytes = this.kv[scope].get(key);
    return bytes === undefined ? null : JSON.parse(utf8Decode(bytes));
  }

  /** The continue's items with the form answer tagged, after checking it against the schema. */
  #checkAnswer(input) {
    const { requestId, schema } = this.form;
    const tagged = (item) => item.metadata?.["aiphost.kind"] === "input-answer";
    let answer = input.find((item) => item.kind === "data" && tagged(item) && item.metadata.requestId === requestId);
    let items = input;
    if (answer === undefined) {
      const untagged = input.filter((item) => item.kind === "data" && !tagged(item));
      if (untagged.length !== 1) return input;
      answer = formAnswerItem(requestId, untagged[0].data);
      items = input.map((item) => (item === untagged[0] ? answer : item));
    }
    const errors = [];
    checkValue(answer.data, schema, "", errors);
    if (errors.length) throw new InvalidAnswer(errors.slice(0, CAPS.answerErrors));
    return items;
  }

  async #invoke(exported, event, input, options) {
    const partner = resolvePartner(exported);
    const logsBefore = this.logs.length;
    const statusesBefore = this.statuses.length;
    const activityBefore = this.activity.length;
    const invocation = {
      event,
      taskId: this.taskId,
      sessionId: options.sessionId ?? this.#options.sessionId ?? null,
      leaderId: options.leaderId ?? this.#options.leaderId ?? null,
      state: this.state,
      // In the WIT shape, as the component receives them.
      dataItems: input.map(itemToWit),
      maxProductsBytes: options.maxProductsBytes ?? this.#options.maxProductsBytes ?? null,
      productsBytes: this.#productsBytes(),
      commandParams: JSON.stringify(options.params ?? {}),
    };
    this.#event = event.tag;
    const formBefore = this.form;
    const failureBefore = this.failure;
    let error = null;
    try {
      await handle(partner, invocation, this.#host());
    } catch (e) {
      if (typeof e !== "string") throw e;
      error = e;
      // The host fails the task with the reason (a new task is rejected); a task that rests or
      // has ended stays as it is, and a plain reply left no task.
      const path = this.reply === null ? FAILURE_PATH[this.state ?? "none"] ?? [] : [];
      for (const state of path) {
        this.state = state;
        const items = state === "working" ? [] : [itemFromWit(textWit(`the partner failed: ${e}`))];
        this.statuses.push({ state, items });
      }
    } finally {
      this.#event = null;
    }
    const statuses = this.statuses.slice(statusesBefore);
    const activity = this.activity.slice(activityBefore);
    const of = (kind) => activity.filter((a) => a.kind === kind);
    const text = (channel) =>
      of("text-delta")
        .filter((d) => d.channel === channel)
        .map((d) => d.text)
        .join("");
    return {
      /** The task's state after the invocation. */
      state: this.state,
      /** The error the invocation returned (the host failed the task with it), or null. */
      error,
      /** The statuses reported during this invocation. */
      statuses,
      /** The items of the last status (a question, a rejection or failure reason). */
      message: statuses.length ? statuses[statuses.length - 1].items : [],
      /** The task's products after the invocation (all of them, chunks and deltas merged). */
      products: [...this.products.values()],
      /** What the partner logged during this invocation. */
      logs: this.logs.slice(logsBefore),
      /** The activity events of this invocation, in order. */
      activity,
      /** The text deltas of this invocation. */
      deltas: of("text-delta"),
      /** The answer text streamed during this invocation (every product's, in order). */
      answer: text("answer"),
      /** The reasoning text streamed during this invocation. */
      reasoning: text("reasoning"),
      /** The tool calls reported during this invocation. */
      toolCalls: of("tool-call"),
      /** The tool results reported during this invocation. */
      toolResults: of("tool-result"),
      /** The usage reported during this invocation. */
      usage: of("usage"),
      /** The form this invocation asked with, or null. */
      form: this.form !== formBefore ? this.form : null,
      /** The failure this invocation reported with a code, or null. */
      failure: this.failure !== failureBefore ? this.failure : null,
      /** The plain reply of this invocation (a start answered without a task), or null. */
      reply: event.tag === "start" ? this.reply : null,
    };
  }

  /** The bytes the task's products hold, as the host counts them against maxProductsBytes. */
  #productsBytes() {
    let total = 0;
    for (const p of this.products.values()) for (const i of p.dataItems) total += i.contentBytes();
    return total;
  }

  #host() {
    const refuse = (tag, val) => {
      throw val === undefined ? { tag } : { tag, val };
    };
    const invalid = (message) => refuse("invalid-data", message);
    /** Refuses a report unless the task is in one of `states` (after the end: task-ended). */
    const require = (what, states) => {
      if (this.reply !== null || (this.state !== null && isFinal(this.state))) refuse("task-ended");
      if (!states.includes(this.state)) {
        refuse("invalid-transition", `${what} while the task is ${this.state ?? "not yet accepted"}`);
      }
    };
    /** Refuses an activity event over the task's caps; counts it otherwise. */
    const count = (event, bytes) => {
      if (this.activity.length >= this.maxActivityEvents) {
        refuse("limit-reached", `a task reports at most ${this.maxActivityEvents} activity events`);
      }
      if (this.#activityBytes + bytes > this.maxActivityBytes) {
        refuse("limit-reached", `a task reports at most ${this.maxActivityBytes} bytes of tool activity and usage`);
      }
      this.#activityBytes += bytes;
      this.activity.push(event);
    };
    const maxProducts = () => this.#options.maxProductsBytes;
    /** Fails the task when its products exceed maxProductsBytes, as the host does. */
    const checkProductsBytes = () => {
      const max = maxProducts();
      if (max !== undefined && max !== null && this.#productsBytes() > max) {
        this.state = "failed";
        refuse("products-too-large", max);
      }
    };
    /** Refuses a change to `state` that the host's transition table does not allow. */
    const transition = (state) => {
      const from = this.state ?? "none";
      if (!(ALLOWED[from] ?? []).includes(state)) refuse("invalid-transition", `${from} -> ${state}`);
    };
    /** Moves the task to `state` with its status items, as set-status does. */
    const move = (state, items) => {
      transition(state);
      this.state = state;
      this.statuses.push({ state, items });
    };
    return {
      setStatus: (state, items) => {
        if (this.reply !== null || (this.state !== null && isFinal(this.state))) refuse("task-ended");
        transition(state);
        move(state, items.map(checkWitItem));
      },
      emitProductChunk: (chunk) => {
        if (this.reply !== null || (this.state !== null && isFinal(this.state))) refuse("task-ended");
        const incoming = productFromWit(chunk.product);
        const existing = this.products.get(incoming.id);
        if (chunk.append && existing) existing.dataItems.push(...incoming.dataItems);
        else this.products.set(incoming.id, incoming);
        checkProductsBytes();
      },
      currentState: () => this.state,
      streamText: ({ productId, channel, text, last }) => {
        require("stream-text", ["accepted", "working"]);
        checkProductId(productId, invalid);
        if (utf8Encode(text).length > CAPS.deltaText) invalid(`a delta's text is at most ${CAPS.deltaText} bytes`);
        if (text === "" && !last) invalid("a delta's text is empty only with last");
        count({ kind: "text-delta", productId, channel, text, last }, 0);
        if (this.state === "accepted") move("working", []);
        appendText(this.products, productId, channel, text);
        checkProductsBytes();
      },
      reportToolCall: ({ callId, name, arguments: args }) => {
        require("report-tool-call", ["working"]);
        checkName(callId, "call id", CAPS.callId, invalid);
        checkName(name, "tool name", CAPS.toolName, invalid);
        const size = utf8Encode(args).length;
        if (size > CAPS.toolArguments) invalid(`tool arguments are at most ${CAPS.toolArguments} bytes`);
        const parsed = parseJson(args, "tool arguments", CAPS.jsonDepth, invalid);
        if (!isPlainObject(parsed)) invalid("tool arguments are a JSON object");
        count({ kind: "tool-call", callId, name, arguments: parsed }, size);
      },
      reportToolResult: ({ callId, output, isError }) => {
        require("report-tool-result", ["working"]);
        checkName(callId, "call id", CAPS.callId, invalid);
        const size = utf8Encode(output.val).length;
        if (size > CAPS.toolOutput) invalid(`a tool output is at most ${CAPS.toolOutput} bytes`);
        const value = output.tag === "json" ? parseJson(output.val, "a json tool output", Infinity, invalid) : output.val;
        count({ kind: "tool-result", callId, output: value, outputKind: output.tag, isError }, size);
      },
      reportUsage: (usage) => {
        require("report-usage", ["working"]);
        const record = {
          kind: "usage",
          model: usage.model ?? null,
          inputTokens: usage.inputTokens ?? null,
          outputTokens: usage.outputTokens ?? null,
          reasoningTokens: usage.reasoningTokens ?? null,
        };
        count(record, utf8Encode(JSON.stringify(record)).length);
      },
      ask: (request, items) => {
        require("ask", ["working"]);
        const form = checkRequest(request, invalid);
        const parsed = items.map(checkWitItem);
        const text = form.description === null ? form.title : `${form.title}\n${form.description}`;
        const described = DataItem.data({ ...form }).withMetadata({ "aiphost.kind": "input-request" });
        move("awaiting-input", [DataItem.text(text), described, ...parsed]);
        this.form = form;
      },
      fail: ({ code, message, retryable, detail }) => {
        require("fail", ["working"]);
        if (utf8Encode(code).length > CAPS.code || !CODE.test(code)) {
          invalid(`a failure code is 1-${CAPS.code} characters of A-Z 0-9 _, not ${JSON.stringify(code)}`);
        }
        if (utf8Encode(message).length > CAPS.message) invalid(`a failure message is at most ${CAPS.message} bytes`);
        let details = null;
        if (detail !== undefined && detail !== null) {
          if (utf8Encode(detail).length > CAPS.detail) invalid(`a failure's detail is at most ${CAPS.detail} bytes`);
          details = parseJson(detail, "a failure's detail", Infinity, invalid);
          if (!isPlainObject(details)) invalid("a failure's detail is a JSON object");
        }
        const failure = { code, message, retryable, detail: details };
        move("failed", [DataItem.text(message), DataItem.data({ ...failure }).withMetadata({ "aiphost.kind": "failure" })]);
        this.failure = failure;
      },
      reply: (items) => {
        if (this.reply !== null || (this.state !== null && isFinal(this.state))) refuse("task-ended");
        if (this.#event !== "start" || this.state !== null) {
          refuse("invalid-transition", `a plain reply answers a start before it is accepted or rejected (the task is ${this.state ?? this.#event})`);
        }
        if (items.length === 0) invalid("a reply has at least one item");
        this.reply = items.map(checkWitItem);
      },
      kvGet: (scope, key) => this.kv[scope].get(key) ?? null,
      kvSet: (scope, key, value) => {
        if (value.length > this.kvLimit) refuse("too-large", `values are at most ${this.kvLimit} bytes`);
        this.kv[scope].set(key, Uint8Array.from(value));
      },
      kvDelete: (scope, key) => {
        this.kv[scope].delete(key);
      },
      log: (level, message, fields) => {
        this.logs.push({ level, message, fields: Object.fromEntries(fields) });
      },
      configGet: (name) => {
        if (!this.granted.has(name)) refuse("not-granted");
        if (!(name in this.config)) refuse("not-set");
        return this.config[name];
      },
    };
  }
}

/**
 * Appends a delta's text to the product's text of its channel as the host merges it: onto the
 * product's last item when that is the channel's text (metadata `aiphost.kind` `answer` or
 * `reasoning`), else as a new text item.
 */
function appendText(products, productId, channel, text) {
  let product = products.get(productId);
  if (product === undefined) {
    product = new Product(productId);
    products.set(productId, product);
  }
  if (text === "") return;
  const kind = channel;
  const last = product.dataItems[product.dataItems.length - 1];
  if (last?.kind === "text" && last.metadata?.["aiphost.kind"] === kind) last.text += text;
  else product.dataItems.push(DataItem.text(text).withMetadata({ "aiphost.kind": kind }));
}

function checkProductId(id, invalid) {
  const size = utf8Encode(id).length;
  if (size === 0 || size > CAPS.productId || CONTROL.test(id)) {
    invalid(`a product id is 1-${CAPS.productId} bytes without control characters, not ${JSON.stringify(id)}`);
  }
}

function checkName(value, what, max, invalid) {
  const size = utf8Encode(value).length;
  if (size === 0 || size > max) invalid(`a ${what} is 1-${max} bytes, not ${JSON.stringify(value)}`);
}

/** JSON text parsed, refused as invalid-data when malformed or nested deeper than `maxDepth`. */
function parseJson(text, what, maxDepth, invalid) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    invalid(`${what} is not JSON: ${e.message}`);
  }
  if (maxDepth !== Infinity && depth(value) > maxDepth) invalid(`${what} is nested deeper than ${maxDepth} levels`);
  return value;
}

function depth(value) {
  if (value === null || typeof value !== "object") return 0;
  let max = 0;
  for (const v of Object.values(value)) max = Math.max(max, depth(v));
  return max + 1;
}

/**
 * An `input-request` checked as the host checks it, as {requestId, title, description, schema}
 * with the schema parsed. The host also checks the schema against the JSON Schema meta-schema and
 * refuses a remote `$ref`; the mock checks size, nesting and the top-level `"type": "object"`.
 */
function checkRequest({ requestId, title, description, schema }, invalid) {
  if (utf8Encode(requestId).length > CAPS.requestId || !REQUEST_ID.test(requestId)) {
    invalid(`a request id is 1-${CAPS.requestId} characters of A-Z a-z 0-9 . _ -, not ${JSON.stringify(requestId)}`);
  }
  checkName(title, "form title", CAPS.title, invalid);
  const desc = description ?? null;
  if (desc !== null && utf8Encode(desc).length > CAPS.description) {
    invalid(`a form description is at most ${CAPS.description} bytes`);
  }
  if (utf8Encode(schema).length > CAPS.schema) invalid(`a form schema is at most ${CAPS.schema} bytes`);
  const parsed = parseJson(schema, "the form schema", CAPS.schemaDepth, invalid);
  if (!isPlainObject(parsed) || parsed.type !== "object") invalid('a form schema\'s top level is {"type": "object", ...}');
  return { requestId, title, description: desc, schema: parsed };
}

const TYPES = {
  object: isPlainObject,
  array: Array.isArray,
  string: (v) => typeof v === "string",
  integer: Number.isInteger,
  number: (v) => typeof v === "number" && Number.isFinite(v),
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
};

/**
 * Checks `value` against `schema`, pushing {path, message} for each error. A subset of JSON
 * Schema, enough for forms: `type`, `enum`, `const`, `required`, `properties`,
 * `additionalProperties: false`, `items`, `minimum`, `maximum`, `minLength`, `maxLength`,
 * `minItems`, `maxItems`. The host validates the whole of draft 2020-12.
 */
function checkValue(value, schema, path, errors) {
  if (!isPlainObject(schema)) return;
  const err = (message) => errors.push({ path, message });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => TYPES[t]?.(value))) return err(`${JSON.stringify(value)} is not of type ${types.join(" or ")}`);
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => sameJson(e, value))) {
    err(`${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (schema.const !== undefined && !sameJson(schema.const, value)) err(`${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) err(`${value} is less than the minimum of ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) err(`${value} is greater than the maximum of ${schema.maximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof schema.minLength === "number" && length < schema.minLength) err(`${JSON.stringify(value)} is shorter than ${schema.minLength} characters`);
    if (typeof schema.maxLength === "number" && length > schema.maxLength) err(`${JSON.stringify(value)} is longer than ${schema.maxLength} characters`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) err(`has fewer than ${schema.minItems} items`);
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) err(`has more than ${schema.maxItems} items`);
    if (isPlainObject(schema.items)) value.forEach((v, i) => checkValue(v, schema.items, `${path}/${i}`, errors));
  }
  if (isPlainObject(value)) {
    for (const name of Array.isArray(schema.required) ? schema.required : []) {
      if (!(name in value)) err(`"${name}" is a required property`);
    }
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    for (const [name, v] of Object.entries(value)) {
      const at = `${path}/${pointer(name)}`;
      if (name in properties) checkValue(v, properties[name], at, errors);
      else if (schema.additionalProperties === false) errors.push({ path: at, message: `"${name}" is not allowed` });
    }
  }
}

/** A property name escaped as a JSON Pointer token. */
function pointer(name) {
  return name.replace(/~/g, "~0").replace(/\//g, "~1");
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function textWit(text) {
  return { kind: { tag: "text", val: text }, metadata: null };
}

function checkWitItem(wit) {
  try {
    return itemFromWit(wit);
  } catch (e) {
    throw { tag: "invalid-data", val: e.message };
  }
}
