//! The AIP door: JSON-RPC over HTTP on `/agents/{id}/rpc`, `/stream`, `/notification/…` and
//! `/group` (any path takes any method; the method picks the handler).
//!
//! `entry.rs` reads the request (content type, body limit, envelope), authenticates the Leader
//! and dispatches; each method is a file of its own (`rpc.rs`, `stream.rs`, `notification.rs`;
//! `group` joins through the group door's `Groups`), and what they share is `command.rs`. Imports
//! run one way: entry → methods → command.

mod command;
mod entry;
mod notification;
mod rpc;
mod stream;

pub(super) use entry::handle;
