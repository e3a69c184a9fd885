// Types of @aiphost/sdk/testing.
import type { DataItem, EndReason, Partner, Product, TaskState } from "./index.js";

export interface LogLine {
  level: "trace" | "debug" | "info" | "warn" | "error";
  message: string;
  fields: Record<string, string>;
}

export interface Status {
  state: TaskState;
  items: DataItem[];
}

/** What one invocation did. */
export interface Turn {
  /** The task's state after the invocation. */
  state: TaskState | null;
  /** The error the invocation returned (the host failed the task with it), or null. */
  error: string | null;
  /** The statuses reported during this invocation. */
  statuses: Status[];
  /** The items of the last status: a question, a rejection or failure reason. */
  message: DataItem[];
  /** All products of the task after the invocation, with chunks merged. */
  products: Product[];
  /** What the partner logged during this invocation. */
  logs: LogLine[];
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
}

/**
 * A mock aiphost for one task at a time: each call is one fresh invocation, as in the host, and
 * every report is checked against the task state machine. Agent-scope kv lasts across tasks.
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
  /** Starts a new task. */
  start(partner: Partner | (new () => Partner), input?: DataItem[], options?: InvokeOptions): Promise<Turn>;
  /** Continues the current task (it must be awaiting input or completion). */
  continue(partner: Partner | (new () => Partner), input?: DataItem[], options?: InvokeOptions): Promise<Turn>;
  /** Completes the current task (it must be awaiting completion). */
  complete(partner: Partner | (new () => Partner), reason?: EndReason): Promise<Turn>;
  /** Cancels the current task. */
  cancel(partner: Partner | (new () => Partner), reason?: EndReason): Promise<Turn>;
  /** A stored value decoded from JSON, or null. */
  kvJson(scope: "task" | "agent", key: string): unknown;
}
