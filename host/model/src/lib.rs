//! The task model the host works with, whatever door a command came through: tasks, Leader
//! commands and what a door asks of them, the task state machine, events, notices and
//! notification configs as the engine stores them. No wire format (no `Dialect`, no JSON-RPC):
//! the doors' wire modules in `aiphost-protocol` parse into and render from these types. No I/O.

#![deny(missing_docs)]

pub mod activity;
pub mod cause;
pub mod depth;
pub mod event;
pub mod field;
pub mod inbound;
pub mod notice;
pub mod notification;
pub mod state;
pub mod task;
pub mod time;
pub mod values;
pub mod wire_form;

pub use event::{EventKind, TaskEvent};
pub use field::InvalidField;
pub use inbound::{CommandPolicy, Inbound};
pub use notice::TaskNotice;
pub use task::{HistoryFilter, MAX_TASK_ID_LEN, Task, check_task_id};
pub use time::Timestamp;
pub use values::{
    CommandKind, DataItem, JsonObject, LeaderCommand, Product, ProductChunk, TaskState, TaskStatus,
};
pub use wire_form::WireForm;
