//! A2A (Agent2Agent, v1.0) on the wire: the same tasks as AIP, in A2A's shapes. No I/O here.
//!
//! A2A's objects are ProtoJSON (camelCase fields, enums as `TASK_STATE_*` / `ROLE_*` strings,
//! timestamps in UTC with `Z`). The few key pieces:
//!
//! - [`parse_send`] reads a `SendMessage` request into an AIP [`LeaderCommand`](aiphost_model::LeaderCommand)
//!   (a start, or a continue when the message names a task), its parts into DataItems;
//! - [`render_task`] renders an AIP [`Task`](aiphost_model::Task) as an A2A `Task` ([`task`] has the
//!   state mapping), [`render_event`] a logged event as a `StreamResponse`;
//! - [`parse_push_config`] reads a push notification config, [`render_notice`] is what its
//!   webhook gets;
//! - [`A2aError`] is every failure, as a JSON-RPC error or an HTTP+JSON one;
//! - [`v03`] translates A2A v0.3's JSON-RPC requests to v1.0's and the answers back.
//!
//! ```
//! use aiphost_protocol::a2a::{parse_send, A2aErrorKind};
//! use serde_json::json;
//! let sent = parse_send(&json!({"message": {
//!     "role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hello"}]
//! }})).unwrap();
//! assert_eq!(sent.command.command, aiphost_model::CommandKind::Start);
//! let refused = parse_send(&json!({"message": {"role": "ROLE_USER"}})).unwrap_err();
//! assert_eq!(refused.kind, A2aErrorKind::InvalidParams);
//! ```

mod error;
mod event;
mod message;
mod part;
mod push;
pub mod task;
pub mod v03;

pub use error::{A2aError, A2aErrorKind};
pub use event::{SentArtifacts, StreamContext, render_event};
pub use message::{PARAMS_KEY, SendMessage, count, parse_send};
pub use part::{parse_part, parse_parts, render_part, render_parts};
pub use push::{
    MAX_SCHEME_LEN, PushConfig, parse_config_ref, parse_push_config, render_notice,
    render_push_config, render_push_config_v03,
};
pub use task::{TaskView, render_reply, render_task, state_name};

/// The A2A protocol version this host serves (`A2A-Version`, the card's `protocolVersion`).
pub const VERSION: &str = "1.0";
