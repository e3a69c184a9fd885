//! The A2A door: every hosted partner is also an A2A (v1.0) agent, with the same tasks,
//! durability, tenancy and sandbox as over AIP.
//!
//! - `GET /agents/{agent}/.well-known/agent-card.json`: its agent card ([`card`]), with `ETag`,
//!   `Cache-Control` and `Last-Modified`;
//! - `POST /agents/{agent}/a2a` (and `…/a2a/`): the JSON-RPC binding ([`jsonrpc`]);
//! - `/agents/{agent}/a2a/rest/…`: the HTTP+JSON binding ([`rest`]).
//!
//! Both bindings carry the same [`operations`], which go through the task engine exactly as
//! AIP's doors do (a message is a `start` or a `continue`, a cancel a `cancel`), with A2A's
//! [`CommandPolicy`](crate::protocol::CommandPolicy): a task completes as soon as its partner
//! has a result, and ended tasks refuse messages. Errors become A2A errors in one place each:
//! `A2aError::to_jsonrpc` and `A2aError::to_http`.
//!
//! `door.rs` gives the server its routes; `entry.rs` is what every request goes through first
//! (its version, its JSON body, its caller, through the kit); `state.rs` is what the door holds.
//! Nothing here imports this file back.

pub mod card;
mod common;
pub mod door;
mod entry;
pub(crate) mod errors;
mod events;
mod jsonrpc;
mod operations;
mod push;
mod rest;
mod state;
