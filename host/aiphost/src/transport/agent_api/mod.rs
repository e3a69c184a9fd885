//! The Agent API door (AgentScope Runtime's `/process`): every hosted partner also answers
//! AgentScope clients, with the same tasks, durability, tenancy and sandbox as over AIP.
//!
//! - `POST /agents/{agent}/process`: one turn of a session ([`process`]): a new task, or the
//!   continue of the session's task awaiting input; answered as SSE `AgentResponse`/`Message`/
//!   `Content` events ([`stream`], over the protocol's pure `Turn` renderer), or folded into one
//!   JSON `AgentResponse` with `stream: false`;
//! - `POST /agents/{agent}/process/stop`: cancel the session's running task ([`stop`]).
//!
//! `door.rs` gives the server its routes (its counters are `stats.rs`'s, on the host's metrics);
//! `entry.rs` is what every request goes through first (its JSON body and its caller, through
//! the kit; a session's newest task and what a turn does are the kit's `sessions.rs`); `answer.rs` sends a turn as SSE or
//! folds it (`stream: false`, bounded by the task's `responseTimeout`); `errors.rs` is the one
//! place refusals become HTTP statuses and JSON bodies; `state.rs` is what the door holds.
//! Nothing here imports this file back.

mod answer;
pub mod door;
mod entry;
pub(crate) mod errors;
mod process;
mod state;
mod stats;
mod stop;
mod stream;
