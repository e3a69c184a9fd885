// Types of @aiphost/sdk. The implementation is plain ESM JavaScript in this directory.

/** The AIP task states (spec section 4.2). */
export type TaskState =
  | "accepted"
  | "working"
  | "awaiting-input"
  | "awaiting-completion"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected";

/** The states by name: `State.AwaitingInput === "awaiting-input"`. */
export declare const State: {
  readonly Accepted: "accepted";
  readonly Working: "working";
  readonly AwaitingInput: "awaiting-input";
  readonly AwaitingCompletion: "awaiting-completion";
  readonly Completed: "completed";
  readonly Canceled: "canceled";
  readonly Failed: "failed";
  readonly Rejected: "rejected";
};

/** Whether `state` is final (completed, canceled, failed or rejected). */
export declare function isFinal(state: TaskState): boolean;

/** Why a task reached `completed` / `canceled`: the Leader's command, or a timeout. */
export type EndReason = "leader" | "timeout";
export declare const EndReason: { readonly Leader: "leader"; readonly Timeout: "timeout" };

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/** Which text of a product a delta extends: what the partner answers, or what it thinks. */
export type Channel = "answer" | "reasoning";
export declare const Channel: { readonly Answer: "answer"; readonly Reasoning: "reasoning" };

/** A file carried by a DataItem: inline bytes or a URI, with an optional name and MIME type. */
export declare class File {
  constructor(init: { uri?: string; bytes?: Uint8Array | string | number[]; name?: string | null; mimeType?: string | null });
  /** A file whose content is at `uri`. */
  static uri(uri: string): File;
  /** A file carrying `bytes` (a string is encoded as UTF-8). */
  static bytes(bytes: Uint8Array | string | number[]): File;
  /** The URI, for a file by reference. */
  uri: string | null;
  /** The bytes, for an inline file. */
  bytes: Uint8Array | null;
  name: string | null;
  mimeType: string | null;
  named(name: string): this;
  withMimeType(mimeType: string): this;
}

/** One AIP DataItem: text, a file or a JSON object, with optional metadata. */
export declare class DataItem {
  private constructor();
  /** A text item. */
  static text(text: string): DataItem;
  /** A data item: a plain object as it is, any other value `v` as `{value: v}`. */
  static data(value: unknown): DataItem;
  /** A file item. */
  static file(file: File): DataItem;
  /** A file item whose content is at `uri`. */
  static fileUri(uri: string): DataItem;
  /** A file item carrying `bytes` inline. */
  static fileBytes(bytes: Uint8Array | string | number[]): DataItem;
  readonly kind: "text" | "data" | "file";
  readonly text: string | undefined;
  readonly data: JsonObject | undefined;
  readonly file: File | undefined;
  metadata: JsonObject | null;
  /** Sets the item's metadata (a plain object). */
  withMetadata(metadata: JsonObject): this;
  /** The text, if this is a text item. */
  asText(): string | null;
  /** The object, if this is a data item. */
  asData(): JsonObject | null;
  /** The file, if this is a file item. */
  asFile(): File | null;
  /** The bytes this item counts for against `maxProductsBytes`, as the host counts them. */
  contentBytes(): number;
}

/** A product (an AIP artifact): the result of a task, made of DataItems. */
export declare class Product {
  /** An empty product; a chunk with the same id appends to or replaces it. */
  constructor(id: string);
  id: string;
  name: string | null;
  description: string | null;
  dataItems: DataItem[];
  named(name: string): this;
  described(description: string): this;
  withItem(item: DataItem): this;
  withItems(items: Iterable<DataItem>): this;
}

/** Why the host refused a report. */
export type ReportErrorCode =
  | "invalid-transition"
  | "task-ended"
  | "products-too-large"
  | "invalid-data"
  /** The task's activity cap (events or bytes) is used up; the task is unchanged. */
  | "limit-reached";

/** The host refused a report. */
export declare class ReportError extends Error {
  readonly code: ReportErrorCode;
  /** The host's detail: the transition, the byte limit, what is malformed, the cap. */
  readonly detail: string | number | null;
  /** Whether the task is over after this error (`task-ended` or `products-too-large`): stop working. */
  readonly endsTask: boolean;
}

/** A key-value operation failed. */
export declare class KvError extends Error {
  /** `json`: a stored value is not the JSON expected, or a value has no JSON form. */
  readonly code: "too-large" | "quota-exceeded" | "unavailable" | "json";
  readonly detail: string;
}

/** A config value is not there. */
export declare class ConfigError extends Error {
  /** `not-granted`: the manifest does not ask for the name; `not-set`: the tenant has not set it. */
  readonly code: "not-granted" | "not-set";
}

/** The durable key-value store the host keeps for a partner (one scope of it). Errors are KvErrors. */
export declare class Kv {
  private constructor();
  readonly scope: "task" | "agent";
  /** The bytes stored under `key`, or null. */
  get(key: string): Uint8Array | null;
  /** The value under `key` as UTF-8 text, or null. */
  getText(key: string): string | null;
  /** The value under `key` decoded from JSON, or null when there is none. */
  getJson<T = unknown>(key: string): T | null;
  /** Stores bytes (a string as UTF-8) under `key`. */
  set(key: string, value: Uint8Array | string): void;
  /** Stores `value` under `key` as JSON. */
  setJson(key: string, value: unknown): void;
  /** Removes `key` (a missing key is not an error). */
  delete(key: string): void;
}

/** The task the current invocation is about. It lives for one invocation; use `kv` to remember. */
export declare class Task {
  private constructor();
  readonly id: string;
  /** The session the task belongs to, if the Leader gave one. */
  readonly sessionId: string | null;
  /** The Leader's identity (its AIC), if it gave one. */
  readonly leaderId: string | null;
  /** Whether this invocation starts the task. */
  readonly isStart: boolean;
  /** Whether this invocation continues the task with new input. */
  readonly isContinue: boolean;
  /** The state when this invocation began; null for a new task. */
  readonly initialState: TaskState | null;
  /** The Leader's `maxProductsBytes`, if it set one. */
  readonly maxProductsBytes: number | null;
  /** Product bytes the task held when this invocation began. */
  readonly productsBytes: number;
  /** How many more product bytes `maxProductsBytes` allows (as of the invocation's start), or null. */
  readonly productsBytesLeft: number | null;
  /** The command's `commandParams` (`{}` when there were none). */
  readonly params: JsonObject;
  /** This task's key-value entries. */
  readonly kv: Kv;
  /** The key-value entries shared by all tasks of this partner. */
  readonly agentKv: Kv;
  /** The task's state right now, asked of the host; null while a new task is not yet accepted. */
  state(): TaskState | null;
  /**
   * Streams (part of) a product now: `append` adds to the product with the same id, otherwise it is
   * replaced; `last` says it is whole. Throws a ReportError (stop when `err.endsTask`).
   */
  emitChunk(product: Product, append?: boolean, last?: boolean): void;
  /**
   * Appends text to a product's text of a channel, as an LLM streams tokens; `last` says the
   * product is whole (default false: the SDK closes products left open when `work` returns
   * normally). The task must be accepted or working. Throws a ReportError.
   */
  streamText(delta: TextDelta): void;
  /** Streams reasoning into the product `productId` (default `reasoning`). */
  think(text: string, options?: StreamOptions): void;
  /** Streams the answer into the product `productId` (default `answer`). */
  say(text: string, options?: StreamOptions): void;
  /**
   * Reports a tool call (activity of the task, not a product); `args` is sent as JSON. The task
   * must be working. Throws a ReportError.
   */
  toolCall(callId: string, name: string, args?: JsonObject): void;
  /**
   * Reports a tool call's outcome. A string goes as text; any other value (object, array, number,
   * boolean, null) as JSON. The task must be working. Throws a ReportError.
   */
  toolResult(callId: string, output: unknown, options?: { isError?: boolean }): void;
  /** Reports token usage (every field optional). The task must be working. Throws a ReportError. */
  usage(usage: Usage): void;
  /** The escape hatch: report any state yourself. Throws a ReportError when the host refuses. */
  setStatus(state: TaskState, items?: DataItem[]): void;
}

/** A piece of text appended to one text item of one product. */
export interface TextDelta {
  /** The product: 1-256 bytes, no control characters. */
  productId: string;
  channel: Channel;
  /** At most 64 KiB; empty only together with `last`. */
  text: string;
  /** The product is whole after this delta. */
  last?: boolean;
}

/** Options of `task.think` / `task.say`. */
export interface StreamOptions {
  /** The product the text goes to (default `reasoning` for think, `answer` for say). */
  productId?: string;
  /** The product is whole after this delta. */
  last?: boolean;
}

/** Token counts of the model calls behind an invocation. */
export interface Usage {
  model?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  reasoningTokens?: number | null;
}

/** A JSON Schema of an object: what a form asks for. */
export interface ObjectSchema {
  type: "object";
  properties?: Record<string, JsonObject>;
  required?: string[];
  [keyword: string]: unknown;
}

/** The fields of a Form. */
export interface FormInit {
  /** Names the answer: 1-128 characters of `A-Z a-z 0-9 . _ -`. */
  requestId: string;
  /** 1-256 bytes. */
  title: string;
  /** At most 4 KiB. */
  description?: string | null;
  /** The JSON Schema of the answer (at most 64 KiB as JSON, 32 levels deep). */
  schema: ObjectSchema;
}

/** A form: the partner asks for structured input and waits (`Outcome.ask({form})`). */
export declare class Form {
  constructor(init: FormInit);
  readonly requestId: string;
  readonly title: string;
  readonly description: string | null;
  readonly schema: ObjectSchema;
}

/**
 * The answer to the form `requestId` among a continue's input (the `data` item the host tagged
 * `{"aiphost.kind": "input-answer", "requestId": requestId}`), or null when there is none. The
 * host has checked it against the form's schema; `T` names its shape.
 */
export declare function formAnswer<T = JsonObject>(input: DataItem[], requestId: string): T | null;

/** A data item answering the form `requestId` with `values`, tagged as the host tags it (for tests). */
export declare function formAnswerItem(requestId: string, values: JsonObject): DataItem;

/** A failure with a code a client can act on. */
export interface Failure {
  /** 1-64 characters of `A-Z 0-9 _`, for example `RATE_LIMITED`. */
  code: string;
  /** For people, at most 4 KiB. */
  message: string;
  /** Trying the same request again may succeed (default false). */
  retryable?: boolean;
  /** More detail (at most 16 KiB as JSON). */
  detail?: JsonObject | null;
}

/** What `decide` says about a new task. */
export declare class Decision {
  private constructor();
  readonly accept: boolean;
  readonly reason: string | null;
  /** The plain reply, for `Decision.reply`. */
  readonly message: DataItem[] | null;
  /** Take the task on: `accepted`, `working`, then `work`. */
  static accept(): Decision;
  /** Refuse it: `rejected` with the reason as a text item. */
  static reject(reason: string): Decision;
  /**
   * Answer at once with a plain message and create no task (`work` is not called): A2A gets a
   * `Message`, AIP a task completed at once with the message as its product.
   */
  static reply(message: string | DataItem[]): Decision;
}

/** What `work` says happens next. */
export declare class Outcome {
  private constructor();
  readonly kind: "need-input" | "ask" | "done" | "reply" | "fail" | "abort";
  /** `awaiting-input` with these items (a question, what is missing); the answer comes as a continue. */
  static needInput(items: DataItem[]): Outcome;
  /** `needInput` with one text question. */
  static ask(question: string): Outcome;
  /**
   * `awaiting-input` with a form (and `message` on the status); the answer comes on the continue:
   * `formAnswer(input, form.requestId)`.
   */
  static ask(request: { form: Form | FormInit; message?: string | DataItem[] }): Outcome;
  /** `ask({form})`. */
  static ask(form: Form): Outcome;
  /** Each product emitted whole, then `awaiting-completion`. */
  static done(products?: Product[]): Outcome;
  /** Like `done`, with `message` on the `awaiting-completion` status. */
  static reply(products: Product[], message: DataItem[]): Outcome;
  /** `failed` with the reason as a text item. */
  static fail(reason: string): Outcome;
  /** `failed` with a code, a message, whether a retry may succeed, and detail. */
  static fail(failure: Failure): Outcome;
  /** No report: the invocation returns an error and the host fails the task with it. */
  static abort(reason: string): Outcome;
}

/** A value, or a promise of one (StarlingMonkey runs promises to completion; QuickJS needs values). */
export type MaybePromise<T> = T | Promise<T>;

/** A partner: `work` is required, the rest have defaults (accept; no clean-up). */
export interface Partner {
  /** A new task: accept or reject it. Default: accept. */
  decide?(task: Task, input: DataItem[]): MaybePromise<Decision>;
  /** After an accepted start, and on every continue, with the command's input. */
  work(task: Task, input: DataItem[]): MaybePromise<Outcome>;
  /** The task was completed (clean-up only: reports are refused). */
  completed?(task: Task, reason: EndReason): MaybePromise<void>;
  /** The task was canceled (clean-up only: reports are refused). */
  canceled?(task: Task, reason: EndReason): MaybePromise<void>;
}

/** Returns `partner` unchanged, typed: `export default definePartner({ work(task, input) { ... } })`. */
export declare function definePartner<T extends Partner>(partner: T): T;

/** Log fields: an object, or [key, value] pairs; non-string values are logged as JSON. */
export type LogFields = Record<string, unknown> | Array<[string, unknown]>;
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

/** Structured logging into the host's `tracing`, tagged with the agent and task (stderr outside one). */
export declare const log: {
  log(level: LogLevel, message: string, fields?: LogFields): void;
  trace(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
};

/** Named config values the manifest asks for (`[capabilities] config`) and the tenant sets. */
export declare const config: {
  /** The value; throws a ConfigError when it is not granted or not set. */
  get(name: string): string;
  /** The value, or `fallback` when it is not granted or not set. */
  getOr<T>(name: string, fallback: T): string | T;
};
