//! The MCP door (issue 33): every hosted partner is also an MCP server, each skill one tool, at
//! `POST /agents/{agent}/mcp`, and the host one server of every partner its caller may use at
//! `POST /mcp` (tools named `{agent}__{tool}`) — Streamable HTTP, protocol revision 2026-07-28,
//! stateless: every request stands alone, as the revision says; no sessions are kept.
//!
//! The wire is `rmcp`'s (`StreamableHttpService`, mounted as a tower service): it parses
//! JSON-RPC, checks the MCP headers and answers `server/discover`; this door supplies the rest.
//! - `entry.rs` runs first, before `rmcp` sees the request: the `Origin` rule (`config.rs`,
//!   `flags.rs`), the caller (the kit's API key / mTLS / open partner; at `/mcp` every partner
//!   the caller may use), the partner's request rate and the body's limit and deadline;
//!   refusals are HTTP statuses with a JSON-RPC error body (kit `refusals.rs`). What it found
//!   is the request's `scope.rs`.
//! - `handler.rs` is the `rmcp` server handler: the partner's (or the host's) identity,
//!   `tools/list`, `tools/call` and the tasks extension's methods.
//! - `tools.rs` says which tools a partner has (one per skill, and the door's own
//!   `aiphost.continue_task`), their input schemas and annotations, and the host's table of
//!   every partner's tools; `call.rs` runs the call as a task through the engine (validate,
//!   start, follow, answer); `follow.rs` follows its task to its rest (its feed with progress
//!   notifications when the client sent a progress token); `forms.rs` asks a task's form of the
//!   client (MRTR `InputRequired`, or `elicitation/create` in a 2025-11-25 session) and takes
//!   its answer (the retry, or `continue_task`). What is pure wire (the arguments' check, a
//!   task as the call's result, progress, forms as elicitations, the request state) is
//!   `aiphost-protocol`'s `mcp`.
//! - `tasks.rs` is the tasks extension (SEP-2663): a call declaring it answered with a task
//!   handle, then `tasks/get`, `tasks/update` and `tasks/cancel` over the durable task.
//! - `sessions.rs` bounds the 2025-11-25 sessions and binds each to the caller that opened it.
//! - `stats.rs` counts the door's requests, refusals and sessions for `/metrics`.
//! - `errors.rs` is where refusals become this door's words; `state.rs` what the door holds;
//!   `door.rs` its route.

mod call;
pub mod config;
pub mod door;
mod entry;
pub(crate) mod errors;
pub mod flags;
mod follow;
mod forms;
mod handler;
mod scope;
mod sessions;
mod state;
mod stats;
mod tasks;
mod tools;
