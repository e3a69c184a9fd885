//! The door kit: what every door does on the way in and out, once, so no door repeats it and
//! no door borrows it from another. It names no door.
//!
//! - [`state`]: the server's state ([`state::HostState`]) and the parts a door draws from it;
//! - [`caller`]: the partner named in the path and the Leader calling it, authenticated once;
//! - [`json_body`]: a JSON body (its content type, then [`body`]'s size limit and deadline);
//! - [`sse`]: an engine event feed as an SSE answer; [`span`]: the request span;
//! - [`sessions`]: a chat door's sessions (their newest task, what a turn does, one turn at a
//!   time); [`turn_stream`]: a chat door's turn, rendered from its task's feed;
//! - [`door`]: what a door gives the server (its routes);
//! - [`http_config`]: the HTTP settings doors read;
//! - [`door_urls`]: the chat doors' and the MCP door's URLs, which the partner's listings (of
//!   other doors) name;
//! - [`refusals`]: a chat door's refusals as HTTP statuses and JSON bodies.

pub mod body;
pub mod caller;
pub mod door;
pub mod door_urls;
pub mod http_config;
pub mod json_body;
pub mod refusals;
pub mod sessions;
pub mod span;
pub mod sse;
pub mod state;
pub mod turn_stream;
