//! Tasks: the pure state machine, the durable record, the timers and the engine that runs them.

pub mod engine;
pub mod feed;
pub mod history;
pub mod live;
pub mod live_tasks;
pub mod record;
pub mod shares;
pub mod state;
pub mod timers;

pub use engine::{EngineError, Reply, StreamStart, TaskEngine};
pub use feed::{EventFeed, FeedError};
pub use history::HistoryLimits;
pub use record::{TaskDefaults, TaskLimits, TaskRecord};
