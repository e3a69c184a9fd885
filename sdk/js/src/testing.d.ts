// Types of @aiphost/sdk/testing.
import type { Channel, DataItem, EndReason, JsonObject, ObjectSchema, Partner, Product, TaskState } from "./index.js";

export interface LogLine {
  level: "trace" | "debug" | "info" | "warn" | "error";
  message: string;
  fields: Record<string, string>;
}

export interface Status {
  state: TaskState;
  items: DataItem[];
}

/** A text delta the partner streamed (`task.say`, `task.think`, `task.streamText`, or the SDK's closing one). */
export interface TextDeltaEvent {
  kind: "text-delta";
  productId: string;
  channel: Channel;
  text: string;
  last: boolean;
}

/** A tool call the partner reported, its arguments parsed. */
export interface ToolCallEvent {
  kind: "tool-call";
  callId: string;
  name: string;
  arguments: JsonObject;
}

/** A tool result the partner reported: `output` is the parsed JSON (`outputKind` json) or the text. */
export interface ToolResultEvent {
  kind: "tool-result";
  callId: string;
  output: unknown;
  outputKind: "json" | "text";
  isError: boolean;
}

/** Usage the partner reported (null for what it left out). */
export interface UsageEvent {
  kind: "usage";
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  reasoningTokens: number | null;
}

/** One activity event of a task, in the order reported. */
export type ActivityEvent = TextDeltaEvent | ToolCallEvent | ToolResultEvent | UsageEvent;

/** A form the partner asked with, its schema parsed. */
export interface AskedForm {
  requestId: string;
  title: string;
  description: string | null;
  schema: ObjectSchema;
}

/** A failure the partner reported with a code, its detail parsed. */
export interface ReportedFailure {
  code: string;
  message: string;
  retryable: boolean;
  detail: JsonObject | null;
}

/**
 * A continue's form answer does not fit the form's schema: the host refuses the command with the
 * failing fields (JSON pointers into the answer), stores nothing and does not invoke the partner.
 */
export declare class InvalidAnswer extends Error {
  readonly errors: Array<{ path: string; message: string }>;
}

/** What one invocation did. */
export interface Turn {
  /** The task's state after the invocation. */
  state: TaskState | null;
  /** The error the invocation returned (the host failed the task with it), or null. */
  error: string | null;
  /** The statuses reported during this invocation. */
  statuses: Status[];
  /**
   * The items of the last status: a question, a rejection or failure reason. After a form, the
   * title (and description) as text, then the request as a data item with metadata
   * `aiphost.kind: input-request`, then the partner's items; after a failure with a code, the
   * message as text, then the failure as a data item (`aiphost.kind: failure`).
   */
  message: DataItem[];
  /**
   * All products of the task after the invocation, with chunks merged; streamed text is merged
   * into one text item per run of deltas of a channel (metadata `aiphost.kind` `answer` or
   * `reasoning`).
   */
  products: Product[];
  /** What the partner logged during this invocation. */
  logs: LogLine[];
  /** The activity events of this invocation, in order. */
  activity: ActivityEvent[];
  /** The text deltas of this invocation (including the SDK's empty closing ones). */
  deltas: TextDeltaEvent[];
  /** The answer text streamed during this invocation, all products' deltas joined in order. */
  answer: string;
  /** The reasoning text streamed during this invocation. */
  reasoning: string;
  toolCalls: ToolCallEvent[];
  toolResults: ToolResultEvent[];
  usage: UsageEvent[];
  /** The form this invocation asked with, or null. */
  form: AskedForm | null;
  /** The failure with a code this invocation reported, or null. */
  failure: ReportedFailure | null;
  /** The plain reply a start answered with (then there is no task: `state` is null), or null. */
  reply: DataItem[] | null;
}

export interface InvokeOptions {
  /** The command's `commandParams`. */
  params?: Record<string, unknown>;
  sessionId?: string | null;
  leaderId?: string | null;
  maxProductsBytes?: number | null;
}

export interface MockHostOptions {
  /** Config values the tenant set. */
  config?: Record<string, string>;
  /** Names the manifest asks for (default: the names in `config`). */
  granted?: string[];
  /** The largest kv value in bytes (default 64 KiB). */
  kvLimit?: number;
  maxProductsBytes?: number | null;
  taskId?: string;
  sessionId?: string | null;
  leaderId?: string | null;
  /** Activity events (deltas, tool calls and results, usage) a task may report (default 4096, as the host). */
  maxActivityEvents?: number;
  /** Bytes of tool arguments, tool outputs and usage a task may report (default 1 MiB). */
  maxActivityBytes?: number;
}

/**
 * A mock aiphost for one task at a time: each call is one fresh invocation, as in the host, and
 * every report is checked against the task state machine and the host's caps (sizes, formats,
 * the activity cap: over it `limit-reached`). Forms: the schema's size, nesting and top-level
 * `"type": "object"` are checked (the host also checks it against the meta-schema), and answers
 * against a subset of JSON Schema (type, enum, const, required, properties,
 * additionalProperties: false, items, minimum/maximum, min/maxLength, min/maxItems). Agent-scope
 * kv lasts across tasks.
 */
export declare class MockHost {
  constructor(options?: MockHostOptions);
  config: Record<string, string>;
  granted: Set<string>;
  kvLimit: number;
  logs: LogLine[];
  kv: { task: Map<string, Uint8Array>; agent: Map<string, Uint8Array> };
  taskId: string;
  state: TaskState | null;
  products: Map<string, Product>;
  statuses: Status[];
  /** Every activity event of the current task, in order. */
  activity: ActivityEvent[];
  /** The form the task waits on, or null. */
  form: AskedForm | null;
  /** The failure with a code the task ended with, or null. */
  failure: ReportedFailure | null;
  /** The plain reply the start answered with, or null. */
  reply: DataItem[] | null;
  maxActivityEvents: number;
  maxActivityBytes: number;
  /** Starts a new task. */
  start(partner: Partner | (new () => Partner), input?: DataItem[], options?: InvokeOptions): Promise<Turn>;
  /**
   * Continues the current task (it must be awaiting input or completion). When it waits on a
   * form, the tagged answer (or the one untagged data item, which gets tagged) is checked first:
   * throws an InvalidAnswer when it does not fit.
   */
  continue(partner: Partner | (new () => Partner), input?: DataItem[], options?: InvokeOptions): Promise<Turn>;
  /** Answers the form the task waits on with `values` (a continue with the tagged data item). */
  answer(partner: Partner | (new () => Partner), values: JsonObject, options?: InvokeOptions): Promise<Turn>;
  /** Completes the current task (it must be awaiting completion). */
  complete(partner: Partner | (new () => Partner), reason?: EndReason): Promise<Turn>;
  /** Cancels the current task. */
  cancel(partner: Partner | (new () => Partner), reason?: EndReason): Promise<Turn>;
  /** A stored value decoded from JSON, or null. */
  kvJson(scope: "task" | "agent", key: string): unknown;
}
