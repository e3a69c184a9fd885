// @aiphost/sdk/testing: run a partner's functions natively in Node against a mock host that keeps
// the task's state, its key-value entries, the logs, config values and the emitted products.
//
//   import { MockHost } from "@aiphost/sdk/testing";
//   const host = new MockHost({ config: { MODEL: "small" } });
//   const turn = await host.start(partner, [DataItem.text("hello")]);
//   assert.equal(turn.state, "awaiting-completion");

import { itemFromWit, itemToWit, productFromWit, utf8Decode } from "./items.js";
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

let taskCounter = 0;

/**
 * A mock aiphost for one task at a time: `start`, `continue`, `complete` and `cancel` run the
 * partner as the host would (a fresh invocation each), checking every report against the task
 * state machine. Key-value entries of the agent scope last across tasks of the same MockHost.
 */
export class MockHost {
  /**
   * @param {{config?: Record<string, string>, granted?: string[], kvLimit?: number,
   *          maxProductsBytes?: number|null, taskId?: string, sessionId?: string|null,
   *          leaderId?: string|null}} [options]
   */
  constructor(options = {}) {
    /** Config values the tenant set. */ this.config = { ...(options.config ?? {}) };
    /** Names the manifest asks for (default: every name in `config`). */
    this.granted = new Set(options.granted ?? Object.keys(this.config));
    /** The largest value `kv.set` accepts, in bytes (the host's default is 64 KiB). */
    this.kvLimit = options.kvLimit ?? 64 * 1024;
    /** Every log line of every invocation: {level, message, fields}. */
    this.logs = [];
    /** Entries by scope: `kv.task` (the current task's) and `kv.agent`, values as bytes. */
    this.kv = { task: new Map(), agent: new Map() };
    this.#options = options;
    this.#newTask();
  }
  #options;

  #newTask() {
    /** The current task's id. */
    this.taskId = this.#options.taskId ?? `task-${++taskCounter}`;
    /** The task's state (null before a start was accepted or rejected). */
    this.state = null;
    /** The task's products by id, as the host merges the chunks (Product objects). */
    this.products = new Map();
    /** Every status the partner reported on this task: {state, items}. */
    this.statuses = [];
    this.kv.task = new Map();
  }

  /** Starts a new task with `input` (DataItems); resolves to the turn's result. */
  start(partner, input = [], options = {}) {
    this.#newTask();
    return this.#invoke(partner, { tag: "start" }, input, options);
  }

  /** Continues the current task with new input; the task must be awaiting input or completion. */
  continue(partner, input = [], options = {}) {
    if (this.state !== "awaiting-input" && this.state !== "awaiting-completion") {
      throw new Error(`cannot continue a task that is ${this.state ?? "not started"}`);
    }
    this.state = "working";
    return this.#invoke(partner, { tag: "continue" }, input, options);
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

  async #invoke(exported, event, input, options) {
    const partner = resolvePartner(exported);
    const logsBefore = this.logs.length;
    const statusesBefore = this.statuses.length;
    const bytes = [...this.products.values()].reduce(
      (n, p) => n + p.dataItems.reduce((m, i) => m + i.contentBytes(), 0),
      0,
    );
    const invocation = {
      event,
      taskId: this.taskId,
      sessionId: options.sessionId ?? this.#options.sessionId ?? null,
      leaderId: options.leaderId ?? this.#options.leaderId ?? null,
      state: this.state,
      // In the WIT shape, as the component receives them.
      dataItems: input.map(itemToWit),
      maxProductsBytes: options.maxProductsBytes ?? this.#options.maxProductsBytes ?? null,
      productsBytes: bytes,
      commandParams: JSON.stringify(options.params ?? {}),
    };
    let error = null;
    try {
      await handle(partner, invocation, this.#host());
    } catch (e) {
      if (typeof e !== "string") throw e;
      error = e;
      // The host fails the task with the reason (a new task is rejected); a task that rests or
      // has ended stays as it is.
      for (const state of FAILURE_PATH[this.state ?? "none"] ?? []) {
        this.state = state;
        const items = state === "working" ? [] : [itemFromWit(textWit(`the partner failed: ${e}`))];
        this.statuses.push({ state, items });
      }
    }
    const statuses = this.statuses.slice(statusesBefore);
    return {
      /** The task's state after the invocation. */
      state: this.state,
      /** The error the invocation returned (the host failed the task with it), or null. */
      error,
      /** The statuses reported during this invocation. */
      statuses,
      /** The items of the last status (a question, a rejection or failure reason). */
      message: statuses.length ? statuses[statuses.length - 1].items : [],
      /** The task's products after the invocation (all of them, merged). */
      products: [...this.products.values()],
      /** What the partner logged during this invocation. */
      logs: this.logs.slice(logsBefore),
    };
  }

  #host() {
    const refuse = (tag, val) => {
      throw val === undefined ? { tag } : { tag, val };
    };
    return {
      setStatus: (state, items) => {
        const from = this.state ?? "none";
        if (isFinal(from)) refuse("task-ended");
        if (!(ALLOWED[from] ?? []).includes(state)) refuse("invalid-transition", `${from} -> ${state}`);
        const parsed = items.map(checkWitItem);
        this.state = state;
        this.statuses.push({ state, items: parsed });
      },
      emitProductChunk: (chunk) => {
        if (this.state !== null && isFinal(this.state)) refuse("task-ended");
        const incoming = productFromWit(chunk.product);
        const existing = this.products.get(incoming.id);
        if (chunk.append && existing) existing.dataItems.push(...incoming.dataItems);
        else this.products.set(incoming.id, incoming);
        const max = this.#options.maxProductsBytes;
        if (max !== undefined && max !== null) {
          let total = 0;
          for (const p of this.products.values()) for (const i of p.dataItems) total += i.contentBytes();
          if (total > max) {
            this.state = "failed";
            refuse("products-too-large", max);
          }
        }
      },
      currentState: () => this.state,
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

