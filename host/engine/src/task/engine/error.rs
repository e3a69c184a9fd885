//! What the engine refuses or fails at, in its own words: [`EngineError`]. No protocol's codes
//! here — each door maps these to its wire (AIP's JSON-RPC errors in `aiphost/src/aip_error.rs`,
//! A2A's in `aiphost/src/transport/a2a/errors.rs`). Where a message says what went wrong, its
//! text is what the doors tell the client, so it is worded for them.

use crate::quota::QuotaError;
use aiphost_model::depth::TooDeep;
use aiphost_model::{CommandKind, InvalidField, TaskState};
use aiphost_net_policy::TargetError;
use aiphost_store::StoreError;

/// Why a command, a read or a config change could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No task with this id in the caller's namespace.
    #[error("no task with this id exists for this agent")]
    TaskNotFound {
        /// The task's id as the caller gave it.
        task_id: String,
    },
    /// A re-stream asked for events the store no longer has (retention).
    #[error("the events after lastEventSeq are no longer stored (retention); get the task instead")]
    EventsGone {
        /// The task.
        task_id: String,
        /// The seq the re-stream would continue after.
        last_event_seq: u64,
        /// The oldest event still stored, if any.
        oldest_available_seq: Option<u64>,
    },
    /// A re-stream sent as a command: it only makes sense on a stream.
    #[error("re-stream reconnects a stream; send it with the `stream` method")]
    ReStreamNotStreamed,
    /// Under a strict policy: a command that does not apply to an ended task.
    #[error("the task has ended; an ended task does not change again")]
    TaskEnded {
        /// The task.
        task_id: String,
        /// The state it ended in.
        state: TaskState,
        /// The command refused.
        command: CommandKind,
    },
    /// Under a strict policy: a continue naming another session than its task's.
    #[error("the command names another session than its task's")]
    OtherSession {
        /// The task.
        task_id: String,
        /// The session the command names.
        session_id: String,
        /// The task's own session.
        task_session_id: Option<String>,
    },
    /// An input field is wrong: its path and what is wrong with it.
    #[error(transparent)]
    InvalidInput(#[from] InvalidField),
    /// A continue's answer to the task's form is wrong; nothing was stored.
    #[error(transparent)]
    Form(#[from] crate::task::forms::FormError),
    /// A free-form value nests deeper than the host stores.
    #[error("{0}")]
    TooDeep(TooDeep),
    /// A data item's content type is one no skill of the partner accepts.
    #[error("dataItems[{item}] is of type {mime_type}, which no skill of the partner accepts")]
    ContentTypeNotAccepted {
        /// Its index among the command's data items.
        item: usize,
        /// Its MIME type.
        mime_type: String,
        /// What the partner's skills accept.
        accepted: Vec<String>,
    },
    /// The command's sender is not the Leader the door authenticated.
    #[error("the command's senderId is not the authenticated Leader")]
    NotTheLeader {
        /// The `senderId` the command carries.
        sender_id: String,
        /// The Leader authenticated.
        leader: String,
    },
    /// A start over the Leader's cap of tasks with this partner that have not ended.
    #[error(
        "the Leader has as many tasks with this partner that have not ended as it may; complete or cancel some first"
    )]
    TooManyLiveTasks {
        /// The task that would have started.
        task_id: String,
        /// The cap.
        limit: u64,
        /// The Leader's tasks not ended now.
        live: u64,
    },
    /// The task has as many notification configs as it may.
    #[error(
        "the task has as many notification configs as it may; replace one by its id or delete one"
    )]
    TooManyConfigs {
        /// The task.
        task_id: String,
        /// The most configs a task may have.
        limit: usize,
    },
    /// The namespace holds as many configs of tasks that have not started as it may.
    #[error(
        "this namespace holds as many notification configs of tasks that have not started as it may; start those tasks, delete configs, or wait until they expire (waitingConfigTtlSeconds after they were made)"
    )]
    TooManyWaitingConfigs {
        /// The task the config was for.
        task_id: String,
        /// The most waiting configs a namespace may hold.
        limit: usize,
        /// How long a waiting config lives, in seconds.
        ttl_seconds: u64,
    },
    /// A notification config's URL is one the host does not call back: its form, or where it
    /// points under the address policy the engine was given.
    #[error("{reason}")]
    TargetRefused {
        /// The config came with a command (A2A's message), not by itself.
        with_command: bool,
        /// Why.
        reason: TargetError,
    },
    /// The task has no notification config with this id.
    #[error("no notification config {config_id:?} for task {task_id:?}")]
    UnknownConfig {
        /// The task.
        task_id: String,
        /// The config id asked for.
        config_id: String,
        /// What the id was given for.
        named_by: ConfigRef,
    },
    /// The partner version a task runs on cannot be loaded.
    #[error("version {version} of the partner, which this task runs on, cannot be loaded")]
    PartnerVersionUnavailable {
        /// The task's partner version.
        version: u64,
    },
    /// The engine failed on its way to an answer; nothing more the client can act on.
    #[error("{0}")]
    Internal(&'static str),
    /// The store failed; nothing was acknowledged.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The partner's tenant is over a quota: the command was not taken.
    #[error(transparent)]
    Quota(#[from] QuotaError),
}

/// Where a notification config id that names no config came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigRef {
    /// The id of a config to replace.
    Replace,
    /// The id of a config to read or delete.
    Lookup,
    /// The config a start subscribes its task to.
    Subscription,
}

impl EngineError {
    /// [`EngineError::TaskNotFound`] for `task_id`.
    pub fn task_not_found(task_id: &str) -> Self {
        EngineError::TaskNotFound {
            task_id: task_id.to_string(),
        }
    }
}
