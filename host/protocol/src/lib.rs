//! AIP on the wire: the JSON-RPC envelope, both dialects, and the dialect-free model. No I/O here.

#![deny(missing_docs)]

pub mod a2a;
pub mod depth;
pub mod dialect;
pub mod event;
pub mod field;
pub mod group;
pub mod jsonrpc;
pub mod model;
pub mod notice;
pub mod notification;
pub mod state;
pub mod time;

pub use dialect::{CommandPolicy, Dialect, HistoryFilter, Inbound, Task};
pub use event::{EventContext, EventKind, TaskEvent};
pub use field::InvalidField;
pub use jsonrpc::{ErrorCode, RpcError};
pub use model::{
    CommandKind, DataItem, JsonObject, LeaderCommand, Product, ProductChunk, TaskState, TaskStatus,
};
pub use notice::{Audience, TaskNotice};
pub use time::Timestamp;
