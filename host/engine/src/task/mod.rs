//! Tasks: the pure state machine, the durable record, the timers and the engine that runs them.

pub mod engine;
pub mod fan_out;
pub mod feed;
pub mod forms;
pub mod history;
pub mod live;
pub mod live_tasks;
pub mod observer;
pub mod partners;
pub mod record;
pub mod shares;
pub mod timers;

pub use engine::{
    ConfigRef, EngineError, MAX_PAGE_SIZE, PagePosition, Reply, StreamStart, Subscribe, TaskEngine,
    TaskPage, TaskQuery,
};
pub use fan_out::FanOut;
pub use feed::{EventFeed, FeedError};
pub use history::HistoryLimits;
pub use observer::{InvocationOutcome, Observer, Unobserved};
pub use partners::PartnerRunner;
pub use record::{TaskDefaults, TaskLimits, TaskRecord};
