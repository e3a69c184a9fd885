//! The MCP door's wire, no I/O (issue 33): what a task and its partner's manifest become in the
//! Model Context Protocol's types (`rmcp`'s model, the SDK the door serves with).
//! - [`arguments`]: a `tools/call`'s arguments against the default input schema, and the start's
//!   items they become;
//! - [`result`]: a task, as it rests, rendered as the `tools/call` result that started it;
//! - [`elicitation`]: a partner's form as an MCP elicitation (flat schemas as they are, others
//!   as one free-text field), the client's answer back as values, decline or cancel;
//! - [`tasks`]: a task as the tasks extension (SEP-2663) shows it: the handle of a call, the
//!   `tasks/get` answer, its outstanding question and how an answer to it is read;
//! - [`progress`]: a task's events as progress notifications (deltas, tool activity);
//! - [`request_state`]: the opaque state of an MRTR round (task, form key, tool, wrong answers);
//! - [`tool_error`]: the `isError` result every refusal inside a call becomes.

pub mod arguments;
pub mod elicitation;
pub mod progress;
pub mod request_state;
pub mod result;
pub mod tasks;
pub mod tool_error;
