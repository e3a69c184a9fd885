//! The AIP door: JSON-RPC over HTTP on `/agents/{id}/rpc`, `/stream`, `/notification/…` and
//! `/group` (any path takes any method; the method picks the handler), and each partner's ACS
//! document.
//!
//! `door.rs` gives the server its routes; `entry.rs` reads the request (through the kit:
//! content type, body limit, caller), parses the envelope and dispatches; each method is a file
//! of its own (`rpc.rs`, `stream.rs`, `notification.rs`; `group` goes to the door's
//! [`invitations::GroupInvitations`], which the server wires to the group door), and what they
//! share is `command.rs`. Imports run one way: door → entry → methods → command → state.

mod acs;
mod command;
pub mod door;
mod entry;
pub mod invitations;
mod notification;
mod rpc;
mod state;
mod stream;
