//! The AIFlowy chat door (AIFlowy chat protocol v1.1): every hosted partner also answers chat
//! front ends speaking it — AIFlowy's own UI among them, with `?wire=aiflowy` — with the same
//! tasks, durability, tenancy and sandbox as over AIP.
//!
//! - `POST /agents/{agent}/aiflowy/chat`: one turn of a conversation ([`chat`]): a new task,
//!   or the continue of the conversation's task that awaits input; answered as SSE envelopes
//!   ([`stream`], over the protocol's pure `Turn` renderer);
//! - `POST /agents/{agent}/aiflowy/form`: the submit of a form the conversation's task asked
//!   ([`form`]), answered with the resumed task's stream;
//! - `GET /agents/{agent}/aiflowy/chat/events`: follow the conversation's task between turns
//!   ([`events`]): where a form's timeout or cancel is told;
//! - `POST /agents/{agent}/aiflowy/chat/stop`: cancel the conversation's task under way
//!   ([`stop`], the stop button; the seed names no route for it).
//!
//! `door.rs` gives the server its routes; `entry.rs` is what every request goes through first
//! (its query's wire, its JSON body and its caller, through the kit); a conversation's newest
//! task and a turn's command are the kit's `sessions.rs`; `errors.rs` is the one place
//! refusals become HTTP statuses and JSON bodies; `state.rs` is what the door holds;
//! `config.rs` and `flags.rs` its settings and their flags. Nothing here imports this file
//! back.

mod chat;
pub mod config;
pub mod door;
mod entry;
pub(crate) mod errors;
mod events;
pub mod flags;
mod form;
mod state;
mod stop;
mod stream;
